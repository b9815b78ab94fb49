#!/usr/bin/env bash
# Answers that were once silently wrong (issue 12), checked through the tools
# as a user chains them, on every stage against the interpreter of the input:
# - graph outputs keep their ONNX names through every pass (canonicalize once
#   forwarded `y = Identity(r)` into the return, and mlcc-run wrote r.npy);
# - Resize with given scales maps coordinates back by those scales (a 0.6
#   scale of 4 columns: sources 1 / 0.6 apart, not 4 / 2), and align_corners
#   by the unrounded resized length in * scale: mlcc once used output / input;
# - library dispatch binds operands by role: the TVM tutorial's pattern
#   (permute_dims(w) then matmul(x, _)) on square shapes once called the
#   kernel with (w, x, b) and returned wrong values with exit 0.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-fuse
if ! python_has onnx numpy; then
  echo "skip: onnx/numpy not importable by /usr/bin/python3"
  finish semantics
fi

# chain DIR IR [FUSE ARGS...]: fuse, legalize, schedule, codegen, link; every
# stage's outputs (and model.so's) are compared with DIR/ref/ (the input's).
chain() {
  local d=$1 ir=$2
  shift 2
  check "$d: fuse" "$bin/mlcc-fuse" -q "$ir" -o "$d/fused.ir" "$@" &&
    check "$d: legalize" "$bin/mlcc-legalize" "$d/fused.ir" -o "$d/lowered.ir" &&
    check "$d: schedule" "$bin/mlcc-schedule" "$d/lowered.ir" --target llvm -o "$d/scheduled.ir" &&
    check "$d: codegen" "$bin/mlcc-codegen" "$d/scheduled.ir" -o "$d/model.o" &&
    check "$d: link" "$bin/mlcc-link" "$d/model.o" -o "$d/model.so" || return
  "$bin/mlcc-run" -q "$ir" --seed 3 --output-dir "$d/ref" || { check "$d: input runs" false; return; }
  for stage in fused.ir lowered.ir scheduled.ir model.so; do
    rm -rf "$d/out"
    check "$d: $stage runs" "$bin/mlcc-run" -q "$d/$stage" --seed 3 --output-dir "$d/out" || continue
    check "$d: $stage writes the same output files" \
      diff <(cd "$d/ref" && ls) <(cd "$d/out" && ls)
    for f in "$d"/ref/*.npy; do
      check "$d: $stage $(basename "$f") matches" compare "$d/out/$(basename "$f")" "$f"
    done
  done
}

# --- output names: Identity of an intermediate, of an input, and of an
# expanded op (LayerNormalization), as ONNX exporters write them ---
py "$tmp/names.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
F = T.FLOAT
g = h.make_graph(
    [h.make_node("Relu", ["x"], ["r"]), h.make_node("Identity", ["r"], ["probs"]),
     h.make_node("Identity", ["x"], ["echo"]),
     h.make_node("LayerNormalization", ["x", "s", "b"], ["ln_inner"], axis=-1),
     h.make_node("Identity", ["ln_inner"], ["normed"])],
    "names", [h.make_tensor_value_info("x", F, [2, 8])],
    [h.make_tensor_value_info(n, F, [2, 8]) for n in ("probs", "echo", "normed")],
    initializer=[nh.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32), "s"),
                 nh.from_array(np.linspace(-1, 1, 8).astype(np.float32), "b")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
mkdir -p "$tmp/names"
check "names model imports" "$bin/mlcc-import" "$tmp/names.onnx" -o "$tmp/names/model.ir"
chain "$tmp/names" "$tmp/names/model.ir"
check "outputs keep their ONNX names" diff <(cd "$tmp/names/out" && ls) <(printf 'echo.npy\nnormed.npy\nprobs.npy\n')

# --- library dispatch by role (square shapes: a swapped order fits) ---
cat >"$tmp/tvm.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[16, 16], %w: f32[16, 16], %b: f32[16]) -> f32[16, 16] {
  dataflow {
    %wt: f32[16, 16] = permute_dims(%w)
    %y: f32[16, 16] = matmul(%x, %wt)
    %z: f32[16, 16] = add(%y, %b)
    %r: f32[16, 16] = relu(%z)
  }
  return %r
}
IR
mkdir -p "$tmp/tvm"
chain "$tmp/tvm" "$tmp/tvm.ir" --passes fuse-by-pattern --patterns "$src/tests/transform/patterns/tvm_dense.yaml"
check "the TVM pattern dispatches as a dense with (x, w, b)" \
  contains "$tmp/tvm/lowered.ir" 'call_extern "blas.dense_bias_relu"(%x, %w, %b)'
# A pattern whose ops are not its kernel's is refused where it is written.
tool=$bin/mlcc-fuse
check "a pattern that is not its kernel fails" run 1 "$tmp/tvm.ir" --passes fuse-by-pattern \
  --patterns "$src/tests/transform/patterns/bad_kernel.yaml" -o "$tmp/bad.ir"
check "  at its codegen key" contains "$tmp/err" 'bad_kernel.yaml:4:14: error: patterns\[0\].codegen: blas.matmul_bias computes'
check "  and writes nothing" absent "$tmp/bad.ir"

# --- Resize with scales whose output size is rounded down (ONNX's own test data) ---
py "$tmp/resize" <<'PY'
import os, sys, numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
for ctm in ("half_pixel", "align_corners"):
    g = h.make_graph([h.make_node("Resize", ["x", "", "s"], ["y"], mode="linear", coordinate_transformation_mode=ctm)],
                     "resize", [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 2, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 1, 1, 2])],
                     initializer=[nh.from_array(np.array([1, 1, 0.6, 0.6], np.float32), "s")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{ctm}.onnx")
np.save(f"{d}/x.npy", np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4))
# The ONNX node tests' expected outputs (test_resize_downsample_scales_linear[_align_corners]).
np.save(f"{d}/half_pixel.expected.npy", np.array([[[[2.6666665, 4.3333331]]]], np.float32))
np.save(f"{d}/align_corners.expected.npy", np.array([[[[1.0, 3.142857]]]], np.float32))
PY
for ctm in half_pixel align_corners; do
  d=$tmp/resize/$ctm
  mkdir -p "$d"
  check "resize $ctm with scale 0.6 imports" "$bin/mlcc-import" -q "$tmp/resize/$ctm.onnx" -o "$d/model.ir"
  check "  and matches ONNX" bash -c "'$bin/mlcc-run' -q '$d/model.ir' --input '$tmp/resize/x.npy' --output-dir '$d/o' &&
    /usr/bin/python3 -c 'import numpy as np, sys; np.testing.assert_allclose(np.load(sys.argv[1]), np.load(sys.argv[2]), rtol=1e-5)' '$d/o/y.npy' '$tmp/resize/$ctm.expected.npy'"
  chain "$d" "$d/model.ir"
done

finish semantics
