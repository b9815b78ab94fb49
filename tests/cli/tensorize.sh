#!/usr/bin/env bash
# Tensorize (issue 18; examples/tensorize, mlcc/schedule/tensor_intrin.h):
# a hand-written micro-kernel (gemm_tile.c, with AVX-512 where the compiler
# targets it) replaces each 4x16x64 tile of a matmul's loop nest. The
# schedule script tiles @mm and tensorizes the tile with the intrinsic that
# gemm_tile.ir describes (mlcc-schedule --intrinsics); the module then
# declares the routine, the interpreter calls it (dlopen) and model.so calls
# it (mlcc-link --lib). Both give numpy's A @ B. Bad input: a tile that
# does not compute the description, an intrinsic not loaded, a description
# without its library, a link without --lib, a missing library at run
# time, an undeclared routine or a tile that does not fit its
# declaration: each a clear error and exit 1. A whole model: the public
# MLP with its first dense layer tensorized matches PyTorch (interpreter and
# model.so). (The cuda target's refusal is
# CudaCodegen.RefusesTensorizedBlocks: it compiles models, not prim funcs.)
source "$2/tests/cli/lib/common.sh"
ex=$src/examples/tensorize
w=$tmp/w
mkdir -p "$w"
cp "$ex"/gemm_tile.ir "$ex"/mm.ir "$ex"/mm.sched "$w/"
# The example's build line (README): -march=native uses AVX-512 where there is one.
cc -O3 -march=native -fPIC -shared -I"$src/include" "$ex/gemm_tile.c" -o "$w/libgemm_tile.so" || exit 1
cc -O3 -fPIC -I"$src/include" -c "$ex/gemm_tile.c" -o "$w/gemm_tile.o" || exit 1

/usr/bin/python3 -c "
import numpy as np, sys
r = np.random.default_rng(7)
a = r.standard_normal((128, 256)).astype(np.float32); b = r.standard_normal((256, 192)).astype(np.float32)
np.save(sys.argv[1] + '/A.npy', a); np.save(sys.argv[1] + '/B.npy', b)
np.save(sys.argv[1] + '/C0.npy', np.full((128, 192), np.nan, np.float32))  # overwritten by the init
np.save(sys.argv[1] + '/numpy.npy', (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))" "$w"
inputs=(--entry mm --input "A=$w/A.npy" --input "B=$w/B.npy" --input "C=$w/C0.npy")
outputs() {  # outputs NAME MODEL: runs @mm of MODEL on the inputs into $tmp/NAME/
  rm -rf "$tmp/$1"
  "$bin/mlcc-run" -q "$2" "${inputs[@]}" --output-dir "$tmp/$1"
}
numpy_says() { compare "$tmp/$1/C.npy" "$w/numpy.npy"; }

tool=$bin/mlcc-schedule
check "schedule with the intrinsic" run 0 "$w/mm.ir" --intrinsics "$w/gemm_tile.ir" --trace "$w/mm.sched" \
  --rules none -o "$w/mm.s.ir"
check "the tile is a call of the routine" contains "$w/mm.s.ir" \
  'block "C_o" () attrs(tensor_intrin = "mlcc_gemm_4x16") {'
check "its arguments: the tiles" contains "$w/mm.s.ir" \
  'reads(%A\[%i_0 \* 4 +: 4, %k_0 \* 64 +: 64\], %B\[%k_0 \* 64 +: 64, %j_0 \* 16 +: 16\])'
check "the module declares the routine" contains "$w/mm.s.ir" \
  '^extern "mlcc_gemm_4x16"(%A: f32\[4, 64\], %B: f32\[64, 16\]) -> f32\[4, 16\] attrs(kind = "tensor_intrin", library = ".*/libgemm_tile.so", symbol = "mlcc_gemm_4x16")'
check "the scheduled IR validates" "$bin/mlcc-inspect" --validate "$w/mm.s.ir"
check "the unscheduled nest runs" outputs reference "$w/mm.ir"
check "the unscheduled nest = numpy" numpy_says reference
check "the interpreter calls the routine" outputs interp "$w/mm.s.ir"
check "interpreter = numpy" numpy_says interp
check "codegen" "$bin/mlcc-codegen" -q "$w/mm.s.ir" --target llvm -o "$w/mm.o"
check "the kernel calls the routine" bash -c "'$bin/mlcc-codegen' -q '$w/mm.s.ir' --target llvm --emit ll -o - | grep -q 'call void @mlcc_gemm_4x16(ptr'"
tool=$bin/mlcc-link
check "link without the library: a clear error" fails_saying "needs their library: --lib FILE" "$w/mm.o" -o "$w/x.so"
check "nothing written" absent "$w/x.so"
for lib in libgemm_tile.so gemm_tile.o; do
  check "link with --lib $lib" run 0 "$w/mm.o" --lib "$w/$lib" -o "$w/$lib.mm.so"
  check "model.so ($lib) runs" outputs "so_$lib" "$w/$lib.mm.so"
  check "model.so ($lib) = numpy" numpy_says "so_$lib"
done
check "codegen --bounds-check" "$bin/mlcc-codegen" -q "$w/mm.s.ir" --target llvm --bounds-check -o "$w/mm_bc.o"
"$bin/mlcc-link" "$w/mm_bc.o" --lib "$w/libgemm_tile.so" -o "$w/mm_bc.so"
check "bounds-checked model.so = numpy" bash -c "$(declare -f outputs compare numpy_says); tmp='$tmp' w='$w' bin='$bin'; inputs=(${inputs[*]@Q}); outputs bc '$w/mm_bc.so' && numpy_says bc"

# The pipeline's verify: the scheduled stage agrees with the lowered one.
tool=$bin/mlcc-run
check "--bench on the tensorized model.so" run 0 "$w/libgemm_tile.so.mm.so" --entry mm --bench 3 --json
check "it says how long" contains "$tmp/out" '"median_ms"'

# A whole model: the public MLP's first dense layer (fused with its bias and
# relu by fuse-ops; no convert-layout, which would pack w into panels)
# computed by a routine on 4x16x16 tiles of x and w; the
# other prim func is scheduled by the default rules. model.so = PyTorch.
if public_models torch onnx numpy -- --only mlp; then
  cat >"$w/dense_tile.ir" <<'IR'
mlcc.ir 1
prim @dense_4x16x16(%X: f32[4, 16], %W: f32[16, 16], %Y: f32[4, 16]) attrs(library = "libdense_tile.so") {
  for %i in 0..4 {
    for %j in 0..16 {
      for %k in 0..16 {
        block "update" (%vi = spatial(4, %i), %vj = spatial(16, %j), %vk = reduce(16, %k)) {
          reads(%X[%vi, %vk], %W[%vj, %vk])
          writes(%Y[%vi, %vj])
          %Y[%vi, %vj] = %Y[%vi, %vj] + %X[%vi, %vk] * %W[%vj, %vk]
        }
      }
    }
  }
}
IR
  cat >"$w/dense_tile.c" <<'C'
#include <mlcc/extern.h>
void dense_4x16x16(const mlcc_extern_region* args, int32_t num_args) {
  (void)num_args;
  const float* x = args[0].data;
  const float* w = args[1].data;
  float* y = args[2].data;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = y[i * args[2].strides[0] + j];
      for (int k = 0; k < 16; ++k) s += x[i * args[0].strides[0] + k] * w[j * args[1].strides[0] + k];
      y[i * args[2].strides[0] + j] = s;
    }
}
C
  cat >"$w/mlp.sched" <<'SCHED'
schedule @fused_dense_add_relu {
  %b0 = get_block("dense")
  %l1, %l2, %l3 = get_loops(%b0)
  %l4, %l5 = split(%l2, [-1, 16])
  %l6, %l7 = split(%l3, [-1, 16])
  reorder([%l4, %l6, %l1, %l5, %l7])
  %b8 = decompose_reduction(%b0, %l6)
  tensorize(%l1, "dense_4x16x16")
}
SCHED
  cc -O2 -fPIC -shared -I"$src/include" "$w/dense_tile.c" -o "$w/libdense_tile.so" &&
    "$bin/mlcc-import" -q "$tmp/models/mlp.onnx" --shape input=4x784 -o "$w/mlp.ir" &&
    "$bin/mlcc-fuse" -q "$w/mlp.ir" -o "$w/mlp.f.ir" --passes canonicalize,fold-constants,fuse-ops,dead-code-elimination &&
    "$bin/mlcc-legalize" -q "$w/mlp.f.ir" -o "$w/mlp.l.ir"
  tool=$bin/mlcc-schedule
  check "MLP: the script tensorizes the dense, the rules the rest" run 0 "$w/mlp.l.ir" --intrinsics "$w/dense_tile.ir" \
    --trace "$w/mlp.sched" --target llvm -o "$w/mlp.s.ir" -v
  check "MLP: -v says so" contains "$tmp/err" "@fused_dense_add_relu: script"
  check "MLP: the dense calls the routine" contains "$w/mlp.s.ir" 'attrs(tensor_intrin = "dense_4x16x16")'
  mlp_out() {  # mlp_out NAME MODEL
    rm -rf "$tmp/$1"
    "$bin/mlcc-run" -q "$2" --input "$tmp/models/mlp.input.npy" --output-dir "$tmp/$1"
  }
  check "MLP: the interpreter runs it" mlp_out mlp_interp "$w/mlp.s.ir"
  check "MLP: interpreter = PyTorch" compare "$tmp/mlp_interp/output.npy" "$tmp/models/mlp.output.npy"
  "$bin/mlcc-codegen" -q "$w/mlp.s.ir" -o "$w/mlp.o" && "$bin/mlcc-link" "$w/mlp.o" --lib "$w/libdense_tile.so" -o "$w/mlp.so"
  check "MLP: model.so runs" mlp_out mlp_so "$w/mlp.so"
  check "MLP: model.so = PyTorch" compare "$tmp/mlp_so/output.npy" "$tmp/models/mlp.output.npy"
fi

# Bad input.
tool=$bin/mlcc-schedule
check "an intrinsic that is not loaded" fails_saying \
  'mm.sched:12:3: error: in prim @mm: tensorize: no tensor intrinsic "mlcc_gemm_4x16" is loaded' \
  "$w/mm.ir" --trace "$w/mm.sched" --rules none -o "$w/bad.ir"
sed 's/split(%l1, \[-1, 4\])/split(%l1, [-1, 8])/' "$w/mm.sched" >"$w/mm8.sched"
check "a tile of other extents" fails_saying \
  'cannot tensorize with "mlcc_gemm_4x16": the loops under loop %i_1 have extents \[8, 16, 64\], the description.s \[4, 16, 64\]' \
  "$w/mm.ir" --intrinsics "$w/gemm_tile.ir" --trace "$w/mm8.sched" --rules none -o "$w/bad.ir"
grep -v decompose_reduction "$w/mm.sched" >"$w/noinit.sched"
check "a tile with the init" fails_saying 'has an init part; decompose_reduction first' \
  "$w/mm.ir" --intrinsics "$w/gemm_tile.ir" --trace "$w/noinit.sched" --rules none -o "$w/bad.ir"
sed 's/%C\[%vi, %vj\] + %A/%C[%vi, %vj] - %A/' "$w/gemm_tile.ir" >"$w/sub.ir"
sed 's/mlcc_gemm_4x16/gemm_sub/' "$w/sub.ir" >"$w/sub2.ir"
sed 's/mlcc_gemm_4x16/gemm_sub/' "$w/mm.sched" >"$w/sub.sched"
check "a tile that computes something else" fails_saying 'where the description computes %C\[i_1, j_1\] - %A' \
  "$w/mm.ir" --intrinsics "$w/sub2.ir" --trace "$w/sub.sched" --rules none -o "$w/bad.ir"
sed 's/ attrs(library = "libgemm_tile.so")//' "$w/gemm_tile.ir" >"$w/nolib.ir"
check "a description without its library" fails_saying \
  'nolib.ir:7:1: error: tensor intrinsic @mlcc_gemm_4x16: needs attrs(library = "FILE")' \
  "$w/mm.ir" --intrinsics "$w/nolib.ir" --trace "$w/mm.sched" --rules none -o "$w/bad.ir"
check "nothing written" absent "$w/bad.ir"
sed 's|library = "[^"]*libgemm_tile.so"|library = "nowhere.so"|' "$w/mm.s.ir" >"$w/gone.ir"
tool=$bin/mlcc-run
check "a missing library at run time" fails_saying \
  'tensor intrinsic "mlcc_gemm_4x16" (mlcc_gemm_4x16 of nowhere.so): no such library file' "$w/gone.ir" "${inputs[@]}"
sed '/^extern/d' "$w/mm.s.ir" >"$w/undeclared.ir"
check "an undeclared intrinsic" fails_saying \
  'prim @mm: block "C_o": calls tensor intrinsic "mlcc_gemm_4x16", which the module does not declare' \
  "$w/undeclared.ir" "${inputs[@]}"
sed 's/%B: f32\[64, 16\]) ->/%B: f32[64, 32]) ->/' "$w/mm.s.ir" >"$w/misfit.ir"
tool=$bin/mlcc-inspect
check "a region that does not fit the declaration" fails_saying \
  'the region of %B does not fit parameter %B of "mlcc_gemm_4x16" (f32 with rank 2 vs f32\[64, 32\])' \
  --validate "$w/misfit.ir"
finish tensorize
