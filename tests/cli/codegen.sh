#!/usr/bin/env bash
# mlcc-codegen as a user runs it: the public models (PyTorch-generated)
# through the whole chain — import (static shapes) → fuse → legalize →
# schedule --target llvm (when mlcc-schedule is built) → codegen → mlcc-link →
# run (mlcc-run, or the C example examples/c/run_model) — against PyTorch's
# outputs, and the MLP with BLAS dispatch; modules of prim funcs only (one
# function each, run and timed with mlcc-run --entry against the
# interpreter); --emit ll|asm, the default output
# model.o, -v; no heap allocation while a model runs; the MLP with a symbolic
# batch at several batch sizes; the errors (unlegalized ops, symbolic shapes in
# BLAS calls, --target cuda, bad files) exit 1 with a clear message and leave no output behind.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-codegen

# --- usage, --help, --version ---
check "--help shows an example" prints 'mlcc-codegen scheduled.ir --target llvm -o model.o' --help
check "--version" prints 'mlcc-codegen' --version
check "usage error exits 2" run 2 --no-such-flag
check "bad --emit exits 2" run 2 x.ir --emit exe

# --- the cuda target (no GPU needed to compile; tests/unit/codegen_cuda_test.cpp
# runs the kernels under the CPU emulation) ---
cat >"$tmp/gpu.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[64, 32], %w: f32[16, 32]) -> f32[64, 16] {
  dataflow {
    %y: f32[64, 16] = dense(%x, %w)
    %z: f32[64, 16] = relu(%y)
  }
  return %z
}
IR
"$bin/mlcc-fuse" "$tmp/gpu.ir" -o "$tmp/gpu.f.ir"
"$bin/mlcc-legalize" "$tmp/gpu.f.ir" -o "$tmp/gpu.l.ir"
"$bin/mlcc-schedule" "$tmp/gpu.l.ir" --target cuda -o "$tmp/gpu.s.ir"
check "--target cuda --emit cuda" run 0 "$tmp/gpu.s.ir" --target cuda --emit cuda -o "$tmp/gpu.cu"
check "... a __global__ kernel per prim func" contains "$tmp/gpu.cu" '^extern "C" __global__ void fused_dense_relu_kernel0('
check "... thread indices, in 32 bits" contains "$tmp/gpu.cu" '= (int)threadIdx.x;'
check "... shared tiles between barriers" contains "$tmp/gpu.cu" '__syncthreads();'
# A module of prim funcs only (a kernel scheduled by hand): its CUDA C and
# PTX for reading; an object needs a graph entry.
rowsum="$src/tests/unit/fixtures/schedule_rules_gpu/row_sum_gpu.ir"
check "prim funcs only: --emit cuda" run 0 "$rowsum" --target cuda --emit cuda -o "$tmp/rowsum.cu"
check "... their kernels" contains "$tmp/rowsum.cu" '^extern "C" __global__ void f_kernel0('
check "... --entry naming another: exit 1" run 1 "$rowsum" --target cuda --emit cuda --entry g -o "$tmp/g.cu"
check "... message" contains "$tmp/err" 'the module has no prim func @g'
check "... an object: exit 1" run 1 "$rowsum" --target cuda -o "$tmp/rowsum.o"
check "... message" contains "$tmp/err" 'a module of prim funcs only .* is not supported by it yet (--emit cuda or --emit ptx writes its kernels)'
check "... no output" absent "$tmp/rowsum.o"
if "$bin/mlcc-codegen" "$tmp/gpu.s.ir" --target cuda --emit ptx -o "$tmp/gpu.ptx" 2>"$tmp/nvrtc.err"; then
  check "prim funcs only: --emit ptx" run 0 "$rowsum" --target cuda --emit ptx -o "$tmp/rowsum.ptx"
  check "... their kernels" contains "$tmp/rowsum.ptx" '^.visible .entry f_kernel0('

  check "--emit ptx" contains "$tmp/gpu.ptx" '^.visible .entry fused_dense_relu_kernel0('
  check "--target cuda -arch=sm_90: PTX for compute_90" bash -c \
    "'$tool' '$tmp/gpu.s.ir' --target 'cuda -arch=sm_90' --emit ptx -o - | grep -q '^.target sm_90'"
  check "--target 'cuda -fast-math': PTX with denormals flushed" bash -c \
    "'$tool' '$tmp/gpu.s.ir' --target 'cuda -fast-math' --emit ptx -o - | grep -q 'ftz.f32'"
  check "... and without it none" bash -c "! grep -q 'ftz.f32' '$tmp/gpu.ptx'"
  check "--target cuda: an object" run 0 "$tmp/gpu.s.ir" --target cuda -o "$tmp/gpu.o" -v
  check "-v: kernels" contains "$tmp/err" '^kernels: 1'
  check "the object links" "$bin/mlcc-link" "$tmp/gpu.o" -o "$tmp/gpu.so"
  if ! ldconfig -p | grep 'libcuda.so.1 ' >/dev/null; then
    check "no CUDA driver: a clear error, exit 1" bash -c "! '$bin/mlcc-run' '$tmp/gpu.so' 2>'$tmp/run.err'"
    check "... message" contains "$tmp/run.err" 'no CUDA driver (libcuda.so.1 cannot be loaded'
  fi
else
  grep -q 'NVRTC' "$tmp/nvrtc.err" || { echo "FAIL --emit ptx: $(cat "$tmp/nvrtc.err")"; fails=$((fails + 1)); }
  echo "skip  NVRTC is not available here: $(cat "$tmp/nvrtc.err")"
fi

# --- a small legalized module ---
cat >"$tmp/small.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8]) -> f32[4, 8] {
  dataflow {
    %y: f32[4, 8] = exp(%x)
    %z: f32[4, 8] = negative(%y)
  }
  return %z
}
IR
"$bin/mlcc-legalize" "$tmp/small.ir" -o "$tmp/small.low.ir"
check "--emit ll" run 0 "$tmp/small.low.ir" --target llvm --emit ll -o "$tmp/small.ll"
check "the IR defines the model description" contains "$tmp/small.ll" '^@mlcc_abi_model_v1 = .*constant'
check "the IR has the entry" contains "$tmp/small.ll" 'define internal .*i32 @mlcc_entry('
check "--emit ll goes to stdout without -o" bash -c "cd '$tmp' && '$tool' small.low.ir --emit ll | grep -q mlcc_abi_model_v1"
check "--emit asm" run 0 "$tmp/small.low.ir" --target llvm --emit asm -O1 -o "$tmp/small.s"
check "assembly names the model" contains "$tmp/small.s" 'mlcc_abi_model_v1'
check "default output model.o" bash -c "cd '$tmp' && '$tool' small.low.ir --target llvm && test -s model.o"
check "-mcpu and -O" run 0 "$tmp/small.low.ir" --target llvm -mcpu=x86-64 -O2 -o "$tmp/generic.o"
check "-v" run 0 "$tmp/small.low.ir" --target llvm -o "$tmp/small.o" -v
check "-v: kernels" contains "$tmp/err" '^kernels: 2'
check "-v: memory plan" contains "$tmp/err" '^memory plan: 128 bytes planned for 128 bytes of intermediates'
check "-v: weights" contains "$tmp/err" '^embedded weights: 0 bytes'
check "-v: compile time" contains "$tmp/err" '^compile time: [0-9.e-]* s'
check "the object links" "$bin/mlcc-link" "$tmp/small.o" -o "$tmp/small.so"
check "deterministic" bash -c "'$tool' '$tmp/small.low.ir' -o '$tmp/small2.o' && cmp -s '$tmp/small.o' '$tmp/small2.o'"
check "-o - writes the object to stdout" bash -c "'$tool' '$tmp/small.low.ir' -o - | cmp -s - '$tmp/small.o'"

# Denormals: a compiled model flushes them to zero while it runs (MXCSR's
# FTZ and DAZ on x86), unless mlcc-run --keep-denormals (the runtime's
# mlcc_model_set_flush_denormals) keeps them.
cat >"$tmp/denormal.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[16]) -> f32[16] {
  dataflow {
    %y: f32[16] = add(%x, %x)
  }
  return %y
}
IR
"$bin/mlcc-legalize" "$tmp/denormal.ir" -o "$tmp/denormal.low.ir"
check "denormals: a model" bash -c "'$tool' '$tmp/denormal.low.ir' -o '$tmp/denormal.o' && '$bin/mlcc-link' '$tmp/denormal.o' -o '$tmp/denormal.so'"
py "$tmp" <<'PY'
import numpy as np, sys
np.save(sys.argv[1] + "/tiny.npy", np.full(16, 1e-40, np.float32))
PY
if [[ $(uname -m) == x86_64 ]]; then
  check "denormals: flushed by default" bash -c "'$bin/mlcc-run' '$tmp/denormal.so' --input '$tmp/tiny.npy' --output-dir '$tmp/dn_flush' -q"
  check "... to zero" py "$tmp/dn_flush/y.npy" <<'PY'
import numpy as np, sys
y = np.load(sys.argv[1]); assert (y == 0).all(), y
PY
  check "denormals: --keep-denormals" bash -c "'$bin/mlcc-run' '$tmp/denormal.so' --input '$tmp/tiny.npy' --output-dir '$tmp/dn_keep' -q --keep-denormals"
  check "... kept" py "$tmp/dn_keep/y.npy" <<'PY'
import numpy as np, sys
y = np.load(sys.argv[1]); assert (y == 2 * np.float32(1e-40)).all() and (y > 0).all(), y
PY
fi

# --- errors: exit 1, a clear message, no output ---
# --target cuda wants a module scheduled for the GPU.
check "--target cuda on CPU code exits 1" run 1 "$tmp/small.low.ir" --target cuda -o "$tmp/x.o"
check "--target cuda on CPU code: message" contains "$tmp/err" 'block "exp" is not inside a GPU kernel'
check "--target cuda on CPU code: no output" absent "$tmp/x.o"
# Two threads of a thread block storing to one element (a binding t / 2):
# a race, refused before any code is written.
cat > "$tmp/race.ir" <<'IR'
mlcc.ir 1
prim @f(%x: f32[64], %y: f32[32]) {
  for %b in 0..2 thread_binding(blockIdx.x) {
    for %t in 0..32 thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(32, %b * 16 + %t / 2), %v1 = spatial(64, %b * 32 + %t)) {
        reads(%x[%v1])
        writes(%y[%v0])
        %y[%v0] = %x[%v1]
      }
    }
  }
}
IR
check "--target cuda: two threads storing to one element exits 1" run 1 "$tmp/race.ir" --target cuda --emit cuda -o "$tmp/race.cu"
check "... message" contains "$tmp/err" 'block "copy" stores to global buffer %y, and it cannot be shown that no two threads of a thread block store to one element'
check "... no output" absent "$tmp/race.cu"
check "--emit cuda needs --target cuda" run 1 "$tmp/small.low.ir" --target llvm --emit cuda -o "$tmp/x.cu"
check "... message" contains "$tmp/err" "--emit cuda needs --target cuda"
check "unknown target exits 1" run 1 "$tmp/small.low.ir" --target wasm -o "$tmp/x.o"
# CPUs and features are checked against LLVM's tables (before: an LLVM fatal
# error, exit 134), also by --check-args (what mlcc-pipeline runs first).
check "-mcpu=bogus exits 1" run 1 "$tmp/small.low.ir" -mcpu=bogus -o "$tmp/x.o"
check "-mcpu=bogus: message" contains "$tmp/err" "^-mcpu: error: unknown CPU 'bogus' for x86_64.*(valid: native, x86-64, x86-64-v2"
check "-mcpu=bogus: no LLVM warning" bash -c "! grep -q 'not a recognized processor' '$tmp/err'"
check "-mcpu=bogus: no output" absent "$tmp/x.o"
check "a misspelt -mcpu: did you mean" run 1 "$tmp/small.low.ir" --mcpu skylake-avx51 -o "$tmp/x.o"
check "a misspelt -mcpu: suggestion" contains "$tmp/err" "did you mean skylake-avx512"
check "32-bit CPU in --target exits 1" run 1 "$tmp/small.low.ir" --target "llvm -mcpu=i386" -o "$tmp/x.o"
check "32-bit CPU: message" contains "$tmp/err" "^--target: error: CPU 'i386' cannot run 64-bit code"
check "bad -mattr exits 1" run 1 "$tmp/small.low.ir" -mattr=+avx2,+avx9 -o "$tmp/x.o"
check "bad -mattr: message" contains "$tmp/err" "unknown CPU feature '+avx9' in -mattr=+avx2,+avx9"
check "-mattr=-64bit exits 1" run 1 "$tmp/small.low.ir" -mattr=-64bit -o "$tmp/x.o"
check "--check-args rejects -mcpu=bogus" run 1 "$tmp/small.low.ir" -mcpu=bogus --check-args
check "--check-args accepts a good -mcpu" run 0 "$tmp/small.low.ir" -mcpu=x86-64-v3 --check-args
check "-mcpu with -mattr" run 0 "$tmp/small.low.ir" --target "llvm -mcpu=x86-64-v3 -mattr=-fma" -o "$tmp/v3.o"
check "-mattr: the object links" "$bin/mlcc-link" "$tmp/v3.o" -o "$tmp/v3.so"
check "unlegalized op exits 1" run 1 "$tmp/small.ir" -o "$tmp/x.o"
check "unlegalized op: message" contains "$tmp/err" "small.ir: error: @main, binding %y: op exp was not legalized: run mlcc-legalize first"
# Symbolic shapes in library calls are refused (symbolic models run: see below).
cat >"$tmp/symblas.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[n, 8], %w: f32[2, 8]) -> f32[n, 2] {
  dataflow {
    %y: f32[n, 2] = call_extern "blas.dense"(%x, %w)
  }
  return %y
}
IR
check "symbolic shape in a BLAS call exits 1" run 1 "$tmp/symblas.ir" -o "$tmp/x.o"
check "symbolic shape: message" contains "$tmp/err" "symbolic shapes are not supported by codegen yet in library calls: .*--shape"
cat >"$tmp/ext.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8], %w: f32[2, 8]) -> f32[4, 2] {
  dataflow {
    %y: f32[4, 2] = call_extern "blas.conv"(%x, %w)
  }
  return %y
}
IR
check "unknown extern exits 1" run 1 "$tmp/ext.ir" -o "$tmp/x.o"
check "unknown extern: message" contains "$tmp/err" 'binding %y: unknown extern "blas.conv" (the CPU codegen knows blas.dense'
check "unknown --entry exits 1" run 1 "$tmp/small.low.ir" --entry nosuch -o "$tmp/x.o"
check "unknown --entry: message" contains "$tmp/err" "no function @nosuch in the module"
check "missing file exits 1" run 1 "$tmp/nosuch.ir" -o "$tmp/x.o"
printf 'mlcc.ir 1\ngraph @main(%%x: f32[4]) -> f32[4] {\n  return %%nope\n}\n' >"$tmp/bad.ir"
check "bad IR exits 1 at FILE:LINE:COL" run 1 "$tmp/bad.ir" -o "$tmp/x.o"
check "bad IR: location" contains "$tmp/err" "bad.ir:[0-9]*:[0-9]*: error:"
# A store the verifier can prove out of bounds is refused at its line (before:
# it compiled, and model.so wrote far past %y: SIGSEGV).
cat >"$tmp/oob.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[8]) -> f32[8] {
  dataflow {
    %y: f32[8] = call_tir @shift(%x)
  }
  return %y
}

prim @shift(%x: f32[8], %y: f32[8]) {
  for %i in 0..8 {
    block "shift" (%vi = spatial(8, %i)) {
      reads(%x[%vi])
      writes(%y[%vi])
      %y[%vi * 100000 + 1] = %x[%vi]
    }
  }
}
IR
check "out-of-bounds store exits 1" run 1 "$tmp/oob.ir" -o "$tmp/x.o"
check "out-of-bounds store: located" contains "$tmp/err" '^.*oob.ir:15:7: error: in prim @shift, block "shift": store to %y is out of bounds: index 700001 in dimension 0 of size 8 at %i = 7'
check "no output after errors" absent "$tmp/x.o"

# --bounds-check: an index read from the input (no verifier can know it) out
# of bounds fails the run, naming the prim func, buffer and index (without
# the checks, that model.so reads far outside %x: SIGSEGV).
cat >"$tmp/gather.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[8], %idx: i64[4]) -> f32[4] {
  dataflow {
    %y: f32[4] = call_tir @gather(%x, %idx)
  }
  return %y
}

prim @gather(%x: f32[8], %idx: i64[4], %y: f32[4]) {
  for %i in 0..4 {
    block "gather" (%vi = spatial(4, %i)) {
      reads(%x[0 +: 8], %idx[%vi])
      writes(%y[%vi])
      %y[%vi] = %x[%idx[%vi]]
    }
  }
}
IR
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
np.save(f"{d}/gx.npy", np.arange(8, dtype=np.float32))
np.save(f"{d}/gidx.npy", np.array([0, 3, 7, 1], np.int64))
np.save(f"{d}/gbad.npy", np.array([0, 3, 1000000000, 1], np.int64))
PY
  check "--bounds-check compiles" run 0 "$tmp/gather.ir" --bounds-check -o "$tmp/gather.o"
  check "--bounds-check: the object links" "$bin/mlcc-link" "$tmp/gather.o" -o "$tmp/gather.so"
  check "--bounds-check: in bounds, the right answer" bash -c "'$bin/mlcc-run' '$tmp/gather.so' --input x='$tmp/gx.npy' --input idx='$tmp/gidx.npy' --output-dir '$tmp/gout' && /usr/bin/python3 -c 'import numpy as np; assert (np.load(\"$tmp/gout/y.npy\") == [0, 3, 7, 1]).all()'"
  "$bin/mlcc-run" "$tmp/gather.so" --input x="$tmp/gx.npy" --input idx="$tmp/gbad.npy" --output-dir "$tmp/gbad" 2>"$tmp/err"
  rc=$?
  check "--bounds-check: out of bounds exits 1 (no signal)" test "$rc" -eq 1
  check "--bounds-check: the message" contains "$tmp/err" 'gather.so: error: run failed: prim func @gather, block "gather": load from %x\[1000000000\] is out of bounds of shape \[8\]'
  check "--bounds-check: no output" absent "$tmp/gbad/y.npy"
fi

# --- prim funcs only: a function of model.so per prim func ---
# As the MLC course builds a module of prim funcs and times one of them
# (tvm.build + time_evaluator): compiled, each runs by name (mlcc-run --entry)
# as the interpreter runs it, on the same given or random inputs, and times.
mm64=$src/tests/unit/fixtures/matmul_64.ir
kern=$src/tests/ir/valid/expressions.ir  # @arith (symbolic n, every dtype), @intrinsics, @scalar
check "prim funcs only: compiles" run 0 "$mm64" --target llvm -o "$tmp/mm64.o" -v
check "prim funcs only: -v lists the functions" contains "$tmp/err" '^functions: 1 (no graph entry'
check "prim funcs only: links" "$bin/mlcc-link" "$tmp/mm64.o" -o "$tmp/mm64.so"
check "three prim funcs compile" run 0 "$kern" --target llvm -o "$tmp/kern.o"
check "three prim funcs link" "$bin/mlcc-link" "$tmp/kern.o" -o "$tmp/kern.so"
# A scheduled prim func: @mm of a graph module alone (--entry), and matmul_64
# scheduled by mlcc-schedule (when it is built).
mms=$src/tests/cli/inspect/mm_scheduled.ir
check "one scheduled prim func of a graph module (--entry)" run 0 "$mms" --entry mm --target llvm -o "$tmp/mms.o"
check "one scheduled prim func links" "$bin/mlcc-link" "$tmp/mms.o" -o "$tmp/mms.so"
sched=()
if [[ -x $bin/mlcc-schedule ]]; then
  check "matmul_64 schedules" "$bin/mlcc-schedule" -q "$mm64" --target llvm -o "$tmp/mm64.s.ir"
  check "scheduled prim funcs compile" run 0 "$tmp/mm64.s.ir" --target llvm -o "$tmp/mm64s.o"
  check "scheduled prim funcs link" "$bin/mlcc-link" "$tmp/mm64s.o" -o "$tmp/mm64s.so"
  sched=("$tmp/mm64s.so" "$tmp/mm64.s.ir")
fi
# same_as_ir SO IR FUNC "OUTPUTS" ARGS...: mlcc-run SO --entry FUNC ARGS writes
# each of OUTPUTS as mlcc-run IR --entry FUNC ARGS does
same_as_ir() {
  local so=$1 ir=$2 func=$3 outs=$4 o
  shift 4
  rm -rf "$tmp/fso" "$tmp/fir"
  "$bin/mlcc-run" -q "$so" --entry "$func" "$@" --output-dir "$tmp/fso" || return 1
  "$bin/mlcc-run" -q "$ir" --entry "$func" "$@" --output-dir "$tmp/fir" || return 1
  for o in $outs; do compare "$tmp/fso/$o.npy" "$tmp/fir/$o.npy" || { echo "  output $o differs"; return 1; }; done
}
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
rng = np.random.default_rng(1)
for n in ("a", "b"):
    np.save(f"{d}/{n}64.npy", rng.standard_normal((64, 64)).astype(np.float32))
np.save(f"{d}/a128.npy", rng.standard_normal((128, 128)).astype(np.float32))
np.save(f"{d}/b128.npy", rng.standard_normal((128, 128)).astype(np.float32))
np.save(f"{d}/x5.npy", rng.standard_normal(5).astype(np.float32) + 2)
np.save(f"{d}/x64.npy", rng.standard_normal(64).astype(np.float32) + 2)
PY
  check "mm compiled = interpreted (given A, B)" same_as_ir "$tmp/mm64.so" "$mm64" mm C --input A="$tmp/a64.npy" --input B="$tmp/b64.npy"
  check "mm compiled = numpy" py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
a, b, c = np.load(f"{d}/a64.npy"), np.load(f"{d}/b64.npy"), np.load(f"{d}/fso/C.npy")
np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
PY
  check "mm compiled = interpreted (random inputs)" same_as_ir "$tmp/mm64.so" "$mm64" mm C --seed 3
  check "scheduled mm compiled = interpreted" same_as_ir "$tmp/mms.so" "$mms" mm C --input A="$tmp/a128.npy" --input B="$tmp/b128.npy"
  if [[ ${#sched[@]} -gt 0 ]]; then
    check "mlcc-schedule'd mm compiled = interpreted" same_as_ir "${sched[0]}" "${sched[1]}" mm C --input A="$tmp/a64.npy" --input B="$tmp/b64.npy"
  fi
  check "@intrinsics compiled = interpreted" same_as_ir "$tmp/kern.so" "$kern" intrinsics y --input x="$tmp/x64.npy"
  check "@scalar compiled = interpreted" same_as_ir "$tmp/kern.so" "$kern" scalar "s flag" --seed 2
  # @arith: symbolic n (from the given %a); the outputs that are not NaN everywhere
  check "@arith compiled = interpreted" same_as_ir "$tmp/kern.so" "$kern" arith "out c d i64s mask" --input a="$tmp/x5.npy" --random-inputs
  check "@arith ran at n = 5" py "$tmp" <<'PY'
import numpy as np, sys
assert np.load(f"{sys.argv[1]}/fso/out.npy").shape == (5,)
PY
fi
# --bench times one function: the model's statistics and JSON.
tool=$bin/mlcc-run
check "--entry --bench --json" run 0 "$tmp/mm64.so" --entry mm --bench 5 --json
check "--bench JSON: median_ms > 0, 5 runs" py "$tmp/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert set(j) == {"median_ms", "min_ms", "mean_ms", "runs", "threads"}, j
assert j["median_ms"] > 0 and 0 < j["min_ms"] <= j["median_ms"] and j["runs"] == 5 and j["threads"] >= 1, j
PY
check "--entry --bench --profile: the kernel" run 0 "$tmp/kern.so" --entry intrinsics --bench 3 --profile -q
check "--profile names the prim func" contains "$tmp/out" '^intrinsics  *3 '
check "the only function runs without --entry" run 0 "$tmp/mm64.so"
check "the only function: its output" contains "$tmp/out" '^C: f32\[64, 64\] = \['
check "several functions, no --entry: exits 1" run 1 "$tmp/kern.so" --bench 2
check "several functions: listed" contains "$tmp/err" 'kern.so: error: no graph entry but 3 functions (prim funcs): @arith, @intrinsics, @scalar; choose one (mlcc-run --entry NAME)'
check "a wrong --entry exits 1" run 1 "$tmp/kern.so" --entry nosuch --bench 5
check "a wrong --entry: the functions" contains "$tmp/err" "kern.so: error: no function @nosuch; the model's functions: @arith, @intrinsics, @scalar"
check "--entry of a graph model.so exits 1" run 1 "$tmp/small.so" --entry main
check "--entry of a graph model.so: message" contains "$tmp/err" "no function @main: the model has a graph entry and no functions"
check "--dim with a model.so is a usage error" run 2 "$tmp/kern.so" --entry arith --dim n=3
tool=$bin/mlcc-codegen
cat >"$tmp/fill.ir" <<'IR'
mlcc.ir 1

prim @fill(%z: f32[m, 3]) {
  for %i in 0..m {
    for %j in 0..3 {
      block "fill" (%vi = spatial(m, %i), %vj = spatial(3, %j)) {
        reads()
        writes(%z[%vi, %vj])
        %z[%vi, %vj] = 1.0
      }
    }
  }
}
IR
check "a function whose inputs do not size its outputs exits 1" run 1 "$tmp/fill.ir" -o "$tmp/fill.o"
check "... naming the dimension" contains "$tmp/err" "prim func @fill: output %z has type f32\[m, 3\], but no input has the dimension 'm'"
check "... no output" absent "$tmp/fill.o"

# No allocation while a model runs: tests/cli/support/count_allocs.c counts
# every heap allocation of the process during runs (after a warm-up).
check "the allocation counter builds" cc -O2 -Wall -Wextra -I"$src/include" -o "$tmp/count_allocs" \
  "$src/tests/cli/support/count_allocs.c" -ldl

# --- how a model.so is run: mlcc-run, else the C example ---
runner=""
if "$bin/mlcc-run" "$tmp/small.so" --output-dir "$tmp/r" >/dev/null 2>&1; then
  runner=mlcc-run
elif make -s -C "$src/examples/c" O="$tmp" CC=cc >/dev/null 2>&1; then
  runner=c
fi
run_so() {  # run_so MODEL.so INPUT_NAME INPUT.npy OUTDIR
  rm -rf "$4"
  case $runner in
    mlcc-run) "$bin/mlcc-run" -q "$1" --input "$2=$3" --output-dir "$4" ;;
    c) mkdir -p "$4" && "$tmp/run_model" "$1" "$2=$3" --out "$4" >/dev/null ;;
    *) echo "  no way to run a model.so"; return 1 ;;
  esac
}

# --- the public models through the whole chain, against PyTorch ---
if public_models torch torchvision onnx numpy; then
  for m in mlp cnn resnet18 mobilenetv2 transformer; do
    shape=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$tmp/models/$m.input.npy').shape)))")
    d=$tmp/chain/$m
    mkdir -p "$d"
    check "$m imports (input=$shape)" "$bin/mlcc-import" -q "$tmp/models/$m.onnx" --shape "input=$shape" -o "$d/model.ir"
    check "$m fuses" "$bin/mlcc-fuse" -q "$d/model.ir" -o "$d/fused.ir"
    lowered "$m" "$d/fused.ir" "$d/lowered.ir" || continue
    in=$d/lowered.ir
    if [[ -x $bin/mlcc-schedule ]]; then
      check "$m schedules" "$bin/mlcc-schedule" -q "$d/lowered.ir" --target llvm -o "$d/scheduled.ir"
      in=$d/scheduled.ir
    fi
    start=$(date +%s.%N)
    check "$m compiles" run 0 "$in" --target llvm -o "$d/model.o" -v
    end=$(date +%s.%N)
    echo "     $m codegen: $(echo "$end - $start" | bc) s; $(grep -E '^(memory plan|embedded weights)' "$tmp/err" 2>/dev/null | tr '\n' ';')"
    check "$m links" "$bin/mlcc-link" "$d/model.o" -o "$d/model.so"
    check "$m runs" run_so "$d/model.so" input "$tmp/models/$m.input.npy" "$d/out"
    check "$m compiled matches PyTorch" compare "$d/out/output.npy" "$tmp/models/$m.output.npy"
    check "$m runs without allocating" "$tmp/count_allocs" "$d/model.so"
  done
  # The MLP imported without --shape (a symbolic batch): one model.so runs at
  # batch 4, 1, 3 and 8 (against the interpreter and PyTorch).
  d=$tmp/chain/mlp_sym
  mkdir -p "$d"
  check "mlp imports with a symbolic batch" "$bin/mlcc-import" -q "$tmp/models/mlp.onnx" -o "$d/model.ir"
  check "symbolic mlp: the batch is symbolic" contains "$d/model.ir" 'graph @main(%input: f32\[[a-z_]*, 784\])'
  "$bin/mlcc-fuse" -q "$d/model.ir" -o "$d/fused.ir" && "$bin/mlcc-legalize" -q "$d/fused.ir" -o "$d/lowered.ir" &&
    "$bin/mlcc-schedule" -q "$d/lowered.ir" --target llvm -o "$d/scheduled.ir"
  check "symbolic mlp compiles" run 0 "$d/scheduled.ir" --target llvm -o "$d/model.o" -v
  check "symbolic mlp: -v names the symbolic dimension" contains "$tmp/err" '^memory plan: .* for [a-z_]* = 1 (symbolic dimensions, set at run time)' 
  check "symbolic mlp links" "$bin/mlcc-link" "$d/model.o" -o "$d/model.so"
  check "symbolic mlp runs at batch 4" "$bin/mlcc-run" -q "$d/model.so" --input "input=$tmp/models/mlp.input.npy" --output-dir "$d/out4"
  check "symbolic mlp matches PyTorch" compare "$d/out4/output.npy" "$tmp/models/mlp.output.npy"
  for n in 1 3 8; do
    /usr/bin/python3 -c "import numpy as np; np.save('$d/in$n.npy', np.random.RandomState($n).randn($n, 784).astype(np.float32))"
    check "symbolic mlp runs at batch $n" "$bin/mlcc-run" -q "$d/model.so" --input "input=$d/in$n.npy" --output-dir "$d/so$n"
    "$bin/mlcc-run" -q "$d/model.ir" --input "input=$d/in$n.npy" --output-dir "$d/ir$n"
    check "symbolic mlp at batch $n matches the interpreter" compare "$d/so$n/output.npy" "$d/ir$n/output.npy"
  done
  check "PyTorch at batches 1, 3, 8" /usr/bin/python3 "$src/tests/cli/support/torch_mlp.py" "$src" \
    "$d/in1.npy" "$d/torch1.npy" "$d/in3.npy" "$d/torch3.npy" "$d/in8.npy" "$d/torch8.npy"
  for n in 1 3 8; do
    check "symbolic mlp at batch $n matches PyTorch" compare "$d/so$n/output.npy" "$d/torch$n.npy"
  done
  check "symbolic mlp runs without allocating" "$tmp/count_allocs" "$d/model.so"
  if make -s -C "$src/examples/c" O="$tmp" CC=cc >/dev/null 2>&1; then
    mkdir -p "$d/c3"
    check "the C example runs the symbolic mlp at batch 3" "$tmp/run_model" "$d/model.so" "input=$d/in3.npy" --out "$d/c3"
    check "the C example's output matches PyTorch" compare "$d/c3/output.npy" "$d/torch3.npy"
  fi
  /usr/bin/python3 -c "import numpy as np; np.save('$d/bad.npy', np.zeros((2, 783), np.float32))"
  check "symbolic mlp: a wrong shape exits 1" bash -c "'$bin/mlcc-run' -q '$d/model.so' --input 'input=$d/bad.npy' --output-dir '$d/bad' 2>'$d/bad.err'; test \$? -eq 1"
  check "symbolic mlp: wrong shape message" contains "$d/bad.err" "input 'input' has shape \[?, 784\], got \[2, 783\]"
  # BLAS dispatch: the MLP's dense groups as call_extern.
  d=$tmp/chain/mlp
  check "mlp fuses with BLAS patterns" "$bin/mlcc-fuse" -q "$d/model.ir" --passes 'fuse-by-pattern,fuse-ops' \
    --patterns "$src/pipelines/patterns/blas.yaml" -o "$d/blas.ir"
  check "mlp BLAS lowers" "$bin/mlcc-legalize" -q "$d/blas.ir" -o "$d/blas.lowered.ir"
  check "mlp BLAS compiles" run 0 "$d/blas.lowered.ir" --target llvm -o "$d/blas.o" -v
  check "mlp BLAS kernels named" contains "$tmp/err" 'blas.dense_bias_relu 4x256x784'
  check "mlp BLAS links" "$bin/mlcc-link" "$d/blas.o" -o "$d/blas.so"
  check "mlp BLAS runs" run_so "$d/blas.so" input "$tmp/models/mlp.input.npy" "$d/blas_out"
  check "mlp BLAS matches PyTorch" compare "$d/blas_out/output.npy" "$tmp/models/mlp.output.npy"
  check "mlp BLAS runs without allocating" "$tmp/count_allocs" "$d/blas.so"
fi

finish codegen
