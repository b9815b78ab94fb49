#!/usr/bin/env python3
"""Runs the models bench/cuda/build_models.sh compiled on a CUDA GPU:
checks each NAME.so against NAME.output.npy (PyTorch's output, from
tests/models/generate.py) and times it against PyTorch on the same GPU
(cuDNN / cuBLAS, fp32 with TF32 off); gemmN: mlcc's kernel against
torch.matmul (cuBLAS SGEMM). Needs torch with CUDA.

    python3 bench/cuda/run_models.py DIR NAME... [--repeat 50]
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np
import torch


class KernelProfile(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("calls", ctypes.c_int64), ("total_ns", ctypes.c_int64),
                ("flops_per_call", ctypes.c_double)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


DTYPES = {0: (np.float32, torch.float32), 4: (np.int32, torch.int32), 5: (np.int64, torch.int64)}


class Model:
    def __init__(self, path):
        self.lib = ctypes.CDLL(os.path.abspath(path))
        lib = self.lib
        lib.mlcc_model_load.restype = ctypes.c_void_p
        lib.mlcc_last_error.restype = ctypes.c_char_p
        for f in ("mlcc_model_run", "mlcc_model_run_device"):
            getattr(lib, f).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        lib.mlcc_model_input_info.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(TensorInfo)]
        lib.mlcc_model_output_info.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(TensorInfo)]
        lib.mlcc_model_num_inputs.argtypes = [ctypes.c_void_p]
        lib.mlcc_model_num_outputs.argtypes = [ctypes.c_void_p]
        lib.mlcc_model_device.argtypes = [ctypes.c_void_p]
        lib.mlcc_model_last_device_ns.argtypes = [ctypes.c_void_p]
        lib.mlcc_model_last_device_ns.restype = ctypes.c_int64
        self.m = lib.mlcc_model_load()
        if not self.m:
            raise RuntimeError(lib.mlcc_last_error().decode())
        self.inputs = [self._info(lib.mlcc_model_input_info, i) for i in range(lib.mlcc_model_num_inputs(self.m))]
        self.outputs = [self._info(lib.mlcc_model_output_info, i) for i in range(lib.mlcc_model_num_outputs(self.m))]

    def _info(self, fn, i):
        t = TensorInfo()
        if fn(self.m, i, ctypes.byref(t)) != 0:
            raise RuntimeError(self.lib.mlcc_last_error().decode())
        return (tuple(t.shape[d] for d in range(t.ndim)), t.dtype)

    def _call(self, fn, ins, outs):
        a = (ctypes.c_void_p * len(ins))(*ins)
        b = (ctypes.c_void_p * len(outs))(*outs)
        if fn(self.m, a, b) != 0:
            raise RuntimeError(self.lib.mlcc_last_error().decode())

    def run_host(self, arrays):
        arrays = [np.ascontiguousarray(x) for x in arrays]
        outs = [np.empty(s, DTYPES[d][0]) for s, d in self.outputs]
        self._call(self.lib.mlcc_model_run, [x.ctypes.data for x in arrays], [y.ctypes.data for y in outs])
        return outs

    def profile(self, ins, outs, runs=10):
        """Per kernel: (name, ms per run, GFLOP/s), slowest first (CUDA events between launches)."""
        lib = self.lib
        lib.mlcc_model_enable_profiling.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.mlcc_model_num_kernels.argtypes = [ctypes.c_void_p]
        lib.mlcc_model_kernel_profile.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(KernelProfile)]
        lib.mlcc_model_enable_profiling(self.m, 1)
        for _ in range(runs):
            self.run_device(ins, outs)
        rows = []
        for k in range(lib.mlcc_model_num_kernels(self.m)):
            p = KernelProfile()
            lib.mlcc_model_kernel_profile(self.m, k, ctypes.byref(p))
            if p.calls:
                ms = p.total_ns / 1e6 / runs
                rows.append((p.name.decode(), ms, p.flops_per_call * p.calls / runs / (ms * 1e6) if ms else 0))
        lib.mlcc_model_enable_profiling(self.m, 0)
        return sorted(rows, key=lambda r: -r[1])

    def run_device(self, ins, outs):
        torch.cuda.synchronize()  # mlcc runs on a stream of its own
        self._call(self.lib.mlcc_model_run_device, [x.data_ptr() for x in ins], [y.data_ptr() for y in outs])

    def device_ms(self, ins, outs, repeat):
        """Median of the model's own GPU time (mlcc_model_last_device_ns: CUDA events around its kernels)."""
        times = []
        for _ in range(repeat):
            self.run_device(ins, outs)
            times.append(self.lib.mlcc_model_last_device_ns(self.m) / 1e6)
        return statistics.median(times)


def rel_err(got, want):
    """max |got - want| / max |want| (numpy arrays or torch tensors)."""
    return float(abs(got - want).max() / (abs(want).max() + 1e-30))


def time_ms(fn, repeat):
    """Median of `repeat` timings (CUDA events around one call), after warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def torch_model(name, src_dir):
    sys.path.insert(0, os.path.join(src_dir, "tests", "models"))
    import generate  # the public models' definitions
    builder, seed = generate.MODELS[name.split("_cublas")[0]]
    torch.manual_seed(seed)
    model, example, _ = builder(torch.Generator().manual_seed(1000 + seed))
    return model.eval().cuda(), example.cuda()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N slowest kernels of each model")
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile(mode='reduce-overhead'): TorchInductor's kernels in CUDA graphs")
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"GPU: {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    failures = 0
    for name in args.names:
        path = os.path.join(args.dir, name + ".so")
        try:
            t0 = time.perf_counter()
            model = Model(path)
            load_s = time.perf_counter() - t0
        except Exception as e:
            print(f"{name}: LOAD FAILED: {e}", flush=True)
            failures += 1
            continue
        ins = [torch.randn(s, device="cuda") if d == 0 else torch.zeros(s, dtype=DTYPES[d][1], device="cuda")
               for s, d in model.inputs]
        outs = [torch.empty(s, dtype=DTYPES[d][1], device="cuda") for s, d in model.outputs]
        if name.startswith("gemm"):
            model.run_device(ins, outs)
            torch.cuda.synchronize()
            ref = ins[0] @ ins[1]
            err = rel_err(outs[0], ref)
            n = model.inputs[0][0][0]
            ms = time_ms(lambda: model.run_device(ins, outs), args.repeat)
            err = max(err, rel_err(outs[0], ref))  # the replayed runs
            ok = err < 1e-4
            peer = time_ms(lambda: torch.matmul(ins[0], ins[1], out=outs[0]), args.repeat)
            tflops = 2 * n ** 3 / ms / 1e9
            print(f"{name}: {'PASS' if ok else 'FAIL'} max rel err {err:.2e}; mlcc {ms:.3f} ms "
                  f"({tflops:.1f} TFLOP/s), cuBLAS {peer:.3f} ms ({2 * n ** 3 / peer / 1e9:.1f} TFLOP/s): "
                  f"mlcc = {peer / ms * 100:.0f}% of cuBLAS (load {load_s:.2f} s)", flush=True)
            failures += not ok
            continue
        x = np.load(os.path.join(args.dir, name + ".input.npy"))
        want = np.load(os.path.join(args.dir, name + ".output.npy"))
        got = model.run_host([x])[0]
        err = rel_err(got, want)
        dev_in = [torch.from_numpy(x).cuda()]
        ms = time_ms(lambda: model.run_device(dev_in, outs), args.repeat)
        # The timed runs reuse their buffers (the runtime replays them as a CUDA graph): check them too.
        err = max(err, rel_err(outs[0].cpu().numpy(), want))
        ok = err < 1e-3 and got.shape == want.shape
        failures += not ok
        gpu_ms = model.device_ms(dev_in, outs, args.repeat)
        line = (f"{name}: {'PASS' if ok else 'FAIL'} max |err| / max |ref| = {err:.2e} against PyTorch's output (first and last run); "
                f"mlcc {ms:.3f} ms (its kernels {gpu_ms:.3f} ms by its CUDA events; load {load_s:.2f} s)")
        try:
            tm, example = torch_model(name, args.src)
            with torch.no_grad():
                peer = time_ms(lambda: tm(example), args.repeat)
            line += f"; PyTorch eager {peer:.3f} ms: mlcc/PyTorch = {ms / peer:.2f}x time"
            if args.compile:
                # TorchInductor with CUDA graphs, as mlcc replays its kernels.
                compiled = torch.compile(tm, mode="reduce-overhead")
                with torch.no_grad():
                    t0 = time.perf_counter()
                    for _ in range(3):
                        compiled(example)
                    compile_s = time.perf_counter() - t0
                    peer = time_ms(lambda: compiled(example), args.repeat)
                line += (f"; torch.compile {peer:.3f} ms (compiled in {compile_s:.0f} s): "
                         f"mlcc/torch.compile = {ms / peer:.2f}x time")
        except Exception as e:  # the peers are optional
            line += f"; (no PyTorch peer: {type(e).__name__}: {str(e)[:200]})"
        print(line, flush=True)
        if args.profile:
            for kname, kms, gflops in model.profile(dev_in, outs)[:args.profile]:
                print(f"    {kms:8.3f} ms  {gflops:8.1f} GFLOP/s  {kname}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
