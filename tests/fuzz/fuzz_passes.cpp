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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mlcc::ir::Module base = mlcc::ir::parseModule(mlcc::fuzz::denseConvGraph(), "graph.ir");
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
