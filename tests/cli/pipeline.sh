#!/usr/bin/env bash
# mlcc-pipeline as a user runs it: the public models through
# pipelines/cpu-default.yaml and cpu-blas.yaml against PyTorch; incremental
# builds (a no-op rerun, a changed stage re-running itself and the stages
# after it, restat stopping at an unchanged output, new weights re-running
# the stages that read them); --dry-run's commands pasted into a shell; a
# custom stage written as a small script; `verify` naming the stage that
# broke the model, and its JSON against artifacts_schema/verify.schema.json;
# every YAML error at its FILE:LINE:COL with nothing run.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-pipeline
pyok=0
python_has torch torchvision onnx numpy jsonschema && pyok=1

# --- usage ---
check "--help shows an example" prints 'mlcc-pipeline run pipelines/cpu-default.yaml --input model.onnx' --help
check "--version" prints 'mlcc-pipeline' --version
check "no subcommand exits 2" run 2
check "run without --input exits 2" run 2 run "$src/pipelines/cpu-default.yaml"
check "--set without = exits 2" run 2 run "$src/pipelines/cpu-default.yaml" --input "$src/README.md" --set nothing

# --- YAML errors: FILE:LINE:COL, exit 1, nothing runs ---
touch "$tmp/m.onnx"
yaml_error() {  # yaml_error NAME LOCATION MESSAGE: $tmp/p.yaml must fail at LOCATION with MESSAGE
  local name=$1 loc=$2 msg=$3
  rm -rf "$tmp/never"
  check "YAML error: $name" run 1 run "$tmp/p.yaml" --input "$tmp/m.onnx" --build-dir "$tmp/never"
  check "YAML error: $name: located" contains "$tmp/err" "^$tmp/p.yaml:$loc: error: "
  check "YAML error: $name: message" contains "$tmp/err" "$msg"
  check "YAML error: $name: nothing ran" absent "$tmp/never"
}
printf 'name: p\nstages: [\n  - {name: a, tool: mlcc-fuse}\n' >"$tmp/p.yaml"
yaml_error "syntax" "3:3" "invalid YAML"
printf 'name: p\ntarget: llvm\nstagez: []\n' >"$tmp/p.yaml"
yaml_error "unknown key" "3:1" "stagez: unknown key (expected name, description, target, vars, stages)"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fuse\n    pases: [canonicalize]\n' >"$tmp/p.yaml"
yaml_error "unknown stage key" "5:5" "stages\[0\].pases: unknown key"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fusion\n' >"$tmp/p.yaml"
yaml_error "unknown mlcc tool" "4:11" "unknown tool 'mlcc-fusion' (mlcc tools: mlcc-import"
printf 'name: p\nstages:\n  - name: a\n    tool: my-pass\n' >"$tmp/p.yaml"
yaml_error "unknown program" "4:11" "unknown tool 'my-pass': not an mlcc tool"
printf 'name: p\nstages:\n  - name: a\n    tool: ./missing.sh\n' >"$tmp/p.yaml"
yaml_error "missing custom tool" "4:11" "no executable '$tmp/missing.sh'"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fuse\n    passes:\n      - canonicalize\n      - fuse-everything\n' >"$tmp/p.yaml"
yaml_error "unknown pass" "7:9" "unknown pass 'fuse-everything'"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fuse\n    passes:\n      - fuse-ops: {max-depth: deep}\n' >"$tmp/p.yaml"
yaml_error "bad pass option" "6:9" "option 'max-depth' of pass 'fuse-ops' takes an int, not 'deep'"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fuse\n    passes: "fuse-ops{depth=2}"\n' >"$tmp/p.yaml"
yaml_error "unknown pass option" "5:13" "pass 'fuse-ops' has no option 'depth'"
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-schedule\n    passes: [fuse-ops]\n' >"$tmp/p.yaml"
yaml_error "passes on a tool without passes" "5:13" "mlcc-schedule takes no passes"
printf 'name: p\ntarget: llvm -mcpu\nstages:\n  - {name: a, tool: mlcc-fuse}\n' >"$tmp/p.yaml"
yaml_error "bad target" "2:9" "target: "
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-codegen\n    args: [--target, "${tagret}"]\n' >"$tmp/p.yaml"
yaml_error "undefined variable" "5:22" "undefined variable '\${tagret}'"
printf 'name: p\nvars:\n  extra: [-q]\nstages:\n  - name: a\n    tool: mlcc-fuse\n    args: ["x${extra}"]\n' >"$tmp/p.yaml"
yaml_error "a list variable inside a string" "7:12" "'\${extra}' is a list: it can only be a whole item of args"
printf 'name: p\nstages:\n  - {name: a, tool: mlcc-fuse}\n  - {name: a, tool: mlcc-legalize}\n' >"$tmp/p.yaml"
yaml_error "duplicate stage" "4:12" "duplicate stage name 'a'"
printf 'name: p\nstages:\n  - name: s\n    tool: mlcc-schedule\n    args: [--target, llvm, --frobnicate]\n' >"$tmp/p.yaml"
yaml_error "an unknown option of the tool" "5:11" "mlcc-schedule rejects its arguments: The following argument was not expected: --frobnicate"
printf 'name: p\nstages:\n  - name: c\n    tool: mlcc-codegen\n    args: [--emit, exe]\n' >"$tmp/p.yaml"
yaml_error "a bad option value" "5:11" "mlcc-codegen rejects its arguments: --emit: exe not in {obj,ll,asm,cuda,ptx}"
# A CPU LLVM does not know (or that has no 64-bit mode) fails the up-front
# check of the codegen stage (before, it passed and LLVM aborted in the build).
printf 'name: p\ntarget: llvm -mcpu=bogus\nstages:\n  - name: c\n    tool: mlcc-codegen\n    args: [--target, "${target}"]\n' >"$tmp/p.yaml"
# libs/target checks the CPU with the target itself (at the target key), as
# every tool would.
yaml_error "an unknown -mcpu in the target" "2:9" "target: unknown CPU 'bogus'.*valid: native, x86-64"
printf 'name: p\nstages:\n  - name: c\n    tool: mlcc-codegen\n    args: [-mcpu=i386]\n' >"$tmp/p.yaml"
yaml_error "a 32-bit -mcpu" "5:11" "mlcc-codegen rejects its arguments: -mcpu: error: CPU 'i386' cannot run 64-bit code"
# mlcc-schedule checks its --target with the command line too, so a literal
# bad target in a schedule stage's args is refused before anything runs.
printf 'name: p\nstages:\n  - name: s\n    tool: mlcc-schedule\n    args: [--target, "llvm -vector-bits=0"]\n' >"$tmp/p.yaml"
yaml_error "a bad --target of mlcc-schedule" "5:11" "mlcc-schedule rejects its arguments: --target: error: -vector-bits must be a positive integer, not '0'"
printf 'name: p\nstages: []\n' >"$tmp/p.yaml"
yaml_error "no stages" "2:9" "must be a non-empty list of stages"
# Command injection (issue 12): a newline in a value once ended its line in
# build.ninja and Ninja ran the rule that followed. Each is refused at its key
# or option, nothing runs, and the marker never appears.
inject='\n\nrule pwn\n  command = touch '"$tmp"'/PWNED\nbuild '"$tmp"'/pwned: pwn\ndefault '"$tmp"'/pwned\n'
printf 'name: p\nstages:\n  - name: a\n    tool: mlcc-fuse\n    args: ["-q%s"]\n' "$inject" >"$tmp/p.yaml"
yaml_error "a newline in args" "5:12" "contains a control character (a newline, say)"
printf 'name: p\nvars:\n  v: "x%s"\nstages:\n  - name: a\n    tool: mlcc-fuse\n    args: ["${v}"]\n' "$inject" >"$tmp/p.yaml"
yaml_error "a newline in a variable" "3:6" "contains a control character"
printf 'name: p\nvars:\n  v: x\nstages:\n  - name: a\n    tool: mlcc-fuse\n    args: ["${v}"]\n' >"$tmp/p.yaml"
check "a newline in --set fails" run 1 run "$tmp/p.yaml" --input "$tmp/m.onnx" --build-dir "$tmp/never" \
  --set "v=$(printf 'x\nrule pwn')"
check "  names the option" contains "$tmp/err" "^error: --set v: 'x\\\\nrule pwn' contains a control character"
nl_model="$tmp/m
rule pwn.onnx"
touch "$nl_model"
check "a newline in the --input path fails" run 1 run "$tmp/p.yaml" --input "$nl_model" --build-dir "$tmp/never"
check "  names the option" contains "$tmp/err" "^error: --input: .* contains a control character"
check "injection: nothing ran" absent "$tmp/never"
check "injection: no marker" absent "$tmp/PWNED"
printf 'name: p\nstages:\n  - {name: a, tool: mlcc-fuse}\n' >"$tmp/p.yaml"
check "--set of an undeclared variable exits 1" run 1 run "$tmp/p.yaml" --input "$tmp/m.onnx" --set opt=3
check "--set names the variables" contains "$tmp/err" "has no variable 'opt' (it declares: target)"
check "a missing --input file exits 1" run 1 run "$tmp/p.yaml" --input "$tmp/none.onnx"

if [[ $pyok == 0 ]]; then
  echo "skip the model tests: /usr/bin/python3 lacks torch, torchvision, onnx or jsonschema"
  finish cli.pipeline
fi
/usr/bin/python3 "$src/tests/models/generate.py" --out "$tmp/models" >"$tmp/gen.log" 2>&1 ||
  { cat "$tmp/gen.log"; echo "FAIL generate the public models"; exit 1; }
shape_of() { /usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$1').shape)))"; }

# --- the public suite through both pipelines, against PyTorch ---
for p in cpu-default cpu-blas; do
  for m in mlp cnn resnet18 mobilenetv2 transformer; do
    d=$tmp/$p/$m
    check "$p: $m builds" run 0 run "$src/pipelines/$p.yaml" --input "$tmp/models/$m.onnx" --build-dir "$d" \
      --set import_args="--shape input=$(shape_of "$tmp/models/$m.input.npy")"
    for f in import.ir import.safetensors fuse.ir legalize.ir schedule.ir codegen.o model.so; do
      [[ -s $d/$f ]] || { echo "  $d/$f missing"; fails=$((fails + 1)); }
    done
    check "$p: $m matches PyTorch" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$tmp/models/$m.input.npy' \
      --output-dir '$d/out' && exit 0; exit 1"
    compare "$d/out/output.npy" "$tmp/models/$m.output.npy" || { echo "FAIL $p: $m output"; fails=$((fails + 1)); }
  done
done
# The cuda pipelines build without a GPU (NVRTC compiles the kernels); verify
# interprets every IR stage and, with no CUDA driver here, reports model.so as
# not runnable instead of failing (on a GPU it runs it).
if ldconfig -p | grep 'libnvrtc.so' >/dev/null; then
  for p in cuda-default cuda-cublas; do
    d=$tmp/$p/mlp
    args=(--input "$tmp/models/mlp.onnx" --build-dir "$d" --set import_args="--shape input=4x784")
    check "$p: mlp builds" run 0 run "$src/pipelines/$p.yaml" "${args[@]}"
    check "$p: verify" run 0 verify "$src/pipelines/$p.yaml" "${args[@]}"
    check "$p: verify interprets the scheduled IR" contains "$tmp/out" "^schedule *schedule.ir *ir *legalize .* ok"
    if ! ldconfig -p | grep 'libcuda.so.1 ' >/dev/null; then
      check "$p: verify: model.so needs a GPU" contains "$tmp/out" "^link .*not runnable: a CUDA model, and no CUDA driver"
    fi
  done
  check "cuda-cublas: the dense groups call cuBLAS" contains "$tmp/cuda-cublas/mlp/legalize.ir" 'call_extern "cublas.dense_bias_relu"'
else
  echo "skip  the cuda pipelines: NVRTC (libnvrtc.so) is not installed"
fi

# cpu-tuned: a short tuning budget; the database in the build directory; a
# rerun with more trials resumes it; verify covers the tune stage.
d=$tmp/cpu-tuned/cnn
tuned_args=(--input "$tmp/models/cnn.onnx" --build-dir "$d" --set import_args="--shape input=$(shape_of "$tmp/models/cnn.input.npy")"
  --set trials=8 --set target="llvm -num-cores=1")
check "cpu-tuned: cnn builds" run 0 run "$src/pipelines/cpu-tuned.yaml" "${tuned_args[@]}"
check "cpu-tuned: the tune stage and its database" bash -c "test -s '$d/tune.ir' && [[ \$(wc -l <'$d/tune.db') -eq 8 ]]"
check "cpu-tuned: verify" run 0 verify "$src/pipelines/cpu-tuned.yaml" "${tuned_args[@]}"
check "cpu-tuned: verify checks the tuned IR" contains "$tmp/out" "^tune *tune.ir *ir *legalize .* ok"
check "cpu-tuned: cnn matches PyTorch" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$tmp/models/cnn.input.npy' \
  --output-dir '$d/out' && exit 0; exit 1"
compare "$d/out/output.npy" "$tmp/models/cnn.output.npy" || { echo "FAIL cpu-tuned: cnn output"; fails=$((fails + 1)); }
check "cpu-blas dispatches the mlp's dense layers to BLAS" contains "$tmp/cpu-blas/mlp/legalize.ir" 'call_extern "blas.dense_bias_relu"'

# --- incremental builds (on a copy of cpu-default, edited as a user would) ---
d=$tmp/inc
cp "$src/pipelines/cpu-default.yaml" "$tmp/inc.yaml"
build() { run 0 run "$tmp/inc.yaml" --input "$tmp/models/mlp.onnx" --build-dir "$d" --set import_args="--shape input=4x784"; }
ran() { grep -q "^\[[0-9]*/[0-9]*\] $1 (" "$tmp/out"; }   # ran STAGE: Ninja ran STAGE in the last build
ran_only() {  # ran_only STAGE...: exactly these stages ran
  local got want
  got=$(grep -o '^\[[0-9]*/[0-9]*\] [a-z]* (' "$tmp/out" | sed 's/^\[[0-9/]*\] //; s/ ($//' | tr '\n' ' ')
  want="$* "
  [[ $got == "$want" ]] || { echo "  ran: '$got', expected '$want'"; return 1; }
}
check "first build runs every stage" build
check "first build: all six stages" ran_only import fuse legalize schedule codegen link
check "a second run does no work" build
check "Ninja says no work to do" contains "$tmp/out" "ninja: no work to do"
check "-q: a run prints nothing" bash -c "[[ -z \$('$tool' run '$tmp/inc.yaml' --input '$tmp/models/mlp.onnx' --build-dir '$d' \
  --set import_args='--shape input=4x784' -q 2>&1) ]]"
sed -i 's/passes: \[canonicalize, convert-layout, fold-constants, fuse-ops, dead-code-elimination\]/passes: [canonicalize, convert-layout, fold-constants, "fuse-ops{max-depth=1}", dead-code-elimination]/' "$tmp/inc.yaml"
check "changing fuse's options rebuilds" build
check "... fuse and every stage after it, not import" ran_only fuse legalize schedule codegen link
sed -i '/name: schedule/,/name: codegen/ s/args: \[--target, "${target}"\]/args: [--target, "${target}", -q]/' "$tmp/inc.yaml"
stamp=$(stat -c %y "$d/schedule.ir")
check "adding -q to schedule rebuilds" build
check "... schedule only: its output did not change (restat)" ran_only schedule
check "the unchanged output kept its timestamp" test "$(stat -c %y "$d/schedule.ir")" == "$stamp"
# New weights with the same graph: the stages reading them re-run; those whose output did not change stop there.
/usr/bin/python3 - "$d/import.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
begin, end = h["fc2.weight"]["data_offsets"]
b[8 + n + begin:8 + n + end] = bytes(end - begin)  # fc2.weight = 0: every row's output is fc2's bias
open(p, "wb").write(b)
PY
check "new weights rebuild" build
check "... the stages that read them, and link" ran_only fuse legalize schedule codegen link
check "... into a model that uses them" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$tmp/models/mlp.input.npy' --output-dir '$d/out' &&
  /usr/bin/python3 -c 'import numpy as np, sys; sys.exit(0 if np.ptp(np.load(\"$d/out/output.npy\"), axis=0).max() < 1e-6 else 1)'"

# --- --dry-run: the same commands, ready to paste ---
check "--dry-run" run 0 run "$src/pipelines/cpu-default.yaml" --input "$tmp/models/cnn.onnx" --build-dir "$tmp/dry" \
  --set import_args="--shape input=$(shape_of "$tmp/models/cnn.input.npy")" --dry-run
check "--dry-run runs nothing" absent "$tmp/dry"
cp "$tmp/out" "$tmp/dry.sh"
check "--dry-run's commands run in a shell" bash -c "cd '$tmp' && bash -e dry.sh >/dev/null 2>&1"
check "... and make the same model.so" cmp "$tmp/dry/model.so" "$tmp/cpu-default/cnn/model.so"

# --- the shipped example of a graph pass written in Python (examples/passes) ---
d=$tmp/example_pass
m=$tmp/models/transformer
check "examples/passes: the pipeline builds" run 0 run "$src/examples/passes/pipeline.yaml" --input "$m.onnx" \
  --build-dir "$d" --set import_args="--shape input=$(shape_of "$m.input.npy")"
check "examples/passes: the Python pass fused multiply-adds" contains "$d/fma.ir" " = ewise_fma(%"
check "examples/passes: verify, every stage agrees" run 0 verify "$src/examples/passes/pipeline.yaml" \
  --input "$m.onnx" --build-dir "$d" --set import_args="--shape input=$(shape_of "$m.input.npy")" --data "input=$m.input.npy"
check "examples/passes: model.so matches PyTorch" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$m.input.npy' \
  --output-dir '$d/out'" && compare "$d/out/output.npy" "$m.output.npy"

# --- a custom stage: any executable reading and writing the IR ---
mkdir -p "$tmp/custom"
cat >"$tmp/custom/reprint.sh" <<'SH'
#!/bin/sh
# A custom stage: prints the IR canonically (called as: reprint.sh IN -o OUT).
exec "$MLCC_BIN/mlcc-inspect" --print "$1" -o "$3"
SH
cat >"$tmp/custom/drop_relu.sh" <<'SH'
#!/bin/sh
# A broken stage: relu no longer clamps (called as: drop_relu.sh IN -o OUT).
sed 's/ < 0.0, 0.0,/ < -1000000.0, 0.0,/' "$1" >"$3.tmp" && mv "$3.tmp" "$3"
SH
chmod +x "$tmp/custom/"*.sh
cat >"$tmp/custom/p.yaml" <<'YAML'
name: custom
target: llvm
stages:
  - {name: import, tool: mlcc-import, args: [--shape, input=4x784]}
  - {name: fuse, tool: mlcc-fuse}
  - {name: legalize, tool: mlcc-legalize}
  - {name: reprint, tool: ./reprint.sh}
  - {name: schedule, tool: mlcc-schedule, args: [--target, "${target}"]}
  - {name: codegen, tool: mlcc-codegen}
  - {name: link, tool: mlcc-link, output: model.so}
YAML
export MLCC_BIN=$bin
check "a pipeline with a custom stage builds" run 0 run "$tmp/custom/p.yaml" --input "$tmp/models/mlp.onnx" --build-dir "$tmp/custom/b"
check "the custom stage's output is kept" test -s "$tmp/custom/b/reprint.ir"
check "verify: every stage agrees" run 0 verify "$tmp/custom/p.yaml" --input "$tmp/models/mlp.onnx" --build-dir "$tmp/custom/b" \
  --data "input=$tmp/models/mlp.input.npy"
check "verify: the table" contains "$tmp/out" "^reprint *reprint.ir *ir *legalize .* ok"
check "verify: the object file is skipped" contains "$tmp/out" "^codegen *codegen.o *skipped"
check "verify: model.so against the last IR" contains "$tmp/out" "^link *model.so *model *schedule .* ok"
check "verify: the verdict" contains "$tmp/out" "every stage agrees with the one before it"
sed -i 's|tool: ./reprint.sh|tool: ./drop_relu.sh|' "$tmp/custom/p.yaml"
check "verify finds the broken stage (exit 1)" run 1 verify "$tmp/custom/p.yaml" --input "$tmp/models/mlp.onnx" \
  --build-dir "$tmp/custom/b"
check "verify names it" contains "$tmp/out" "first stage that changed the answer: reprint (reprint.ir, against legalize"
check "verify --json" run 1 verify "$tmp/custom/p.yaml" --input "$tmp/models/mlp.onnx" --build-dir "$tmp/custom/b" --json
check "verify --json matches the schema" py "$tmp/out" "$src/artifacts_schema/verify.schema.json" <<'PY'
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
jsonschema.validate(doc, json.load(open(sys.argv[2])))
assert doc["first_bad_stage"] == "reprint", doc["first_bad_stage"]
assert [s["kind"] for s in doc["stages"]] == ["ir", "ir", "ir", "ir", "ir", "skipped", "model"], doc
PY
cat >"$tmp/custom/fail.sh" <<'SH'
#!/bin/sh
echo "fail.sh: this stage always fails" >&2
exit 3
SH
chmod +x "$tmp/custom/fail.sh"
sed -i 's|tool: ./drop_relu.sh|tool: ./fail.sh|' "$tmp/custom/p.yaml"
rm -rf "$tmp/custom/b"
check "a failing stage fails the run (exit 1)" run 1 run "$tmp/custom/p.yaml" --input "$tmp/models/mlp.onnx" --build-dir "$tmp/custom/b"
cat "$tmp/err" >>"$tmp/out"
check "... with the stage's message" contains "$tmp/out" "fail.sh: this stage always fails"
check "... and nothing after it ran" absent "$tmp/custom/b/schedule.ir"

finish cli.pipeline
