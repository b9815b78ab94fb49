// The driver of the IR→IR tools (see ir_tool.h).
#include "mlcc/transform/ir_tool.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <set>

#include "mlcc/ir/module_io.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::transform {

namespace fs = std::filesystem;

namespace {

// Keeps only the new weights the module still names (a later pass may have
// removed a folded constant's binding).
void dropUnnamedWeights(const ir::Module& m, NewWeights& new_weights) {
  std::set<std::string> named;
  for (const auto& fn : m.functions)
    if (const auto* g = std::get_if<ir::GraphFunc>(&fn))
      for (const auto& block : g->blocks)
        for (const auto& b : block.bindings)
          if (b.value.kind == ir::ValueKind::Const && !b.value.is_inline) named.insert(b.value.weight);
  std::erase_if(new_weights.tensors, [&](const auto& t) { return !named.count(t.first); });
}

// Writes the module (its input weights files renamed for the output's
// directory) and the new constants, refusing to write them over an input
// weights file.
void writeResult(ir::Module& m, const IrToolOptions& o, NewWeights& new_weights) {
  const std::vector<std::string> inputs_abs = ir::rebaseWeightPaths(m, o.output);
  if (o.new_weights_stem.empty()) {
    ir::writeModuleWithWeights(m, o.output, "", {});
    return;
  }
  dropUnnamedWeights(m, new_weights);
  const bool keep_absolute = fs::path(o.weights).is_absolute();
  const std::string weights =
      o.weights.empty() ? ir::defaultWeightsPath(o.output, o.new_weights_stem) : o.weights;
  if (!new_weights.tensors.empty()) {
    const std::string abs = fs::absolute(weights).lexically_normal().string();
    for (const auto& f : inputs_abs)
      if (f == abs)
        throw Error("the weights file for new constants, " + weights +
                    ", is a weights file of the input; choose another with --weights");
  }
  ir::writeModuleWithWeights(m, o.output, weights, new_weights.tensors, keep_absolute);
}

}  // namespace

int runIrTool(const IrToolOptions& o) {
  const std::string input = o.input.empty() ? "-" : o.input;
  ir::SourceMap source_map;
  ir::Module m = ir::readVerifiedModule(input, ops::opTypeInfo(), &source_map);

  NewWeights new_weights;
  PassContext ctx;
  ctx.verify_each = ctx.verify_each || o.verify_each;
  ctx.verbose = o.verbose;
  ctx.log = &std::cerr;
  ctx.new_weights = &new_weights;
  ctx.patterns_path = o.patterns;
  ctx.source_map = &source_map;
  try {
    runPipeline(m, o.passes, ctx);
    if (o.transform) o.transform(m);
    try {
      ir::verifyModule(m, ops::opTypeInfo(), &source_map);
    } catch (const Error& e) {
      if (o.invalid_result.empty()) throw;
      throw Error(e.loc(), o.invalid_result + ": " + e.message(), e.source_line());
    }
  } catch (const Error& e) {
    if (!e.loc().file.empty()) throw;
    throw Error(SourceLoc{displayName(input), 0, 0}, e.message());
  }
  if (o.new_weights_stem.empty() && !new_weights.tensors.empty()) throw Error(o.no_new_weights);
  writeResult(m, o, new_weights);
  return 0;
}

void addPassToolOptions(CLI::App& app, PassToolFlags& flags, const std::string& passes_example) {
  app.add_option("input", flags.input, "IR file ('-' or none: stdin)");
  app.add_option("-o,--output", flags.output, "IR output file ('-': stdout)");
  app.add_option("--passes", flags.passes, "Pass pipeline, e.g. '" + passes_example + "'")
      ->capture_default_str();
  app.add_option(
      "--load-pass-plugin", flags.plugins,
      "Shared library of passes to load first (MLCC_PASS_PLUGIN, mlcc/transform/pass.h); repeatable");
  app.add_flag("--list-passes", flags.list_passes, "List the passes and their options, then exit");
  app.add_flag("--verify-each", flags.verify_each, "Run the IR verifier after every pass");
  app.add_flag("-v,--verbose", flags.verbose, "Print each pass's time and what it changed on stderr");
  app.add_flag("-q,--quiet", flags.quiet, "No progress output");
}

int runPassTool(const PassToolFlags& flags, IrToolOptions options) {
  for (const auto& plugin : flags.plugins) loadPassPlugin(plugin);
  if (flags.list_passes) {
    std::cout << listPasses();
    return 0;
  }
  options.input = flags.input;
  options.output = flags.output;
  options.passes = parsePipeline(flags.passes, "--passes");
  options.verify_each = flags.verify_each;
  return runIrTool(options);
}

}  // namespace mlcc::transform
