// Rule "gemv" (llvm): a function with one GEMV-like block (a sum of products
// where one operand has no reuse: batch-1 dense, depthwise conv2d) and
// injective blocks around it.
//
// When the operand without reuse is contiguous along the innermost reduce
// loop (dense: W[j, k]), the reduction is vectorized through rfactor: k is
// split into [k_o, k_i] (k_i a vector, recorded as a sample_perfect_tile
// decision), rfactor(k_i) makes a block of vector partial sums
// rf[.., j, k_i] (vectorized along k_i, contiguous loads of both operands),
// and the original block adds up the k_i partial sums; both, with the
// epilogue, sit under the (fused, parallel) output loop.
// Otherwise (depthwise conv: the output's innermost dimension walks the
// input) the block gets the matmul rule's multi-level tiling without
// register rows (llvm_matmul.cpp).
#include "llvm_common.h"

namespace mlcc::schedule::cpu {

using namespace ir;

namespace {

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

bool scheduleRfactorGemv(Schedule& sch, const std::string& anchor, const Target& target) {
  inlineInjectiveBlocks(sch, {anchor});
  BlockRV blk = sch.getBlock(anchor);
  if (!simpleNest(sch, blk)) return false;
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  if (info.kind != BlockKind::Gemv || info.reduce.empty() || info.reduce.back() + 1 != loops.size())
    return false;
  const LoadNode* streamed = streamedOperand(b, info);
  const size_t kd = info.reduce.back();
  if (!streamed || streamed->indices.empty() || streamed->indices.back().get() != b.iter_vars[kd].var.get())
    return false;
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

  // The loops over the outputs, above the partial sums' reduction.
  auto rf_loops = sch.getLoops(rf);
  auto first_reduce = firstReduceLoop(sch, rf, rf_loops);
  if (!first_reduce || *first_reduce == 0) return false;
  std::vector<LoopRV> outer(rf_loops.begin(), rf_loops.begin() + *first_reduce);
  LoopRV row = outer.size() > 1 ? sch.fuse(outer) : outer[0];

  // The final sums and the epilogue, per output, right after its partial sums.
  bool after_anchor = false;
  for (const Stage& st : stagesOf(sch.func())) {
    if (st.name == blockName(sch, rf)) continue;
    BlockRV e = sch.getBlock(st.name);
    const bool is_final = st.name == anchor;
    if ((is_final || after_anchor) && attempt([&] { sch.reverseComputeAt(e, row); })) {
      if (!is_final) vectorizeInnermost(sch, e);
    } else if (st.info.kind == BlockKind::Injective) {
      scheduleSpatialNest(sch, e, target);
    } else {
      parallelizeOutermost(sch, e);
    }
    after_anchor |= is_final;
  }
  parallelizeLoops(sch, {row}, work);
  if (auto init = decomposeReduction(sch, rf)) vectorizeInnermost(sch, *init);
  sch.vectorize(k[1]);
  return true;
}

}  // namespace

bool applyGemvRule(Schedule& sch, const Target& target) {
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
  return scheduleTiledAnchor(sch, *anchor, target, /*register_rows=*/false);
}

}  // namespace mlcc::schedule::cpu
