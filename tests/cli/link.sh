#!/usr/bin/env bash
# The runtime, mlcc-link, examples/c and mlcc-run on a compiled model, with a
# hand-written model.o (tests/cli/link/tiny_model.c: a BLAS dense with bias and
# relu, a nested parallel loop, a copy; weights embedded) in place of
# mlcc-codegen's: outputs against numpy at 1 and 2 threads (a GEMM small
# enough for one thread and one split over the pool), exported symbols, the
# C example, benchmark JSON, the profile table, and the errors of each tool.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-link
CC=${CC:-cc}

# make_model DIR M N K [CFLAGS...]: DIR/{x,W,b}.npy, DIR/weights.h, DIR/model.o
make_model() {
  local d=$1 M=$2 N=$3 K=$4
  shift 4
  mkdir -p "$d"
  py "$d" "$M" "$N" "$K" <<'PY' || return 1
import numpy as np, sys
d, (M, N, K) = sys.argv[1], map(int, sys.argv[2:5])
rng = np.random.default_rng(M * 7 + N)
W = (rng.standard_normal((N, K)) / np.sqrt(K)).astype(np.float32)
b = rng.standard_normal(N).astype(np.float32)
np.save(f"{d}/W.npy", W); np.save(f"{d}/b.npy", b)
np.save(f"{d}/x.npy", rng.standard_normal((M, K)).astype(np.float32))
with open(f"{d}/weights.h", "w") as f:
    f.write(f"#define TINY_M {M}\n#define TINY_N {N}\n#define TINY_K {K}\n")
    arr = lambda name, a: f"static const float {name}[] __attribute__((aligned(64))) = {{" + \
        ",".join(float(v).hex() for v in a.ravel()) + "};\n"
    f.write(arr("tiny_w", W) + arr("tiny_b", b))
PY
  "$CC" -c -O2 -fPIC -Wall -Werror -I"$src/libs/runtime/include" -I"$d" "$@" \
    "$src/tests/cli/link/tiny_model.c" -o "$d/model.o"
}

# reference DIR OUTDIR: OUTDIR/{y,h}.npy against numpy on DIR/x.npy (or X.npy given)
reference() {
  py "$1" "$2" "${3:-$1/x.npy}" <<'PY'
import numpy as np, sys
d, o, xf = sys.argv[1:4]
x, W, b = np.load(xf), np.load(f"{d}/W.npy"), np.load(f"{d}/b.npy")
h = np.maximum(x.astype(np.float64) @ W.T.astype(np.float64) + b, 0)
for name, ref in (("h", h), ("y", 2 * h + 1)):
    got = np.load(f"{o}/{name}.npy")
    assert got.dtype == np.float32 and got.shape == ref.shape, (name, got.dtype, got.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
PY
}

small=$tmp/small   # 8x32x64: one thread does the GEMM
big=$tmp/big       # 96x256x128: the GEMM is split over the pool
check "fixture small" make_model "$small" 8 32 64
check "fixture big" make_model "$big" 96 256 128

# --- mlcc-link
check "link" run 0 "$small/model.o" -o "$small/model.so"
check "link big" run 0 "$big/model.o" -o "$big/model.so" -v
check "-v prints the command" contains "$tmp/err" "-shared .*libmlcc_runtime.a"
check "exports only runtime.h" bash -c "
  syms=\$(nm -D --defined-only '$small/model.so' | awk '{print \$3}' | sort)
  [[ \$(echo \"\$syms\" | wc -l) -eq 22 ]] && ! echo \"\$syms\" | grep -qv -e '^mlcc_model_' -e '^mlcc_last_error\$'"
check "self-contained: no mlcc library needed" bash -c "! ldd '$small/model.so' | grep -q mlcc"
check "no temporary files left" bash -c "[[ -z \$(ls -A '$small' | grep '^\\.') ]]"
check "missing input" fails_saying "nope.o: error: no such file" "$tmp/nope.o" -o "$tmp/nope.so"
check "not an object" fails_saying "weights.h: error: not an object file (not ELF)" "$small/weights.h" -o "$tmp/nope.so"
check "a .so is not an object" fails_saying "not an object file (an ELF shared library" "$small/model.so" -o "$tmp/nope.so"
echo 'int not_a_model(void) { return 1; }' >"$tmp/other.c"
"$CC" -c -fPIC "$tmp/other.c" -o "$tmp/other.o"
echo old >"$tmp/keep.so"
check "link failure" fails_saying "do not define mlcc_abi_model_v1" "$tmp/other.o" -o "$tmp/keep.so"
check "linker's message shown" contains "$tmp/err" "undefined reference to .mlcc_abi_model_v1"
check "old output untouched" bash -c "[[ \$(cat '$tmp/keep.so') == old ]]"
check "nothing half-written" bash -c "[[ -z \$(ls -A '$tmp' | grep '^\\.keep') ]]"
check "no such output directory" run 1 "$small/model.o" -o "$tmp/no/dir/model.so"
mkdir -p "$tmp/inst/bin" "$tmp/inst/lib"  # an installed layout: <prefix>/bin and <prefix>/lib
cp "$bin/mlcc-link" "$tmp/inst/bin/"
check "installed, no runtime" bash -c "! '$tmp/inst/bin/mlcc-link' '$small/model.o' -o '$tmp/i.so' 2>'$tmp/err'"
check "no runtime message" contains "$tmp/err" "cannot find libmlcc_runtime.a (looked at .*inst/lib/libmlcc_runtime.a)"
check "--runtime" "$tmp/inst/bin/mlcc-link" "$small/model.o" -o "$tmp/i.so" --runtime "$bin/../lib/libmlcc_runtime.a"
cp "$bin/../lib/libmlcc_runtime.a" "$tmp/inst/lib/"
check "installed runtime found" "$tmp/inst/bin/mlcc-link" "$small/model.o" -o "$tmp/i.so"
check "usage: no -o" run 2 "$small/model.o"
check "help documents embedded weights" run 0 --help
check "help says self-contained" contains "$tmp/out" "weights in"

# --- examples/c: built with its Makefile, run on .npy inputs and a fill
check "example builds" make -s -C "$src/examples/c" O="$tmp"
ex=$tmp/run_model
check "example runs" bash -c "'$ex' '$small/model.so' x='$small/x.npy' --out '$small' >'$tmp/ex.txt'"
check "example lists inputs" contains "$tmp/ex.txt" "input 0: x f32\[8, 64\]"
check "example lists outputs" contains "$tmp/ex.txt" "output 1: h f32\[8, 32\]"
check "example outputs match numpy" reference "$small" "$small"
check "example fill" bash -c "'$ex' '$small/model.so' --fill 0.5 --threads 1 --out '$tmp' >'$tmp/ex.txt'"
py "$tmp" <<'PY'
import numpy as np, sys
np.save(f"{sys.argv[1]}/half.npy", np.full((8, 64), 0.5, np.float32))
PY
check "example fill matches numpy" reference "$small" "$tmp" "$tmp/half.npy"
check "example summary" contains "$tmp/ex.txt" "^y: .* sum="
check "example: wrong shape npy" bash -c "! '$ex' '$small/model.so' x='$big/x.npy' >/dev/null 2>'$tmp/err'"
check "example: wrong shape message" contains "$tmp/err" "expected <f4 (8, 64)"

# --- mlcc-run on model.so
tool=$bin/mlcc-run
for t in 1 2; do
  check "run small, $t threads" run 0 "$small/model.so" --input x="$small/x.npy" --threads $t --output-dir "$tmp/s$t"
  check "small matches numpy, $t threads" reference "$small" "$tmp/s$t"
  check "run big, $t threads" run 0 "$big/model.so" --input x="$big/x.npy" --threads $t --output-dir "$tmp/b$t"
  check "big matches numpy, $t threads" reference "$big" "$tmp/b$t"
done
# Its two outputs (y, then h) are written all or nothing.
mkdir -p "$tmp/o2/h.npy"
echo old >"$tmp/o2/y.npy"
check "second output fails" fails_saying "o2/h.npy: error: cannot write the output: is a directory" "$small/model.so" --input x="$small/x.npy" --output-dir "$tmp/o2"
check "second output fails: first kept as it was" bash -c "[[ \$(cat '$tmp/o2/y.npy') == old && \$(ls -A '$tmp/o2' | wc -l) == 2 ]]"
check "unnamed input: the model's only one" run 0 "$small/model.so" --input "$small/x.npy" --output-dir "$tmp/su"
check "unnamed input matches numpy" reference "$small" "$tmp/su"
check "summary" run 0 "$small/model.so" --input x="$small/x.npy"
check "summary lines" contains "$tmp/out" "^y: f32\[8, 32\] = \[.*mean="
check "random inputs" run 0 "$big/model.so" --seed 3 --output-dir "$tmp/r1"
check "random inputs again" run 0 "$big/model.so" --seed 3 --output-dir "$tmp/r2" --threads 1
check "random deterministic" py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
np.testing.assert_allclose(np.load(f"{d}/r1/y.npy"), np.load(f"{d}/r2/y.npy"), rtol=1e-5, atol=1e-5)
PY
check "bench json" run 0 "$big/model.so" --bench 5 --threads 1 --json
check "bench json shape" py "$tmp/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert set(j) == {"median_ms", "min_ms", "mean_ms", "runs", "threads"}, j
assert j["runs"] == 5 and j["threads"] == 1, j
assert 0 < j["min_ms"] <= j["median_ms"] and j["min_ms"] <= j["mean_ms"], j
PY
check "bench text" run 0 "$big/model.so" --bench 4 --threads 2 -q
check "bench line" contains "$tmp/out" "^bench: 4 runs, 2 threads: median .* ms"
check "profile" run 0 "$big/model.so" --bench 7 --profile -q
check "profile header" contains "$tmp/out" "^kernel .*calls .*total ms .*share .*GFLOPS"
check "profile dense row" contains "$tmp/out" "^dense_relu  *7  *[0-9.]*  *[0-9.]*%  *[0-9.]*$"
check "profile scale row" contains "$tmp/out" "^scale_add  *7 "
check "profile copy row: flops unknown" contains "$tmp/out" "^copy_h  *7 .*  -$"
check "profile one run" run 0 "$small/model.so" --profile -q
check "profile one call" contains "$tmp/out" "^dense_relu  *1 "
check "profile with json" run 0 "$big/model.so" --bench 2 --profile --json
check "json stays parseable" py "$tmp/out" <<<'import json, sys; json.load(open(sys.argv[1]))'
check "profile table on stderr" contains "$tmp/err" "^dense_relu  *2 "
check "threads reported" run 0 "$small/model.so" --threads 3 --json
check "threads in json" contains "$tmp/out" '"threads": 3'

# --- errors
py "$tmp" <<'PY'
import numpy as np, sys
d = sys.argv[1]
np.save(f"{d}/xi.npy", np.ones((8, 64), np.int64))
np.save(f"{d}/x64.npy", np.ones((8, 64)))
x = np.ones((8, 64), np.float32); x[0, 0] = np.nan
np.save(f"{d}/xnan.npy", x)
PY
check "unknown input" fails_saying "model.so: error: unknown input 'q'; the model takes: x: f32\[8, 64\]" "$small/model.so" --input q="$small/x.npy"
check "wrong shape" fails_saying "input 'x': expected f32\[8, 64\], got f32\[96, 128\]" "$small/model.so" --input x="$big/x.npy"
check "wrong dtype" fails_saying "input 'x': expected f32\[8, 64\], got i64\[8, 64\]" "$small/model.so" --input x="$tmp/xi.npy"
check "float64" fails_saying "input 'x': expected f32\[8, 64\], got f64\[8, 64\]" "$small/model.so" --input x="$tmp/x64.npy"
check "error from the model" fails_saying "run failed: tiny model: x\[0, 0\] is NaN" "$small/model.so" --input x="$tmp/xnan.npy"
echo "not a model" >"$tmp/text.so"
check "not a model" fails_saying "text.so: error: not a compiled model" "$tmp/text.so"
check "object, not model" fails_saying "an object file, not a compiled model: link it first" "$small/model.o"
"$CC" -shared -fPIC "$tmp/other.c" -o "$tmp/other.so"
check "other library" run 1 "$tmp/other.so"
# (not dlopen'ed: without mlcc-link's checksum it could as well be a truncated model.so)
check "other library message" contains "$tmp/err" "other.so: error: not a model.so as mlcc-link writes it"
# A truncated or damaged model.so is refused before dlopen (before: SIGBUS or
# SIGSEGV in the loader): mlcc-link appends a checksum that mlcc-run verifies.
check "mlcc-link appends the checksum" bash -c "tail -c 8 '$small/model.so' | grep -q MLCCSUM1"
head -c 20000 "$small/model.so" >"$tmp/trunc.so"
check "truncated model.so exits 1" fails_saying "trunc.so: error: not a model.so as mlcc-link writes it: .*truncated" "$tmp/trunc.so"
py "$small/model.so" "$tmp" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
flip = bytearray(data)
flip[0x20] ^= 0x40  # e_phoff: the program headers would be read far out of the file
open(f"{sys.argv[2]}/flip.so", "wb").write(flip)
flip = bytearray(data)
flip[len(data) // 2] ^= 0x01  # one bit in the middle
open(f"{sys.argv[2]}/flip_mid.so", "wb").write(flip)
open(f"{sys.argv[2]}/cut.so", "wb").write(data[:1000] + data[1008:])  # 8 bytes cut, trailer kept
PY
check "bit-flipped header exits 1" fails_saying "flip.so: error: damaged: its contents do not match the checksum" "$tmp/flip.so"
check "bit-flipped middle exits 1" fails_saying "flip_mid.so: error: damaged" "$tmp/flip_mid.so"
check "bytes cut exits 1" fails_saying "cut.so: error: truncated or damaged: mlcc-link wrote [0-9]* bytes before the checksum, the file has" "$tmp/cut.so"
check "fixture with another ABI version" make_model "$tmp/abi" 8 32 64 -DTINY_ABI_VERSION=99
"$bin/mlcc-link" "$tmp/abi/model.o" -o "$tmp/abi/model.so"
check "ABI mismatch" fails_saying "model ABI version 99 does not match the runtime's 4" "$tmp/abi/model.so"
check "usage: --bench on IR" run 2 "$src/tests/cli/inspect/mm.ir" --bench 3
check "usage: --threads 0" run 2 "$small/model.so" --threads 0
check "usage: --dim on model.so" run 2 "$small/model.so" --dim n=3

# --- a model.so from mlcc-codegen (when built): same random inputs as its IR,
# interpreted and compiled; profile names the prim funcs
if [[ -x $bin/mlcc-codegen && -x $bin/mlcc-legalize ]]; then
  cp "$src/tests/cli/lib/matmul_tanh.ir" "$tmp/chain.ir"
  "$bin/mlcc-legalize" "$tmp/chain.ir" -o "$tmp/chain.low.ir"
  check "codegen" "$bin/mlcc-codegen" "$tmp/chain.low.ir" --target llvm -o "$tmp/chain.o"
  check "codegen output links" "$bin/mlcc-link" "$tmp/chain.o" -o "$tmp/chain.so"
  check "interpreted, random inputs" run 0 "$tmp/chain.low.ir" --seed 5 --output-dir "$tmp/ci"
  check "compiled, same random inputs" run 0 "$tmp/chain.so" --seed 5 --output-dir "$tmp/cc"
  out=$(ls "$tmp/ci")
  check "compiled matches interpreted" compare "$tmp/cc/$out" "$tmp/ci/$out"
  if [[ -x $bin/mlcc-schedule ]]; then  # parallel loops of generated code on the pool
    # a small parallel grain: the 64x48x32 matmul gets its parallel loop
    "$bin/mlcc-schedule" -q "$tmp/chain.low.ir" --target "llvm -parallel-grain=4096" -o "$tmp/chain.s.ir"
    check "scheduled IR has parallel loops" contains "$tmp/chain.s.ir" "parallel"
    check "scheduled codegen" "$bin/mlcc-codegen" "$tmp/chain.s.ir" --target llvm -o "$tmp/chain.s.o"
    check "scheduled links" "$bin/mlcc-link" "$tmp/chain.s.o" -o "$tmp/chain.s.so"
    for t in 1 2 3; do
      check "scheduled, $t threads" run 0 "$tmp/chain.s.so" --seed 5 --threads $t --output-dir "$tmp/cs$t"
      check "scheduled matches interpreted, $t threads" compare "$tmp/cs$t/$out" "$tmp/ci/$out"
    done
  fi
  check "unnamed input, two inputs" run 2 "$tmp/chain.so" --input "$small/x.npy"
  check "unnamed input, inputs named" contains "$tmp/err" "without NAME= needs a single input, but the model takes 2: x: f32\[64, 48\], w: f32\[48, 32\]"
  check "profile of generated kernels" run 0 "$tmp/chain.so" --bench 3 --profile -q
  check "profile names a prim func" contains "$tmp/out" "^fused_\\|^matmul\\|^tanh"
  check "C example runs generated code" bash -c "'$ex' '$tmp/chain.so' --fill 0.25 >'$tmp/ex.txt'"
  check "C example lists both inputs" contains "$tmp/ex.txt" "input 1: w f32\\[48, 32\\]"
else
  echo "skip: mlcc-codegen not built"
fi

finish link
