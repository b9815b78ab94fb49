// mlcc-legalize: lower graph ops to TensorIR prim funcs (call_tir), merging
// each fused group into one prim func; library-dispatched groups become
// call_extern.
#include <CLI/CLI.hpp>
#include <iostream>

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
  std::string input, output = "-", passes = "legalize";
  bool list = false, verify_each = false, verbose = false, quiet = false;
  app.add_option("input", input, "IR file ('-' or none: stdin)");
  app.add_option("-o,--output", output, "IR output file ('-': stdout)");
  app.add_option("--passes", passes, "Pass pipeline, e.g. 'legalize,dead-code-elimination'")
      ->capture_default_str();
  app.add_flag("--list-passes", list, "List the passes and their options, then exit");
  app.add_flag("--verify-each", verify_each, "Run the IR verifier after every pass");
  app.add_flag("-v,--verbose", verbose, "Say what each pass did, with timings, on stderr");
  app.add_flag("-q,--quiet", quiet, "No progress output");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    if (list) {
      std::cout << mlcc::transform::listPasses();
      return 0;
    }
    mlcc::transform::IrToolOptions run;
    run.input = input;
    run.output = output;
    run.passes = mlcc::transform::parsePipeline(passes, "--passes");
    run.verify_each = verify_each;
    run.verbose = verbose && !quiet;
    return mlcc::transform::runIrTool(run);
  });
}
