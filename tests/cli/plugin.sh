#!/usr/bin/env bash
# Pass plugins (issue 18; mlcc/transform/pass.h, examples/plugin): a C++ pass
# built as a shared library against mlcc's headers, loaded by mlcc-fuse and
# mlcc-legalize with --load-pass-plugin, listed by --list-passes, run in a
# pipeline like a built-in pass; the IR before and after it computes the
# same on the same inputs. Bad plugins (no such file, not a plugin, another
# API version, a name that is taken, an undefined symbol) are clear errors,
# exit 1, nothing written.
source "$2/tests/cli/lib/common.sh"
includes=(-I"$src/libs/ir/include" -I"$src/libs/support/include" -I"$src/libs/transform/include")
plugin() {  # plugin NAME SOURCE: builds $tmp/libNAME.so
  c++ -std=c++20 -O1 -fPIC -shared "${includes[@]}" "$2" -o "$tmp/lib$1.so" 2>"$tmp/cxx.err" ||
    { echo "  building $1 failed:"; sed 's/^/    /' "$tmp/cxx.err" | head -20; return 1; }
}
check "the example plugin builds" plugin ewise_fma_pass "$src/examples/plugin/ewise_fma_pass.cpp" || finish plugin

cat >"$tmp/m.ir" <<'IR'
mlcc.ir 1

graph @main(%a: f32[4, 8], %b: f32[4, 8], %c: f32[4, 8], %d: f32[8]) -> (f32[4, 8], f32[4, 8]) {
  dataflow {
    %p: f32[4, 8] = multiply(%a, %b)
    %s: f32[4, 8] = add(%c, %p)
    %q: f32[4, 8] = multiply(%s, %d)
    %t: f32[4, 8] = add(%q, %a)
    %u: f32[4, 8] = multiply(%t, %b)
    %v: f32[4, 8] = add(%u, %u)
  }
  return (%t, %v)
}
IR
tool=$bin/mlcc-fuse
check "--list-passes shows the plugin's pass" run 0 --load-pass-plugin "$tmp/libewise_fma_pass.so" --list-passes
check "its summary" contains "$tmp/out" "^ewise-fma-cxx"
check "mlcc-fuse runs it" run 0 "$tmp/m.ir" --load-pass-plugin "$tmp/libewise_fma_pass.so" \
  --passes 'ewise-fma-cxx,dead-code-elimination' -o "$tmp/fma.ir" -v --verify-each
check "-v reports it" contains "$tmp/err" "ewise-fma-cxx: .* rewrote 2 add(multiply) to ewise_fma"
check "the operands" contains "$tmp/fma.ir" '%s: f32\[4, 8\] = ewise_fma(%a, %b, %c)'
check "a product used twice is kept" contains "$tmp/fma.ir" '%v: f32\[4, 8\] = add(%u, %u)'
check "broadcast operands too" contains "$tmp/fma.ir" '%t: f32\[4, 8\] = ewise_fma(%s, %d, %a)'
for stage in m fma; do
  rm -rf "$tmp/out_$stage"
  check "$stage runs" "$bin/mlcc-run" -q "$tmp/$stage.ir" --seed 4 --output-dir "$tmp/out_$stage"
done
check "same outputs before and after (t)" compare "$tmp/out_fma/t.npy" "$tmp/out_m/t.npy"
check "same outputs before and after (v)" compare "$tmp/out_fma/v.npy" "$tmp/out_m/v.npy"
tool=$bin/mlcc-legalize
check "mlcc-legalize loads it too" run 0 "$tmp/m.ir" --load-pass-plugin "$tmp/libewise_fma_pass.so" \
  --passes 'ewise-fma-cxx,legalize' -o "$tmp/lowered.ir"
check "and lowers the ewise_fma" contains "$tmp/lowered.ir" "call_tir @ewise_fma"

# In a pipeline (examples/plugin/pipeline.yaml): mlcc-pipeline knows the
# plugin's pass, every stage agrees with the one before, model.so = PyTorch.
if public_models torch onnx numpy -- --only transformer; then
  cp "$src/examples/plugin/pipeline.yaml" "$tmp/"
  tool=$bin/mlcc-pipeline
  check "the plugin pipeline builds the Transformer" run 0 run "$tmp/pipeline.yaml" \
    --input "$tmp/models/transformer.onnx" --build-dir "$tmp/tf" -q
  check "its fuse stage made ewise_fma" contains "$tmp/tf/fuse.ir" "ewise_fma"
  rm -rf "$tmp/tf_out"
  check "model.so runs" "$bin/mlcc-run" -q "$tmp/tf/model.so" --input "$tmp/models/transformer.input.npy" --output-dir "$tmp/tf_out"
  check "model.so = PyTorch" compare "$tmp/tf_out/output.npy" "$tmp/models/transformer.output.npy"
  check "verify: every stage agrees" run 0 verify "$tmp/pipeline.yaml" --input "$tmp/models/transformer.onnx" \
    --data "input=$tmp/models/transformer.input.npy" --build-dir "$tmp/tf_verify"
  check "verify says so" contains "$tmp/out" "every stage agrees with the one before it"
  sed 's/libewise_fma_pass.so/nowhere.so/' "$tmp/pipeline.yaml" >"$tmp/nowhere.yaml"
  check "a pipeline naming a missing plugin" fails_saying "stages\[1\].args: .*nowhere.so: no such pass plugin" \
    run "$tmp/nowhere.yaml" --input "$tmp/models/transformer.onnx" --build-dir "$tmp/nw"
fi

# Bad plugins.
tool=$bin/mlcc-fuse
check "without the plugin the pass is unknown" fails_saying "unknown pass 'ewise-fma-cxx'" "$tmp/m.ir" \
  --passes ewise-fma-cxx -o "$tmp/x.ir"
check "no such plugin" fails_saying "nowhere.so: error: no such pass plugin" "$tmp/m.ir" \
  --load-pass-plugin "$tmp/nowhere.so" -o "$tmp/x.ir"
echo 'extern "C" int unrelated() { return 1; }' >"$tmp/notplugin.cpp"
plugin notplugin "$tmp/notplugin.cpp"
check "not a plugin" fails_saying "libnotplugin.so: error: not an mlcc pass plugin" "$tmp/m.ir" \
  --load-pass-plugin "$tmp/libnotplugin.so" -o "$tmp/x.ir"
cat >"$tmp/oldapi.cpp" <<'CPP'
extern "C" const int mlcc_pass_plugin_api_version = 0;
extern "C" void mlcc_pass_plugin_register() {}
CPP
plugin oldapi "$tmp/oldapi.cpp"
check "another API version" fails_saying "built for pass plugin API 0, this mlcc has 1" "$tmp/m.ir" \
  --load-pass-plugin "$tmp/liboldapi.so" -o "$tmp/x.ir"
cat >"$tmp/taken.cpp" <<'CPP'
#include "mlcc/transform/pass.h"
MLCC_PASS_PLUGIN {
  mlcc::transform::PassInfo p;
  p.name = "fuse-ops";
  p.run = [](mlcc::ir::Module&, const mlcc::transform::PassOptions&, mlcc::transform::PassContext&) {
    return std::string();
  };
  mlcc::transform::registerPass(std::move(p));
}
CPP
plugin taken "$tmp/taken.cpp"
check "a name that is taken" fails_saying "libtaken.so: error: registering its passes: a pass named 'fuse-ops' exists" \
  "$tmp/m.ir" --load-pass-plugin "$tmp/libtaken.so" -o "$tmp/x.ir"
cat >"$tmp/undefined.cpp" <<'CPP'
#include "mlcc/transform/pass.h"
void notDefinedAnywhere();
MLCC_PASS_PLUGIN { notDefinedAnywhere(); }
CPP
plugin undefined "$tmp/undefined.cpp"
check "an undefined symbol" fails_saying "cannot load the pass plugin: .*undefined symbol" "$tmp/m.ir" \
  --load-pass-plugin "$tmp/libundefined.so" -o "$tmp/x.ir"
check "nothing written" absent "$tmp/x.ir"
finish plugin
