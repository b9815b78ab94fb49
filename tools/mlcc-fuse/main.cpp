// mlcc-fuse: run graph passes (canonicalize, constant folding, fusion, DCE)
// over an IR file; new constants go to a sidecar weights file.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <set>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"
#include "mlcc/transform/pass.h"

namespace {

// The pipeline of DESIGN.md; a pass that is not built in yet (fuse-ops
// lives on another branch until merged) makes the default fail clearly.
constexpr const char* kDefaultPipeline = "canonicalize,fold-constants,fuse-ops,dead-code-elimination";

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  CLI::App app{
      "mlcc-fuse: run graph passes (canonicalize, constant folding, fusion, dead code elimination) "
      "over mlcc IR.",
      "mlcc-fuse"};
  app.footer(R"(The default pipeline is
  canonicalize,fold-constants,fuse-ops,dead-code-elimination
New constants (folded batch_norms, folded results over 16 elements) go to a new weights file, by
default OUT's stem + .safetensors beside OUT (fused.safetensors in the current directory when the
IR goes to stdout); the output IR names it after the input's weights files, which it references
without copying. Nothing is written when a pass fails.

Examples:
  mlcc-fuse model.ir -o fused.ir                  # default pipeline; new constants in fused.safetensors
  mlcc-fuse model.ir -o fused.ir --passes 'canonicalize,fold-constants{max-bytes=1048576},dead-code-elimination'
  mlcc-fuse model.ir -o out/fused.ir --weights out/consts.safetensors --verify-each -v
  mlcc-fuse --list-passes                         # the passes and their options
  mlcc-import m.onnx | mlcc-fuse --passes canonicalize | mlcc-inspect --summary)");
  std::string input, output = "-", weights, passes = kDefaultPipeline, patterns;
  bool list = false, verify_each = false, verbose = false, quiet = false;
  app.add_option("input", input, "IR file ('-' or none: stdin)");
  app.add_option("-o,--output", output, "IR output file ('-': stdout)");
  app.add_option("--passes", passes, "Pass pipeline, e.g. 'canonicalize,fuse-ops{max-depth=6}'")
      ->capture_default_str();
  app.add_flag("--list-passes", list, "List the passes and their options, then exit");
  app.add_option("--patterns", patterns, "Pattern file for fuse-by-pattern");
  app.add_option("--weights", weights,
                 "Weights file for new constants (default: the output with extension .safetensors; "
                 "fused.safetensors for stdout)");
  app.add_flag("--verify-each", verify_each, "Verify the module after every pass");
  app.add_flag("-v,--verbose", verbose, "Print each pass's time and what it changed on stderr");
  app.add_flag("-q,--quiet", quiet, "No progress output");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    if (list) {
      std::cout << mlcc::transform::listPasses();
      return 0;
    }
    auto pipeline = mlcc::transform::parsePipeline(passes, "--passes");

    mlcc::ops::installIrHooks();
    const std::string in_path = input.empty() ? "-" : input;
    mlcc::ir::Module m = mlcc::ir::readVerifiedModule(in_path);

    mlcc::transform::NewWeights new_weights;
    mlcc::transform::PassContext ctx;
    ctx.verify_each = ctx.verify_each || verify_each;
    ctx.verbose = verbose;
    ctx.log = &std::cerr;
    ctx.new_weights = &new_weights;
    ctx.patterns_path = patterns;
    mlcc::transform::runPipeline(m, pipeline, ctx);

    // Keep only the new weights the module still names (a later pass may
    // have removed a folded constant's binding).
    std::set<std::string> named;
    for (const auto& fn : m.functions)
      if (const auto* g = std::get_if<mlcc::ir::GraphFunc>(&fn))
        for (const auto& block : g->blocks)
          for (const auto& b : block.bindings)
            if (b.value.kind == mlcc::ir::ValueKind::Const && !b.value.is_inline)
              named.insert(b.value.weight);
    std::erase_if(new_weights.tensors, [&](const auto& t) { return !named.count(t.first); });

    // The input's weights files, named relative to the output's directory.
    const std::vector<std::string> inputs_abs = mlcc::ir::rebaseWeightPaths(m, output);
    const bool keep_absolute = fs::path(weights).is_absolute();
    if (weights.empty()) weights = mlcc::ir::defaultWeightsPath(output, "fused");
    if (!new_weights.tensors.empty()) {
      std::string abs = fs::absolute(weights).lexically_normal().string();
      for (const auto& f : inputs_abs)
        if (f == abs)
          throw mlcc::Error("the weights file for new constants, " + weights +
                            ", is a weights file of the input; choose another with --weights");
    }
    mlcc::ir::writeModuleWithWeights(m, output, weights, new_weights.tensors, keep_absolute);
    return 0;
  });
}
