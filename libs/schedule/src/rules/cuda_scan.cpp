// cuda Scan: a function whose blocks run inside a serial step loop (a
// recurrence legalized as a te scan: step t reads the states step t - 1
// wrote, ops/recurrence.cpp). A step's work is small and every step needs
// all of the previous one, so the whole scan is one kernel of one thread
// block: a unit loop above the step loop is bound to blockIdx.x, and under
// the step loop each block's spatial loops are fused, split by the threads
// (a sample_categorical decision, up to 512) and bound to threadIdx.x, a
// reduction's loops serial in each thread. The code generator's barriers
// order each step's blocks, which communicate through global memory (one
// thread block: __syncthreads orders its global memory too). Blocks outside
// the step loop (copies of the initial states) are bound as by the
// Fallback, kernels of their own before the scan's.
#include <algorithm>

#include "cuda_common.h"
#include "cuda_rules.h"

namespace mlcc::schedule {

bool applyCudaScan(Schedule& sch, const target::Target& target) {
  const std::vector<const ir::VarNode*> steps = scanStepLoops(sch.func());
  if (steps.empty()) return false;
  auto isStep = [&](const LoopRV& l) {
    return std::find(steps.begin(), steps.end(), sch.loopVar(l).get()) != steps.end();
  };
  // The blocks of each step loop, and the most threads one of them can use.
  std::vector<std::string> stepped;
  int64_t widest = 1;
  for (const ir::BlockNode* b : gpu::topLevelBlocks(sch.func())) {
    std::vector<LoopRV> loops = sch.getLoops(sch.getBlock(b->name));
    if (loops.empty() || !isStep(loops.front())) continue;
    if (std::any_of(loops.begin() + 1, loops.end(), isStep)) return false;  // nested scans
    stepped.push_back(b->name);
    std::vector<gpu::LoopRole> roles = gpu::loopRoles(sch.func(), b->name);
    int64_t work = 1;
    for (size_t i = 1; i < roles.size() && roles[i] == gpu::LoopRole::Spatial; ++i)
      work *= gpu::constExtent(sch, loops[i]).value_or(512);
    widest = std::max(widest, work);
  }
  if (stepped.empty()) return false;
  std::vector<int64_t> candidates = gpu::threadCandidates(target);
  ExprRV threads = gpu::chooseCategorical(sch, candidates, gpu::pickThreads(candidates, widest, 512));
  for (const auto& name : stepped) {
    BlockRV block = sch.getBlock(name);
    // The first block of a step loop puts it in a thread block.
    if (const LoopRV outer = sch.getLoops(block).front(); isStep(outer))
      sch.bind(sch.addUnitLoop(outer), "blockIdx.x");
    // The block's own loops (after [thread block, step]): spatial ones to
    // the threads, reduce ones serial.
    std::vector<LoopRV> loops = sch.getLoops(block);
    std::vector<gpu::LoopRole> roles = gpu::loopRoles(sch.func(), name);
    std::vector<LoopRV> spatial;
    for (size_t i = 2; i < roles.size() && roles[i] == gpu::LoopRole::Spatial; ++i)
      spatial.push_back(loops[i]);
    if (spatial.empty()) spatial.push_back(sch.addUnitLoop(block));
    sch.bind(sch.split(gpu::fuseLoops(sch, spatial), {std::nullopt, threads})[1], "threadIdx.x");
  }
  return gpu::bindRemainingBlocks(sch, target);
}

}  // namespace mlcc::schedule
