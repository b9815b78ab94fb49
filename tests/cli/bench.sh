#!/usr/bin/env bash
# The benchmark suite's parts that need no timing: bench/fma_peak and
# bench/blas_bench run and print sane JSON (positive GFLOPS, a correct sgemm),
# reject bad arguments (exit 2); bench/mlcc_bench.py in --quick mode (Debian's
# Python: no ONNX Runtime, so its timings are recorded as missing) writes a
# bench.json that matches artifacts_schema/bench.schema.json, with the mlp and
# a 64x64 matmul through the whole chain checked against PyTorch/numpy when the
# chain's tools are built (else the missing tool is named); with --tune-trials 4
# the same run also tunes both (mlcc-tune), checks and times the tuned builds
# and records the tuned fields. No timing asserts.
source "$2/tests/cli/lib/common.sh"
tool=$bin/fma_peak
schema=$src/artifacts_schema/bench.schema.json

check "fma_peak --quick --json" run 0 --quick --json --threads 2
check "fma_peak reports positive GFLOPS" py "$tmp/out" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
assert r["isa"] in ("avx512", "avx2"), r
assert r["threads"] == 2, r
for k in ("gflops_1", "gflops_all"):
    assert math.isfinite(r[k]) and 0 < r[k] < 1e5, r
assert {p["isa"] for p in r["per_isa"]} >= {r["isa"]}, r
PY
check "fma_peak table" run 0 --quick
check "fma_peak table names the peak" contains "$tmp/out" "^peak: .* GFLOPS"
check "fma_peak --threads 0 is a usage error" run 2 --threads 0
check "fma_peak unknown argument is a usage error" run 2 --bogus

tool=$bin/blas_bench
check "blas_bench --quick --json" run 0 --quick --json --sizes 64,100 --threads 1,all
check "blas_bench results are correct and positive" py "$tmp/out" <<'PY'
import json, math, os, sys
r = json.load(open(sys.argv[1]))
assert r["library"] == "openblas" and "OpenBLAS" in r["config"], r
res = r["results"]
assert [(x["n"], x["threads"]) for x in res] == [(64, 1), (64, os.cpu_count()), (100, 1), (100, os.cpu_count())], res
for x in res:
    assert x["calls"] >= 2 and 0 < x["min_ms"] <= x["median_ms"], x
    assert math.isfinite(x["gflops"]) and x["gflops"] > 0, x
    assert x["max_rel_err"] < 1e-4, x
PY
check "blas_bench --sizes x is a usage error" run 2 --sizes x
check "blas_bench --threads 0 is a usage error" run 2 --threads 0

# The driver through its real code path, with Debian's Python.
/usr/bin/python3 "$src/bench/mlcc_bench.py" --bin "$bin" --src "$src" --out "$tmp/b" --quick --models mlp \
  --sizes 64 --runs 2 --no-chart --tune-trials 4 >"$tmp/drv.out" 2>"$tmp/drv.err"
rc=$?
check "mlcc_bench.py --quick exits 0" test $rc -eq 0 || sed 's/^/    /' "$tmp/drv.err" | tail -20
check "mlcc_bench.py prints the targets" contains "$tmp/drv.out" "^Targets"
check "bench.json matches the schema" py "$tmp/b/bench.json" "$schema" "$bin" <<'PY'
import json, os, sys, jsonschema
doc = json.load(open(sys.argv[1]))
jsonschema.validate(doc, json.load(open(sys.argv[2])))
assert doc["quick"] and doc["peak"]["gflops_1"] > 0, doc["peak"]
assert [t["name"] for t in doc["targets"]] == ["models_within_3x", "geomean_within_2x", "matmul_1024_vs_openblas",
                                                "resnet18_compile_time", "tuned_models_vs_ort",
                                                "tuned_matmul_1024_vs_peak", "tuning_never_slower",
                                                "tuned_vs_metaschedule", "untuned_models_vs_ort_1t",
                                                "untuned_models_vs_ort_2t", "two_threads_not_slower",
                                                "gemm_vs_peak_1t", "gemm_vs_openblas_1t", "resnet18_compile_under_5s"]
targets = {t["name"]: t for t in doc["targets"]}
assert doc["config"]["tune_trials"] == 4 and doc["tuned_geomean_ratio"]["value"] is None, doc["config"]
# No ONNX Runtime, no 1024 GEMM, no --tvm: those tuning targets are not measured.
for name in ("tuned_models_vs_ort", "tuned_matmul_1024_vs_peak", "tuned_vs_metaschedule"):
    assert targets[name]["status"] == "not_measured", targets[name]
# Only a 64^3 GEMM and the MLP: issue 15's GEMM sizes and ResNet-18 are not measured.
for name in ("gemm_vs_peak_1t", "gemm_vs_openblas_1t", "resnet18_compile_under_5s"):
    assert targets[name]["status"] == "not_measured" and targets[name]["value"] is None, targets[name]
(mm,) = doc["matmul"]["sizes"]
assert mm["n"] == 64 and mm["openblas_gflops"]["1"] > 0, mm
(mlp,) = doc["models"]
# Without ONNX Runtime the ORT timings are missing, never invented.
assert mlp["ort"] == {"1": None, "2": None} and mlp["ratio"] == {"1": None, "2": None}, mlp
chain = ["mlcc-import", "mlcc-fuse", "mlcc-legalize", "mlcc-schedule", "mlcc-codegen", "mlcc-link"]
missing = [t for t in chain if not os.access(os.path.join(sys.argv[3], t), os.X_OK)]
has_tune = os.access(os.path.join(sys.argv[3], "mlcc-tune"), os.X_OK)
for rec in (mm, mlp):
    tu = rec["tuned"]
    assert tu["trials"] == 4 and tu["target"] == "llvm -num-cores=1", tu
    if missing:  # the first missing tool's stage is named
        assert rec["error"] and missing[0] in rec["error"]["message"], rec["error"]
        assert rec["check"] is None
        assert tu["error"] and tu["timing"] is None, tu
    else:  # compiled, checked against the reference, timed
        assert rec["check"] and rec["check"]["ok"], rec
        assert set(rec["compile_s"]) == {"import", "fuse", "legalize", "schedule", "codegen", "link", "total"}
        assert rec["mlcc"]["1"]["median_ms"] > 0, rec
        if not has_tune:  # named, never timed
            assert tu["error"] and "mlcc-tune" in tu["error"]["message"] and tu["timing"] is None, tu
            continue
        # tuned, compiled, checked like the untuned build, timed at 1 thread
        assert tu["error"] is None and tu["check"]["ok"], tu
        assert 1 <= tu["measured"] <= 4 and tu["tuning_s"] > 0, tu
        assert tu["curve"] and tu["curve"][-1]["trials"] <= 4 and tu["curve"][-1]["end_to_end_ms"] > 0, tu
        assert os.path.isfile(os.path.join(os.path.dirname(sys.argv[1]), tu["log"])), tu["log"]
        assert tu["timing"]["median_ms"] > 0 and tu["timing"]["threads"] == 1, tu
        assert tu["vs_untuned"] > 0, tu
if not missing:  # the MLP timed at 1 and 2 threads in the same rounds: judged where it has a parallel loop,
    # listed with its ratio otherwise (the same code at both thread counts)
    t2 = targets["two_threads_not_slower"]
    ratio = mlp["mlcc"]["2"]["median_ms"] / mlp["mlcc"]["1"]["median_ms"]
    if mlp["parallel_loops"]:
        assert t2["status"] in ("pass", "fail") and abs(t2["value"] - ratio) < 1e-9 and "mlp" in t2["detail"], t2
    else:
        assert mlp["parallel_loops"] == 0 and t2["status"] == "not_measured" and t2["value"] is None, t2
        assert f"not judged): mlp {ratio:.2f}x" in t2["detail"], t2
mlp_t, mm_t = mlp["tuned"], mm["tuned"]
assert mlp_t["ratio"] is None  # no ONNX Runtime: no ratio, never invented
if has_tune and not missing:
    assert mm_t["gflops"] > 0 and mm_t["vs_peak"] > 0 and mm_t["vs_openblas"] > 0, mm_t
    assert targets["tuning_never_slower"]["status"] in ("pass", "fail"), targets["tuning_never_slower"]
print("  chain tools missing:", ", ".join(missing) or "none", "; mlcc-tune:", "built" if has_tune else "missing")
PY
check "a broken bench.json fails the schema" py "$tmp/b/bench.json" "$schema" <<'PY'
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
del doc["targets"]
doc["models"][0]["ratio"]["1"] = "fast"
try:
    jsonschema.validate(doc, json.load(open(sys.argv[2])))
except jsonschema.ValidationError:
    sys.exit(0)
sys.exit(1)
PY
check "mlcc_bench.py prints the tuned columns" contains "$tmp/drv.out" "^Tuned models"
check "mlcc_bench.py --tvm without a budget is a usage error (exit 2)" \
  bash -c "/usr/bin/python3 '$src/bench/mlcc_bench.py' --bin '$bin' --src '$src' --out '$tmp/c' --tvm 2>/dev/null; test \$? -eq 2"
check "mlcc_bench.py rejects decreasing --tune-budgets (exit 2)" \
  bash -c "/usr/bin/python3 '$src/bench/mlcc_bench.py' --bin '$bin' --src '$src' --out '$tmp/c' --tune-budgets 64,16 2>/dev/null; test \$? -eq 2"
check "mlcc_bench.py rejects an unknown model (exit 2)" \
  bash -c "/usr/bin/python3 '$src/bench/mlcc_bench.py' --bin '$bin' --src '$src' --out '$tmp/c' --models nope 2>/dev/null; test \$? -eq 2"

finish bench
