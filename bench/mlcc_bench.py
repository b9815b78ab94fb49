#!/usr/bin/env python3
"""The mlcc benchmark suite (bench/run.sh runs it in its virtual environment).

For each model of the public suite (tests/models/generate.py): the whole chain
    mlcc-import -> mlcc-fuse -> mlcc-legalize -> mlcc-schedule --target llvm
    -> mlcc-codegen --target llvm -> mlcc-link
timed stage by stage, one output checked against PyTorch's, then the latency of
model.so (`mlcc-run model.so --bench N --json --threads T`) and of ONNX Runtime
(intra_op_num_threads=T, sequential execution, all graph optimizations; the
median of N runs after warm-up) in the same run, at each thread count, and
their ratio (mlcc / ORT) with the geometric mean over the models. Contestants
are measured in turn over --rounds rounds (default 3), so that a change in the
load of a shared machine affects them alike.

Matmul: C = A B for square fp32 matrices (256..2048): mlcc's generated code
(an ONNX MatMul graph through the same chain, default schedules, checked
against numpy), OpenBLAS cblas_sgemm (bench/blas_bench) and the machine's FMA
peak (bench/fma_peak), in GFLOPS with the ratios.

Writes OUT/bench.json (artifacts_schema/bench.schema.json), OUT/bench.png and a
table on stdout, with pass/fail for the issue's targets. A stage that fails or
a tool that is not built is recorded with its message; the rest still runs.

    mlcc_bench.py --bin build/release/bin --src . --out build/bench [--quick]
        [--parts models,matmul] [--models mlp,cnn] [--sizes 256,1024]
        [--threads 1,2] [--runs N] [--patterns FILE] [--no-chart]
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

STAGES = ["import", "fuse", "legalize", "schedule", "codegen", "link"]
PUBLIC_MODELS = ["mlp", "cnn", "resnet18", "mobilenetv2", "transformer"]
QUICK_MODELS = ["mlp", "cnn"]
SIZES = [256, 512, 1024, 2048]
TOOL_TIMEOUT_S = 900
DEBIAN_PYTHON = "/usr/bin/python3"  # has torch/torchvision/onnx for generate.py
# mlcc-fuse's default pipeline with library dispatch first (used with --patterns).
PATTERN_PIPELINE = "canonicalize,fold-constants,fuse-by-pattern,fuse-ops,dead-code-elimination"

# Targets of issue 6 on the 2-core AVX-512 machine.
MAX_MODEL_RATIO = 3.0
MAX_GEOMEAN_RATIO = 2.0
MIN_MATMUL_1024_VS_BLAS = 0.6
MAX_RESNET18_COMPILE_S = 30.0


class StageError(Exception):
    """A step that could not be done: `stage` names it, the message says why."""

    def __init__(self, stage, message):
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message

    def record(self):
        return {"stage": self.stage, "message": self.message}


def shorten(text, lines=8, chars=800):
    text = "\n".join(text.strip().splitlines()[-lines:])
    return text if len(text) <= chars else "..." + text[-chars:]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Tools:
    """The mlcc tools and bench programs of one build's bin directory."""

    def __init__(self, bin_dir):
        self.bin = Path(bin_dir)

    def path(self, name, stage):
        p = self.bin / name
        if not os.access(p, os.X_OK):
            raise StageError(stage, f"{name} is not built ({p} is missing)")
        return str(p)

    def run(self, stage, name, args, timeout=TOOL_TIMEOUT_S):
        """Runs a tool; returns (seconds, stdout). Raises StageError on failure."""
        argv = [self.path(name, stage)] + [str(a) for a in args]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StageError(stage, f"{name} did not finish in {timeout} s")
        seconds = time.perf_counter() - t0
        if p.returncode != 0:
            raise StageError(stage, f"{name} exited {p.returncode}: {shorten(p.stderr or p.stdout)}")
        return seconds, p.stdout

    def json(self, stage, name, args, timeout=TOOL_TIMEOUT_S):
        """Runs a tool printing JSON (its last non-empty stdout line)."""
        _, out = self.run(stage, name, args, timeout)
        lines = [l for l in out.splitlines() if l.strip()]
        try:
            return json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            raise StageError(stage, f"{name} printed no JSON: {shorten(out)}")


# ---------------------------------------------------------------------------
# Compiling and running through mlcc
# ---------------------------------------------------------------------------


def compile_chain(tools, onnx_path, work, shapes=(), patterns=None):
    """onnx -> model.so through the six tools, each timed. Returns (compile_s,
    so path); on failure raises StageError with `compile_s` of the stages done."""
    work.mkdir(parents=True, exist_ok=True)
    for old in work.iterdir():  # a stale model.so must never be measured
        if old.is_file():
            old.unlink()
    ir = {s: work / f"{s}.ir" for s in ("import", "fuse", "legalize", "schedule")}
    steps = [
        ("import", "mlcc-import", [onnx_path, "-o", ir["import"]] + [a for s in shapes for a in ("--shape", s)]),
        ("fuse", "mlcc-fuse", [ir["import"], "-o", ir["fuse"]] +
         (["--passes", PATTERN_PIPELINE, "--patterns", patterns] if patterns else [])),
        ("legalize", "mlcc-legalize", [ir["fuse"], "-o", ir["legalize"]]),
        ("schedule", "mlcc-schedule", [ir["legalize"], "--target", "llvm", "-o", ir["schedule"]]),
        ("codegen", "mlcc-codegen", [ir["schedule"], "--target", "llvm", "-o", work / "model.o"]),
        ("link", "mlcc-link", [work / "model.o", "-o", work / "model.so"]),
    ]
    compile_s = {}
    for stage, tool, args in steps:
        try:
            compile_s[stage], _ = tools.run(stage, tool, args)
        except StageError as e:
            e.compile_s = dict(compile_s)
            raise
    compile_s["total"] = sum(compile_s[s] for s in STAGES)
    return compile_s, work / "model.so"


def input_args(inputs):
    return [a for name, path in inputs.items() for a in ("--input", f"{name}={path}")]


def mlcc_outputs(tools, so, inputs, out_dir):
    """Runs model.so once; returns {output name: array}."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tools.run("mlcc-run", "mlcc-run", [so] + input_args(inputs) + ["--output-dir", out_dir])
    return {p.stem: np.load(p) for p in sorted(out_dir.glob("*.npy"))}


def mlcc_latency(tools, so, inputs, runs, warmup, threads):
    """`mlcc-run model.so --bench N --warmup W --json --threads T` -> timing record."""
    r = tools.json("mlcc-run", "mlcc-run", [so] + input_args(inputs) +
                   ["--bench", runs, "--warmup", warmup, "--json", "--threads", threads])
    missing = [k for k in ("median_ms", "min_ms", "mean_ms", "runs") if k not in r]
    if missing:
        raise StageError("mlcc-run", f"mlcc-run --json lacks {', '.join(missing)}: {json.dumps(r)}")
    if not r["median_ms"] > 0:
        raise StageError("mlcc-run", f"mlcc-run reported a median of {r['median_ms']} ms")
    return {"median_ms": float(r["median_ms"]), "min_ms": float(r["min_ms"]), "mean_ms": float(r["mean_ms"]),
            "runs": int(r["runs"]), "threads": int(r.get("threads", threads))}


def timing_from(samples_ms, threads):
    return {"median_ms": statistics.median(samples_ms), "min_ms": min(samples_ms),
            "mean_ms": statistics.fmean(samples_ms), "runs": len(samples_ms), "threads": threads}


def combine(timings):
    """One record from several rounds: the median of their medians, the least
    minimum, the mean over all runs."""
    if len(timings) == 1:
        return timings[0]
    runs = sum(t["runs"] for t in timings)
    return {"median_ms": statistics.median(t["median_ms"] for t in timings),
            "min_ms": min(t["min_ms"] for t in timings),
            "mean_ms": sum(t["mean_ms"] * t["runs"] for t in timings) / runs, "runs": runs,
            "threads": timings[0]["threads"]}


def alternate(measures, rounds, runs):
    """Measures each contestant `rounds` times in turn (A B A B ...), the runs
    split over the rounds, so that a change in the load of a shared machine
    hits all of them alike. measures: {name: f(runs) -> timing}. Returns
    ({name: combined timing, None when it failed}, the first error record)."""
    per_round = max(1, math.ceil(runs / rounds))
    got, failed, error = {k: [] for k in measures}, set(), None
    for _ in range(rounds):
        for name, measure in measures.items():
            if name in failed:
                continue
            try:
                got[name].append(measure(per_round))
            except StageError as e:
                failed.add(name)
                error = error or e.record()
    return {k: None if k in failed or not v else combine(v) for k, v in got.items()}, error


def ort_latency(onnx_path, feeds, runs, warmup, threads):
    """ONNX Runtime on the CPU: T intra-op threads, sequential execution, all
    graph optimizations; the median of `runs` timed runs after warm-up."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise StageError("ort", f"onnxruntime is not installed in this Python ({sys.executable}): {e}")
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
        for _ in range(warmup):
            sess.run(None, feeds)
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter_ns()
            sess.run(None, feeds)
            samples.append((time.perf_counter_ns() - t0) / 1e6)
    except Exception as e:  # onnxruntime raises its own exception types
        raise StageError("ort", f"onnxruntime: {shorten(str(e))}")
    return timing_from(samples, threads)


def check_close(got, ref, atol, tolerance_text):
    if got.shape != ref.shape:
        return {"ok": False, "max_abs_err": 1e300, "tolerance": f"shape {list(got.shape)} != {list(ref.shape)}"}
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    err = float(diff.max()) if diff.size else 0.0
    ok = bool(np.all(diff <= atol)) and bool(np.all(np.isfinite(got)))
    return {"ok": ok, "max_abs_err": err if math.isfinite(err) else 1e300, "tolerance": tolerance_text}


# ---------------------------------------------------------------------------
# The model suite
# ---------------------------------------------------------------------------


def generate_models(src, out, names):
    out.mkdir(parents=True, exist_ok=True)
    cmd = [DEBIAN_PYTHON, str(src / "tests/models/generate.py"), "--out", str(out), "--only"] + names
    log(f"generating models: {' '.join(names)}")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"mlcc_bench: {' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads((out / "manifest.json").read_text())["models"]


def bench_model(tools, name, entry, model_dir, work, args):
    rec = {"name": name, "compile_s": {}, "mlcc": {}, "ort": {}, "ratio": {}, "check": None, "error": None}
    onnx_path = model_dir / entry["onnx"]
    x_path = model_dir / entry["input_data"]
    (inp,) = entry["inputs"]  # the public models have one input
    x = np.load(x_path)
    rec["input_shape"] = list(x.shape)
    shapes = []
    if any(isinstance(d, str) for d in inp["shape"]):  # bind symbolic dims to the data's shape
        shapes.append(f"{inp['name']}={'x'.join(str(d) for d in x.shape)}")
    inputs = {inp["name"]: x_path}

    so = None
    log(f"[{name}] compiling")
    try:
        rec["compile_s"], so = compile_chain(tools, onnx_path, work / name, shapes, args.patterns)
        outs = mlcc_outputs(tools, so, inputs, work / name / "out")
        ref = np.load(model_dir / entry["output_data"])
        (out_name,) = [o["name"] for o in entry["outputs"]]
        if out_name not in outs:
            raise StageError("check", f"model.so wrote {sorted(outs)}, not {out_name}")
        scale = max(1.0, float(np.abs(ref).max()))
        rec["check"] = check_close(outs[out_name], ref, 1e-3 * np.abs(ref) + 1e-4 * scale,
                                   "|mlcc - torch| <= 1e-3 |torch| + 1e-4 max(1, max|torch|)")
        if not rec["check"]["ok"]:  # a wrong answer is not timed as if it were right
            raise StageError("check", f"output differs from PyTorch's: max abs error {rec['check']['max_abs_err']:.3g}")
    except StageError as e:
        rec["compile_s"] = rec["compile_s"] or getattr(e, "compile_s", {})
        rec["error"] = e.record()
        so = None
        log(f"[{name}] {e}")

    feeds = {inp["name"]: x}
    for t in args.threads:
        key = str(t)
        log(f"[{name}] timing, {t} thread(s)")
        measures = {"ort": lambda runs: ort_latency(onnx_path, feeds, runs, args.warmup, t)}
        if so is not None:
            measures["mlcc"] = lambda runs: mlcc_latency(tools, so, inputs, runs, args.warmup, t)
        got, error = alternate(measures, args.rounds, args.runs)
        rec["ort"][key], rec["mlcc"][key] = got["ort"], got.get("mlcc")
        rec["error"] = rec["error"] or error
        m, o = rec["mlcc"][key], rec["ort"][key]
        rec["ratio"][key] = m["median_ms"] / o["median_ms"] if m and o else None
    return rec


def geomean(values):
    vals = [v for v in values if v is not None]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


# ---------------------------------------------------------------------------
# Matmul
# ---------------------------------------------------------------------------


def matmul_onnx(n, path):
    import onnx
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])
    c = helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")], f"matmul_{n}",
                              [a, b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mlcc-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def matmul_runs(n, args):
    """Timed runs per size: fewer for the big ones (a 2048 matmul is ~17 GFLOP)."""
    base = {256: 50, 512: 30, 1024: 10, 2048: 5}.get(n, 10)
    return 3 if args.quick else base


def openblas_latency(tools, n, threads, args, result):
    """bench/blas_bench for one size and thread count (1 s of calls over all
    rounds) -> timing record; its library config goes to result["openblas"]."""
    r = tools.json("openblas", "blas_bench", ["--json", "--sizes", n, "--threads", threads] +
                   (["--quick"] if args.quick else ["--min-time", 1.0 / args.rounds]))
    (x,) = r["results"]
    result["openblas"] = r["config"]
    return {"median_ms": x["median_ms"], "min_ms": x["min_ms"], "mean_ms": x["mean_ms"], "runs": x["calls"],
            "threads": x["threads"]}


def bench_matmul_size(tools, n, peak, work, args, result):
    rec = {"n": n, "flops": 2.0 * n**3, "mlcc": {}, "openblas": {}, "mlcc_gflops": {}, "openblas_gflops": {},
           "vs_openblas": {}, "vs_peak": {}, "compile_s": {}, "check": None, "error": None}
    d = work / f"matmul_{n}"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    inputs = {"a": d / "a.npy", "b": d / "b.npy"}
    so = None
    log(f"[matmul {n}] compiling")
    try:
        matmul_onnx(n, d / "matmul.onnx")
        rec["compile_s"], so = compile_chain(tools, d / "matmul.onnx", d / "chain")
        outs = mlcc_outputs(tools, so, inputs, d / "out")
        if "c" not in outs:
            raise StageError("check", f"model.so wrote {sorted(outs)}, not c")
        ref = a.astype(np.float64) @ b.astype(np.float64)
        bound = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
        rec["check"] = check_close(outs["c"], ref, 1e-4 * bound + 1e-6, "|mlcc - A@B| <= 1e-4 (|A|@|B|) + 1e-6")
        if not rec["check"]["ok"]:
            raise StageError("check", f"C differs from numpy's: max abs error {rec['check']['max_abs_err']:.3g}")
    except StageError as e:
        rec["compile_s"] = rec["compile_s"] or getattr(e, "compile_s", {})
        rec["error"] = e.record()
        so = None
        log(f"[matmul {n}] {e}")
    gflops = lambda timing: rec["flops"] / (timing["median_ms"] * 1e-3) / 1e9 if timing else None
    for t in args.threads:  # OpenBLAS and mlcc in turn, under the same load
        key = str(t)
        log(f"[matmul {n}] timing, {t} thread(s)")
        measures = {"openblas": lambda runs: openblas_latency(tools, n, t, args, result)}
        if so is not None:
            measures["mlcc"] = lambda runs: mlcc_latency(tools, so, inputs, runs, args.warmup, t)
        got, error = alternate(measures, args.rounds, matmul_runs(n, args))
        rec["openblas"][key], rec["mlcc"][key] = got["openblas"], got.get("mlcc")
        if error and error["stage"] == "openblas":
            result["error"] = result["error"] or error
        elif error:
            rec["error"] = rec["error"] or error
        g = rec["mlcc_gflops"][key] = gflops(rec["mlcc"][key])
        ob = rec["openblas_gflops"][key] = gflops(rec["openblas"][key])
        rec["vs_openblas"][key] = g / ob if g and ob else None
        pk = (peak["gflops_1"] if t == 1 else peak["gflops_all"]) if peak else None
        rec["vs_peak"][key] = g / pk if g and pk else None
    return rec


def bench_matmul(tools, args, work):
    result = {"openblas": None, "error": None, "sizes": []}
    peak = None
    log("measuring the FMA peak")
    try:
        peak = tools.json("fma_peak", "fma_peak", ["--json", "--threads", max(args.threads)] +
                          (["--quick"] if args.quick else []))
    except StageError as e:
        result["error"] = e.record()
    for n in args.sizes:
        result["sizes"].append(bench_matmul_size(tools, n, peak, work, args, result))
    return peak, result


# ---------------------------------------------------------------------------
# Targets, table, chart
# ---------------------------------------------------------------------------


def target(name, description, threshold, value, ok, detail, measured=True):
    status = "not_measured" if not measured else ("pass" if ok else "fail")
    return {"name": name, "description": description, "status": status, "value": value, "threshold": threshold,
            "detail": detail}


def evaluate_targets(models, geo, matmul, quick):
    out = []
    note = " (--quick run: not evidence)" if quick else ""
    ratios = {m["name"]: m["ratio"].get("1") for m in models}
    measured = {k: v for k, v in ratios.items() if v is not None}
    missing = [k for k in PUBLIC_MODELS if k not in measured]
    worst = max(measured.items(), key=lambda kv: kv[1]) if measured else None
    over = [k for k, v in measured.items() if v > MAX_MODEL_RATIO]
    detail = (f"worst {worst[0]} {worst[1]:.2f}x" if worst else "no model measured") + \
        (f"; above {MAX_MODEL_RATIO:g}x: {', '.join(over)}" if over else "") + \
        (f"; not measured: {', '.join(missing)}" if missing else "") + note
    out.append(target("models_within_3x", "every public model within 3x of ONNX Runtime's 1-thread latency",
                      MAX_MODEL_RATIO, worst[1] if worst else None, not over and not missing, detail, bool(measured)))

    g = geo.get("1", {}).get("value")
    detail = (f"geometric mean over {len(measured)} model(s)" if g else "no model measured") + \
        (f"; not measured: {', '.join(missing)}" if missing else "") + note
    out.append(target("geomean_within_2x", "geometric mean of the 1-thread ratios within 2x", MAX_GEOMEAN_RATIO, g,
                      g is not None and g <= MAX_GEOMEAN_RATIO and not missing, detail, g is not None))

    m1024 = next((s for s in (matmul or {}).get("sizes", []) if s["n"] == 1024), None)
    v = m1024["vs_openblas"].get("1") if m1024 else None
    if m1024 is None:
        detail = "matmul 1024 not run"
    elif v is None:
        detail = "not measured: " + (m1024["error"]["message"][:200] if m1024["error"] else "no OpenBLAS number")
    else:
        others = ", ".join(f"{k} threads {x:.0%}" for k, x in m1024["vs_openblas"].items() if k != "1" and x)
        detail = f"1 thread: mlcc {m1024['mlcc_gflops']['1']:.1f} vs OpenBLAS {m1024['openblas_gflops']['1']:.1f} GFLOPS" + \
            (f" ({others})" if others else "")
    out.append(target("matmul_1024_vs_openblas", "matmul 1024 (fp32, 1 thread) at least 60% of OpenBLAS",
                      MIN_MATMUL_1024_VS_BLAS, v, v is not None and v >= MIN_MATMUL_1024_VS_BLAS, detail + note,
                      v is not None))

    r18 = next((m for m in models if m["name"] == "resnet18"), None)
    t = r18["compile_s"].get("total") if r18 else None
    if r18 is None:
        detail = "resnet18 not run"
    elif t is None:
        detail = "not measured: " + (r18["error"]["message"][:200] if r18["error"] else "chain incomplete")
    else:
        detail = ", ".join(f"{s} {r18['compile_s'][s]:.1f}" for s in STAGES) + " s"
    out.append(target("resnet18_compile_time", "ResNet-18 full chain (no tuning) under 30 s", MAX_RESNET18_COMPILE_S,
                      t, t is not None and t < MAX_RESNET18_COMPILE_S, detail + note, t is not None))
    return out


def fmt(v, spec=".3f", none="-"):
    return none if v is None else format(v, spec)


def print_table(doc):
    threads = doc["config"]["threads"]
    m = doc["machine"]
    print(f"mlcc benchmarks: {m['cpu']}, {m['cores']} cores, {m['isa']}, load {m.get('load_average')}"
          f"{'  [--quick]' if doc['quick'] else ''}")
    if doc["models"]:
        rounds = doc["config"]["rounds"]
        print(f"\nModel latency (ms, median of {doc['config']['runs']} runs" +
              (f" in {rounds} alternating rounds" if rounds > 1 else "") + "; ratio = mlcc / ONNX Runtime)")
        head = f"{'model':<13}{'compile s':>10}"
        for t in threads:
            head += f"{f'mlcc {t}T':>11}{f'ORT {t}T':>10}{'ratio':>7}"
        print(head + "  check")
        for r in doc["models"]:
            line = f"{r['name']:<13}{fmt(r['compile_s'].get('total'), '.2f'):>10}"
            for t in map(str, threads):
                mm, oo = r["mlcc"].get(t), r["ort"].get(t)
                line += f"{fmt(mm and mm['median_ms']):>11}{fmt(oo and oo['median_ms']):>10}{fmt(r['ratio'].get(t), '.2f'):>7}"
            line += "  " + ("ok" if r["check"] and r["check"]["ok"] else "-" if not r["check"] else "WRONG")
            print(line)
            if r["error"]:
                print(f"{'':<13}{r['error']['stage']}: {r['error']['message'].splitlines()[0][:150]}")
        line = f"{'geomean':<13}{'':>10}"
        for t in map(str, threads):
            g = doc["geomean_ratio"].get(t, {})
            line += f"{'':>21}{fmt(g.get('value'), '.2f'):>7}"
        print(line)
        print(f"\nCompile time per stage (s)\n{'model':<13}" + "".join(f"{s:>10}" for s in STAGES + ["total"]))
        for r in doc["models"]:
            print(f"{r['name']:<13}" + "".join(f"{fmt(r['compile_s'].get(s), '.2f'):>10}" for s in STAGES + ["total"]))
    mm = doc["matmul"]
    if mm["sizes"] or doc["peak"]:
        p = doc["peak"]
        print(f"\nMatmul fp32 GFLOPS (FMA peak: " +
              (f"{p['gflops_1']:.1f} 1T, {p['gflops_all']:.1f} {p['threads']}T, {p['isa']}" if p else "not measured") +
              f"; {mm['openblas'] or 'OpenBLAS not measured'})")
        head = f"{'n':>6}"
        for t in threads:
            head += f"{f'mlcc {t}T':>10}{f'BLAS {t}T':>10}{'%BLAS':>7}{'%peak':>7}"
        print(head + "  check")
        for s in mm["sizes"]:
            line = f"{s['n']:>6}"
            for t in map(str, threads):
                line += (f"{fmt(s['mlcc_gflops'].get(t), '.1f'):>10}{fmt(s['openblas_gflops'].get(t), '.1f'):>10}"
                         f"{fmt(s['vs_openblas'].get(t), '.0%'):>7}{fmt(s['vs_peak'].get(t), '.0%'):>7}")
            line += "  " + ("ok" if s["check"] and s["check"]["ok"] else "-" if not s["check"] else "WRONG")
            print(line)
            if s["error"]:
                print(f"{'':>6} {s['error']['stage']}: {s['error']['message'].splitlines()[0][:150]}")
        if mm["error"]:
            print(f"  {mm['error']['stage']}: {mm['error']['message'][:200]}")
    print("\nTargets")
    for t in doc["targets"]:
        print(f"  {t['status'].upper():<13}{t['description']}: {fmt(t['value'], '.3g')} "
              f"(threshold {t['threshold']:g}) - {t['detail']}")


def draw_chart(doc, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        log(f"no chart: matplotlib is not installed in this Python ({e})")
        return None
    threads = [str(t) for t in doc["config"]["threads"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    names = [m["name"] for m in doc["models"]]
    w = 0.8 / max(1, len(threads))
    for i, t in enumerate(threads):
        vals = [m["ratio"].get(t) for m in doc["models"]]
        xs = [j + (i - (len(threads) - 1) / 2) * w for j in range(len(names))]
        bars = ax1.bar(xs, [v or 0 for v in vals], w, label=f"{t} thread{'s' if t != '1' else ''}")
        for x, v in zip(xs, vals):
            ax1.text(x, (v or 0), "n/a" if v is None else f"{v:.2f}", ha="center", va="bottom", fontsize=8)
    ax1.axhline(1.0, color="gray", lw=0.8)
    ax1.axhline(MAX_MODEL_RATIO, color="red", ls="--", lw=0.8, label=f"target {MAX_MODEL_RATIO:g}x")
    g = doc["geomean_ratio"].get("1", {}).get("value")
    if g:
        ax1.axhline(g, color="green", ls=":", lw=1, label=f"geomean 1T {g:.2f}x")
    ax1.set_xticks(range(len(names)), names)
    ax1.set_ylabel("latency mlcc / ONNX Runtime (lower is better)")
    ax1.set_title("Model latency ratio")
    ax1.legend(fontsize=8)

    sizes = doc["matmul"]["sizes"]
    labels = [str(s["n"]) for s in sizes]
    series = [(f"mlcc {t}T", [s["mlcc_gflops"].get(t) for s in sizes]) for t in threads] + \
             [(f"OpenBLAS {t}T", [s["openblas_gflops"].get(t) for s in sizes]) for t in threads]
    w = 0.8 / max(1, len(series))
    for i, (label, vals) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * w for j in range(len(labels))]
        ax2.bar(xs, [v or 0 for v in vals], w, label=label)
    p = doc["peak"]
    if p:
        ax2.axhline(p["gflops_1"], color="black", ls="--", lw=0.8, label=f"FMA peak 1T {p['gflops_1']:.0f}")
        ax2.axhline(p["gflops_all"], color="black", ls=":", lw=0.8,
                    label=f"FMA peak {p['threads']}T {p['gflops_all']:.0f}")
    ax2.set_xticks(range(len(labels)), labels)
    ax2.set_xlabel("n (C[n,n] = A[n,n] B[n,n], fp32)")
    ax2.set_ylabel("GFLOPS (higher is better)")
    ax2.set_title("Matmul")
    ax2.legend(fontsize=8)
    fig.suptitle(f"mlcc vs ONNX Runtime / OpenBLAS on {doc['machine']['cpu']} ({doc['machine']['cores']} cores)"
                 + (" [--quick]" if doc["quick"] else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


# ---------------------------------------------------------------------------


def machine_info():
    cpu, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "model name" and cpu in ("", platform.machine(), platform.processor()):
                cpu = val.strip()
            if key.strip() == "flags" and not flags:
                flags = set(val.split())
    except OSError:
        pass
    isa = "avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else "other"
    info = {"cpu": cpu, "cores": os.cpu_count() or 1, "isa": isa}
    if hasattr(os, "getloadavg"):
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return info


def versions(tools):
    v = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("onnxruntime", "onnx", "matplotlib"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    try:
        v["mlcc"] = tools.run("version", "mlcc-import", ["--version"])[1].strip().splitlines()[0]
    except (StageError, IndexError):
        v["mlcc"] = None
    return v


def int_list(text):
    try:
        vals = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}")
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return vals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the build's bin directory (mlcc tools, fma_peak, blas_bench)")
    ap.add_argument("--src", required=True, help="the source tree (tests/models/generate.py, artifacts_schema/)")
    ap.add_argument("--out", required=True, help="output directory: bench.json, bench.png, models/, work/")
    ap.add_argument("--quick", action="store_true", help=f"models {','.join(QUICK_MODELS)}, matmul 256, 5 runs")
    ap.add_argument("--parts", default="models,matmul", help="what to run: models, matmul (default both)")
    ap.add_argument("--models", help=f"comma-separated subset of {','.join(PUBLIC_MODELS)}")
    ap.add_argument("--sizes", type=int_list, help="matmul sizes (default 256,512,1024,2048)")
    ap.add_argument("--threads", type=int_list, default=[1, 2], help="thread counts (default 1,2)")
    ap.add_argument("--runs", type=int, help="timed runs per model latency (default 50; --quick 5)")
    ap.add_argument("--rounds", type=int, help="rounds per latency measurement, contestants in turn (default 3; "
                    "--quick 1); the reported median is the median of the rounds' medians")
    ap.add_argument("--warmup", type=int, help="untimed warm-up runs, mlcc and ONNX Runtime (default 5; --quick 2)")
    ap.add_argument("--patterns", help="mlcc-fuse --patterns FILE (e.g. pipelines/patterns/blas.yaml)")
    ap.add_argument("--no-chart", action="store_true", help="do not draw bench.png")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    if not parts <= {"models", "matmul"}:
        ap.error(f"--parts takes models and/or matmul, not {args.parts!r}")
    models = args.models.split(",") if args.models else (QUICK_MODELS if args.quick else PUBLIC_MODELS)
    if not set(models) <= set(PUBLIC_MODELS):
        ap.error(f"unknown model(s): {', '.join(sorted(set(models) - set(PUBLIC_MODELS)))}")
    if any(v is not None and v < 1 for v in (args.runs, args.rounds)) or (args.warmup or 0) < 0:
        ap.error("--runs and --rounds must be >= 1, --warmup >= 0")
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.sizes = args.sizes or ([256] if args.quick else SIZES)
    args.runs = args.runs or (5 if args.quick else 50)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    if args.patterns:
        args.patterns = str(Path(args.patterns).resolve())
    src, out = Path(args.src).resolve(), Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    tools = Tools(args.bin)

    doc = {"schema_version": 1, "created_utc": "", "quick": args.quick, "machine": machine_info(),
           "config": {"runs": args.runs, "rounds": args.rounds, "threads": args.threads, "models": models if "models" in parts else [],
                      "sizes": args.sizes if "matmul" in parts else [], "patterns": args.patterns},
           "versions": versions(tools), "peak": None, "models": [], "geomean_ratio": {},
           "matmul": {"openblas": None, "error": None, "sizes": []}, "targets": []}

    if "matmul" in parts:
        doc["peak"], doc["matmul"] = bench_matmul(tools, args, work)
    if "models" in parts:
        manifest = generate_models(src, out / "models", models)
        for name in models:
            doc["models"].append(bench_model(tools, name, manifest[name], out / "models", work, args))
    for t in map(str, args.threads):
        ratios = [m["ratio"].get(t) for m in doc["models"]]
        doc["geomean_ratio"][t] = {"value": geomean(ratios), "models": sum(r is not None for r in ratios)}
    doc["targets"] = evaluate_targets(doc["models"], doc["geomean_ratio"], doc["matmul"] if "matmul" in parts else None,
                                      args.quick)
    doc["created_utc"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc["chart"] = None if args.no_chart else draw_chart(doc, out / "bench.png")

    (out / "bench.json").write_text(json.dumps(doc, indent=2) + "\n")
    print_table(doc)
    print(f"\nwrote {out / 'bench.json'}" + (f" and {out / doc['chart']}" if doc["chart"] else ""))
    try:
        import jsonschema
    except ImportError:
        log("bench.json not validated: jsonschema is not installed in this Python")
        return 0
    try:
        jsonschema.validate(doc, json.loads((src / "artifacts_schema/bench.schema.json").read_text()))
    except jsonschema.ValidationError as e:
        log(f"mlcc_bench: bench.json does not match artifacts_schema/bench.schema.json: {e.message} at {list(e.path)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
