#!/usr/bin/env bash
# mlcc-run as a user runs it on IR files: outputs written as .npy and checked
# with numpy, deterministic random inputs, prim func entries, and the exit
# codes and messages of bad inputs (1) and usage errors (2).
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-run
mm=$src/tests/cli/inspect/mm.ir

py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
rng = np.random.default_rng(0)
np.save(f"{d}/a.npy", rng.standard_normal((128, 128)).astype(np.float32))
np.save(f"{d}/b.npy", rng.standard_normal((128, 128)).astype(np.float32))
np.save(f"{d}/a64.npy", rng.standard_normal((128, 128)))
np.save(f"{d}/a16.npy", np.zeros((128, 128), dtype=np.int16))
np.save(f"{d}/au64.npy", np.zeros((128, 128), dtype=np.uint64))
np.save(f"{d}/small.npy", np.ones((2, 128), np.float32))
np.save(f"{d}/ai.npy", np.ones((128, 128), np.int64))
PY

check "matmul with inputs" run 0 "$mm" --input A="$tmp/a.npy" --input B="$tmp/b.npy" --output-dir "$tmp/o1"
check "output named after the returned var" test -f "$tmp/o1/C.npy"
check "matmul matches numpy" py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
a, b, c = np.load(f"{d}/a.npy"), np.load(f"{d}/b.npy"), np.load(f"{d}/o1/C.npy")
assert c.dtype == np.float32 and c.shape == (128, 128), (c.dtype, c.shape)
np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
PY

# bf16 (no numpy dtype): an input is read from f32, rounded to nearest even;
# an output is written as f32.
cat >"$tmp/bf16.ir" <<'IR'
mlcc.ir 1
graph @main(%x: bf16[4]) -> f32[4] {
  dataflow {
    %y: f32[4] = cast(%x, dtype = "f32")
  }
  return %y
}
IR
py "$tmp" <<'PY'
import numpy as np, sys
# 1 + 2^-8 is a tie (rounds to even: 1), 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
np.save(f"{sys.argv[1]}/bf16_in.npy", np.array([1 + 2**-8, 1 + 3 * 2**-8, -2.5, 3e38], np.float32))
PY
check "a bf16 input from an f32 file" run 0 "$tmp/bf16.ir" --input x="$tmp/bf16_in.npy" --output-dir "$tmp/bf"
check "  is rounded to nearest even" py "$tmp" <<'PY'
import numpy as np, sys
x, y = np.load(f"{sys.argv[1]}/bf16_in.npy"), np.load(f"{sys.argv[1]}/bf/y.npy")
bits = x.view(np.uint32).astype(np.uint64)
rne = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
np.testing.assert_array_equal(y, rne)
assert y[0] == 1 and y[1] == 1 + 2**-6 and y[2] == -2.5
PY

check "summary without --output-dir" run 0 "$mm" --input A="$tmp/a.npy" --input B="$tmp/b.npy"
check "summary names output" contains "$tmp/out" "^C: f32\[128, 128\] = \["
check "summary has mean" contains "$tmp/out" "mean="

check "random inputs" run 0 "$mm" --seed 7 --output-dir "$tmp/r1"
check "random inputs again" run 0 "$mm" --seed 7 --output-dir "$tmp/r2"
check "random deterministic" cmp -s "$tmp/r1/C.npy" "$tmp/r2/C.npy"
check "other seed" run 0 "$mm" --seed 8 --output-dir "$tmp/r3"
check "other seed differs" bash -c "! cmp -s '$tmp/r1/C.npy' '$tmp/r3/C.npy'"
check "verbose times the run" run 0 "$mm" -v -q
check "verbose says ms" contains "$tmp/err" "ran @main in .* ms"
check "quiet prints nothing" bash -c "[[ ! -s '$tmp/out' ]]"

# A prim func entry: written-only buffers are outputs; symbolic n from --dim.
check "prim entry" run 0 "$src/tests/ir/valid/expressions.ir" --entry scalar --output-dir "$tmp/p"
check "prim outputs" bash -c "[[ -f '$tmp/p/s.npy' && -f '$tmp/p/flag.npy' ]]"
check "symbolic dim for random inputs" run 0 "$src/tests/ir/valid/expressions.ir" --entry arith --dim n=5
check "symbolic dim used" contains "$tmp/out" "^out: f32\[5\]"

check "unknown input" run 1 "$mm" --input Q="$tmp/a.npy"
check "unknown input names expected ones" contains "$tmp/err" "unknown input 'Q'.*A: f32\[128, 128\], B: f32\[128, 128\]"
check "missing input" run 1 "$mm" --input A="$tmp/a.npy"
check "missing input named" contains "$tmp/err" "missing input 'B'"
check "missing input with --random-inputs" run 0 "$mm" --input A="$tmp/a.npy" --random-inputs
check "wrong shape" run 1 "$mm" --input A="$tmp/small.npy" --input B="$tmp/b.npy"
check "wrong shape message" contains "$tmp/err" "input 'A': expected f32\[128, 128\], got f32\[2, 128\]"
check "wrong dtype" run 1 "$mm" --input A="$tmp/ai.npy" --input B="$tmp/b.npy"
check "wrong dtype message" contains "$tmp/err" "input 'A': expected f32\[128, 128\], got i64\[128, 128\]"
check "float64 npy" run 1 "$mm" --input A="$tmp/a64.npy" --input B="$tmp/b.npy"
check "float64 message" contains "$tmp/err" "input 'A': expected f32\[128, 128\], got f64\[128, 128\]"
check "int16 npy" run 1 "$mm" --input A="$tmp/a16.npy" --input B="$tmp/b.npy"
check "int16 message" contains "$tmp/err" "input 'A': expected f32\[128, 128\], got i16\[128, 128\]"
check "uint64 npy" run 1 "$mm" --input A="$tmp/au64.npy" --input B="$tmp/b.npy"
check "uint64 message" contains "$tmp/err" "au64.npy: error: unsupported dtype '<u8'"
check "missing npy file" run 1 "$mm" --input A="$tmp/nope.npy" --input B="$tmp/b.npy"
check "missing npy named" contains "$tmp/err" "nope.npy"
head -c 100 /dev/urandom > "$tmp/garbage.npy"
check "garbage npy" run 1 "$mm" --input A="$tmp/garbage.npy" --input B="$tmp/b.npy"
check "bad IR file" run 1 "$src/tests/cli/inspect/undefined_buffer.ir"
check "bad IR located" contains "$tmp/err" "undefined_buffer.ir:5:[0-9]*: error:"
check "unknown entry" run 1 "$mm" --entry nosuch
check "unknown entry named" contains "$tmp/err" "no function @nosuch"
check "usage: no file" run 2
check "usage: bad --input" run 2 "$mm" --input A
check "usage: unknown flag" run 2 "$mm" --no-such-flag
# --input FILE.npy without NAME=: the entry's only input; with several, exit 2 naming them.
cat >"$tmp/one.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[2, 128]) -> f32[2, 128] {
  dataflow {
    %y: f32[2, 128] = negative(%x)
  }
  return %y
}
IR
py "$tmp" <<<'import numpy as np, sys; np.save(sys.argv[1] + "/x.npy", np.arange(256, dtype=np.float32).reshape(2, 128))'
check "unnamed input: the only one" run 0 "$tmp/one.ir" --input "$tmp/x.npy" --output-dir "$tmp/u"
check "unnamed input bound" py "$tmp" <<<'import numpy as np, sys; d = sys.argv[1]; assert (np.load(d + "/u/y.npy") == -np.load(d + "/x.npy")).all()'
check "unnamed input, several inputs" run 2 "$mm" --input "$tmp/a.npy"
check "several inputs named" contains "$tmp/err" "without NAME= needs a single input, but @main takes 2: A: f32\[128, 128\], B: f32\[128, 128\]"
check "unnamed input, prim func" run 2 "$mm" --entry mm --input "$tmp/a.npy"
check "prim func: the buffers it reads, not C" contains "$tmp/err" "@mm takes 2: A: f32\[128, 128\], B: f32\[128, 128\]; give each"
check "unnamed and named" run 2 "$mm" --input "$tmp/a.npy" --input B="$tmp/b.npy"
check "unnamed and named message" contains "$tmp/err" "give each as NAME=FILE.npy"
check "unnamed input, bad IR still 1" run 1 "$src/tests/cli/inspect/undefined_buffer.ir" --input "$tmp/a.npy"
check "unnamed input, wrong shape still 1" run 1 "$tmp/one.ir" --input "$tmp/a.npy"
check "unnamed input, wrong shape message" contains "$tmp/err" "input 'x': expected f32\[2, 128\], got f32\[128, 128\]"
# Several outputs are written all or nothing: the second one failing (its
# path is a directory) leaves no first one behind, and an older first one intact.
cat >"$tmp/two.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[2, 3]) -> (f32[2, 3], f32[2, 3]) {
  dataflow {
    %"a/b": f32[2, 3] = exp(%x)
    %c: f32[2, 3] = negative(%x)
  }
  return (%"a/b", %c)
}
IR
mkdir -p "$tmp/o2/c.npy"
check "second output fails" run 1 "$tmp/two.ir" --seed 1 --output-dir "$tmp/o2"
check "second output fails: message" contains "$tmp/err" "o2/c.npy: error: cannot write the output: is a directory"
check "second output fails: first not written" absent "$tmp/o2/a_b.npy"
check "second output fails: no temporary files" bash -c "[[ \$(ls -A '$tmp/o2') == c.npy ]]"
echo old >"$tmp/o2/a_b.npy"
check "second output fails again" run 1 "$tmp/two.ir" --seed 1 --output-dir "$tmp/o2"
check "second output fails: first kept as it was" bash -c "[[ \$(cat '$tmp/o2/a_b.npy') == old && \$(ls -A '$tmp/o2' | wc -l) == 2 ]]"
rmdir "$tmp/o2/c.npy"
check "both outputs" run 0 "$tmp/two.ir" --seed 1 --output-dir "$tmp/o2" -v
check "both outputs written" bash -c "[[ \$(ls -A '$tmp/o2' | tr '\n' ' ') == 'a_b.npy c.npy ' ]]"
check "both outputs: -v names them" contains "$tmp/err" "wrote .*o2/c.npy"
# Two outputs whose file names collide (a/b and a_b) are refused, nothing written.
sed 's/%c\b/%a_b/g' "$tmp/two.ir" >"$tmp/collide.ir"
check "colliding output names" run 1 "$tmp/collide.ir" --seed 1 --output-dir "$tmp/o3"
check "colliding output names: message" contains "$tmp/err" "^--output-dir: error: outputs 'a/b' and 'a_b' would both be written to .*o3/a_b.npy"
check "colliding output names: nothing written" absent "$tmp/o3"
check "help has an example" run 0 --help
check "help: unnamed input" contains "$tmp/out" "mlcc-run model.so --input x.npy"
check "help example" contains "$tmp/out" "mlcc-run lowered.ir --input x=x.npy --output-dir out/"
check "version" run 0 --version
check "version line" contains "$tmp/out" "mlcc-run .* (IR format 1)"

finish run
