// mlcc-fuse: run graph passes (canonicalize, constant folding, fusion, DCE)
// over an IR file; new constants go to a sidecar weights file.
#include <CLI/CLI.hpp>
#include <utility>

#include "mlcc/support/tool.h"
#include "mlcc/transform/ir_tool.h"

namespace {

// The pipeline of DESIGN.md, with convert-layout (convolutions in the
// blocked channel layout) before fold-constants packs their weights.
constexpr const char* kDefaultPipeline =
    "canonicalize,convert-layout,fold-constants,fuse-ops,dead-code-elimination";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-fuse: run graph passes (canonicalize, constant folding, fusion, dead code elimination) "
      "over mlcc IR.",
      "mlcc-fuse"};
  app.footer(R"(The default pipeline is
  canonicalize,convert-layout,fold-constants,fuse-ops,dead-code-elimination
(convert-layout puts convolutions and the ops between them into the blocked channel layout NCHW16c;
leave it out for NCHW, or give convert-layout{block=8} for 256-bit vectors).
New constants (folded batch_norms, packed weights, folded results over 16 elements) go to a new weights file, by
default OUT's stem + .safetensors beside OUT (fused.safetensors in the current directory when the
IR goes to stdout); the output IR names it after the input's weights files, which it references
without copying. Nothing is written when a pass fails.

Examples:
  mlcc-fuse model.ir -o fused.ir                  # default pipeline; new constants in fused.safetensors
  mlcc-fuse model.ir -o fused.ir --passes 'canonicalize,fold-constants{max-bytes=1048576},dead-code-elimination'
  mlcc-fuse model.ir -o out/fused.ir --weights out/consts.safetensors --verify-each -v
  mlcc-fuse model.ir -o fused.ir --passes 'rewrite,dead-code-elimination,fuse-ops' \
      --patterns pipelines/patterns/rewrites.yaml  # graph rewrites (transpose->dense, multiply+add->fma)
  mlcc-fuse --list-passes                         # the passes and their options
  mlcc-import m.onnx | mlcc-fuse --passes canonicalize | mlcc-inspect --summary)");
  mlcc::transform::PassToolFlags flags;
  flags.passes = kDefaultPipeline;
  mlcc::transform::addPassToolOptions(app, flags, "canonicalize,fuse-ops{max-depth=6}");
  std::string weights, patterns;
  app.add_option("--patterns", patterns, "Pattern file for fuse-by-pattern and rewrite (patterns, rewrites)");
  app.add_option("--weights", weights,
                 "Weights file for new constants (default: the output with extension .safetensors; "
                 "fused.safetensors for stdout)");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    mlcc::transform::IrToolOptions run;
    run.verbose = flags.verbose;
    run.patterns = patterns;
    run.new_weights_stem = "fused";
    run.weights = weights;
    return mlcc::transform::runPassTool(flags, std::move(run));
  });
}
