// The driver of the IR→IR tools (mlcc-fuse, mlcc-legalize, mlcc-schedule),
// as MlirOptMain is for mlir-opt: read the input with the parser's source
// map, verify it against the op registry, run the passes (with the source
// map in the PassContext, so a pass error reads `model.ir:12:5: error: ...`)
// and the tool's own transform, verify the result, and write the IR (and
// the new constants' weights file) atomically: a failure writes nothing.
// An error without a location is reported at the input file.
//
//   IrToolOptions o;
//   o.input = "model.ir"; o.output = "fused.ir"; o.passes = parsePipeline(text, "--passes");
//   runIrTool(o);
#pragma once

#include <functional>
#include <string>

#include "mlcc/ir/module.h"
#include "mlcc/transform/pass.h"

namespace CLI {
class App;
}

namespace mlcc::transform {

struct IrToolOptions {
  std::string input = "-";   // "" or "-": stdin
  std::string output = "-";  // "-": stdout
  Pipeline passes;           // run first
  // Runs after the passes (say, schedule rules); may throw mlcc::Error.
  std::function<void(ir::Module&)> transform;
  bool verify_each = false;  // the verifier after every pass
  bool verbose = false;      // -v: each pass's time and change on stderr
  std::string patterns;      // fuse-by-pattern's --patterns file
  // New constants (folding). With `new_weights_stem` set they go to `weights`
  // (default: the output's stem + .safetensors, `<stem>.safetensors` for
  // stdout); with it empty a pass that makes one is an error saying
  // `no_new_weights`.
  std::string new_weights_stem;
  std::string weights;
  std::string no_new_weights = "the pipeline made new constants; run constant folding in mlcc-fuse";
  // The final verification's message prefix ("": none): a module a correct
  // tool made must verify, so this may say whose fault it is.
  std::string invalid_result;
};

// Reads, transforms, verifies and writes as above; returns the exit code (0).
int runIrTool(const IrToolOptions& options);

// The command line that mlcc-fuse and mlcc-legalize share: the input, -o,
// --passes (default: the tool's pipeline), --load-pass-plugin, --list-passes, --verify-each, -v
// and -q.
struct PassToolFlags {
  std::string input;
  std::string output = "-";
  std::string passes;
  bool list_passes = false;
  std::vector<std::string> plugins;  // --load-pass-plugin, loaded before the pipeline is parsed
  bool verify_each = false;
  bool verbose = false;
  bool quiet = false;
};

// Declares the flags' options on `app`; --passes' help reads "Pass pipeline,
// e.g. '<passes_example>'" and shows `flags.passes` as the default.
void addPassToolOptions(CLI::App& app, PassToolFlags& flags, const std::string& passes_example);

// With --list-passes prints the passes and returns 0; otherwise runs
// runIrTool with `options` (the tool's own settings: verbose, weights, ...)
// and the flags' input, output, --passes pipeline and --verify-each.
int runPassTool(const PassToolFlags& flags, IrToolOptions options);

}  // namespace mlcc::transform
