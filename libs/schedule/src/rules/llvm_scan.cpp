// Rule "scan" (llvm): a function whose blocks run inside a serial step loop
// (a recurrence legalized as a te scan, ops/recurrence.cpp: every block
// under the loop binds its variable as an opaque iteration variable, as
// step t reads what step t - 1 wrote). The step loop stays serial and
// outermost; what changes is each block's own loops, below it:
//   - a reduction C[.., i, j] += A[.., i, k] * B[k, j] whose output's
//     innermost loop j is contiguous in B (one step's products H R^T with R
//     transposed): a register tile of up to kMaxRegisterRows rows of i by a few
//     vectors of j accumulated over the whole of k, ordered
//     (.., i_out, j_out, k, i_in, j_in), i_in unrolled, j_in vectorized, the
//     init decomposed out and vectorized;
//     and the tiles (i_out, j_out) parallel where one step's product has at
//     least the target's parallel grain of multiply-adds (an LSTM of 256
//     hidden units: 256 x 1024 per step, its 1 MiB of weights in halves,
//     one per core's L2; a two-layer LSTM over 32 steps, 2 threads, 0.95 ->
//     0.72 ms, 1 thread unchanged at 1.05);
//   - every other block (the cell's elementwise updates, the states, the
//     sequence output, the copies before the loop): its innermost loop
//     vectorized where it walks the output's innermost dimension.
// Only the product runs in parallel: the rest of a step is a few vectors
// per state, and each parallel loop costs a fork-join per step.
#include "../tree.h"
#include "llvm_common.h"

namespace mlcc::schedule::cpu {

using namespace ir;

namespace {

// The register tile of one step's product: rows of i (its extent `rows`)
// times vectors of j (`cols`), about kTileAccumulators vector accumulators.
constexpr int64_t kTileAccumulators = 8;

bool scheduleStepProduct(Schedule& sch, const BlockRV& block, const std::vector<LoopRV>& own,
                         const target::Target& target) {
  const BlockNode& b = blockNode(sch, block);
  // own: one loop per non-opaque iteration variable, the spatial ones then the reduce one.
  if (own.size() < 3 || b.iter_vars.size() != own.size() + 1) return false;
  if (b.iter_vars.back().kind != IterKind::reduce) return false;
  for (size_t k = 1; k + 1 < b.iter_vars.size(); ++k)
    if (b.iter_vars[k].kind != IterKind::spatial) return false;
  const auto inner = innermostOutputIter(b);
  if (!inner || *inner != b.iter_vars.size() - 2) return false;
  const LoopRV i = own[own.size() - 3], j = own[own.size() - 2], k = own.back();
  const auto rows = constExtent(sch, i), cols = constExtent(sch, j);
  if (!rows || !cols) return false;
  const int lanes = vectorLanes(target, b.writes[0].buffer->dtype);
  if (*cols % lanes != 0) return false;
  const int64_t row_tile = largestDivisorAtMost(*rows, kMaxRegisterRows);
  const int64_t vectors =
      largestDivisorAtMost(*cols / lanes, std::max<int64_t>(1, kTileAccumulators / row_tile));
  auto is = tileLoop(sch, i, {*rows / row_tile, row_tile});
  auto js = tileLoop(sch, j, {*cols / (vectors * lanes), vectors * lanes});
  sch.reorder({is[0], js[0], k, is[1], js[1]});
  if (const auto depth = constExtent(sch, k))
    (void)parallelizeLoops(sch, {is[0], js[0]}, *rows * *cols * *depth, WorkUnit::MultiplyAdds, target);
  sch.unroll(is[1]);
  sch.vectorize(js[1]);
  if (auto init = decomposeReduction(sch, block)) (void)vectorizeInnermost(sch, *init);
  return true;
}

}  // namespace

bool applyScanRule(Schedule& sch, const target::Target& target) {
  const std::vector<const VarNode*> steps = scanStepLoops(sch.func());
  if (steps.empty()) return false;
  for (const Stage& st : stagesOf(sch.func())) {
    BlockRV block = sch.getBlock(st.name);
    std::vector<LoopRV> loops = sch.getLoops(block);
    size_t first = 0;  // the block's own loops start after its step loop
    for (size_t l = 0; l < loops.size(); ++l)
      if (std::find(steps.begin(), steps.end(), loopNode(sch, loops[l]).loop_var.get()) != steps.end())
        first = l + 1;
    std::vector<LoopRV> own(loops.begin() + static_cast<std::ptrdiff_t>(first), loops.end());
    if (first > 0 && scheduleStepProduct(sch, block, own, target)) continue;
    (void)vectorizeInnermost(sch, block);
  }
  return true;
}

}  // namespace mlcc::schedule::cpu
