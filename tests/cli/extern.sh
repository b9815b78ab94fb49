#!/usr/bin/env bash
# User library functions (issue 18; include/mlcc/extern.h, examples/extern):
# a pattern file declares C functions of the user's library (`externs`) and
# dispatches op groups to them; fuse-by-pattern copies the declarations into
# the IR, legalize turns the groups into call_extern, the interpreter calls
# the library (dlopen; an object or archive linked into a temporary shared
# library) and model.so calls it (mlcc-link --lib, for a .so, .a or .o).
# Every stage gives the unfused graph's outputs on the same inputs. Bad input:
# a pattern whose wildcards are not the extern's parameters, a bad declared
# type, a reserved name, a call of the wrong type, a missing library or
# symbol, a function returning non-zero, a link without --lib: each a clear
# error and exit 1.
source "$2/tests/cli/lib/common.sh"
lib=$tmp/lib
mkdir -p "$lib"
cc -O2 -fPIC -I"$src/include" -c "$src/examples/extern/mylib.c" -o "$lib/mylib.o" || exit 1
cc -shared "$lib/mylib.o" -o "$lib/libmylib.so" && ar rcs "$lib/libmylib.a" "$lib/mylib.o" || exit 1
cp "$src/examples/extern/mylib.yaml" "$lib/"
cat >"$tmp/fails.c" <<'C'
#include <mlcc/extern.h>
int mylib_linear_relu(const mlcc_extern_tensor* args, int32_t n) { (void)args; (void)n; return 7; }
int mylib_linear(const mlcc_extern_tensor* args, int32_t n) { (void)args; (void)n; return 7; }
C
cc -fPIC -shared -I"$src/include" "$tmp/fails.c" -o "$lib/libfails.so" || exit 1
sed 's/libmylib.so/libfails.so/' "$lib/mylib.yaml" >"$lib/fails.yaml"
sed 's/libmylib.so/mylib.o/' "$lib/mylib.yaml" >"$lib/object.yaml"

cat >"$tmp/m.ir" <<'IR'
mlcc.ir 1

graph @main(%x: f32[4, 8], %w1: f32[16, 8], %b1: f32[16], %w2: f32[3, 16], %b2: f32[3]) -> f32[4, 3] {
  dataflow {
    %h: f32[4, 16] = dense(%x, %w1)
    %hb: f32[4, 16] = add(%h, %b1)
    %r: f32[4, 16] = relu(%hb)
    %o: f32[4, 3] = dense(%r, %w2)
    %ob: f32[4, 3] = add(%b2, %o)
    %y: f32[4, 3] = tanh(%ob)
  }
  return %y
}
IR
outputs() {  # outputs NAME MODEL [mlcc-run args]: runs MODEL on the seed-3 random inputs into $tmp/NAME/
  local name=$1 model=$2
  shift 2
  rm -rf "$tmp/$name"
  "$bin/mlcc-run" -q "$model" --seed 3 --output-dir "$tmp/$name" "$@"
}
same() { compare "$tmp/$1/y.npy" "$tmp/reference/y.npy"; }

tool=$bin/mlcc-fuse
check "the unfused graph runs" outputs reference "$tmp/m.ir"
check "fuse-by-pattern dispatches to the externs" run 0 "$tmp/m.ir" -o "$tmp/fused.ir" -v \
  --passes "fuse-by-pattern{patterns=$lib/mylib.yaml},fuse-ops"
check "two matches" contains "$tmp/err" "fuse-by-pattern: .* 2 match(es)"
check "the declaration is in the IR" contains "$tmp/fused.ir" \
  '^extern "mylib.linear_relu"(%x: f32\[n, k\], %w: f32\[m, k\], %b: f32\[m\]) -> f32\[n, m\] attrs(library = ".*/lib/libmylib.so", symbol = "mylib_linear_relu")'
check "the group is marked" contains "$tmp/fused.ir" 'attrs(codegen = "mylib.linear", pattern = "linear", primitive = true)'
check "operands in the extern's order (add's operands swapped)" contains "$tmp/fused.ir" 'call @fused_dense_add(%r, %w2, %b2)'
check "the fused IR validates" "$bin/mlcc-inspect" --validate "$tmp/fused.ir"
check "the fused IR runs (the groups' ops)" outputs fused "$tmp/fused.ir"
check "fused = unfused" same fused
tool=$bin/mlcc-legalize
check "legalize makes call_extern" run 0 "$tmp/fused.ir" -o "$tmp/lowered.ir"
check "call_extern in the IR" contains "$tmp/lowered.ir" '%r: f32\[4, 16\] = call_extern "mylib.linear_relu"(%x, %w1, %b1)'
check "the lowered IR runs the library" outputs lowered "$tmp/lowered.ir"
check "lowered = unfused" same lowered
check "schedule" "$bin/mlcc-schedule" -q "$tmp/lowered.ir" --target llvm -o "$tmp/scheduled.ir"
check "codegen" "$bin/mlcc-codegen" -q "$tmp/scheduled.ir" -o "$tmp/model.o"
tool=$bin/mlcc-link
check "link without the library: a clear error" fails_saying "needs their library: --lib FILE" \
  "$tmp/model.o" -o "$tmp/model.so"
check "nothing written" absent "$tmp/model.so"
for kind in libmylib.so libmylib.a mylib.o; do
  check "link with --lib $kind" run 0 "$tmp/model.o" --lib "$lib/$kind" -o "$tmp/$kind.model.so"
  check "model.so ($kind) runs" outputs "so_$kind" "$tmp/$kind.model.so"
  check "model.so ($kind) = unfused" same "so_$kind"
done
check "model.so profiles the extern call" bash -c "'$bin/mlcc-run' '$tmp/libmylib.so.model.so' --bench 3 --profile | grep -q 'mylib.linear_relu 4x16'"
tool=$bin/mlcc-link
check "--lib of a text file" fails_saying "not a library" "$tmp/model.o" --lib "$tmp/m.ir" -o "$tmp/x.so"

# Symbolic shapes: the function gets the shapes of the run.
sed 's/f32\[4, /f32[n, /g' "$tmp/m.ir" >"$tmp/sym.ir"
/usr/bin/python3 -c "
import numpy as np, sys
r = np.random.default_rng(5)
for name, shape in [('x', (5, 8)), ('w1', (16, 8)), ('b1', (16,)), ('w2', (3, 16)), ('b2', (3,))]:
    np.save(sys.argv[1] + '/' + name + '.npy', r.standard_normal(shape).astype(np.float32))" "$tmp"
sym_inputs=(--input "x=$tmp/x.npy" --input "w1=$tmp/w1.npy" --input "b1=$tmp/b1.npy" --input "w2=$tmp/w2.npy" --input "b2=$tmp/b2.npy")
check "symbolic: the unfused graph runs" outputs sym_reference "$tmp/sym.ir" "${sym_inputs[@]}"
"$bin/mlcc-fuse" -q "$tmp/sym.ir" -o "$tmp/sym_fused.ir" --passes "fuse-by-pattern{patterns=$lib/mylib.yaml},fuse-ops" &&
  "$bin/mlcc-legalize" -q "$tmp/sym_fused.ir" -o "$tmp/sym_lowered.ir" &&
  "$bin/mlcc-schedule" -q "$tmp/sym_lowered.ir" --target llvm -o "$tmp/sym_sched.ir" &&
  "$bin/mlcc-codegen" -q "$tmp/sym_sched.ir" -o "$tmp/sym.o" &&
  "$bin/mlcc-link" "$tmp/sym.o" --lib "$lib/libmylib.so" -o "$tmp/sym.so"
check "symbolic: call_extern with n" contains "$tmp/sym_lowered.ir" '%r: f32\[n, 16\] = call_extern "mylib.linear_relu"'
check "symbolic: the lowered IR runs" outputs sym_lowered "$tmp/sym_lowered.ir" "${sym_inputs[@]}"
check "symbolic: model.so runs" outputs sym_so "$tmp/sym.so" "${sym_inputs[@]}"
check "symbolic: lowered = unfused" compare "$tmp/sym_lowered/y.npy" "$tmp/sym_reference/y.npy"
check "symbolic: model.so = unfused" compare "$tmp/sym_so/y.npy" "$tmp/sym_reference/y.npy"

# The example pipeline on the public MLP: every stage agrees, model.so matches PyTorch.
if public_models torch onnx numpy -- --only mlp; then
  cp "$src/examples/extern/pipeline.yaml" "$lib/"
  tool=$bin/mlcc-pipeline
  check "examples/extern/pipeline.yaml builds the MLP" run 0 run "$lib/pipeline.yaml" --input "$tmp/models/mlp.onnx" \
    --build-dir "$tmp/mlp" -q
  check "its linear layers call the library" contains "$tmp/mlp/legalize.ir" 'call_extern "mylib.linear_relu"'
  check "model.so runs the MLP" outputs mlp_out "$tmp/mlp/model.so" --input "$tmp/models/mlp.input.npy"
  check "model.so = PyTorch" compare "$tmp/mlp_out/output.npy" "$tmp/models/mlp.output.npy"
  check "verify: every stage agrees" run 0 verify "$lib/pipeline.yaml" --input "$tmp/models/mlp.onnx" \
    --data "input=$tmp/models/mlp.input.npy" --build-dir "$tmp/mlp_verify"
  check "verify says so" contains "$tmp/out" "every stage agrees with the one before it"
fi

# The interpreter links an object file into a temporary shared library.
tool=$bin/mlcc-fuse
check "fuse with an object library" run 0 "$tmp/m.ir" -o "$tmp/fused_o.ir" \
  --passes "fuse-by-pattern{patterns=$lib/object.yaml},fuse-ops"
"$bin/mlcc-legalize" -q "$tmp/fused_o.ir" -o "$tmp/lowered_o.ir"
check "the interpreter runs the object's function" outputs object "$tmp/lowered_o.ir"
check "object = unfused" same object

# A function that fails: the interpreter and model.so name it and its value.
check "fuse with the failing library" run 0 "$tmp/m.ir" -o "$tmp/fused_f.ir" \
  --passes "fuse-by-pattern{patterns=$lib/fails.yaml},fuse-ops"
"$bin/mlcc-legalize" -q "$tmp/fused_f.ir" -o "$tmp/lowered_f.ir"
tool=$bin/mlcc-run
check "interpreter: non-zero return" fails_saying 'call_extern "mylib.linear_relu" (mylib_linear_relu of .*libfails.so) returned 7' \
  "$tmp/lowered_f.ir" --seed 3 -q
"$bin/mlcc-schedule" -q "$tmp/lowered_f.ir" --target llvm -o "$tmp/sched_f.ir" &&
  "$bin/mlcc-codegen" -q "$tmp/sched_f.ir" -o "$tmp/f.o" && "$bin/mlcc-link" "$tmp/f.o" --lib "$lib/libfails.so" -o "$tmp/f.so"
check "model.so: non-zero return" fails_saying 'call_extern "mylib.linear_relu" (mylib_linear_relu) returned 7' "$tmp/f.so" -q
# A missing library file and a missing symbol.
sed 's|attrs(library = "[^"]*", symbol = "mylib_linear_relu")|attrs(library = "nowhere.so", symbol = "mylib_linear_relu")|' "$tmp/lowered.ir" >"$tmp/nolib.ir"
check "missing library" fails_saying "call_extern \"mylib.linear_relu\" (mylib_linear_relu of nowhere.so): no such library file" "$tmp/nolib.ir" -q
sed 's|symbol = "mylib_linear_relu"|symbol = "no_such_function"|' "$tmp/lowered.ir" >"$tmp/nosym.ir"
check "missing symbol" fails_saying "the library defines no function no_such_function" "$tmp/nosym.ir" -q
# A call whose type does not fit the declaration (the verifier).
sed 's|%r: f32\[4, 16\] = call_extern|%r: f32[4, 15] = call_extern|' "$tmp/lowered.ir" >"$tmp/badcall.ir"
tool=$bin/mlcc-inspect
check "a call of the wrong result type" fails_saying 'call_extern "mylib.linear_relu" gives f32\[4, 16\] for these operands, not f32\[4, 15\]' --validate "$tmp/badcall.ir"

# Pattern files: the match's types must fit the declaration.
sed 's/"x: f32\[n, k\]"/"x: f32[n, 8]"/' "$lib/mylib.yaml" >"$lib/k8.yaml"
tool=$bin/mlcc-fuse
check "a match whose types do not fit is left undispatched" run 0 "$tmp/m.ir" -o "$tmp/k8.ir" -v \
  --passes "fuse-by-pattern{patterns=$lib/k8.yaml}"
check "-v says why" contains "$tmp/err" "1 match(es) left undispatched.*dimension 1 differs"
# ... and bad pattern files name the file, line and key.
bad_yaml() {  # bad_yaml NAME MESSAGE: a copy of mylib.yaml edited by the sed script on stdin
  sed -f - "$lib/mylib.yaml" >"$lib/$1.yaml"
  check "pattern file: $1" fails_saying "$2" "$tmp/m.ir" -o "$tmp/x.ir" --passes "fuse-by-pattern{patterns=$lib/$1.yaml}"
}
echo 's/add(_, b)/add(_, bias)/' | bad_yaml wildcards "wildcards.yaml:21:14: error: patterns\[0\].codegen: the operands of extern 'mylib.linear_relu' are its parameters by name (b, w, x), but the pattern's wildcards are bias, w, x"
echo 's/result: "f32\[n, m\]"/result: "f32[n, q]"/' | bad_yaml unbound "unbound.yaml:9:5: error: externs\[0\]: not a valid extern declaration: undefined symbolic variable 'q'"
echo 's/name: mylib.linear_relu /name: blas.linear_relu /' | bad_yaml reserved "externs\[0\].name: 'blas.linear_relu': the prefixes blas. and cublas. are mlcc's kernels"
echo 's/    params: \["x: f32\[n, k\]"/    params: ["x: f99[n, k]"/' | bad_yaml dtype "externs\[0\]: not a valid extern declaration"
check "no output after the errors" absent "$tmp/x.ir"
finish extern
