// cuda GeneralReduction: several reductions over the same rows followed by
// an injective (or reduction) block that writes the output, as softmax and
// layer_norm are legalized (max, sum of exponentials, normalize; sum,
// squared deviations, normalize). Two forms:
//  - rows across threads (rows of at least 32 elements, each reduction
//    over the row's elements only, an injective output block): one row per
//    thread block (the row loops fused and bound to blockIdx.x), T threads
//    along it, as DLight's. Each reduction's row loop is split by T and
//    rfactor'ed: every thread reduces its share of the row in a register,
//    then the threads combine their partial results (a reduction across
//    threads) into a register of each. The output block's elements are
//    split over the threads (consecutive threads, consecutive elements); an
//    intermediate the rule could not inline is computed by the threads
//    together into shared memory.
//  - rows in threads (short rows, or what the first form does not fit):
//    one thread block per group of R rows: the output block's row loops
//    are split (the innermost row loop by R, the others one row per
//    block) and bound to blockIdx.x, every other block is computed under
//    that loop (compute_at) for the rows of the group, and in each block
//    the spatial loops inside the group are fused, split by R and bound to
//    threadIdx.x: each thread reduces one row serially (in a register,
//    stored once to shared memory), then the threads share the
//    normalization of the group's rows.
#include <algorithm>

#include "cuda_common.h"
#include "cuda_rules.h"
#include "mlcc/schedule/gpu_check.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::schedule {

namespace {

using gpu::LoopRole;

// The number of leading spatial loops of a block.
size_t leadingSpatial(const ir::PrimFunc& f, const std::string& block) {
  auto roles = gpu::loopRoles(f, block);
  size_t n = 0;
  while (n < roles.size() && roles[n] == LoopRole::Spatial) ++n;
  return n;
}

// Fuses the spatial loops of `block` below its first `outer` loops, splits
// them by `threads` and binds the inner part to threadIdx.x.
void bindInside(Schedule& sch, const std::string& block, size_t outer, const Factor& threads) {
  auto roles = gpu::loopRoles(sch.func(), block);
  std::vector<LoopRV> loops = sch.getLoops(sch.getBlock(block));
  std::vector<LoopRV> spatial;
  for (size_t i = outer; i < loops.size() && roles[i] == LoopRole::Spatial; ++i) spatial.push_back(loops[i]);
  if (spatial.empty())
    throw ScheduleError("GeneralReduction: block \"" + block + "\" has no spatial loop inside its row group");
  LoopRV fused = gpu::fuseLoops(sch, spatial);
  sch.bind(sch.split(fused, {std::nullopt, threads})[1], "threadIdx.x");
}

// The first form (see the top): throws ScheduleError where it does not fit.
void rowsAcrossThreads(Schedule& sch, const target::Target& target, const std::string& anchor,
                       const std::vector<std::string>& reductions, size_t rows) {
  const ir::PrimFunc& f = sch.func();
  if (analyzeBlock(*gpu::findBlockNode(f, anchor)).kind != BlockKind::Injective)
    throw ScheduleError("GeneralReduction: the output block is a reduction");
  int64_t row = 0;
  for (const auto& name : reductions) {
    auto roles = gpu::loopRoles(f, name);
    if (leadingSpatial(f, name) != rows)
      throw ScheduleError("GeneralReduction: block \"" + name + "\" has other spatial loops than the rows");
    auto reduced = gpu::extentOfRole(f, name, LoopRole::Reduce);
    if (!reduced || std::count(roles.begin(), roles.end(), LoopRole::Spatial) != static_cast<long>(rows))
      throw ScheduleError("GeneralReduction: block \"" + name + "\" does not reduce a constant row");
    row = std::max(row, *reduced);
  }
  if (row < 32) throw ScheduleError("GeneralReduction: rows shorter than 32");
  std::vector<int64_t> candidates = gpu::threadCandidates(target);
  const int64_t wanted = gpu::threadsToReduce(row);
  ExprRV threads = gpu::chooseCategorical(sch, candidates, gpu::pickThreads(candidates, wanted, wanted));
  // Each thread's share of each reduction, in a register.
  std::vector<std::string> partials;
  for (const auto& name : reductions) {
    std::vector<LoopRV> loops = sch.getLoops(sch.getBlock(name));
    LoopRV k = gpu::fuseLoops(sch, {loops.begin() + static_cast<std::ptrdiff_t>(rows), loops.end()});
    BlockRV rf = sch.rfactor(sch.split(k, {std::nullopt, threads})[1], 0);
    sch.setScope(rf, 0, ir::StorageScope::local);
    partials.push_back(gpu::blockName(sch, rf));
  }
  std::vector<std::string> others;
  for (const auto* b : gpu::topLevelBlocks(sch.func()))
    if (b->name != anchor) others.push_back(b->name);
  std::vector<LoopRV> loops = sch.getLoops(sch.getBlock(anchor));
  LoopRV group = gpu::fuseLoops(sch, {loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(rows)});
  for (auto it = others.rbegin(); it != others.rend(); ++it) sch.computeAt(sch.getBlock(*it), group);
  sch.bind(group, "blockIdx.x");
  gpu::splitOverThreads(sch, anchor, 1, threads);
  auto is = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (const auto& name : others) {
    BlockRV rv = sch.getBlock(name);
    // A partial result: [row, its thread, its share]; a total: [row, the
    // partials], reduced across the threads, its statistic in every
    // thread's registers.
    if (is(partials, name) || is(reductions, name)) {
      sch.bind(sch.getLoops(rv).at(1), "threadIdx.x");
    } else {
      gpu::splitOverThreads(sch, name, 1, threads);
    }
    const ir::BlockNode* node = gpu::findBlockNode(sch.func(), name);
    if (is(partials, name) || node->writes.size() != 1 || gpu::isParam(sch.func(), node->writes[0].buffer) ||
        node->writes[0].buffer->scope != ir::StorageScope::global)
      continue;
    sch.setScope(rv, 0, is(reductions, name) ? ir::StorageScope::local : ir::StorageScope::shared);
  }
  if (!gpu::bindRemainingBlocks(sch, target)) throw ScheduleError("GeneralReduction: a block stays unbound");
  try {
    verifyGpuFunc(sch.func(), target);
  } catch (const Error& e) {
    throw ScheduleError(e.what());
  }
}

}  // namespace

bool applyCudaGeneralReduction(Schedule& sch, const target::Target& target) {
  gpu::inlineInjective(sch);
  std::vector<std::string> reductions;
  for (const auto* b : gpu::nonInjectiveBlocks(sch.func())) {
    if (analyzeBlock(*b).kind == BlockKind::Opaque) return false;
    reductions.push_back(b->name);
  }
  auto blocks = gpu::topLevelBlocks(sch.func());
  if (reductions.size() < 2 || blocks.empty()) return false;
  const std::string anchor = blocks.back()->name;
  // The rows: as many leading loops of the output block as every reduction
  // has spatial loops.
  size_t rows = leadingSpatial(sch.func(), anchor);
  std::vector<std::string> before_output;
  for (const auto& name : reductions)
    if (name != anchor) {
      rows = std::min(rows, leadingSpatial(sch.func(), name));
      before_output.push_back(name);
    }
  if (rows == 0) return false;
  if (gpu::attempt(sch, [&](Schedule& s) { rowsAcrossThreads(s, target, anchor, before_output, rows); }))
    return true;
  // Each reduction but the output accumulates in a register and stores its
  // row's result once (cache_write: a copy block after it), not in shared
  // memory at every step, which took a barrier per step.
  for (const auto& name : before_output)
    gpu::attempt(sch, [&](Schedule& s) { s.cacheWrite(s.getBlock(name), 0, ir::StorageScope::local); });
  const ir::PrimFunc& f = sch.func();
  std::vector<std::string> others;
  for (const auto* b : gpu::topLevelBlocks(f))
    if (b->name != anchor) others.push_back(b->name);

  std::vector<const ir::ForNode*> nest = gpu::loopsOf(f, anchor);
  // The innermost row loop that is not a unit loop is split by R.
  size_t split_at = rows - 1;
  int64_t e;
  while (split_at > 0 && ir::asConstInt(nest[split_at]->extent, &e) && e == 1) --split_at;
  std::optional<int64_t> extent;
  if (ir::asConstInt(nest[split_at]->extent, &e)) extent = e;
  if (extent == 1) return false;  // a single row: nothing to share among threads
  std::vector<int64_t> tiles = {1, std::min<int64_t>(64, target.max_threads_per_block)};
  if (extent) {
    auto perfect = gpu::perfectTiles(*extent, {0, std::min<int64_t>(128, target.max_threads_per_block)});
    if (perfect && ((*perfect)[1] >= 32 || (*perfect)[1] == *extent)) tiles = *perfect;
    tiles[0] = (*extent + tiles[1] - 1) / tiles[1];
  }

  BlockRV out = sch.getBlock(anchor);
  std::vector<LoopRV> loops = sch.getLoops(out);
  std::vector<Factor> factors = gpu::tileFactors(sch, loops[split_at], tiles);
  std::vector<LoopRV> parts = sch.split(loops[split_at], factors);
  // Block-level loops: the row loops outside the split one and its outer part.
  std::vector<LoopRV> outer(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(split_at));
  outer.push_back(parts[0]);
  LoopRV group = gpu::fuseLoops(sch, outer);
  for (auto it = others.rbegin(); it != others.rend(); ++it) sch.computeAt(sch.getBlock(*it), group);
  sch.bind(group, "blockIdx.x");
  bindInside(sch, anchor, 1, factors[1]);
  for (const auto& b : others) {
    bindInside(sch, b, 1, factors[1]);
    // Its output lives as long as the thread block: shared memory.
    const ir::BlockNode* node = gpu::findBlockNode(sch.func(), b);
    if (node->writes.size() == 1 && !gpu::isParam(sch.func(), node->writes[0].buffer) &&
        node->writes[0].buffer->scope == ir::StorageScope::global) {
      BlockRV rv = sch.getBlock(b);
      gpu::tryPrimitive([&] { sch.setScope(rv, 0, ir::StorageScope::shared); });
    }
  }
  return gpu::bindRemainingBlocks(sch, target);
}

}  // namespace mlcc::schedule
