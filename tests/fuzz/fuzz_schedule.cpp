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
mlcc::ir::Module legalized() {
  mlcc::ir::Module m = mlcc::ir::parseModule(mlcc::fuzz::denseConvGraph(), "graph.ir");
  mlcc::transform::PassContext ctx;
  mlcc::transform::runPipeline(m, mlcc::transform::parsePipeline("fuse-ops,legalize"), ctx);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mlcc::ir::Module base = legalized();
  const std::string text = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::ir::ScheduleScript script = mlcc::ir::parseScheduleScript(text, "fuzz.sched");
    mlcc::ir::Module m = base;
    mlcc::schedule::applyScheduleScript(m, script, /*seed=*/1);
    try {
      mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo());
    } catch (const mlcc::Error& e) {
      mlcc::fuzz::fail("a scheduled module does not verify: " + e.format());
    }
  });
  return 0;
}
