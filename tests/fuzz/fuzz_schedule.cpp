// Fuzz target: schedule scripts (`mlcc-schedule --trace FILE`): the script
// parser (ir::parseScheduleScript) and applying the parsed script with
// schedule::applyScheduleScript to a fixed fused and legalized module (the
// dense+add+relu and conv2d+relu module of tests/cli/schedule.sh). Errors
// must be mlcc::Error; a module the script scheduled must still verify.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/script.h"
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

mlcc::ir::Module legalized() {
  mlcc::ir::Module m = mlcc::ir::parseModule(kGraph, "graph.ir");
  mlcc::transform::PassContext ctx;
  mlcc::transform::runPipeline(m, mlcc::transform::parsePipeline("fuse-ops,legalize"), ctx);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mlcc::ops::installIrHooks();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mlcc::ir::Module base = legalized();
  const std::string text = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::ir::ScheduleScript script = mlcc::ir::parseScheduleScript(text, "fuzz.sched");
    mlcc::ir::Module m = base;
    mlcc::schedule::applyScheduleScript(m, script, /*seed=*/1);
    try {
      mlcc::ir::verifyModule(m);
    } catch (const mlcc::Error& e) {
      mlcc::fuzz::fail("a scheduled module does not verify: " + e.format());
    }
  });
  return 0;
}
