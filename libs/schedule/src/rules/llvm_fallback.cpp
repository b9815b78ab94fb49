// Rule "fallback" (llvm): any function the other rules do not handle. The
// outermost loop of each block's nest is made parallel where the primitive
// finds it legal (a loop over spatial iterations only) and it has more than
// one iteration. Applies when at least one loop became parallel.
#include "llvm_common.h"

namespace mlcc::schedule::cpu {

bool applyFallbackRule(Schedule& sch, const target::Target&) {
  bool any = false;
  for (const Stage& st : stagesOf(sch.func())) any |= parallelizeOutermost(sch, sch.getBlock(st.name));
  return any;
}

}  // namespace mlcc::schedule::cpu
