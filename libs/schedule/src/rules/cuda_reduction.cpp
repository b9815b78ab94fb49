// cuda Reduction: a function whose only non-injective block (after inlining
// the injective producers) is one reduction, with injective consumers, e.g.
// pooling, sum/mean/max over axes, a reduction with an epilogue. Many
// outputs (or a short reduction): one thread per output reducing serially,
// the consumers computed by the same thread (reverse_compute_at). Few
// outputs of a long reduction (a reduction to a scalar too): the reduction
// is split across the threads of a block with rfactor, the partial sums
// added across the threads, the consumers applied by the first thread, in
// one kernel. Other blocks: as the Fallback.
#include "cuda_common.h"
#include "cuda_rules.h"

namespace mlcc::schedule {

bool applyCudaReduction(Schedule& sch, const target::Target& target) {
  gpu::inlineInjective(sch);
  auto anchors = gpu::nonInjectiveBlocks(sch.func());
  if (anchors.size() != 1) return false;
  const ir::BlockNode* anchor = anchors[0];
  BlockInfo info = analyzeBlock(*anchor);
  if (info.kind == BlockKind::Opaque || info.kind == BlockKind::Injective) return false;
  std::string name = anchor->name;
  return gpu::scheduleReductionAndRest(sch, name, target);
}

}  // namespace mlcc::schedule
