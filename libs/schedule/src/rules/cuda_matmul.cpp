// cuda Matmul: a function whose only non-injective block is matmul-like
// (dense, matmul, batch_matmul, conv2d: a sum of products whose operands A
// and B are each reused across outputs the other varies over), with
// injective producers and consumers (pad, bias, activation, residual add).
// Like DLight's Matmul, with shared-memory tiling:
//
//   for by, bx (blockIdx.y, .x)              thread-block tiles
//     for ty, tx: for mi, ni                 C_local[...] = 0
//     for ko                                 reduction, outer part
//       A tile -> shared (all threads)       cache_read or the producer
//       B tile -> shared                     (pad) itself, compute_at ko
//       for ty (threadIdx.y) for tx (threadIdx.x)
//         for mi, ni  for ki...              C_local[...] += A_s * B_s
//     for ty, tx: for mi, ni                 C[...] = epilogue(C_local)
//
// The spatial loops are grouped by the operand they index: M (only A's),
// N (only B's), batch (both or neither). Each M / N loop is split into a
// block part, a thread part and an inner (per-thread) part, the first
// reduce loop into ko and ki (the other reduce loops stay inside ki).
// Block parts of N go to blockIdx.x, of M to blockIdx.y, of the batch
// loops (and outer M loops) to blockIdx.z; thread parts of N to
// threadIdx.x, of M to threadIdx.y (outer M loops: threadIdx.z); loops on
// one axis are fused. Since bind refuses a loop that a block under it does
// not depend on, when a staged operand is not indexed by every block axis
// all block parts are fused onto blockIdx.x instead. The accumulator lives
// in `local` (cache_write); its write-back, with the epilogue folded in
// (reverse_compute_inline), runs after the reduction (reverse_compute_at
// at the block loops) split and bound exactly as the accumulation, so each
// thread writes back the elements it accumulated (where reverse_compute_at
// is refused, e.g. over a symbolic extent, the block accumulates in its
// output directly and the epilogue is its own kernel). The accumulator's
// initialization is hoisted before the reduction (decompose_reduction)
// where that primitive allows it. The tiles of the operands that vary with
// the thread block are staged in `shared` at each ko; the copies are fused
// and split over all the threads of the block (cooperative fetch).
// Injective producers other than the operands' are inlined. Tile sizes are
// chosen per loop (divisors of constant extents where they fit, recorded as
// sample_perfect_tile decisions) from a list of configurations, largest
// first; the first whose result passes verifyGpuFunc (threads and shared
// memory within the target's limits) is kept. Where a configuration's tiles
// make too few thread blocks but the reduction is long (a small output: a
// GEMM of a few rows, ResNet's 7 x 7 and 14 x 14 convolutions at batch 1),
// the reduction is split over thread blocks (split-K): its first loop
// factored out (rfactor) into partial sums [s, ...], tiled as above with
// the part on the block axes, and a second kernel adds them up with the
// epilogue.
#include <algorithm>
#include <map>

#include "../tree.h"
#include "cuda_common.h"
#include "cuda_rules.h"
#include "mlcc/schedule/gpu_check.h"

namespace mlcc::schedule {

namespace {

using namespace ir;
using gpu::LoopRole;

struct Config {
  int64_t ty, tx;  // threads along M and N
  int64_t vm, vn;  // outputs per thread along M and N
  int64_t k;       // reduction elements per stage
  int64_t min_blocks = 1;
  bool unroll = false;  // reduction loops outside the register tile's, all unrolled
};

// Largest first. A configuration is taken when its tiles make at least
// min_blocks thread blocks (a GPU has about a hundred multiprocessors: a
// handful of large tiles would leave most of them idle), the last one
// whatever they make. The largest, for large GEMMs, is a 64 x 128 tile of
// 8 x 16 threads with an 8 x 8 register tile each, over 32-element
// reduction stages, its per-thread loops reduction-outermost and unrolled
// (outer products of shared-memory vectors): on a 4096^3 fp32 GEMM on an
// H200, 72% of cuBLAS (35.9 against 49.5 TFLOP/s), where the 64 x 64 tiles
// of 16 x 16 threads below got 54%, a 128 x 128 tile 59%.
const Config kConfigs[] = {
    {8, 16, 8, 8, 32, 256, true}, {16, 16, 4, 4, 16, 128}, {8, 16, 4, 4, 16, 128}, {8, 8, 4, 4, 8, 128},
    {8, 8, 2, 2, 8, 128},         {4, 8, 2, 2, 4, 128},    {4, 4, 1, 1, 4, 1},
};

enum class Group { Batch, M, N, Reduce };

// One loop of the anchor's nest and what becomes of it.
struct LoopPlan {
  LoopRV loop;
  Group group = Group::Batch;
  std::optional<int64_t> extent;
  int64_t t = 1, v = 1;                 // thread and inner factors (reduce: v is the inner part)
  int dim = -1;                         // spatial: the dimension of the output it indexes
  bool uses_a = false, uses_b = false;  // spatial: whether operand A / B is indexed by it
  // After the split: the parts (absent when of extent 1) and their factors.
  std::optional<LoopRV> outer, thread, inner;
  Factor t_factor, v_factor;
};

// Thread / inner factors for the loops of one group (outermost first),
// aiming at `threads` x `inner` per thread block; innermost loops first.
void planGroup(std::vector<LoopPlan*>& loops, int64_t threads, int64_t inner) {
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    LoopPlan& p = **it;
    if (p.extent) {
      auto perfect = gpu::perfectTiles(*p.extent, {0, threads, inner});
      if (perfect) {
        p.t = (*perfect)[1];
        p.v = (*perfect)[2];
      } else {
        p.t = std::min(threads, *p.extent);
        p.v = std::min(inner, (*p.extent + p.t - 1) / p.t);
      }
    } else {
      p.t = threads;
      p.v = inner;
    }
    threads = std::max<int64_t>(1, threads / p.t);
    inner = std::max<int64_t>(1, inner / p.v);
  }
}

// Splits a planned loop into its non-unit parts.
void splitPlanned(Schedule& sch, LoopPlan& p) {
  std::vector<int64_t> factors = {p.extent ? (*p.extent + p.t * p.v - 1) / (p.t * p.v) : 1};
  if (p.t > 1) factors.push_back(p.t);
  if (p.v > 1) factors.push_back(p.v);
  if (factors.size() == 1) {
    p.outer = p.loop;
    return;
  }
  std::vector<Factor> f = gpu::tileFactors(sch, p.loop, factors);
  std::vector<LoopRV> parts = sch.split(p.loop, f);
  size_t i = 0;
  p.outer = parts[i++];
  if (p.t > 1) {
    p.t_factor = f[i];
    p.thread = parts[i++];
  }
  if (p.v > 1) {
    p.v_factor = f[i];
    p.inner = parts[i++];
  }
}

// A GPU axis and the loops (of the planned loops) bound to it, fused.
struct Axis {
  const char* tag;
  std::vector<LoopPlan*> plans;
  int64_t extent = 1;  // threads: the product of the thread factors
};

// Fuses the copy loops of a staged block below `depth` loops and spreads
// them over the block's threads (cooperative fetch).
void cooperativeFetch(Schedule& sch, const BlockRV& copy, size_t depth, const std::vector<Axis>& threads) {
  std::vector<LoopRV> loops = sch.getLoops(copy);
  if (loops.size() <= depth) throw ScheduleError("Matmul: a staged copy has no loop of its own");
  LoopRV fused = gpu::fuseLoops(sch, {loops.begin() + static_cast<std::ptrdiff_t>(depth), loops.end()});
  std::vector<Factor> factors = {std::nullopt};
  for (const auto& a : threads) factors.emplace_back(a.extent);
  auto parts = sch.split(fused, factors);
  for (size_t i = 0; i < threads.size(); ++i) sch.bind(parts[i + 1], threads[i].tag);
}

// Split-K: when the output tiles make too few thread blocks and the
// reduction is long, the first reduce loop is split in `s` parts reduced by
// different thread blocks into partial sums [s, ...] (rfactor), which a
// second kernel adds up (with the epilogue). The smallest power of two that
// gives min_blocks blocks, each part at least kMinSplitDepth deep; 1 when
// none does.
constexpr int64_t kMinSplitDepth = 256;
constexpr int64_t kMaxSplit = 64;

int64_t splitKFactor(int64_t blocks, int64_t min_blocks, const std::vector<LoopPlan>& plans,
                     size_t n_spatial) {
  const auto& k0 = plans[n_spatial].extent;
  if (!k0) return 1;
  int64_t depth = 1;
  for (size_t i = n_spatial; i < plans.size(); ++i) {
    if (!plans[i].extent) return 1;
    depth *= *plans[i].extent;
  }
  for (int64_t s = 2; s <= kMaxSplit && *k0 % s == 0 && depth / s >= kMinSplitDepth; s *= 2)
    if (blocks * s >= min_blocks) return s;
  return 1;
}

// Splits the first reduce loop of block `name` in `s` parts and factors it
// out (rfactor); returns the block computing the partial sums. `name` then
// sums them in a nest of its own.
std::string splitReduction(Schedule& sch, const std::string& name, size_t first_reduce, int64_t s) {
  std::vector<LoopRV> loops = sch.getLoops(sch.getBlock(name));
  auto parts = sch.split(loops.at(first_reduce), {s, std::nullopt});
  return gpu::blockName(sch, sch.rfactor(parts[0], 0));
}

bool scheduleAnchor(Schedule& sch, const target::Target& target, const Config& cfg, bool local_acc,
                    const std::string& name, const Buffer& a_buf, const Buffer& b_buf, bool may_split,
                    bool& structural);

// The schedule for one configuration; false when the function is not of
// the form this rule handles (whatever the configuration).
bool scheduleMatmul(Schedule& sch, const target::Target& target, const Config& cfg, bool local_acc,
                    bool& structural) {
  structural = true;
  auto anchors = gpu::nonInjectiveBlocks(sch.func());
  if (anchors.size() != 1) return false;
  BlockInfo info = analyzeBlock(*anchors[0]);
  if (info.kind != BlockKind::MatmulLike) return false;
  const std::string name = anchors[0]->name;
  const Buffer a_buf = info.a->buffer, b_buf = info.b->buffer;
  gpu::inlineInjective(sch, {a_buf, b_buf});
  return scheduleAnchor(sch, target, cfg, local_acc, name, a_buf, b_buf, true, structural);
}

// The matmul-like block `name` (operands a_buf, b_buf) tiled, staged and
// bound; with may_split, split-K where the tiles make too few blocks.
bool scheduleAnchor(Schedule& sch, const target::Target& target, const Config& cfg, bool local_acc,
                    const std::string& name, const Buffer& a_buf, const Buffer& b_buf, bool may_split,
                    bool& structural) {
  const BlockNode* anchor = gpu::findBlockNode(sch.func(), name);
  BlockInfo info = analyzeBlock(*anchor);
  if (info.kind != BlockKind::MatmulLike || anchor->writes.size() != 1) return false;
  std::vector<const ForNode*> nest = gpu::loopsOf(sch.func(), name);
  std::vector<LoopRole> roles = gpu::loopRoles(sch.func(), name);
  size_t n_spatial = 0;
  while (n_spatial < roles.size() && roles[n_spatial] == LoopRole::Spatial) ++n_spatial;
  if (n_spatial == 0 || n_spatial == roles.size()) return false;
  for (size_t i = n_spatial; i < roles.size(); ++i)
    if (roles[i] != LoopRole::Reduce) return false;
  for (size_t i = 0; i + 1 < nest.size(); ++i)
    if (nest[i]->body.get() != static_cast<const StmtNode*>(nest[i + 1])) return false;

  // Each loop's group, and for spatial loops the output dimension.
  BlockRV block = sch.getBlock(name);
  std::vector<LoopRV> loop_rvs = sch.getLoops(block);
  std::vector<LoopPlan> plans(nest.size());
  const auto& out_region = anchor->writes[0].region;
  for (size_t i = 0; i < nest.size(); ++i) {
    LoopPlan& p = plans[i];
    p.loop = loop_rvs[i];
    int64_t e;
    if (asConstInt(nest[i]->extent, &e)) p.extent = e;
    if (i >= n_spatial) {
      p.group = Group::Reduce;
      continue;
    }
    // The spatial iteration variable bound to exactly this loop.
    std::optional<size_t> pos;
    for (size_t s = 0; s < info.spatial.size(); ++s)
      if (anchor->iter_vars[info.spatial[s]].binding.get() ==
          static_cast<const ExprNode*>(nest[i]->loop_var.get()))
        pos = s;
    if (!pos) return false;
    const Var& iv = anchor->iter_vars[info.spatial[*pos]].var;
    for (size_t d = 0; d < out_region.size(); ++d)
      if (out_region[d].min.get() == static_cast<const ExprNode*>(iv.get())) p.dim = static_cast<int>(d);
    if (p.dim < 0) return false;
    bool ua = info.a_uses[*pos], ub = info.b_uses[*pos];
    p.group = ua && !ub ? Group::M : ub && !ua ? Group::N : Group::Batch;
    p.uses_a = ua;
    p.uses_b = ub;
  }
  std::vector<LoopPlan*> m, n;
  for (auto& p : plans) {
    if (p.group == Group::M) m.push_back(&p);
    if (p.group == Group::N) n.push_back(&p);
  }
  if (m.empty() || n.empty()) return false;
  structural = false;

  // Tile sizes.
  planGroup(m, cfg.ty, cfg.vm);
  planGroup(n, cfg.tx, cfg.vn);
  if (cfg.min_blocks > 1) {
    int64_t blocks = 1;
    for (size_t i = 0; i < n_spatial; ++i)
      // A symbolic extent (a batch) counts as 128 tiles.
      blocks *= plans[i].extent ? (*plans[i].extent + plans[i].t * plans[i].v - 1) / (plans[i].t * plans[i].v)
                                : 128;
    if (blocks < cfg.min_blocks) {
      const int64_t split = may_split ? splitKFactor(blocks, cfg.min_blocks, plans, n_spatial) : 1;
      if (split == 1) throw ScheduleError("Matmul: too few thread blocks for this configuration");
      // The partial sums as the anchor (the split part a batch loop, on
      // the block axes), their sum and the epilogue as a kernel of its own.
      const std::string partial = splitReduction(sch, name, n_spatial, split);
      if (!gpu::bindBlockFallback(sch, name, target, true) ||
          !scheduleAnchor(sch, target, cfg, local_acc, partial, a_buf, b_buf, false, structural))
        throw ScheduleError("Matmul: split-K left a block this rule cannot schedule");
      return true;
    }
  }
  LoopPlan& k0 = plans[n_spatial];
  int64_t rest = 1;
  for (size_t i = n_spatial + 1; i < plans.size(); ++i) rest *= plans[i].extent.value_or(cfg.k);
  if (k0.extent) {
    auto perfect = gpu::perfectTiles(*k0.extent, {0, std::max<int64_t>(1, cfg.k / rest)});
    k0.v = perfect ? (*perfect)[1] : std::min(*k0.extent, std::max<int64_t>(1, cfg.k / rest));
  } else {
    k0.v = std::max<int64_t>(1, cfg.k / rest);
  }
  for (auto& p : plans) splitPlanned(sch, p);

  // The GPU axes. Thread parts: N's on threadIdx.x, the innermost of M's on
  // threadIdx.y, the others on threadIdx.z (at most 64 threads there; else
  // all M's on threadIdx.y). Block parts of extent > 1: N's on blockIdx.x,
  // the innermost of M's on blockIdx.y, the batch loops' and the other M's
  // on blockIdx.z. Loops sharing an axis are fused; unbound loops affine
  // in the loops keep the nest simple (the interpreter runs affine nests
  // much faster, and so does index arithmetic on the GPU).
  std::vector<LoopPlan*> mt, nt, mb, nb, zb, unit;
  for (auto* p : m)
    if (p->thread) mt.push_back(p);
  for (auto* p : n)
    if (p->thread) nt.push_back(p);
  for (size_t i = 0; i < n_spatial; ++i) {
    LoopPlan& p = plans[i];
    int64_t blocks_along = p.extent ? (*p.extent + p.t * p.v - 1) / (p.t * p.v) : 2;
    if (blocks_along == 1)
      unit.push_back(&p);
    else if (p.group == Group::N)
      nb.push_back(&p);
    else if (p.group == Group::M)
      mb.push_back(&p);
    else
      zb.push_back(&p);
  }
  auto extentOf = [](const std::vector<LoopPlan*>& ps) {
    int64_t e = 1;
    for (auto* p : ps) e *= p->t;
    return e;
  };
  std::vector<Axis> threads;  // outermost first
  if (mt.size() > 1 && extentOf({mt.begin(), mt.end() - 1}) <= 64)
    threads.push_back({"threadIdx.z", {mt.begin(), mt.end() - 1}});
  if (!mt.empty())
    threads.push_back({"threadIdx.y", threads.empty() ? mt : std::vector<LoopPlan*>{mt.back()}});
  if (!nt.empty()) threads.push_back({"threadIdx.x", nt});
  for (auto& a : threads) a.extent = extentOf(a.plans);
  if (!mb.empty()) {
    zb.insert(zb.end(), mb.begin(), mb.end() - 1);
    mb = {mb.back()};
  }
  std::vector<Axis> block_axes;
  if (!zb.empty()) block_axes.push_back({"blockIdx.z", zb});
  if (!mb.empty()) block_axes.push_back({"blockIdx.y", mb});
  if (!nb.empty()) block_axes.push_back({"blockIdx.x", nb});
  // A single thread block: nothing to bind blockIdx to (smaller tiles may
  // give several).
  if (block_axes.empty()) throw ScheduleError("Matmul: the tiles make a single thread block");
  // The operands staged in shared memory: those whose tile depends on the
  // thread block. bind refuses a blockIdx loop that a block under it does
  // not depend on, so with a staged operand that some axis does not index,
  // all block loops are fused onto blockIdx.x.
  bool staged[2] = {false, false};
  for (int o = 0; o < 2; ++o)
    for (const auto& a : block_axes)
      for (auto* p : a.plans) staged[o] |= o == 0 ? p->uses_a : p->uses_b;
  bool fuse_all = false;
  for (int o = 0; o < 2; ++o)
    for (const auto& a : block_axes) {
      bool indexes = false;
      for (auto* p : a.plans) indexes |= o == 0 ? p->uses_a : p->uses_b;
      fuse_all |= staged[o] && !indexes;
    }
  if (fuse_all) {
    Axis all{"blockIdx.x", {}};
    for (const auto& a : block_axes) all.plans.insert(all.plans.end(), a.plans.begin(), a.plans.end());
    block_axes = {all};
  }

  // [blocks] [ko] [threads] [inner M, N] [ki, other reduce loops]: each
  // thread accumulates one output over the stage's reduction at a time (on
  // the interpreter's full-size buffers it keeps the accesses contiguous),
  // the inner M, N loops unrolled (constant indices keep the accumulator in
  // registers; nvcc left a conv's 4 x 4 tile in local memory otherwise);
  // with cfg.unroll, [ki, other reduce loops] [inner M, N], unrolled: an
  // outer product of a column of A's tile and a row of B's per step.
  std::vector<LoopRV> order, blocks;
  for (const auto& a : block_axes)
    for (auto* p : a.plans) blocks.push_back(*p->outer);
  for (auto* p : unit) blocks.push_back(*p->outer);
  order = blocks;
  LoopRV ko = *k0.outer;
  order.push_back(ko);
  for (const auto& a : threads)
    for (auto* p : a.plans) order.push_back(*p->thread);
  std::vector<LoopRV> per_thread;
  std::vector<LoopRV> register_tile;
  if (!cfg.unroll) {
    for (auto* group : {&m, &n})
      for (auto* p : *group)
        if (p->inner) {
          order.push_back(*p->inner);
          register_tile.push_back(*p->inner);
        }
    if (k0.inner) order.push_back(*k0.inner);
    for (size_t i = n_spatial + 1; i < plans.size(); ++i) order.push_back(*plans[i].outer);
  } else {
    if (k0.inner) per_thread.push_back(*k0.inner);
    for (size_t i = n_spatial + 1; i < plans.size(); ++i) per_thread.push_back(*plans[i].outer);
    for (auto* group : {&m, &n})
      for (auto* p : *group)
        if (p->inner) per_thread.push_back(*p->inner);
    order.insert(order.end(), per_thread.begin(), per_thread.end());
  }
  sch.reorder(order);
  for (const LoopRV& l : per_thread) sch.unroll(l);
  for (const LoopRV& l : register_tile) sch.unroll(l);

  // The accumulator in registers; the epilogue folded into its write-back.
  std::optional<BlockRV> write_back;
  if (local_acc) {
    write_back = sch.cacheWrite(block, 0, StorageScope::local);
    const Buffer c = gpu::findBlockNode(sch.func(), gpu::blockName(sch, *write_back))->writes[0].buffer;
    std::vector<std::string> consumers;
    for (const BlockNode* b : gpu::topLevelBlocks(sch.func()))
      if (analyzeBlock(*b).kind == BlockKind::Injective)
        for (const auto& r : readBuffers(*b))
          if (r == c) consumers.push_back(b->name);
    for (const auto& cname : consumers) {
      BlockRV rv = sch.getBlock(cname);
      gpu::tryPrimitive([&] { sch.reverseComputeInline(rv); });
    }
  }

  // The operand tiles in shared memory at each stage, for the operands
  // whose tile depends on the thread block (bind refuses a blockIdx loop
  // that a block under it does not depend on).
  LoopRV stage = ko;
  std::vector<BlockRV> copies;
  for (const Buffer& operand : {a_buf, b_buf}) {
    if (!staged[operand == a_buf ? 0 : 1]) continue;
    const BlockNode* producer = nullptr;
    for (const BlockNode* b : gpu::topLevelBlocks(sch.func()))
      for (const auto& w : b->writes)
        if (w.buffer == operand && b->name != name) producer = b;
    BlockRV copy;
    if (producer && !gpu::isParam(sch.func(), operand)) {
      copy = sch.getBlock(producer->name);
      sch.setScope(copy, 0, StorageScope::shared);
    } else {
      const BlockNode* now = gpu::findBlockNode(sch.func(), name);
      int index = -1;
      for (size_t i = 0; i < now->reads.size(); ++i)
        if (now->reads[i].buffer == operand && index < 0) index = static_cast<int>(i);
      if (index < 0) return false;
      copy = sch.cacheRead(block, index, StorageScope::shared);
    }
    sch.computeAt(copy, stage);
    copies.push_back(copy);
  }
  if (write_back) sch.reverseComputeAt(*write_back, blocks.back());

  // Bindings.
  for (const auto& a : block_axes) {
    std::vector<LoopRV> loops;
    for (auto* p : a.plans) loops.push_back(*p->outer);
    sch.bind(gpu::fuseLoops(sch, loops), a.tag);
  }
  for (const auto& a : threads) {
    std::vector<LoopRV> loops;
    for (auto* p : a.plans) loops.push_back(*p->thread);
    sch.bind(gpu::fuseLoops(sch, loops), a.tag);
  }
  // The copies sit below the block loops and ko.
  size_t depth = block_axes.size() + unit.size() + 1;
  for (const auto& copy : copies) cooperativeFetch(sch, copy, depth, threads);

  // The write-back: split and bound as the accumulation.
  if (write_back) {
    std::vector<LoopRV> wloops = sch.getLoops(*write_back);
    const BlockNode* wb = gpu::findBlockNode(sch.func(), gpu::blockName(sch, *write_back));
    const BufferRegion* local = nullptr;
    for (const auto& r : wb->reads)
      if (r.buffer->scope == StorageScope::local) local = &r;
    if (!local) return false;
    // The plan of the dimension each loop runs over (before changing the
    // function: `wb` points into it).
    std::vector<LoopPlan*> wplans(wloops.size(), nullptr);
    const size_t wfirst = block_axes.size() + unit.size();  // the loops above the write-back's own
    for (size_t i = wfirst; i < wloops.size(); ++i) {
      const VarNode* lv = sch.loopVar(wloops[i]).get();
      for (size_t d = 0; d < local->region.size(); ++d)
        for (const auto& iv : wb->iter_vars)
          if (local->region[d].min.get() == static_cast<const ExprNode*>(iv.var.get()) &&
              usesVar(iv.binding, lv))
            for (auto& p : plans)
              if (p.dim == static_cast<int>(d)) wplans[i] = &p;
    }
    // Per axis, the thread parts of the write-back's loops, in plan order.
    std::map<LoopPlan*, LoopRV> thread_part;
    std::vector<LoopRV> w_inner;
    for (size_t i = wfirst; i < wloops.size(); ++i) {
      LoopPlan* plan = wplans[i];
      if (!plan || plan->t == 1) {
        w_inner.push_back(wloops[i]);
        continue;
      }
      if (plan->v > 1) {
        auto parts = sch.split(wloops[i], {plan->t_factor, plan->v_factor});
        thread_part[plan] = parts[0];
        w_inner.push_back(parts[1]);
      } else {
        thread_part[plan] = wloops[i];
      }
    }
    std::vector<std::vector<LoopRV>> w_axes;
    std::vector<LoopRV> w_order;
    for (const auto& a : threads) {
      w_axes.emplace_back();
      for (auto* p : a.plans) {
        auto it = thread_part.find(p);
        if (it == thread_part.end()) throw ScheduleError("Matmul: the write-back lacks a thread loop");
        w_axes.back().push_back(it->second);
        w_order.push_back(it->second);
      }
    }
    w_order.insert(w_order.end(), w_inner.begin(), w_inner.end());
    if (w_order.size() > 1) sch.reorder(w_order);
    for (size_t i = 0; i < threads.size(); ++i) sch.bind(gpu::fuseLoops(sch, w_axes[i]), threads[i].tag);
  }
  // The accumulator's initialization before the reduction, in a copy of
  // the thread loops (not a test on the first reduction step).
  gpu::tryPrimitive([&] { sch.decomposeReduction(block, ko); });
  return gpu::bindRemainingBlocks(sch, target);
}

}  // namespace

bool applyCudaMatmul(Schedule& sch, const target::Target& target) {
  const ir::PrimFunc original = sch.func();
  for (const Config& cfg : kConfigs) {
    if (cfg.tx * cfg.ty > target.max_threads_per_block) continue;
    // With the accumulator in registers if possible (reverse_compute_at of
    // its write-back may be refused, e.g. over a symbolic extent).
    for (bool local_acc : {true, false}) {
      Schedule trial(original);
      bool structural = true;
      try {
        if (!scheduleMatmul(trial, target, cfg, local_acc, structural)) return false;
        verifyGpuFunc(trial.func(), target);
      } catch (const mlcc::Error&) {
        if (structural) return false;
        continue;
      }
      sch = std::move(trial);
      return true;
    }
  }
  return false;
}

}  // namespace mlcc::schedule
