// Helpers shared by the cuda rules (see cuda_common.h).
#include "cuda_common.h"

#include <algorithm>

#include "../state.h"
#include "../tree.h"

namespace mlcc::schedule::gpu {

using namespace ir;

// --- reading the function ------------------------------------------------------

std::vector<const BlockNode*> topLevelBlocks(const PrimFunc& f) {
  // A body that is one block (a function without loops: a scalar's
  // division, a copy of one element) is its only top-level block;
  // childBlocks would give the blocks inside it.
  if (const auto* b = f.body ? f.body->as<BlockNode>() : nullptr) return {b};
  return childBlocks(f.body);
}

const BlockNode* findBlockNode(const PrimFunc& f, const std::string& name) {
  auto p = findBlock(f.body, name);
  return p ? p->target()->as<BlockNode>() : nullptr;
}

std::vector<const ForNode*> loopsOf(const PrimFunc& f, const std::string& block) {
  auto p = findBlock(f.body, block);
  return p ? loopsAbove(*p) : std::vector<const ForNode*>{};
}

bool underThreadBinding(const PrimFunc& f, const std::string& block) {
  for (const ForNode* l : loopsOf(f, block))
    if (l->loop_kind == LoopKind::thread_binding) return true;
  return false;
}

bool isParam(const PrimFunc& f, const Buffer& buf) {
  return std::find(f.params.begin(), f.params.end(), buf) != f.params.end();
}

std::string blockName(Schedule& sch, const BlockRV& block) {
  auto it = sch.state().rvs.find(block.name);
  if (it == sch.state().rvs.end() || !std::holds_alternative<BlockHandle>(it->second))
    throw ScheduleError("%" + block.name + " is not a block");
  return std::get<BlockHandle>(it->second).block;
}

std::vector<LoopRole> loopRoles(const PrimFunc& f, const std::string& block) {
  const BlockNode* b = findBlockNode(f, block);
  std::vector<LoopRole> roles;
  for (const ForNode* l : loopsOf(f, block)) {
    LoopRole role = LoopRole::Unused;
    for (const auto& iv : b->iter_vars) {
      if (!usesVar(iv.binding, l->loop_var.get())) continue;
      if (iv.kind != IterKind::spatial) {
        role = LoopRole::Reduce;
        break;
      }
      role = LoopRole::Spatial;
    }
    roles.push_back(role);
  }
  return roles;
}

std::optional<int64_t> constExtent(const Schedule& sch, const LoopRV& loop) {
  auto p = findLoop(sch.func().body, sch.loopVar(loop).get());
  int64_t e;
  if (p && asConstInt(p->target()->as<ForNode>()->extent, &e)) return e;
  return std::nullopt;
}

// --- tile sizes --------------------------------------------------------------

std::vector<Factor> tileFactors(Schedule& sch, const LoopRV& loop, const std::vector<int64_t>& factors) {
  int64_t product = 1;
  for (int64_t f : factors) product *= f;
  std::vector<Factor> out;
  if (constExtent(sch, loop) == product) {
    TraceInst inst = makeInst("sample_perfect_tile", {ref(loop)},
                              {{"n", AttrValue(static_cast<int64_t>(factors.size()))},
                               {"max_innermost_factor", AttrValue(std::max<int64_t>(factors.back(), 16))}});
    inst.decision = AttrValue::ints(factors);
    for (const auto& v : sch.apply(inst)) out.emplace_back(ExprRV{v});
  } else {
    out.emplace_back(std::nullopt);
    for (size_t i = 1; i < factors.size(); ++i) out.emplace_back(factors[i]);
  }
  return out;
}

ExprRV chooseCategorical(Schedule& sch, const std::vector<int64_t>& candidates, size_t chosen) {
  AttrValue::List probs;
  for (size_t i = 0; i < candidates.size(); ++i)
    probs.emplace_back(1.0 / static_cast<double>(candidates.size()));
  TraceInst inst = makeInst("sample_categorical", {},
                            {{"candidates", AttrValue::ints(candidates)}, {"probs", AttrValue(probs)}});
  inst.decision = AttrValue(static_cast<int64_t>(chosen));
  return ExprRV{sch.apply(inst)[0]};
}

std::vector<int64_t> threadCandidates(const target::Target& t) {
  std::vector<int64_t> out;
  for (int64_t n = 32; n <= std::min(t.max_threads_per_block, 512); n *= 2) out.push_back(n);
  if (out.empty()) out.push_back(t.max_threads_per_block);
  return out;
}

size_t pickThreads(const std::vector<int64_t>& candidates, std::optional<int64_t> work, int64_t preferred) {
  size_t best = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] > preferred) break;
    best = i;
    if (work && candidates[i] >= *work) break;
  }
  return best;
}

namespace {

// The best perfect tiling of `extent` into levels 1.. of `want` (level 0
// takes the rest): the largest covered product, then larger outer levels.
void searchTiles(int64_t extent, const std::vector<int64_t>& want, size_t level, std::vector<int64_t>& cur,
                 std::vector<int64_t>& best, int64_t& best_product) {
  if (level == want.size()) {
    int64_t product = 1;
    for (size_t i = 1; i < cur.size(); ++i) product *= cur[i];
    if (product > best_product) {
      best_product = product;
      best = cur;
      best[0] = extent;
    }
    return;
  }
  for (int64_t d = std::min(want[level], extent); d >= 1; --d) {
    if (extent % d) continue;
    cur[level] = d;
    searchTiles(extent / d, want, level + 1, cur, best, best_product);
  }
}

}  // namespace

std::optional<std::vector<int64_t>> perfectTiles(int64_t extent, const std::vector<int64_t>& want) {
  std::vector<int64_t> cur(want.size(), 1), best;
  int64_t best_product = 0;
  searchTiles(extent, want, 1, cur, best, best_product);
  int64_t wished = 1;
  for (size_t i = 1; i < want.size(); ++i) wished *= want[i];
  if (best_product * 2 < std::min(wished, extent)) return std::nullopt;
  return best;
}

LoopRV fuseLoops(Schedule& sch, const std::vector<LoopRV>& loops) {
  return loops.size() == 1 ? loops[0] : sch.fuse(loops);
}

// --- primitives, attempted ---------------------------------------------------

bool tryPrimitive(const std::function<void()>& fn) {
  try {
    fn();
    return true;
  } catch (const ScheduleError&) {
    return false;
  }
}

bool attempt(Schedule& sch, const std::function<void(Schedule&)>& fn) {
  Schedule trial(sch.func());
  try {
    fn(trial);
  } catch (const ScheduleError&) {
    return false;
  }
  sch = std::move(trial);
  return true;
}

int inlineInjective(Schedule& sch, const std::vector<Buffer>& keep) {
  int inlined = 0;
  auto injective = [](const BlockNode* b) { return analyzeBlock(*b).kind == BlockKind::Injective; };
  for (bool changed = true; changed;) {
    changed = false;
    for (const BlockNode* b : topLevelBlocks(sch.func())) {
      if (!injective(b) || b->writes.size() != 1 || isParam(sch.func(), b->writes[0].buffer) ||
          std::find(keep.begin(), keep.end(), b->writes[0].buffer) != keep.end())
        continue;
      std::string name = b->name;
      if (attempt(sch, [&](Schedule& s) { s.computeInline(s.getBlock(name)); })) {
        ++inlined;
        changed = true;
        break;  // the blocks changed
      }
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const BlockNode* b : topLevelBlocks(sch.func())) {
      if (!injective(b)) continue;
      // Its producers in the function must all be injective.
      bool ok = false;
      for (const auto& r : b->reads)
        for (const BlockNode* p : topLevelBlocks(sch.func()))
          for (const auto& w : p->writes)
            if (w.buffer == r.buffer) ok = injective(p);
      std::string name = b->name;
      if (ok && attempt(sch, [&](Schedule& s) { s.reverseComputeInline(s.getBlock(name)); })) {
        ++inlined;
        changed = true;
        break;
      }
    }
  }
  return inlined;
}

// --- the fallback ------------------------------------------------------------

bool bindBlockFallback(Schedule& sch, const std::string& name, const target::Target& t, bool with_consumers) {
  std::vector<LoopRole> roles = loopRoles(sch.func(), name);
  std::vector<const ForNode*> nest = loopsOf(sch.func(), name);
  size_t n_spatial = 0;
  while (n_spatial < roles.size() && roles[n_spatial] == LoopRole::Spatial) ++n_spatial;
  for (size_t i = n_spatial; i < roles.size(); ++i)
    if (roles[i] != LoopRole::Reduce) return false;
  if (n_spatial == 0) {
    // A reduction to a scalar (layer_norm or softmax over every axis): one
    // thread of one thread block runs it, its loops serial (a large one is
    // the Reduction rule's, across threads).
    BlockRV block = sch.getBlock(name);
    std::vector<LoopRV> loops = sch.getLoops(block);
    auto unit = [&] { return loops.empty() ? sch.addUnitLoop(block) : sch.addUnitLoop(loops.front()); };
    sch.bind(unit(), "blockIdx.x");
    sch.bind(unit(), "threadIdx.x");  // inside the first: right around the block's loops
    return true;
  }
  for (size_t i = 0; i + 1 < n_spatial; ++i)
    if (nest[i]->body.get() != static_cast<const StmtNode*>(nest[i + 1])) return false;  // not a perfect nest
  BlockRV block = sch.getBlock(name);
  std::vector<LoopRV> loops = sch.getLoops(block);
  // Consumers move in while the indices are still linear in the loops.
  if (with_consumers) fuseConsumers(sch, name, loops[n_spatial - 1], StorageScope::local);
  LoopRV fused = fuseLoops(sch, {loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(n_spatial)});
  std::vector<int64_t> candidates = threadCandidates(t);
  ExprRV threads = chooseCategorical(sch, candidates, pickThreads(candidates, constExtent(sch, fused), 256));
  auto bt = sch.split(fused, {std::nullopt, threads});
  sch.bind(bt[0], "blockIdx.x");
  sch.bind(bt[1], "threadIdx.x");
  return true;
}

std::vector<const BlockNode*> nonInjectiveBlocks(const PrimFunc& f) {
  std::vector<const BlockNode*> out;
  for (const BlockNode* b : topLevelBlocks(f))
    if (analyzeBlock(*b).kind != BlockKind::Injective) out.push_back(b);
  return out;
}

std::optional<int64_t> extentOfRole(const PrimFunc& f, const std::string& block, LoopRole role) {
  std::vector<LoopRole> roles = loopRoles(f, block);
  std::vector<const ForNode*> loops = loopsOf(f, block);
  int64_t product = 1;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (roles[i] != role) continue;
    int64_t e;
    if (!asConstInt(loops[i]->extent, &e)) return std::nullopt;
    product *= e;
  }
  return product;
}

void splitOverThreads(Schedule& sch, const std::string& block, size_t outer, const ExprRV& threads) {
  BlockRV rv = sch.getBlock(block);
  std::vector<LoopRV> loops = sch.getLoops(rv);
  std::vector<LoopRV> inner(loops.begin() + static_cast<std::ptrdiff_t>(outer), loops.end());
  if (inner.empty()) inner.push_back(sch.addUnitLoop(rv));
  sch.bind(sch.split(gpu::fuseLoops(sch, inner), {std::nullopt, threads})[1], "threadIdx.x");
}

std::vector<std::string> injectiveConsumers(const PrimFunc& f, const std::string& producer) {
  std::vector<Buffer> written = writeBuffers(*findBlockNode(f, producer));
  std::vector<std::string> consumers;
  bool after = false;
  for (const BlockNode* b : topLevelBlocks(f)) {
    if (b->name == producer) {
      after = true;
      continue;
    }
    if (!after || analyzeBlock(*b).kind != BlockKind::Injective) continue;
    for (const auto& r : readBuffers(*b))
      if (std::find(written.begin(), written.end(), r) != written.end()) {
        consumers.push_back(b->name);
        break;
      }
  }
  return consumers;
}

bool fuseConsumers(Schedule& sch, const std::string& producer, const LoopRV& loop,
                   std::optional<StorageScope> scope) {
  std::vector<Buffer> written = writeBuffers(*findBlockNode(sch.func(), producer));
  bool all = true;
  for (const auto& c : injectiveConsumers(sch.func(), producer)) {
    BlockRV rv = sch.getBlock(c);
    all &= tryPrimitive([&] { sch.reverseComputeAt(rv, loop); });
  }
  if (all && scope && written.size() == 1 && !isParam(sch.func(), written[0])) {
    BlockRV rv = sch.getBlock(producer);
    tryPrimitive([&] { sch.setScope(rv, 0, *scope); });
  }
  return all;
}

int64_t threadsToReduce(int64_t reduced) {
  // Each thread sums at least 4 elements, with at most 256 threads.
  int64_t threads = 32;
  while (threads * 2 <= 256 && threads * 2 * 4 <= reduced) threads *= 2;
  return threads;
}

int64_t splitThreadsFor(std::optional<int64_t> outputs, std::optional<int64_t> reduced) {
  if (!outputs || !reduced || *outputs >= 8192 || *reduced < 64) return 0;
  return threadsToReduce(*reduced);
}

bool scheduleReduction(Schedule& sch, const std::string& name, const target::Target& t,
                       int64_t split_threads) {
  std::vector<LoopRole> roles = loopRoles(sch.func(), name);
  size_t n_spatial = 0;
  while (n_spatial < roles.size() && roles[n_spatial] == LoopRole::Spatial) ++n_spatial;
  if (n_spatial == roles.size()) return false;
  for (size_t i = n_spatial; i < roles.size(); ++i)
    if (roles[i] != LoopRole::Reduce) return false;
  if (split_threads <= 0) {
    return bindBlockFallback(sch, name, t, true);
  }
  BlockRV b = sch.getBlock(name);
  std::vector<LoopRV> loops = sch.getLoops(b);
  // A reduction to a scalar: a unit loop stands for its one output.
  std::vector<LoopRV> spatial(loops.begin(), loops.begin() + static_cast<std::ptrdiff_t>(n_spatial));
  LoopRV k = fuseLoops(sch, {loops.begin() + static_cast<std::ptrdiff_t>(n_spatial), loops.end()});
  std::vector<int64_t> candidates = threadCandidates(t);
  ExprRV threads = chooseCategorical(sch, candidates, pickThreads(candidates, split_threads, split_threads));
  auto k_split = sch.split(k, {std::nullopt, threads});
  // Each thread's partial result, in a register.
  BlockRV partial = sch.rfactor(k_split[1], 0);
  sch.setScope(partial, 0, StorageScope::local);
  // The original block sums the partials: one output per thread block, the
  // partials reduced across its threads.
  BlockRV total = sch.getBlock(name);
  std::vector<LoopRV> total_loops = sch.getLoops(total);  // [spatial..., partials]
  LoopRV outputs = spatial.empty() ? sch.addUnitLoop(total_loops.front())
                                   : fuseLoops(sch, {total_loops.begin(), total_loops.end() - 1});
  sch.bind(outputs, "blockIdx.x");
  sch.bind(total_loops.back(), "threadIdx.x");
  sch.computeAt(partial, outputs);
  sch.bind(sch.getLoops(partial).at(1), "threadIdx.x");  // [outputs, partials, the rest]
  // The injective consumers, in the same kernel: each output's computed by
  // the first thread of its block.
  std::vector<Buffer> written = writeBuffers(*findBlockNode(sch.func(), name));
  bool all = true;
  for (const auto& c : injectiveConsumers(sch.func(), name)) {
    BlockRV rv = sch.getBlock(c);
    if (!tryPrimitive([&] { sch.reverseComputeAt(rv, outputs, /*preserve_unit_loops=*/true); })) {
      all = false;
      continue;
    }
    splitOverThreads(sch, c, 1, threads);
  }
  if (all && written.size() == 1 && !isParam(sch.func(), written[0])) {
    BlockRV rv = sch.getBlock(name);
    tryPrimitive([&] { sch.setScope(rv, 0, StorageScope::local); });
  }
  return true;
}

bool bindRemainingBlocks(Schedule& sch, const target::Target& t) {
  std::vector<std::string> names;
  for (const BlockNode* b : topLevelBlocks(sch.func())) names.push_back(b->name);
  for (const auto& name : names)
    if (!underThreadBinding(sch.func(), name) && !bindBlockFallback(sch, name, t, false)) return false;
  return true;
}

bool scheduleReductionAndRest(Schedule& sch, const std::string& block, const target::Target& t) {
  auto outputs = extentOfRole(sch.func(), block, LoopRole::Spatial);
  auto reduced = extentOfRole(sch.func(), block, LoopRole::Reduce);
  if (!scheduleReduction(sch, block, t, splitThreadsFor(outputs, reduced))) return false;
  return bindRemainingBlocks(sch, t);
}

}  // namespace mlcc::schedule::gpu
