#!/usr/bin/env python3
"""TVM MetaSchedule on an fp32 n^3 matmul, for bench/mlcc_bench.py --tvm.

Tunes C[i, j] = sum_k A[i, k] B[k, j] (TensorIR from te.create_prim_func of a
te.compute) with MetaSchedule's tune_tir (XGBoost cost model, evolutionary
search) for "llvm -mcpu=<host> -num-cores 1", max_trials_global = --trials,
in --work-dir (its JSON database: a second run on the same directory adds
--trials more candidates to what is there). The best schedule in the database
is then built (tvm.compile), exported as a shared library and re-timed in a
fresh process at 1 thread (TVM_NUM_THREADS=1; time_evaluator, the median of
--repeats single calls after a warm-up call, once C is checked against numpy).
--time LIB (what mlcc_bench.py uses to time it in turn with mlcc) does only
that last step for a library a tuning run built.

--model FILE.onnx tunes a whole model instead: TVM's ONNX frontend (Relax),
then the steps of relax's static_shape_tuning pipeline (legalization, fusion,
tune_relax: MetaSchedule over every fused function with --trials in all and
one build worker, the best records applied),
tvm.compile, the library exported; it is checked against --expected (the
PyTorch output: |tvm - torch| <= 1e-3 |torch| + 1e-4 max(1, max|torch|), as
mlcc's output is checked) and timed in a fresh process on --input files (the
graph inputs, in order) at 1 thread (the Relax VM's time_evaluator).

Prints one JSON line:
    {"n", "trials", "records", "tuning_s", "gflops", "median_ms", "target", "tvm", ...}
or, when TVM is missing or fails, {"error": "..."} and exits 1.

    tvm_metaschedule.py --n 1024 --trials 64 --work-dir /tmp/ms [--repeats 10]
    tvm_metaschedule.py --time /tmp/ms/best_64.so --n 1024 --repeats 10
    tvm_metaschedule.py --model mlp.onnx --input x.npy --expected y.npy --trials 1000 --work-dir /tmp/ms_mlp
    tvm_metaschedule.py --time /tmp/ms_mlp/model_1000.so --input x.npy --expected y.npy --repeats 10
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

# The runner's workers and the timing process inherit this: one thread, as
# mlcc's tuned code is timed (mlcc-run --threads 1).
os.environ["TVM_NUM_THREADS"] = "1"


def fail(msg):
    print(json.dumps({"error": msg}))
    sys.exit(1)


def import_tvm():
    try:
        import tvm  # noqa: F401
    except Exception as e:  # ImportError, or a broken install raising its own
        fail(f"TVM cannot be imported in {sys.executable}: {type(e).__name__}: {e}")
    import tvm

    try:
        from tvm.s_tir import meta_schedule as ms  # TVM >= 0.22
    except ImportError:
        try:
            from tvm import meta_schedule as ms
        except ImportError as e:
            fail(f"TVM {tvm.__version__} has neither tvm.s_tir.meta_schedule nor tvm.meta_schedule: {e}")
    return tvm, ms


def matmul_func(tvm, n):
    from tvm import te

    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def host_cpu(tvm):
    f = tvm.get_global_func("target.llvm_get_system_cpu", allow_missing=True)
    cpu = f() if f is not None else ""
    return cpu or "generic"


def llvm_target(tvm):
    """The target string and Target: this CPU, one core (as mlcc-tune's)."""
    cpu = host_cpu(tvm)
    target_str = f"llvm -mcpu={cpu} -num-cores 1"
    try:  # TVM >= 0.26 takes only the dict form
        return target_str, tvm.target.Target({"kind": "llvm", "mcpu": cpu, "num-cores": 1})
    except Exception:
        return target_str, tvm.target.Target(target_str)


def time_in_fresh_process(argv):
    """This script's --time in a fresh process (nothing of the tuning left in
    it: threads, caches, the XGBoost model) -> its JSON."""
    p = subprocess.run([sys.executable, __file__, "--time"] + [str(a) for a in argv], capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    try:
        timed = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        fail(f"the timing process exited {p.returncode} without JSON: {(p.stderr or p.stdout).strip()[-600:]}")
    if p.returncode != 0 or "error" in timed:
        fail(f"timing: {timed.get('error', p.stderr.strip()[-600:])}")
    return timed


def count_records(work_dir):
    p = Path(work_dir) / "database_tuning_record.json"
    try:
        return sum(1 for line in p.read_text().splitlines() if line.strip())
    except OSError:
        return None


def tune(args):
    tvm, ms = import_tvm()
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    target_str, target = llvm_target(tvm)
    func = matmul_func(tvm, args.n)
    t0 = time.perf_counter()
    try:
        database = ms.tune_tir(mod=func, target=target, work_dir=str(work), max_trials_global=args.trials,
                               num_trials_per_iter=min(64, args.trials), num_tuning_cores=1, seed=args.seed)
    except Exception as e:
        fail(f"tune_tir failed: {type(e).__name__}: {str(e).strip()[-600:]}")
    tuning_s = time.perf_counter() - t0
    try:
        sch = ms.tir_integration.compile_tir(database, func, target)
        if sch is None:
            fail(f"no valid schedule in the database after {args.trials} trials")
        lib = tvm.compile(sch.mod, target=target)
        records = count_records(work)
        so = work / f"best_{records}.so"
        lib.export_library(str(so))
    except SystemExit:
        raise
    except Exception as e:
        fail(f"building the best schedule failed: {type(e).__name__}: {str(e).strip()[-600:]}")
    timed = time_in_fresh_process([so, "--n", args.n, "--repeats", args.repeats])
    print(json.dumps({"n": args.n, "trials": args.trials, "records": records, "tuning_s": tuning_s,
                      "gflops": timed["gflops"], "median_ms": timed["median_ms"], "min_ms": timed["min_ms"],
                      "repeats": timed["repeats"], "max_abs_err": timed["max_abs_err"], "target": target_str,
                      "num_tuning_cores": 1, "tvm": tvm.__version__, "library": str(so)}))


def tune_model(args):
    tvm, ms = import_tvm()
    import numpy as np

    try:
        import onnx
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx
    except Exception as e:
        fail(f"TVM's ONNX frontend cannot be imported: {type(e).__name__}: {e}")
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    target_str, target = llvm_target(tvm)
    model = onnx.load(args.model)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if len(names) != len(args.input):
        fail(f"{args.model} has {len(names)} graph input(s) ({', '.join(names)}); --input gave {len(args.input)}")
    shapes = {name: list(np.load(path).shape) for name, path in zip(names, args.input)}
    t0 = time.perf_counter()
    try:
        # relax.pipeline.static_shape_tuning_pipeline's steps, with the
        # builder of tune_tir's num_tuning_cores=1 (one worker).
        mod = from_onnx(model, shape_dict=shapes)
        with target:
            mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                            relax.transform.CanonicalizeBindings(),
                                            relax.pipeline.zero_pipeline()])(mod)
        ms.relax_integration.tune_relax(mod, {}, target, str(work), args.trials,
                                        num_trials_per_iter=min(64, args.trials),
                                        builder=ms.builder.LocalBuilder(max_workers=1), seed=args.seed)
        with target:
            mod = relax.transform.MetaScheduleApplyDatabase(str(work))(mod)
    except Exception as e:
        fail(f"tuning failed: {type(e).__name__}: {str(e).strip()[-600:]}")
    tuning_s = time.perf_counter() - t0
    try:
        ex = tvm.compile(mod, target=target)
        so = work / f"model_{args.trials}.so"
        ex.export_library(str(so))
    except Exception as e:
        fail(f"building the tuned model failed: {type(e).__name__}: {str(e).strip()[-600:]}")
    timed = time_in_fresh_process([so, "--expected", args.expected, "--repeats", args.repeats] +
                                  [a for path in args.input for a in ("--input", path)])
    print(json.dumps({"model": str(args.model), "trials": args.trials, "records": count_records(work),
                      "tuning_s": tuning_s, "median_ms": timed["median_ms"], "min_ms": timed["min_ms"],
                      "repeats": timed["repeats"], "max_abs_err": timed["max_abs_err"], "target": target_str,
                      "num_tuning_cores": 1, "tvm": tvm.__version__, "library": str(so)}))


def time_model(args):
    tvm, _ = import_tvm()
    import numpy as np
    from tvm import relax

    try:
        dev = tvm.cpu(0)
        vm = relax.VirtualMachine(tvm.runtime.load_module(args.time), dev)
        feeds = [tvm.runtime.tensor(np.load(path), dev) for path in args.input]
        out = vm["main"](*feeds)
        got = (out.numpy() if hasattr(out, "numpy") else out[0].numpy()).astype(np.float64)
        ref = np.load(args.expected).astype(np.float64)
        if got.shape != ref.shape:
            fail(f"output shape {got.shape}, PyTorch's {ref.shape}")
        err = np.abs(got - ref)
        if not np.all(err <= 1e-3 * np.abs(ref) + 1e-4 * max(1.0, float(np.abs(ref).max()))):
            fail(f"output differs from PyTorch's: max abs error {float(err.max()):.3g}")  # not timed
        ev = vm.time_evaluator("main", dev, number=1, repeat=args.repeats, min_repeat_ms=0)
        results = sorted(ev(*feeds).results)
    except SystemExit:
        raise
    except Exception as e:
        fail(f"{type(e).__name__}: {str(e).strip()[-600:]}")
    median = statistics.median(results)
    print(json.dumps({"median_ms": median * 1e3, "min_ms": results[0] * 1e3,
                      "mean_ms": statistics.fmean(results) * 1e3, "repeats": len(results),
                      "max_abs_err": float(err.max())}))


def time_library(args):
    tvm, _ = import_tvm()
    import numpy as np

    n = args.n
    try:
        mod = tvm.runtime.load_module(args.time)
        dev = tvm.cpu(0)
        rng = np.random.default_rng(n)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        ta, tb = tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev)
        tc = tvm.runtime.tensor(np.zeros((n, n), np.float32), dev)
        mod["main"](ta, tb, tc)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        bound = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        err = np.abs(tc.numpy().astype(np.float64) - ref)
        if not np.all(err <= 1e-4 * bound + 1e-6):  # a wrong answer is not timed
            fail(f"C differs from numpy's: max abs error {float(err.max()):.3g}")
        # One call per repeat after a warm-up call, as mlcc-run --bench times.
        ev = mod.time_evaluator("main", dev, number=1, repeat=args.repeats, min_repeat_ms=0)
        results = sorted(ev(ta, tb, tc).results)
    except SystemExit:
        raise
    except Exception as e:
        fail(f"{type(e).__name__}: {str(e).strip()[-600:]}")
    median = statistics.median(results)
    print(json.dumps({"gflops": 2.0 * n**3 / median / 1e9, "median_ms": median * 1e3, "min_ms": results[0] * 1e3,
                      "mean_ms": statistics.fmean(results) * 1e3, "repeats": len(results),
                      "max_abs_err": float(err.max())}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1024, help="matrix size (default 1024)")
    ap.add_argument("--trials", type=int, help="max_trials_global of this run")
    ap.add_argument("--work-dir", help="MetaSchedule's work directory (its database carries over)")
    ap.add_argument("--repeats", type=int, default=10, help="timed calls of the best schedule (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="the search's seed (default 0)")
    ap.add_argument("--time", metavar="LIB", help="only check and time LIB (a library a tuning run built)")
    ap.add_argument("--model", metavar="ONNX", help="tune this whole model instead of the matmul")
    ap.add_argument("--input", action="append", default=[], metavar="NPY",
                    help="a model input, in the graph's input order (with --model, or --time of a model)")
    ap.add_argument("--expected", metavar="NPY", help="the model's expected output (with --input)")
    args = ap.parse_args()
    if args.n < 1 or args.repeats < 1:
        ap.error("--n and --repeats must be >= 1")
    if (args.model or args.input) and not (args.input and args.expected):
        ap.error("a model needs --input NPY (each graph input) and --expected NPY")
    if args.time:
        return time_model(args) if args.input else time_library(args)
    if not args.trials or args.trials < 1 or not args.work_dir:
        ap.error("--trials N (>= 1) and --work-dir DIR are required")
    try:
        tune_model(args) if args.model else tune(args)
    except SystemExit:
        raise
    except Exception:
        fail("unexpected: " + traceback.format_exc()[-800:])


if __name__ == "__main__":
    main()
