// Rule "injective" (llvm): functions of injective blocks only (elementwise,
// broadcast, transpose, reshape, concat, take, ...).
//
// Every block writing an intermediate buffer is inlined into its consumers
// (compute_inline, where legal), so a chain becomes one loop nest per
// output. Each remaining nest: the constant-extent loops are fused, split by
// the vector width (a divisor of the fused extent, recorded as a
// sample_perfect_tile decision) and the inner part vectorized when the
// innermost loop walks the output's innermost dimension; the outer part,
// with any symbolic loops, is fused and parallel when the nest is large
// enough (llvm_common.cpp, scheduleSpatialNest).
#include "llvm_common.h"

namespace mlcc::schedule::cpu {

bool applyInjectiveRule(Schedule& sch, const target::Target& target) {
  auto stages = stagesOf(sch.func());
  if (stages.empty()) return false;
  for (const Stage& st : stages)
    if (st.info.kind != BlockKind::Injective) return false;
  inlineInjectiveBlocks(sch);
  bool any = false;
  for (const Stage& st : stagesOf(sch.func())) any |= scheduleSpatialNest(sch, sch.getBlock(st.name), target);
  return any;
}

}  // namespace mlcc::schedule::cpu
