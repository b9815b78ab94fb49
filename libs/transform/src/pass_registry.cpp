// The list of passes (see pass_registry.h): add a pass here and in passes/passes.h.
#include "pass_registry.h"

#include "passes/passes.h"

namespace mlcc::transform {

std::vector<PassInfo> allPassInfos() {
  return {
      makeDeadCodeEliminationPass(), makeLegalizePass(),      makeCanonicalizePass(),
      makeFoldConstantsPass(),       makeFuseByPatternPass(), makeFuseOpsPass(),
  };
}

}  // namespace mlcc::transform
