#!/usr/bin/env bash
# Crafted inputs whose sizes are absurd (issue 12): negative and overflowing
# dimensions in IR files, and tiny ONNX files that declare gigabyte tensors.
# Every tool must answer exit 1 with FILE:LINE:COL (IR) or the initializer /
# node name (ONNX), never a signal, and leave no output file behind. The
# ONNX cases run under `ulimit -v` (4 GiB), so a tool that allocates before
# checking the data fails here instead of passing slowly.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-inspect

# fails_cleanly NAME FILE:LINE:COL MESSAGE OUTPUT TOOL ARGS...: exit 1 (no
# signal), the located message on stderr, no OUTPUT left.
fails_cleanly() {
  local name=$1 loc=$2 message=$3 output=$4
  shift 4
  rm -f "$output"
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if ((rc >= 128)); then
    check "$name: no signal" false
    echo "  killed by signal $((rc - 128))"
    return
  fi
  check "$name: exit 1" test "$rc" -eq 1
  check "$name: located" contains "$tmp/err" "^$loc: error: "
  check "$name: message" contains "$tmp/err" "$message"
  check "$name: no output" absent "$output"
}

# --- IR: negative and overflowing dimensions, at every IR -> IR tool ---
cat >"$tmp/neg.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[-1, 4]) -> f32[-1, 4] {
  dataflow {
    %y: f32[-1, 4] = relu(%x)
  }
  return %y
}
IR
cat >"$tmp/huge.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[1]) -> f32[1] {
  dataflow {
    %big: f32[99999999999, 99999999999] = broadcast_to(%x, shape=[99999999999, 99999999999])
    %y: f32[1] = relu(%x)
  }
  return %y
}
IR
# A constant of 2^62 f32 elements: its byte size (2^64) wraps to 0 unchecked,
# which let a one-element weight pass and constant folding walk 2^62 elements.
cat >"$tmp/wrap.ir" <<'IR'
mlcc.ir 1
weights "wrap.safetensors"

graph @main(%x: f32[4]) -> f32[4] {
  dataflow {
    %w: f32[4611686018427387904] = const "w"
    %r: f32[4611686018427387904] = relu(%w)
    %y: f32[4] = relu(%x)
  }
  return %y
}
IR
py "$tmp/wrap.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + b"\0\0\0\0")
PY
cat >"$tmp/prim.ir" <<'IR'
mlcc.ir 1

prim @f(%a: f32[8], %b: f32[8]) {
  alloc_buffer %t: f32[-3] global
  for %i in 0..8 {
    block "b" (%vi = spatial(8, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi]
    }
  }
}
IR

neg_msg='negative dimension -1 in f32\[-1, 4\]'
huge_msg='f32\[99999999999, 99999999999\] is too large'
wrap_msg='f32\[4611686018427387904\] is too large'
fails_cleanly "inspect negative dim" "$tmp/neg.ir:3:13" "$neg_msg" /dev/null/x "$bin/mlcc-inspect" --validate "$tmp/neg.ir"
fails_cleanly "inspect huge dims" "$tmp/huge.ir:5:5" "$huge_msg" /dev/null/x "$bin/mlcc-inspect" --validate "$tmp/huge.ir"
fails_cleanly "inspect wrapping const" "$tmp/wrap.ir:6:5" "$wrap_msg" /dev/null/x "$bin/mlcc-inspect" --validate "$tmp/wrap.ir"
fails_cleanly "inspect prim buffer" "$tmp/prim.ir:[0-9]*:[0-9]*" "negative dimension -3 in f32\[-3\]" /dev/null/x \
  "$bin/mlcc-inspect" --validate "$tmp/prim.ir"
for stage in fuse legalize schedule; do
  extra=()
  [[ $stage == schedule ]] && extra=(--target llvm)
  [[ -x $bin/mlcc-$stage ]] || { echo "skip mlcc-$stage: not built"; continue; }
  fails_cleanly "$stage negative dim" "$tmp/neg.ir:3:13" "$neg_msg" "$tmp/o.ir" \
    "$bin/mlcc-$stage" "$tmp/neg.ir" "${extra[@]}" -o "$tmp/o.ir"
  fails_cleanly "$stage huge dims" "$tmp/huge.ir:5:5" "$huge_msg" "$tmp/o.ir" \
    "$bin/mlcc-$stage" "$tmp/huge.ir" "${extra[@]}" -o "$tmp/o.ir"
  fails_cleanly "$stage wrapping const" "$tmp/wrap.ir:6:5" "$wrap_msg" "$tmp/o.ir" \
    "$bin/mlcc-$stage" "$tmp/wrap.ir" "${extra[@]}" -o "$tmp/o.ir"
done

# --- ONNX: tiny files that declare huge tensors ---
if ! /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  echo "skip crafted ONNX: the onnx module is not importable by /usr/bin/python3"
  finish bad_input
fi
mkdir -p "$tmp/onnx"
printf '0123456789abcdef' >"$tmp/onnx/small.bin"
py "$tmp/onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
out = sys.argv[1]
G = 1 << 32  # 16 GiB of f32

def save(name, nodes, inits, out_name="y", out_type=TensorProto.FLOAT, inputs=None):
    inputs = inputs if inputs is not None else []
    y = helper.make_tensor_value_info(out_name, out_type, None)
    g = helper.make_graph(nodes, name, inputs, [y], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, f"{out}/{name}.onnx")

def init(name, dims, **fields):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    for k, v in fields.items():
        if k == "float_data":
            t.float_data.extend(v)
        elif k == "raw_data":
            t.raw_data = v
        elif k == "external":
            t.data_location = TensorProto.EXTERNAL
            for key, value in v.items():
                e = t.external_data.add()
                e.key, e.value = key, value
    return t

relu = lambda x: helper.make_node("Relu", [x], ["y"], name="relu")
save("raw_short", [relu("w")], [init("w", [G], raw_data=b"\0\0\0\0")])
save("typed_short", [relu("w")], [init("w", [G], float_data=[1.0])])
save("wraps", [relu("w")], [init("w", [1 << 62], raw_data=b"")])
save("negative", [relu("w")], [init("w", [-2, 3], raw_data=b"")])
save("external_short", [relu("w")], [init("w", [G], external={"location": "small.bin"})])
save("external_offset", [relu("w")],
     [init("w", [2], external={"location": "small.bin", "offset": "9223372036854775800"})])
save("external_offset_wraps", [relu("w")],
     [init("w", [250], external={"location": "small.bin", "offset": "9223372036854775000", "length": "1000"})])
save("external_bad_offset", [relu("w")], [init("w", [2], external={"location": "small.bin", "offset": "12abc"})])
big = init("value", [G], raw_data=b"\0\0\0\0")
save("constant_short", [helper.make_node("Constant", [], ["c"], name="cnode", value=big), relu("c")], [])
shape = helper.make_tensor("shape", TensorProto.INT64, [1], [1 << 33])
save("constant_of_shape", [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill"), relu("c")], [shape])
ints = lambda n, v: helper.make_tensor(n, TensorProto.INT64, [], [v])
save("range", [helper.make_node("Range", ["s", "l", "d"], ["y"], name="rng")],
     [ints("s", 0), ints("l", 1 << 40), ints("d", 1)], out_type=TensorProto.INT64)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 40, 1 << 40])
save("input_huge", [relu("x")], [], inputs=[x])
PY
for f in raw_short typed_short wraps external_short constant_short; do
  size=$(stat -c %s "$tmp/onnx/$f.onnx")
  check "$f.onnx is tiny ($size bytes)" test "$size" -lt 200
done

# mlcc-import with 4 GiB of address space: an over-allocation fails the test.
# AddressSanitizer (the debug preset) reserves terabytes of shadow memory and
# cannot start under `ulimit -v`: there its own limit on one allocation
# aborts the run instead.
if ldd "$bin/mlcc-import" 2>/dev/null | grep -q libasan; then
  limit='export ASAN_OPTIONS=max_allocation_size_mb=4096${ASAN_OPTIONS:+:$ASAN_OPTIONS}'
else
  limit='ulimit -v 4194304'
fi
cat >"$tmp/import" <<SH
#!/usr/bin/env bash
$limit
exec "$bin/mlcc-import" "\$@"
SH
chmod +x "$tmp/import"
imp() {  # imp NAME MESSAGE MODEL: exit 1, the message, no IR or weights left
  local name=$1 message=$2 model=$tmp/onnx/$3.onnx
  fails_cleanly "import $name" "$model" "$message" "$tmp/onnx/out.ir" "$tmp/import" "$model" -o "$tmp/onnx/out.ir"
  check "import $name: no weights" absent "$tmp/onnx/out.safetensors"
}
imp "raw data too short" "initializer: tensor 'w': raw data has 4 bytes, its shape and data type need 17179869184" raw_short
imp "typed data too short" "initializer: tensor 'w': has 1 elements, its shape needs 4294967296" typed_short
imp "byte size wraps" "initializer: tensor 'w': shape \[4611686018427387904\] is too large" wraps
imp "negative dim" "initializer: tensor 'w': negative dimension -2" negative
imp "external file too short" "initializer: tensor 'w': external data file '.*small.bin' is too short (16 bytes" external_short
imp "external offset past the end" "tensor 'w': external data file .* is too short" external_offset
imp "external offset + length wraps" "tensor 'w': external data file .* is too short" external_offset_wraps
imp "external offset not a number" "tensor 'w': external data offset '12abc' is not a non-negative integer" \
  external_bad_offset
imp "Constant value too short" "node 'cnode' (Constant): tensor 'value': raw data has 4 bytes" constant_short
imp "Range too long" "node 'rng' (Range): the range has more than" range
imp "graph input too large" "graph input 'x': shape \[1099511627776, 1099511627776\] is too large" input_huge
# A ConstantOfShape of 32 GiB is a valid model: it stays an op (broadcast_to)
# instead of being allocated at import.
tool=$tmp/import
check "ConstantOfShape of 32 GiB imports without allocating it" run 0 "$tmp/onnx/constant_of_shape.onnx" \
  -o "$tmp/onnx/cos.ir"
check "ConstantOfShape of 32 GiB stays an op" contains "$tmp/onnx/cos.ir" 'broadcast_to'

finish bad_input
