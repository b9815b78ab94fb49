// mlcc-legalize: lower graph ops to TensorIR prim funcs (call_tir), merging
// each fused group into one prim func; library-dispatched groups become
// call_extern.
#include <CLI/CLI.hpp>
#include <utility>

#include "mlcc/support/tool.h"
#include "mlcc/transform/ir_tool.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-legalize: lower graph ops to TensorIR prim funcs (call_tir); each fused group becomes one "
      "prim func (FuseTIR), each library-dispatched group a call_extern.",
      "mlcc-legalize"};
  app.footer(R"(Examples:
  mlcc-legalize fused.ir -o lowered.ir            # weights stay where fused.ir names them
  mlcc-legalize fused.ir -o lowered.ir -v         # say what each pass did, and how long it took
  mlcc-import m.onnx | mlcc-fuse | mlcc-legalize > lowered.ir
  mlcc-legalize --list-passes                     # the passes --passes may name)");
  mlcc::transform::PassToolFlags flags;
  flags.passes = "legalize";
  mlcc::transform::addPassToolOptions(app, flags, "legalize,dead-code-elimination");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    mlcc::transform::IrToolOptions run;
    run.verbose = flags.verbose && !flags.quiet;
    return mlcc::transform::runPassTool(flags, std::move(run));
  });
}
