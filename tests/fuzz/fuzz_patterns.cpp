// Fuzz target: the pattern YAML loader of fuse-by-pattern and rewrite
// (libs/transform parsePatternFile, `mlcc-fuse --patterns FILE`). An
// accepted pattern file is also used: the rewrite and fuse-by-pattern passes
// run with it on a small graph module (dense, add, relu, conv2d, matmul,
// ...), with the verifier after each, so the matcher, the rewriter and the
// outlining see every pattern and rule the loader accepts.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ops/op.h"
#include "mlcc/transform/pass.h"
#include "pattern.h"

namespace {

const char* kGraph = R"(mlcc.ir 1

graph @main(%x: f32[4, 32], %w: f32[64, 32], %b: f32[64], %k: f32[8, 3, 3, 3], %im: f32[1, 3, 10, 10], %m: f32[64, 16]) -> (f32[4, 16], f32[1, 8, 8, 8]) {
  dataflow {
    %d: f32[4, 64] = dense(%x, %w)
    %a: f32[4, 64] = add(%d, %b)
    %r: f32[4, 64] = relu(%a)
    %mm: f32[4, 16] = matmul(%r, %m)
    %s: f32[4, 16] = multiply(%mm, %mm)
    %t: f32[4, 16] = add(%s, %mm)
    %c: f32[1, 8, 8, 8] = conv2d(%im, %k)
    %cb: f32[1, 8, 8, 8] = add(%c, %c)
    %cr: f32[1, 8, 8, 8] = relu(%cb)
  }
  return (%t, %cr)
}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mlcc::ir::Module base = mlcc::ir::parseModule(kGraph, "graph.ir");
  static const mlcc::transform::Pipeline pipeline = mlcc::transform::parsePipeline("rewrite,fuse-by-pattern");
  const std::string text = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    (void)mlcc::transform::parsePatternFile(text, "fuzz.yaml");
    mlcc::ir::Module m = base;
    mlcc::transform::PassContext ctx;
    ctx.verify_each = true;
    ctx.patterns_path = mlcc::fuzz::writeScratch("patterns.yaml", data, size);
    mlcc::transform::runPipeline(m, pipeline, ctx);
  });
  return 0;
}
