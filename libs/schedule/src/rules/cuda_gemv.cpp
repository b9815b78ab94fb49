// cuda GEMV: a function whose only non-injective block (after inlining the
// injective producers) is a GEMV-like reduction, a sum of products where
// one operand is not reused across outputs (dense or matmul with one row,
// depthwise convolution), with injective consumers (bias, activation).
// Like DLight's GEMV, a long reduction with few outputs is split across the
// threads of a block: rfactor gives each thread a partial sum of one output
// (blockIdx.x over the outputs, threadIdx.x over the partial sums), the
// threads add their partials together (a reduction across threads) and the
// first applies the consumers, all in one kernel. Many outputs
// (depthwise convolutions): one thread per output, serial reduction, the
// consumers fused in the same thread.
#include "cuda_common.h"
#include "cuda_rules.h"

namespace mlcc::schedule {

bool applyCudaGemv(Schedule& sch, const target::Target& target) {
  gpu::inlineInjective(sch);
  auto anchors = gpu::nonInjectiveBlocks(sch.func());
  if (anchors.size() != 1 || analyzeBlock(*anchors[0]).kind != BlockKind::Gemv) return false;
  std::string name = anchors[0]->name;
  return gpu::scheduleReductionAndRest(sch, name, target);
}

}  // namespace mlcc::schedule
