// Rule "gemv" (llvm): a function with one GEMV-like block (a sum of products
// where one operand has no reuse: batch-1 dense, depthwise conv2d) and
// injective blocks around it.
//
// When the operand without reuse is contiguous along the innermost reduce
// loop (dense: W[j, k]), the reduction is vectorized through rfactor: k is
// split into [k_o, k_i] (k_i a vector, recorded as a sample_perfect_tile
// decision), rfactor(k_i) makes a block of vector partial sums
// rf[.., j, k_i] (vectorized along k_i, contiguous loads of both operands)
// and the original block adds up the k_i partial sums. The partial sums of
// up to four outputs are computed together (the output loop split, the four
// unrolled next to the vector: four independent accumulators sharing each
// vector of the other operand, where one output alone waits on its previous
// FMA at every step; the CNN's 100 x 5408 dense 40 -> 35 us, a 512 x 512
// one 9 -> 8 us) at the (fused, parallel) loop over the groups, and the
// final sums and the epilogue follow for each output of the group.
// Otherwise (depthwise conv: the output's innermost dimension walks the
// input) the block gets the matmul rule's multi-level tiling
// (llvm_matmul.cpp); its register rows exist where the vector's dimension
// indexes both operands and a row dimension one of them (a depthwise conv
// in NCHW[x]c: rows of the output width share the weights' vector).
// The matmul rule uses the same rfactor schedule for small-batch dense
// layers (smallBatchMatmul: x[4, k] * w[j, k], where a vector of j would
// read w with a stride); their epilogue then runs after the sums.
#include <algorithm>

#include "../tree.h"
#include "llvm_common.h"

namespace mlcc::schedule::cpu {

using namespace ir;

namespace {

// Outputs whose partial sums a GEMV computes together (at most; a divisor
// of the outputs).
constexpr int64_t kInterleavedRows = 4;

// The operand of a GEMV-like block that has no reuse: indexed by every
// spatial variable of extent other than 1.
const LoadNode* streamedOperand(const BlockNode& b, const BlockInfo& info) {
  for (const auto& [load, uses] : {std::pair{info.a, &info.a_uses}, std::pair{info.b, &info.b_uses}}) {
    bool all = true;
    for (size_t p = 0; p < info.spatial.size(); ++p) {
      int64_t e;
      bool unit = asConstInt(b.iter_vars[info.spatial[p]].extent, &e) && e == 1;
      all &= (*uses)[p] || unit;
    }
    if (all) return load;
  }
  return nullptr;
}

// Whether the operand's last index is the block's iteration variable `iv`.
bool contiguousAlong(const LoadNode* x, const BlockNode& b, size_t iv) {
  return x && !x->indices.empty() && x->indices.back().get() == b.iter_vars[iv].var.get();
}

}  // namespace

bool scheduleRfactorGemv(Schedule& sch, const std::string& anchor, const target::Target& target) {
  inlineInjectiveBlocks(sch, {anchor});
  BlockRV blk = sch.getBlock(anchor);
  if (!simpleNest(sch, blk)) return false;
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  if ((info.kind != BlockKind::Gemv && info.kind != BlockKind::MatmulLike) || info.reduce.empty() ||
      info.reduce.back() + 1 != loops.size())
    return false;
  // A GEMV streams its operand without reuse; a small-batch matmul
  // (smallBatchMatmul) streams both along the reduction.
  const size_t kd = info.reduce.back();
  const LoadNode* streamed = info.kind == BlockKind::Gemv     ? streamedOperand(b, info)
                             : contiguousAlong(info.a, b, kd) ? info.b
                                                              : nullptr;
  if (!contiguousAlong(streamed, b, kd)) return false;
  auto k_extent = constExtent(sch, loops[kd]);
  if (!k_extent) return false;
  const int64_t kf = vectorFactor(*k_extent, vectorLanes(target, streamed->dtype));
  if (kf <= 1) return false;
  const size_t out_rank = b.writes.at(0).region.size();
  int64_t work = 1;
  for (const auto& l : loops) {
    auto e = constExtent(sch, l);
    work = e && work >= 0 ? work * *e : -1;
  }

  auto k = tileLoop(sch, loops[kd], {*k_extent / kf, kf});
  BlockRV rf = sch.rfactor(k[1], static_cast<int>(out_rank));

  // The final sums (the original block) loop over the outputs, then over
  // the lanes; each output's partial sums are computed right before them.
  // A small-batch matmul keeps its batch rows inside: the row loop runs
  // over the outputs of the streamed operand only, and the partial sums of
  // every batch row share each vector of it (independent accumulators,
  // one load of the streamed operand for all rows).
  auto wb_loops = sch.getLoops(blk);
  auto wb_reduce = firstReduceLoop(sch, blk, wb_loops);
  if (!wb_reduce || *wb_reduce == 0) return false;
  std::vector<LoopRV> outer(wb_loops.begin(), wb_loops.begin() + *wb_reduce), batch;
  if (info.kind == BlockKind::MatmulLike && outer.size() == info.spatial.size()) {
    const std::vector<bool>& uses = streamed == info.a ? info.a_uses : info.b_uses;
    std::vector<LoopRV> streamed_loops;
    for (size_t p = 0; p < outer.size(); ++p) (uses[p] ? streamed_loops : batch).push_back(outer[p]);
    if (streamed_loops.empty()) batch.clear();
    if (!batch.empty()) {
      outer = streamed_loops;
      std::vector<LoopRV> order = streamed_loops;
      order.insert(order.end(), batch.begin(), batch.end());
      sch.reorder(order);
    }
  }
  LoopRV row = outer.size() > 1 ? sch.fuse(outer) : outer[0];
  // Without batch rows, kInterleavedRows outputs share the loop that
  // computes their partial sums: independent accumulators, where one
  // output's vector of partial sums would wait on its previous FMA at every
  // step (a chain as long as the reduction).
  LoopRV rows_at = row;
  int64_t interleaved = 1;
  if (auto e = constExtent(sch, row); batch.empty() && e)
    for (int64_t r = kInterleavedRows; r > 1 && interleaved == 1; r /= 2)
      if (*e % r == 0) {
        auto parts = tileLoop(sch, row, {*e / r, r});
        rows_at = parts[0];
        row = parts[1];
        interleaved = r;
      }
  sch.computeAt(rf, rows_at);

  // Under the row: the partial sums' reduce loops outside, the lanes inside.
  std::vector<LoopRV> reduce_loops, lane_loops;
  {
    auto rf_loops = sch.getLoops(rf);
    const BlockNode& r = blockNode(sch, rf);
    bool below = false;
    for (const auto& l : rf_loops) {
      const VarNode* lv = sch.loopVar(l).get();
      if (lv == sch.loopVar(rows_at).get()) {
        below = true;
        continue;
      }
      if (!below) continue;
      bool reduces = false;
      for (const auto& iv : r.iter_vars) reduces |= iv.kind == IterKind::reduce && usesVar(iv.binding, lv);
      (reduces ? reduce_loops : lane_loops).push_back(l);
    }
  }
  // The batch rows' (or the interleaved outputs') loops come first among
  // the rest (the block's order).
  if (lane_loops.size() != batch.size() + (interleaved > 1 ? 2 : 1)) return false;
  const std::vector<LoopRV> rows(lane_loops.begin(), lane_loops.end() - 1);
  const LoopRV lanes = lane_loops.back();
  std::vector<LoopRV> order = reduce_loops;
  order.insert(order.end(), rows.begin(), rows.end());
  order.push_back(lanes);
  if (order.size() > 1) sch.reorder(order);
  for (const auto& r : rows) sch.unroll(r);

  // The epilogue, per output, after its final sum.
  bool after_anchor = false;
  for (const Stage& st : stagesOf(sch.func())) {
    if (st.name == anchor) {
      after_anchor = true;
      continue;
    }
    if (st.name == blockName(sch, rf)) continue;
    BlockRV e = sch.getBlock(st.name);
    if (!(after_anchor && attempt([&] { sch.reverseComputeAt(e, row); })))
      scheduleStandalone(sch, e, st, target);
  }
  parallelizeLoops(sch, {rows_at}, work, WorkUnit::MultiplyAdds, target);
  if (auto init = decomposeReduction(sch, rf)) vectorizeInnermost(sch, *init);
  decomposeReduction(sch, blk);
  sch.vectorize(lanes);
  return true;
}

bool smallBatchMatmul(const BlockNode& b, const BlockInfo& info) {
  if (info.kind != BlockKind::MatmulLike || info.reduce.empty()) return false;
  const size_t kd = info.reduce.back();
  auto inner = innermostOutputIter(b);
  if (!inner || !contiguousAlong(info.a, b, kd) || !contiguousAlong(info.b, b, kd)) return false;
  // The operand the output's vector would index, and the rows the other
  // one is reused over (the batch).
  const size_t p = spatialPosition(info, *inner);
  if (p == info.spatial.size() || info.a_uses[p] == info.b_uses[p]) return false;
  const std::vector<bool>& rows = info.a_uses[p] ? info.b_uses : info.a_uses;
  int64_t batch = 1;
  for (size_t q = 0; q < info.spatial.size(); ++q) {
    int64_t e;
    if (!rows[q]) continue;
    if (!asConstInt(b.iter_vars[info.spatial[q]].extent, &e)) return false;
    batch *= e;
  }
  return batch <= kMaxRfactorBatch;
}

bool applyGemvRule(Schedule& sch, const target::Target& target) {
  std::optional<std::string> anchor;
  for (const Stage& st : stagesOf(sch.func())) {
    if (st.info.kind == BlockKind::Gemv) {
      if (anchor) return false;
      anchor = st.name;
    } else if (st.info.kind != BlockKind::Injective) {
      return false;
    }
  }
  if (!anchor) return false;
  Schedule trial(sch.func());
  bool vectorized_reduction = false;
  if (attempt([&] { vectorized_reduction = scheduleRfactorGemv(trial, *anchor, target); }) &&
      vectorized_reduction) {
    sch = std::move(trial);
    return true;
  }
  return scheduleTiledAnchor(sch, *anchor, target);
}

}  // namespace mlcc::schedule::cpu
