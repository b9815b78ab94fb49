#!/usr/bin/env bash
# Where the tools may write (issue 12): never over one of their inputs (the
# same file however spelt: `-o a.ir`, `-o ./x/../a.ir`, a hard link; an ONNX
# model, an IR's weights file, an object being linked), never an IR and its
# weights file on one path, never into a directory; all refused before
# anything is written, with exit 1. An existing device or FIFO (`-o
# /dev/null`) is written into, as a shell redirection would, instead of being
# replaced by a regular file.
source "$2/tests/cli/lib/common.sh"
cd "$tmp" || exit 1

cat >a.ir <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 4]) -> f32[4, 4] {
  dataflow {
    %y: f32[4, 4] = relu(%x)
  }
  return %y
}
IR
cp a.ir a.orig
ln a.ir hard.ir
mkdir -p sub

# unchanged FILE...: each still equals its saved copy
unchanged() { cmp -s a.ir a.orig || { echo "  a.ir changed"; return 1; }; }

for t in fuse legalize; do
  tool=$bin/mlcc-$t
  check "mlcc-$t -o INPUT fails" run 1 a.ir -o a.ir
  check "  names the input" contains "$tmp/err" "a.ir: error: cannot write the output over an input of this command"
  check "mlcc-$t -o another spelling of INPUT fails" run 1 a.ir -o ./sub/../a.ir
  check "mlcc-$t -o a hard link of INPUT fails" run 1 a.ir -o hard.ir
  check "mlcc-$t -o DIRECTORY fails" run 1 a.ir -o sub
  check "  says so" contains "$tmp/err" "is a directory"
  check "  the input is untouched" unchanged
done
tool=$bin/mlcc-schedule
check "mlcc-schedule -o INPUT fails" run 1 a.ir --target llvm -o a.ir
check "  the input is untouched" unchanged
tool=$bin/mlcc-inspect
check "mlcc-inspect --summary -o INPUT fails" run 1 --summary a.ir -o a.ir
check "  the input is untouched" unchanged

# refuses WHAT FILE COPY TOOL ARGS...: bin/TOOL ARGS (writing WHAT) fails with
# exit 1 and leaves FILE as its saved COPY
refuses() {
  local what=$1 file=$2 copy=$3
  tool=$bin/$4
  shift 4
  check "$(basename "$tool") $what fails" run 1 "$@"
  check "  $file is untouched" cmp -s "$file" "$copy"
}

# Devices and FIFOs are written into, not replaced.
tool=$bin/mlcc-fuse
mknod null c 1 3 2>/dev/null || cp -a /dev/null null 2>/dev/null
if [[ -c null ]]; then
  check "-o a character device succeeds" run 0 a.ir -o null
  check "  and it is still a character device" test -c null
else
  echo "skip -o a character device: cannot make one here"
fi
mkfifo fifo
cat fifo >fifo.out &
reader=$!
check "-o a FIFO succeeds" run 0 a.ir -o fifo
wait $reader
check "  and it is still a FIFO" test -p fifo
check "  the reader got the IR" contains fifo.out '^mlcc.ir 1'

# mlcc-import: the model and the weights of the IR.
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  /usr/bin/python3 - <<'PY'
import numpy as np, onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"])], "m", [h.make_tensor_value_info("x", T.FLOAT, [2, 64])],
                 [h.make_tensor_value_info("y", T.FLOAT, [2, 64])],
                 initializer=[nh.from_array(np.ones((64, 64), np.float32), "w")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, "m.onnx")
PY
  cp m.onnx m.orig
  refuses "-o MODEL" m.onnx m.orig mlcc-import m.onnx -o m.onnx
  check "  no weights file either" absent m.safetensors
  refuses "--weights MODEL" m.onnx m.orig mlcc-import m.onnx -o m.ir --weights m.onnx
  check "  no IR either" absent m.ir
  check "mlcc-import with the IR and its weights on one path fails" run 1 m.onnx -o same --weights ./same
  check "  says so" contains "$tmp/err" "the IR and its weights file would be the same file"
  check "  writes nothing" absent same
  check "mlcc-import works" run 0 m.onnx -o m.ir
  cp m.safetensors w.orig
  for ir_tool in mlcc-fuse mlcc-legalize; do
    refuses "-o the input's weights file" m.safetensors w.orig "$ir_tool" m.ir -o m.safetensors
  done
  if "$bin/mlcc-legalize" m.ir -o l.ir && "$bin/mlcc-schedule" l.ir --target llvm -o s.ir &&
     "$bin/mlcc-codegen" s.ir -o m.o; then
    cp m.o o.orig
    refuses "-o the input's weights file" m.safetensors w.orig mlcc-codegen s.ir -o m.safetensors
    refuses "-o an object it links" m.o o.orig mlcc-link m.o -o m.o
  else
    check "the chain to m.o" false
  fi
else
  echo "skip mlcc-import cases: onnx not importable"
fi

finish output_paths
