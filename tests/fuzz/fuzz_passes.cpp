// Fuzz target: textual pass pipelines (`--passes` of mlcc-fuse and
// mlcc-legalize; libs/transform's parsePipeline). An accepted pipeline whose
// string options keep their defaults (a string option may name a file, such
// as fuse-by-pattern's patterns) is also run on a small graph module, with
// the verifier after each pass: option values the parser accepts must not
// crash a pass.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ops/op.h"
#include "mlcc/transform/pass.h"

namespace {

const char* kGraph = R"(mlcc.ir 1

graph @main(%x: f32[4, 32], %w: f32[64, 32], %b: f32[64], %k: f32[8, 3, 3, 3], %im: f32[1, 3, 10, 10]) -> (f32[4, 64], f32[1, 8, 8, 8]) {
  dataflow {
    %d: f32[4, 64] = dense(%x, %w)
    %a: f32[4, 64] = add(%d, %b)
    %r: f32[4, 64] = relu(%a)
    %c: f32[1, 8, 8, 8] = conv2d(%im, %k)
    %cr: f32[1, 8, 8, 8] = relu(%c)
  }
  return (%r, %cr)
}
)";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mlcc::ops::installIrHooks();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mlcc::ir::Module base = mlcc::ir::parseModule(kGraph, "graph.ir");
  const std::string text = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::transform::Pipeline pipeline = mlcc::transform::parsePipeline(text, "--passes");
    for (const auto& entry : pipeline) {
      if (!entry.pass) mlcc::fuzz::fail("a parsed pipeline entry without a pass");
      for (const auto& spec : entry.pass->options)
        if (spec.kind == mlcc::transform::OptionKind::String &&
            entry.options.getString(spec.name) != spec.default_value)
          return;
    }
    if (pipeline.size() > 16) return;  // keep each input fast
    mlcc::ir::Module m = base;
    mlcc::transform::PassContext ctx;
    ctx.verify_each = true;
    mlcc::transform::runPipeline(m, pipeline, ctx);
  });
  return 0;
}
