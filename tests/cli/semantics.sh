#!/usr/bin/env bash
# Answers that were once silently wrong (issue 12), checked through the tools
# as a user chains them, on every stage against the interpreter of the input:
# - graph outputs keep their ONNX names through every pass (canonicalize once
#   forwarded `y = Identity(r)` into the return, and mlcc-run wrote r.npy);
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

finish semantics
