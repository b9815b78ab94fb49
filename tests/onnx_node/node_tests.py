#!/usr/bin/env python3
"""The ONNX backend node tests (onnx/backend/test/data/node of a pinned onnx
wheel) through mlcc, checked against an expectations file.

Each test's model.onnx goes through mlcc-import, then its imported IR runs in
the reference interpreter (mlcc-run) and through the compiled chain
(mlcc-fuse, mlcc-legalize, mlcc-schedule, mlcc-codegen, mlcc-link, mlcc-run
on model.so); both results are compared with the test's expected outputs.
An input that the importer needs as a constant (axes, pads, shapes,
scales...) is bound with `mlcc-import --bind` when the importer asks for it
(its error names the input); the summary counts the passes that needed a
non-integer input bound apart (the issue's 90% target counts integer binds).

Outcome of a test, best first:
  pass         imported, and the interpreter and model.so both match
  interp-only  the interpreter matches; a compile stage refused it (clean error)
  refused      mlcc-import refused it (clean error: an op, dtype or form mlcc lacks)
  nodata       the test has no input data this runner can read
and never acceptable:
  wrong        a result differs from the expected output
  crash        a tool died of a signal, exited with neither 0 nor 1, or timed out

The expectations file (expected.txt) has one line per test, `NAME OUTCOME`.
The run fails on any wrong or crash, and on any test whose outcome differs
from its expectation either way (a regression, or an improvement not yet
recorded: rerun with --update to rewrite the file).

  node_tests.py --bin build/release/bin --data DIR/node --expect tests/onnx_node/expected.txt [-j N] [--update]
  node_tests.py --bin build/release/bin --fetch build/release/onnx-node-data --expect ...   # the pinned wheel's tests
  node_tests.py ... --only test_gather_elements_0 -v       # one test, saying what each stage did
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

# The node tests of this wheel (PyPI) are the suite; --fetch downloads it once.
WHEEL = "onnx-1.16.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
WHEEL_SHA256 = "0e60ca76ac24b65c25860d0f2d2cdd96d6320d062a01dd8ce87c5743603789b8"
NODE_PREFIX = "onnx/backend/test/data/node/"

RANK = {"pass": 3, "interp-only": 2, "refused": 1, "nodata": 0}
TIMEOUT_S = 120


def bf16_round_to_nearest_even(x):
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


# Tests whose stored expected outputs contradict the ONNX specification: the
# outputs are recomputed from the inputs as the specification says.
REFERENCE_DEFECTS = {
    # The stored outputs truncate to bfloat16; Cast rounds to nearest even
    # (as PyTorch and ONNX Runtime do).
    "test_cast_FLOAT_to_BFLOAT16": lambda ins: [bf16_round_to_nearest_even(ins[0])],
    "test_castlike_FLOAT_to_BFLOAT16": lambda ins: [bf16_round_to_nearest_even(ins[0])],
    "test_castlike_FLOAT_to_BFLOAT16_expanded": lambda ins: [bf16_round_to_nearest_even(ins[0])],
    # onnx 1.16's reference divided ceil_mode's last window by the whole
    # kernel (its taps past the input counted as padding); onnx >= 1.17's
    # reference, ONNX Runtime and PyTorch divide by the taps inside the
    # padded input (kernel 5, stride 3, dilation 2, no pads, 32^3 -> 9^3).
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True": lambda ins: [
        avg_pool_clipped(ins[0], kernel=5, stride=3, dilation=2, out=9)
    ],
}
# onnx 1.16's QLinearMatMul reference wraps a result outside the output
# type's range (numpy astype); the specification saturates it, as mlcc does.
for _t in ("2D", "3D"):
    for _s in ("float16", "float32"):
        REFERENCE_DEFECTS[f"test_qlinearmatmul_{_t}_int8_{_s}"] = lambda ins: [qlinear_matmul_saturated(*ins)]


def qlinear_matmul_saturated(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    """ONNX's reference QLinearMatMul (int32 accumulation, rescaled in
    float64), its result saturated to y's type."""
    acc = np.matmul(a.astype(np.int32) - a_zp.astype(np.int32), b.astype(np.int32) - b_zp.astype(np.int32))
    y = np.rint(acc * (a_scale * b_scale / y_scale) + y_zp)
    info = np.iinfo(y_zp.dtype)
    return np.clip(y, info.min, info.max).astype(y_zp.dtype)


def avg_pool_clipped(x, kernel, stride, dilation, out):
    """AveragePool without pads over every spatial axis of x (the same window
    on each), each window's taps clipped to the input, as ONNX Runtime does."""
    spatial = x.shape[2:]
    y = np.zeros(x.shape[:2] + (out,) * len(spatial), dtype=x.dtype)
    for o in np.ndindex(*y.shape[2:]):
        taps = [np.arange(i * stride, i * stride + dilation * (kernel - 1) + 1, dilation) for i in o]
        taps = [t[t < n] for t, n in zip(taps, spatial)]
        y[(...,) + o] = x[(slice(None), slice(None)) + np.ix_(*taps)].mean(axis=tuple(range(2, x.ndim)))
    return y


def sanitize(name):
    """The file name mlcc-run --output-dir gives an output."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def read_tensor(path, value_info):
    """A TensorProto file as numpy. A bfloat16 value (stored as its uint16 bit
    patterns) becomes the float32 values it holds, as mlcc-run reads and
    writes bfloat16."""
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    declared = value_info.type.tensor_type.elem_type if value_info.type.HasField("tensor_type") else 0
    if onnx.TensorProto.BFLOAT16 in (t.data_type, declared) and a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a


class Outcome(Exception):
    def __init__(self, outcome, detail):
        super().__init__(detail)
        self.outcome, self.detail = outcome, detail


def run_tool(argv, stage, log):
    """Runs one tool: returns on exit 0, raises Outcome otherwise (exit 1: a
    clean refusal of `stage`; anything else: a crash)."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Outcome("crash", f"{stage}: timed out after {TIMEOUT_S} s")
    log.append(f"$ {' '.join(argv)}\n{r.stderr}")
    if r.returncode == 0:
        return r
    lines = r.stderr.strip().splitlines()
    last = next((x for x in reversed(lines) if "error:" in x), lines[-1] if lines else "")
    if r.returncode == 1 and "error" in r.stderr:
        raise Outcome(stage, f"{stage}: {last}")
    raise Outcome("crash", f"{stage}: exit {r.returncode}: {last}")


def close(got, ref):
    """rtol 1e-3, atol 1e-5 for floats, rtol 1e-9, atol 1e-12 for float64 ones,
    which must be float64 (computed in double, not f32); NaN matches NaN;
    exact otherwise."""
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if ref.dtype.kind in "fc":
        if ref.dtype == np.float64 and got.dtype != np.float64:
            return f"dtype {got.dtype}, expected float64"
        rtol, atol = (1e-9, 1e-12) if ref.dtype == np.float64 else (1e-3, 1e-5)
        g, r = got.astype(np.float64), ref.astype(np.float64)
        if not np.allclose(g, r, rtol=rtol, atol=atol, equal_nan=True):
            with np.errstate(invalid="ignore"):
                return f"max abs error {np.nanmax(np.abs(g - r)):.3g}"
        return None
    if got.dtype != ref.dtype and not (ref.dtype == np.bool_ and got.dtype == np.bool_):
        return f"dtype {got.dtype}, expected {ref.dtype}"
    return None if np.array_equal(got, ref) else "values differ"


def compare(out_dir, names, refs, what):
    for name, ref in zip(names, refs):
        p = os.path.join(out_dir, sanitize(name) + ".npy")
        if not os.path.exists(p):
            raise Outcome("wrong", f"{what}: no output '{name}'")
        why = close(np.load(p), ref)
        if why:
            raise Outcome("wrong", f"{what}: output '{name}': {why}")


def run_test(test_dir, bin_dir, work_root, keep):
    """-> (outcome, detail, log)."""
    import onnx

    name = os.path.basename(test_dir)
    work = os.path.join(work_root, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = []
    tool = lambda t: os.path.join(bin_dir, t)  # noqa: E731
    try:
        model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
        inits = {i.name for i in model.graph.initializer}
        inputs = [i for i in model.graph.input if i.name not in inits]
        outputs = [o.name for o in model.graph.output]
        out_infos = list(model.graph.output)
        data = os.path.join(test_dir, "test_data_set_0")
        feeds = {}
        for k, i in enumerate(inputs):
            p = os.path.join(data, f"input_{k}.pb")
            try:
                a = read_tensor(p, i)
            except Exception as e:  # absent, or a sequence/optional/string this runner does not read
                raise Outcome("nodata", f"input {k}: {str(e)[:100] or 'unreadable'}")
            if a.dtype.kind in "OSU":
                raise Outcome("nodata", f"input {k}: {a.dtype} tensor")
            feeds[i.name] = (os.path.join(work, f"in{k}.npy"), a)
            np.save(feeds[i.name][0], a)
        try:
            refs = [read_tensor(os.path.join(data, f"output_{k}.pb"), out_infos[k]) for k in range(len(outputs))]
        except Exception as e:
            raise Outcome("nodata", f"outputs: {str(e)[:100]}")
        if name in REFERENCE_DEFECTS:
            refs = REFERENCE_DEFECTS[name]([a for _, a in feeds.values()])
        ir = os.path.join(work, "m.ir")
        bound = set()
        while True:
            binds = [f"--bind={n}={feeds[n][0]}" for n in sorted(bound)]
            try:
                run_tool([tool("mlcc-import"), os.path.join(test_dir, "model.onnx"), "-o", ir, "-q", *binds],
                         "refused", log)
                break
            except Outcome as o:
                # The importer names inputs it needs as constants: bind them and retry.
                asked = set(re.findall(r"--bind (\S+)=FILE\.npy", o.detail))
                if o.outcome != "refused" or not asked or not asked <= set(feeds) or asked <= bound:
                    raise
                bound |= asked
        args = []
        for n, (p, _) in feeds.items():
            if n not in bound:
                args += ["--input", f"{n}={p}"]
        run_tool([tool("mlcc-run"), ir, *args, "--output-dir", os.path.join(work, "out_interp"), "-q"], "refused",
                 log)
        compare(os.path.join(work, "out_interp"), outputs, refs, "interpreter")
        stages = [
            ("mlcc-fuse", ["m.ir", "-o", "f.ir"]),
            ("mlcc-legalize", ["f.ir", "-o", "l.ir"]),
            ("mlcc-schedule", ["l.ir", "--target", "llvm", "-o", "s.ir"]),
            ("mlcc-codegen", ["s.ir", "--target", "llvm", "-o", "m.o"]),
            ("mlcc-link", ["m.o", "-o", "m.so"]),
        ]
        for t, a in stages:
            a = [os.path.join(work, x) if x.endswith((".ir", ".o", ".so")) else x for x in a]
            try:
                run_tool([tool(t), *a] + ([] if t == "mlcc-link" else ["-q"]), "interp-only", log)
            except Outcome as o:
                if o.outcome == "interp-only":
                    o.detail = f"{t}: {o.detail.split(': ', 1)[1]}"
                raise
        run_tool([tool("mlcc-run"), os.path.join(work, "m.so"), *args, "--output-dir",
                  os.path.join(work, "out_so"), "--threads", "1", "-q"], "crash", log)
        compare(os.path.join(work, "out_so"), outputs, refs, "model.so")
        floats = sorted(n for n in bound if feeds[n][1].dtype.kind not in "iub")
        result = ("pass", ("bound: " + ",".join(sorted(bound)) if bound else "") +
                  (" (non-integer: " + ",".join(floats) + ")" if floats else ""), log)
    except Outcome as o:
        result = (o.outcome, o.detail, log)
    if not keep and result[0] not in ("wrong", "crash"):
        shutil.rmtree(work, ignore_errors=True)
    return result


def fetch_node_tests(cache):
    """CACHE/node: the pinned wheel's node tests, downloaded with pip (PyPI)
    and unpacked on first use; a partial download or unpack is never used."""
    import hashlib
    import tempfile
    import zipfile

    node = os.path.join(cache, "node")
    if os.path.isdir(node):
        return node
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        print(f"node_tests: downloading {WHEEL} (PyPI) for its node tests", file=sys.stderr)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "onnx==1.16.0", "--no-deps",
                            "--only-binary", ":all:", "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
                            "-d", tmp], capture_output=True, text=True)
        wheel = os.path.join(tmp, WHEEL)
        if r.returncode or not os.path.exists(wheel):
            sys.exit(f"node_tests: error: could not download {WHEEL} with pip:\n{r.stderr.strip()}\n"
                     "(give an unpacked node test directory with --data instead)")
        with open(wheel, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest != WHEEL_SHA256:
            sys.exit(f"node_tests: error: {WHEEL} has sha256 {digest}, expected {WHEEL_SHA256}")
        unpacked = os.path.join(tmp, "node")
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.startswith(NODE_PREFIX) and not member.endswith("/"):
                    rel = member[len(NODE_PREFIX):]
                    if rel.startswith("/") or ".." in rel.split("/"):
                        sys.exit(f"node_tests: error: {WHEEL}: unexpected member {member}")
                    dest = os.path.join(unpacked, rel)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    with z.open(member) as src, open(dest, "wb") as out:
                        shutil.copyfileobj(src, out)
        os.replace(unpacked, node)
    return node


def read_expectations(path):
    exp = {}
    if not os.path.exists(path):
        return exp
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or parts[1] not in RANK:
                sys.exit(f"{path}:{n}: error: expected 'TEST OUTCOME' with OUTCOME one of {', '.join(RANK)}")
            exp[parts[0]] = parts[1]
    return exp


def write_expectations(path, outcomes):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# ONNX node tests (onnx 1.16.0) through mlcc: the outcome each test must have.\n"
                "# Written by tests/onnx_node/node_tests.py --update; see its --help for the outcomes.\n")
        for name in sorted(outcomes):
            f.write(f"{name} {outcomes[name]}\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="directory of the mlcc tools")
    data = ap.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", help="the node test directory (.../onnx/backend/test/data/node)")
    data.add_argument("--fetch", metavar="CACHE", help="use the pinned onnx wheel's node tests, downloaded into CACHE once")
    ap.add_argument("--expect", required=True, help="expectations file")
    ap.add_argument("--work", default=None, help="scratch directory (default: a fresh one under /tmp)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--update", action="store_true", help="rewrite the expectations file with this run's outcomes")
    ap.add_argument("--only", nargs="*", help="run only these tests (regular expressions)")
    ap.add_argument("--keep", action="store_true", help="keep every test's scratch directory")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each test's outcome and its tools' stderr")
    args = ap.parse_args()

    if args.fetch:
        args.data = fetch_node_tests(args.fetch)
    if not os.path.isdir(args.data):
        sys.exit(f"node_tests: error: {args.data}: no such directory")
    tests = sorted(d for d in os.listdir(args.data) if d.startswith("test_"))
    if args.only:
        tests = [t for t in tests if any(re.fullmatch(p, t) for p in args.only)]
        if not tests:
            sys.exit("node_tests: error: --only matches no test")
    work = args.work or os.path.join("/tmp", f"mlcc-node-tests-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futures = {ex.submit(run_test, os.path.join(args.data, t), args.bin, work, args.keep): t for t in tests}
        for k, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            t = futures[fut]
            results[t] = fut.result()
            if args.verbose:
                print(f"{t}: {results[t][0]} {results[t][1]}")
                if results[t][0] != "pass":
                    print("".join(results[t][2]))
            elif sys.stdout.isatty():
                print(f"\r[{k}/{len(tests)}]", end="", flush=True)
    if sys.stdout.isatty() and not args.verbose:
        print()
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)

    counts = {}
    for o, _, _ in results.values():
        counts[o] = counts.get(o, 0) + 1
    print(f"{len(results)} ONNX node tests in {time.time() - start:.0f} s: " +
          ", ".join(f"{counts[o]} {o}" for o in sorted(counts, key=lambda o: -RANK.get(o, -1))))
    float_bound = sum(1 for o, d, _ in results.values() if o == "pass" and "non-integer" in d)
    if float_bound:
        print(f"  ({float_bound} of the passes bound a non-integer input with --bind)")

    bad = [(t, r) for t, r in sorted(results.items()) if r[0] in ("wrong", "crash")]
    for t, (o, detail, _) in bad:
        print(f"{o.upper()}: {t}: {detail}")
    if args.update:
        if bad:
            sys.exit("node_tests: error: not updating the expectations while a test is wrong or crashes")
        exp = read_expectations(args.expect) if args.only else {}
        exp.update({t: r[0] for t, r in results.items()})
        write_expectations(args.expect, exp)
        print(f"wrote {args.expect}")
        return 0
    exp = read_expectations(args.expect)
    worse, better = [], []
    for t, (o, detail, _) in sorted(results.items()):
        if o in ("wrong", "crash"):
            continue
        e = exp.get(t)
        if e is None:
            better.append(f"  {t}: {o} (not in the expectations file)")
        elif RANK[o] < RANK[e]:
            worse.append(f"  {t}: {o}, expected {e}: {detail}")
        elif RANK[o] > RANK[e]:
            better.append(f"  {t}: {o}, expected {e}")
    if worse:
        print(f"{len(worse)} regressions:\n" + "\n".join(worse))
    if better:
        print(f"{len(better)} tests do better than expected (record them: rerun with --update):\n" + "\n".join(better))
    return 1 if bad or worse or better else 0


if __name__ == "__main__":
    sys.exit(main())
