// cuda Fallback: applies to every function. Injective blocks are inlined
// where legal; then every block's spatial loops are fused, split by a
// thread count (a sample_categorical decision) and bound to blockIdx.x /
// threadIdx.x, so each block is one kernel; reduction loops stay serial in
// each thread. Like DLight's Fallback. Fails (false) only for a block
// without spatial loops (a reduction to a scalar: there is no loop to bind).
#include "cuda_common.h"
#include "cuda_rules.h"

namespace mlcc::schedule {

bool applyCudaFallback(Schedule& sch, const target::Target& target) {
  gpu::inlineInjective(sch);
  return gpu::bindRemainingBlocks(sch, target);
}

}  // namespace mlcc::schedule
