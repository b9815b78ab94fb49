#!/usr/bin/env bash
# artifacts_schema/ against the real files: every schema is a valid JSON
# Schema (draft 2020-12); pipelines/*.yaml and pipelines/patterns/*.yaml
# validate; so do the JSON the tools write for a small model compiled here
# (mlcc-run --bench --json, mlcc-inspect --summary --json of each stage, the
# safetensors header of mlcc-import's weights, mlcc-pipeline verify --json when
# it is built); the example records of tuning-database.md validate; and broken
# documents (an unknown key, a stage without tool, a bad target, a bad bench
# line, a bad tuning record, ...) fail.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-run
schemas=$src/artifacts_schema

if ! /usr/bin/python3 -c 'import yaml, jsonschema' 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks yaml or jsonschema (scripts/install-deps.sh: python3-yaml python3-jsonschema)"
  finish schemas
fi

# validate SCHEMA FILE: FILE (.yaml/.yml by yaml.safe_load, else JSON; a
# .safetensors file: its header) is valid; invalid SCHEMA: the YAML or JSON
# document on stdin is not, and the error's path names KEY (optional 2nd arg).
cat >"$tmp/validate.py" <<'PY'
import json, struct, sys, jsonschema, yaml
V = jsonschema.Draft202012Validator
schema = json.load(open(sys.argv[2]))
V.check_schema(schema)
if sys.argv[1] == "valid":
    f = sys.argv[3]
    if f.endswith((".yaml", ".yml")):
        doc = yaml.safe_load(open(f))
    elif f.endswith(".safetensors"):
        b = open(f, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        doc = json.loads(b[8:8 + n])
    else:
        doc = json.load(open(f))
    errors = list(V(schema).iter_errors(doc))
    for e in errors:
        print("  %s: %s" % ("/".join(map(str, e.absolute_path)) or "(root)", e.message[:300]))
    sys.exit(1 if errors else 0)
doc = yaml.safe_load(sys.stdin)  # JSON is YAML too
errors = list(V(schema).iter_errors(doc))
if not errors:
    print("  the document is valid, expected an error")
    sys.exit(1)
want = sys.argv[3] if len(sys.argv) > 3 else ""
def all_errors(es):  # with those under oneOf/anyOf
    for e in es:
        yield e
        yield from all_errors(e.context or [])
paths = ["/".join(map(str, e.absolute_path)) for e in all_errors(errors)]
if want and not any(want in p for p in paths):
    print("  errors at %s, none at %s" % (paths, want))
    sys.exit(1)
PY
validate() { /usr/bin/python3 "$tmp/validate.py" valid "$@"; }
invalid() { /usr/bin/python3 "$tmp/validate.py" invalid "$@"; }

for s in "$schemas"/*.schema.json; do
  check "$(basename "$s") is a draft 2020-12 schema" /usr/bin/python3 -c "
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
assert s['\$schema'] == 'https://json-schema.org/draft/2020-12/schema', s['\$schema']
assert s['\$id'] == 'https://mlcc.dev/schemas/' + sys.argv[1].rsplit('/', 1)[1], s['\$id']
jsonschema.Draft202012Validator.check_schema(s)" "$s"
done

# --- pipelines ---
n=0
for f in "$src"/pipelines/*.yaml; do
  check "pipelines/$(basename "$f") matches pipeline.schema.json" validate "$schemas/pipeline.schema.json" "$f"
  n=$((n + 1))
done
check "pipelines found" test "$n" -ge 2
n=0
for f in "$src"/pipelines/patterns/*.yaml; do
  check "patterns/$(basename "$f") matches patterns.schema.json" validate "$schemas/patterns.schema.json" "$f"
  n=$((n + 1))
done
check "pattern files found" test "$n" -ge 1
check "examples/extern/mylib.yaml matches patterns.schema.json" validate "$schemas/patterns.schema.json" "$src/examples/extern/mylib.yaml"
check "externs: a reserved name" invalid "$schemas/patterns.schema.json" externs/0 <<<'{patterns: [], externs: [{name: blas.f, library: l.so, params: ["x: f32[4]"], result: "f32[4]"}]}'

P=$schemas/pipeline.schema.json
ok_stages='stages: [{name: import, tool: mlcc-import}]'
check "a minimal pipeline is valid" bash -c "printf 'name: p\ntarget: llvm\n$ok_stages\n' >'$tmp/min.yaml' && /usr/bin/python3 '$tmp/validate.py' valid '$P' '$tmp/min.yaml'"
check "every form of passes, custom tools, \${vars}" bash -c "cat >'$tmp/full.yaml' <<'Y'
name: full
description: every form
target: llvm -mcpu=znver4 -num-cores=\${cores}
vars: {cores: 4, extra: [], more: [-v, 2], flag: true, none: null}
stages:
  - {name: import, tool: mlcc-import, args: ['\${extra}', --shape, input=1x3]}
  - {name: fuse, tool: mlcc-fuse, passes: 'canonicalize,fuse-ops{max-depth=6}'}
  - name: fuse2
    tool: mlcc-fuse
    passes: [canonicalize, 'fuse-ops{max-depth=6}', {fuse-ops: {max-depth: 6}}, {dead-code-elimination: null},
             {fuse-by-pattern: {patterns: '\${pipeline_dir}/patterns/blas.yaml'}}]
  - {name: mine, tool: ./my_pass.py, passes: [anything], args: [1, 2.5, false]}
  - {name: fmt, tool: clang-format}
  - {name: sched.v2, tool: mlcc-schedule, args: [--target, '\${target}']}
  - {name: link, tool: mlcc-link, output: '\${name}.so'}
Y
/usr/bin/python3 '$tmp/validate.py' valid '$P' '$tmp/full.yaml'"
check "cuda target" invalid "$P" target <<<'{name: p, target: "cuda -arch=sm", stages: [{name: a, tool: mlcc-fuse}]}'
check "cuda -arch=sm_80 is valid" bash -c "echo '{name: p, target: cuda -arch=sm_80, stages: [{name: a, tool: mlcc-fuse}]}' >'$tmp/cuda.yaml' && /usr/bin/python3 '$tmp/validate.py' valid '$P' '$tmp/cuda.yaml'"
check "unknown top-level key" invalid "$P" <<<"{name: p, target: llvm, stage: [], $ok_stages}"
check "unknown stage key" invalid "$P" stages/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, pases: [x]}]}'
check "stage without tool" invalid "$P" stages/0 <<<'{name: p, target: llvm, stages: [{name: a}]}'
check "unknown mlcc tool" invalid "$P" stages/0/tool <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-optimize}]}'
check "passes on mlcc-codegen" invalid "$P" stages/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-codegen, passes: [x]}]}'
check "no stages" invalid "$P" stages <<<'{name: p, target: llvm, stages: []}'
check "no target: llvm" bash -c "printf 'name: p\n$ok_stages\n' >'$tmp/notarget.yaml' && /usr/bin/python3 '$tmp/validate.py' valid '$P' '$tmp/notarget.yaml'"
check "no name" invalid "$P" <<<"{target: llvm, $ok_stages}"
check "unknown target" invalid "$P" target <<<"{name: p, target: wasm, $ok_stages}"
check "unknown target option" invalid "$P" target <<<"{name: p, target: llvm -mattr=x, $ok_stages}"
check "llvm -mattr=+avx2,-fma is valid" bash -c "echo '{name: p, target: \"llvm -mcpu=x86-64-v3 -mattr=+avx2,-fma -vector-bits=256\", stages: [{name: a, tool: mlcc-fuse}]}' >'$tmp/mattr.yaml' && /usr/bin/python3 '$tmp/validate.py' valid '$P' '$tmp/mattr.yaml'"
check "bad stage name" invalid "$P" stages/0/name <<<'{name: p, target: llvm, stages: [{name: a/b, tool: mlcc-fuse}]}'
check "a built-in variable declared" invalid "$P" vars <<<"{name: p, target: llvm, vars: {target: x}, $ok_stages}"
check "a bad variable name" invalid "$P" vars <<<"{name: p, target: llvm, vars: {1x: y}, $ok_stages}"
check "a map as a variable" invalid "$P" vars/v <<<"{name: p, target: llvm, vars: {v: {a: 1}}, $ok_stages}"
check "a list of lists as a variable" invalid "$P" vars/v <<<"{name: p, target: llvm, vars: {v: [[1]]}, $ok_stages}"
check "a pass map with two keys" invalid "$P" stages/0/passes/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, passes: [{a: {}, b: {}}]}]}'
check "an option value with a comma" invalid "$P" stages/0/passes/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, passes: [{a: {k: "x,y"}}]}]}'
check "a list as an option value" invalid "$P" stages/0/passes/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, passes: [{a: {k: [1]}}]}]}'
check "a map in args" invalid "$P" stages/0/args/0 <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, args: [{k: v}]}]}'
check "output in a subdirectory" invalid "$P" stages/0/output <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, output: d/x.ir}]}'
check "output a hidden file" invalid "$P" stages/0/output <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, output: .x.ir}]}'
check "output build.ninja" invalid "$P" stages/0/output <<<'{name: p, target: llvm, stages: [{name: a, tool: mlcc-fuse, output: build.ninja}]}'

check "patterns: unknown key" invalid "$schemas/patterns.schema.json" patterns/0 <<<'{patterns: [{name: d, ops: ["dense(x, w)"], codgen: blas.dense}]}'
check "patterns: no ops" invalid "$schemas/patterns.schema.json" patterns/0 <<<'{patterns: [{name: d, ops: []}]}'
check "rewrites: no replace" invalid "$schemas/patterns.schema.json" rewrites/0 <<<'{rewrites: [{name: r, match: ["exp(x)"]}]}'

# --- what the tools write, for a small model compiled here ---
cp "$src/tests/cli/lib/matmul_tanh.ir" "$tmp/m.ir"
check "compiles" bash -c "'$bin/mlcc-fuse' -q '$tmp/m.ir' -o '$tmp/m.fused.ir' && '$bin/mlcc-legalize' -q '$tmp/m.fused.ir' -o '$tmp/m.low.ir' &&
  '$bin/mlcc-schedule' -q '$tmp/m.low.ir' --target llvm -o '$tmp/m.s.ir' &&
  '$bin/mlcc-codegen' -q '$tmp/m.s.ir' --target llvm -o '$tmp/m.o' && '$bin/mlcc-link' '$tmp/m.o' -o '$tmp/m.so'"
R=$schemas/run-bench.schema.json
check "mlcc-run --bench 3 --json" run 0 "$tmp/m.so" --bench 3 --json
cp "$tmp/out" "$tmp/bench.json"
check "bench json matches run-bench.schema.json" validate "$R" "$tmp/bench.json"
check "bench json: 3 runs" contains "$tmp/bench.json" '"runs": 3'
check "mlcc-run --json, one run, 2 threads" run 0 "$tmp/m.so" --json --threads 2 --profile
cp "$tmp/out" "$tmp/one.json"
check "one-run json matches too" validate "$R" "$tmp/one.json"
check "bench: a missing key" invalid "$R" <<<'{"median_ms": 1.0, "min_ms": 1.0, "mean_ms": 1.0, "runs": 3}'
check "bench: an unknown key" invalid "$R" <<<'{"median_ms": 1.0, "min_ms": 1.0, "mean_ms": 1.0, "runs": 3, "threads": 1, "max_ms": 2}'
check "bench: zero runs" invalid "$R" runs <<<'{"median_ms": 1.0, "min_ms": 1.0, "mean_ms": 1.0, "runs": 0, "threads": 1}'
check "bench: a string time" invalid "$R" median_ms <<<'{"median_ms": "1.0", "min_ms": 1.0, "mean_ms": 1.0, "runs": 3, "threads": 1}'
check "bench: a fractional thread count" invalid "$R" threads <<<'{"median_ms": 1.0, "min_ms": 1.0, "mean_ms": 1.0, "runs": 3, "threads": 1.5}'

S=$schemas/inspect-summary.schema.json
tool=$bin/mlcc-inspect
for f in m m.fused m.low m.s; do
  check "mlcc-inspect --summary --json $f.ir" run 0 --summary --json "$tmp/$f.ir"
  cp "$tmp/out" "$tmp/$f.summary.json"
  check "summary of $f.ir matches inspect-summary.schema.json" validate "$S" "$tmp/$f.summary.json"
done
check "summary: an unknown key" invalid "$S" <<<"$(/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['extra']=1; print(json.dumps(d))" "$tmp/m.s.summary.json")"

# mlcc-pipeline verify --json (when mlcc-pipeline is built), on a pipeline that
# starts from the IR above; the pipeline file itself matches its schema.
if [[ -x $bin/mlcc-pipeline ]] && command -v ninja >/dev/null; then
  cat >"$tmp/p.yaml" <<'Y'
name: from-ir
target: llvm
stages:
  - {name: fuse, tool: mlcc-fuse, passes: [canonicalize, fuse-ops]}
  - {name: legalize, tool: mlcc-legalize}
  - {name: schedule, tool: mlcc-schedule, args: [--target, "${target}"]}
  - {name: codegen, tool: mlcc-codegen, args: [--target, "${target}"]}
  - {name: link, tool: mlcc-link, output: model.so}
Y
  check "the test pipeline matches pipeline.schema.json" validate "$P" "$tmp/p.yaml"
  tool=$bin/mlcc-pipeline
  check "mlcc-pipeline verify --json" run 0 verify "$tmp/p.yaml" --input "$tmp/m.ir" --build-dir "$tmp/pb" --json -q
  cp "$tmp/out" "$tmp/verify.json"
  check "verify json matches verify.schema.json" validate "$schemas/verify.schema.json" "$tmp/verify.json"
  check "verify json: every stage, codegen skipped" /usr/bin/python3 - "$tmp/verify.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [s["stage"] for s in r["stages"]] == ["fuse", "legalize", "schedule", "codegen", "link"], r
assert [s["kind"] for s in r["stages"]] == ["ir", "ir", "ir", "skipped", "model"], r
assert r["first_bad_stage"] is None and all(s.get("ok", True) for s in r["stages"]), r
PY
else
  echo "skip verify json: mlcc-pipeline or ninja not there"
fi
VS=$schemas/verify.schema.json
check "verify: an unknown kind" invalid "$VS" stages/0/kind <<<'{"pipeline": "p", "atol": 0.1, "rtol": 0.1, "first_bad_stage": null, "stages": [{"stage": "c", "output": "c.o", "kind": "object"}]}'
check "verify: a comparison without its diff" invalid "$VS" stages/0 <<<'{"pipeline": "p", "atol": 0.1, "rtol": 0.1, "first_bad_stage": null, "stages": [{"stage": "c", "output": "c.ir", "kind": "ir", "compared_with": "b"}]}'
check "verify: no first_bad_stage" invalid "$VS" <<<'{"pipeline": "p", "atol": 0.1, "rtol": 0.1, "stages": []}'

# The weights file's header: mlcc-import of a small ONNX model (built with
# onnx.helper; constants of more than 16 elements go to the weights file).
T=$schemas/safetensors-header.schema.json
if /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
  check "a small ONNX model" /usr/bin/python3 - "$tmp/g.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.arange(96, dtype=np.float32).reshape(4, 24), "w")
b = numpy_helper.from_array(np.ones(24, np.float32), "b")
g = helper.make_graph([helper.make_node("Gemm", ["input", "w", "b"], ["output"])], "g",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 4])],
                      [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 24])], [w, b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PY
  check "imports" "$bin/mlcc-import" -q "$tmp/g.onnx" -o "$tmp/g.ir"
  check "weights header matches safetensors-header.schema.json" validate "$T" "$tmp/g.safetensors"
  check "weights header: both tensors, mlcc metadata" /usr/bin/python3 - "$tmp/g.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
assert h.pop("__metadata__") == {"format": "mlcc"}, h
assert {k: (v["dtype"], v["shape"]) for k, v in h.items()} == {"w": ("F32", [4, 24]), "b": ("F32", [24])}, h
PY
else
  echo "skip weights header: /usr/bin/python3 lacks onnx"
fi
check "safetensors: an unknown dtype" invalid "$T" w/dtype <<<'{"w": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}'
check "safetensors: three offsets" invalid "$T" w/data_offsets <<<'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}}'
check "safetensors: metadata not strings" invalid "$T" __metadata__ <<<'{"__metadata__": {"format": 1}}'

# The tuning database: each example line of tuning-database.md (which
# tune_database_test reads with the library) matches the schema of a line;
# broken records fail.
D=$schemas/tuning-database.schema.json
n=0
while IFS= read -r line; do
  n=$((n + 1))
  printf '%s\n' "$line" >"$tmp/record$n.json"
  check "tuning-database.md example $n matches tuning-database.schema.json" validate "$D" "$tmp/record$n.json"
done < <(grep '^{"workload"' "$schemas/tuning-database.md")
check "tuning-database.md examples found" test "$n" -ge 2
rec='"workload": "8c1f3e0a5d2b4f67", "target": "llvm", "func": "mm", "trace": "trace {\n}\n"'
printf '%s\n' "{$rec, \"status\": \"ok\", \"run_us\": [], \"flops\": 0}" >"$tmp/min-record.json"
check "tuning db: a minimal record is valid" validate "$D" "$tmp/min-record.json"
check "tuning db: a string flops" invalid "$D" flops <<<"{$rec, \"status\": \"ok\", \"run_us\": [1.5], \"flops\": \"2\"}"
check "tuning db: a string run" invalid "$D" run_us/0 <<<"{$rec, \"status\": \"ok\", \"run_us\": [\"1.5\"], \"flops\": 2}"
check "tuning db: an unknown status" invalid "$D" status <<<"{$rec, \"status\": \"fast\", \"run_us\": [], \"flops\": 2}"
check "tuning db: runs of a failed record" invalid "$D" run_us <<<"{$rec, \"status\": \"timeout\", \"run_us\": [1.5], \"flops\": 2}"
check "tuning db: a trace that is not one" invalid "$D" trace <<<'{"workload": "w", "target": "llvm", "func": "mm", "trace": "split(%l1)", "status": "ok", "run_us": [], "flops": 2}'
check "tuning db: no run_us" invalid "$D" <<<"{$rec, \"status\": \"ok\", \"flops\": 2}"
check "tuning db: an unknown field" invalid "$D" <<<"{$rec, \"status\": \"ok\", \"run_us\": [], \"flops\": 2, \"runs\": 3}"

finish schemas
