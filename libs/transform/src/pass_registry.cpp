// The list of passes (see pass_registry.h): add a pass here and in passes/passes.h.
#include "pass_registry.h"

#include "passes/passes.h"

namespace mlcc::transform {

std::vector<PassInfo> allPassInfos() {
  // One pass per line, sorted, so additions merge cleanly.
  // clang-format off
  return {
      makeAnnotateTirOpPatternPass(),
      makeCanonicalizePass(),
      makeConvertLayoutPass(),
      makeDeadCodeEliminationPass(),
      makeFoldConstantsPass(),
      makeFuseByPatternPass(),
      makeFuseLayerNormPass(),
      makeFuseOpsPass(),
      makeFuseTirPass(),
      makeLegalizePass(),
      makeRewritePass(),
  };
  // clang-format on
}

}  // namespace mlcc::transform
