// Helpers shared by the CPU default rules (see llvm_common.h).
#include "llvm_common.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "../state.h"
#include "../tree.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule::cpu {

using namespace ir;

void noteRefusal(const ScheduleError& e) {
  if (std::getenv("MLCC_RULES_DEBUG")) std::cerr << "rules: refused: " << e.message() << "\n";
}

bool applyAtomically(Schedule& sch, const target::Target& target,
                     bool (*rule)(Schedule&, const target::Target&)) {
  Schedule trial(sch.func());
  try {
    if (!rule(trial, target)) return false;
  } catch (const ScheduleError& e) {
    // A primitive refused a step the rule expected to be legal: the rule
    // does not apply to this function (the next one is tried).
    if (std::getenv("MLCC_RULES_DEBUG")) std::cerr << "rules: gave up: " << e.message() << "\n";
    return false;
  }
  sch = std::move(trial);
  return true;
}

// --- inspection ------------------------------------------------------------------

const BlockNode& blockNode(Schedule& sch, const BlockRV& b) { return sch.state().block(blockName(sch, b)); }

std::string blockName(Schedule& sch, const BlockRV& b) {
  const ScheduleState& s = sch.state();
  auto it = s.rvs.find(b.name);
  if (it == s.rvs.end() || !std::holds_alternative<BlockHandle>(it->second))
    s.fail("%" + b.name + " is not a block");
  return std::get<BlockHandle>(it->second).block;
}

const ForNode& loopNode(Schedule& sch, const LoopRV& l) { return sch.state().loop(sch.loopVar(l)); }

std::optional<int64_t> constExtent(Schedule& sch, const LoopRV& l) {
  int64_t e;
  if (asConstInt(loopNode(sch, l).extent, &e)) return e;
  return std::nullopt;
}

std::vector<Stage> stagesOf(const PrimFunc& f) {
  std::vector<Stage> out;
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
    Stage st;
    st.name = b.name;
    st.info = analyzeBlock(b);
    st.padding = st.info.kind == BlockKind::Injective && isPadding(b);
    auto writes = writeBuffers(b);
    st.writes_intermediate = !writes.empty();
    for (const auto& w : writes)
      if (std::find(f.allocs.begin(), f.allocs.end(), w) == f.allocs.end()) st.writes_intermediate = false;
    out.push_back(std::move(st));
  });
  return out;
}

namespace {

bool hasLoad(const PrimExpr& e) {
  if (!e) return false;
  if (e->as<LoadNode>()) return true;
  if (const auto* b = e->as<BinaryNode>()) return hasLoad(b->a) || hasLoad(b->b);
  if (const auto* u = e->as<UnaryNode>()) return hasLoad(u->a);
  if (const auto* s = e->as<SelectNode>())
    return hasLoad(s->cond) || hasLoad(s->true_value) || hasLoad(s->false_value);
  if (const auto* c = e->as<CastNode>()) return hasLoad(c->value);
  if (const auto* c = e->as<CallNode>())
    return std::any_of(c->args.begin(), c->args.end(), [](const PrimExpr& a) { return hasLoad(a); });
  return false;
}

}  // namespace

bool isPadding(const BlockNode& b) {
  const auto* store = b.body ? b.body->as<StoreNode>() : nullptr;
  const auto* sel = store ? store->value->as<SelectNode>() : nullptr;
  if (!sel || hasLoad(sel->cond)) return false;
  for (const auto& iv : b.iter_vars)
    if (usesVar(sel->cond, iv.var.get())) return true;
  return false;
}

int64_t functionWork(const PrimFunc& f) {
  int64_t total = 0;
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
    int64_t p = 1;
    for (const auto& iv : b.iter_vars) {
      int64_t e;
      p = p >= 0 && asConstInt(iv.extent, &e) ? p * e : -1;
    }
    total = total >= 0 && p >= 0 ? total + p : -1;
  });
  return total;
}

bool simpleNest(Schedule& sch, const BlockRV& b) {
  auto path = findBlock(sch.func().body, blockName(sch, b));
  const auto* block = path->target()->as<BlockNode>();
  auto loops = loopsAbove(*path);
  if (loops.size() != block->iter_vars.size() || enclosingBlock(*path)) return false;
  for (size_t i = 0; i < loops.size(); ++i) {
    const auto* v = block->iter_vars[i].binding->as<VarNode>();
    if (v != loops[i]->loop_var.get()) return false;
  }
  return !block->predicate;
}

std::optional<size_t> innermostOutputIter(const BlockNode& b) {
  const auto* store = b.body ? b.body->as<StoreNode>() : nullptr;
  if (!store || store->indices.empty()) return std::nullopt;
  const ExprNode* last = store->indices.back().get();
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].var.get() == last && b.iter_vars[i].kind == IterKind::spatial) return i;
  return std::nullopt;
}

int vectorLanes(const target::Target& target, DType dtype) {
  return std::max(1, target.vector_bits / (8 * dtypeBytes(dtype)));
}

// --- tile sizes ---------------------------------------------------------------------

int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

int64_t smallestDivisorAtLeast(int64_t n, int64_t limit) {
  for (int64_t d = std::max<int64_t>(limit, 1); d < n; ++d)
    if (n % d == 0) return d;
  return n;
}

int64_t vectorFactor(int64_t extent, int64_t lanes) {
  if (extent <= 1 || lanes <= 1) return 1;
  if (extent % lanes == 0) return lanes;
  int64_t pow2 = 1;
  while (pow2 * 2 <= lanes && extent % (pow2 * 2) == 0) pow2 *= 2;
  if (pow2 * 2 >= lanes) return pow2;
  return largestDivisorAtMost(extent, lanes);
}

std::vector<LoopRV> tileLoop(Schedule& sch, const LoopRV& loop, const std::vector<int64_t>& factors) {
  TraceInst inst =
      makeInst("sample_perfect_tile", {ref(loop)},
               {{"n", AttrValue(static_cast<int64_t>(factors.size()))},
                {"max_innermost_factor", AttrValue(std::max(kMaxInnermostFactor, factors.back()))}});
  inst.decision = AttrValue::ints(factors);
  std::vector<Factor> split;
  for (const auto& name : sch.apply(inst)) split.emplace_back(ExprRV{name});
  return sch.split(loop, split);
}

// --- steps ----------------------------------------------------------------------------

const ir::StoreNode* storeOf(const ir::BlockNode& b) {
  return b.body ? b.body->as<ir::StoreNode>() : nullptr;
}

const ir::StoreNode* storeOfBlock(const ir::PrimFunc& f, const std::string& name) {
  const ir::StoreNode* store = nullptr;
  forEachBlock(f.body, [&](const ir::BlockNode& b, const StmtPath&) {
    if (b.name == name) store = storeOf(b);
  });
  return store;
}

namespace {

// Expression nodes of `e`, each load of `buffer` counted as `load_nodes`
// (the producer's value that inlining would put in its place).
int64_t nodesAfterInlining(const ir::PrimExpr& e, const ir::BufferNode* buffer, int64_t load_nodes) {
  if (const auto* l = e->as<ir::LoadNode>(); l && l->buffer.get() == buffer) return load_nodes;
  int64_t n = 1;
  ir::forEachChild(e, [&](const ir::PrimExpr& c) { n += nodesAfterInlining(c, buffer, load_nodes); });
  return n;
}

// Whether inlining block `name` keeps every consumer's value within
// kMaxInlinedExprNodes: a producer read several times by a consumer is
// copied each time (a bicubic resize reads its input 16 times, each with
// its weights), and an expression grown past the IR's bounds could not be
// printed and parsed back.
bool inliningStaysSmall(const ir::PrimFunc& f, const std::string& name) {
  constexpr int64_t kMaxInlinedExprNodes = 1500;
  const ir::StoreNode* producer = storeOfBlock(f, name);
  if (!producer) return true;
  const int64_t producer_nodes = nodesAfterInlining(producer->value, nullptr, 0);
  bool small = true;
  forEachBlock(f.body, [&](const ir::BlockNode& b, const StmtPath&) {
    if (b.name == name) return;
    if (const ir::StoreNode* st = storeOf(b))
      if (nodesAfterInlining(st->value, producer->buffer.get(), producer_nodes) > kMaxInlinedExprNodes)
        small = false;
  });
  return small;
}

// The loads of `buffer` in `e`.
void loadsOf(const ir::PrimExpr& e, const ir::BufferNode* buffer, std::vector<const ir::LoadNode*>* out) {
  if (const auto* l = e->as<ir::LoadNode>(); l && l->buffer.get() == buffer) out->push_back(l);
  ir::forEachChild(e, [&](const ir::PrimExpr& c) { loadsOf(c, buffer, out); });
}

// Whether block `name` should stay a stage of its own: a consumer reads
// its output at two or more positions per element (each of its elements
// serving several of the consumer's: a separable resize's second pass
// blends two rows of the first), each read contiguous along the
// consumer's innermost output dimension (its vector). Inlined, it would
// be computed again for every read, with its own index arithmetic and
// gathers per lane; where the consumer's vector runs along another
// dimension (a blocked layout's channels), the indices are the same for
// all lanes and inlining costs little.
bool keepAsStage(const ir::PrimFunc& f, const std::string& name) {
  const ir::StoreNode* producer = storeOfBlock(f, name);
  if (!producer) return false;
  bool keep = false;
  forEachBlock(f.body, [&](const ir::BlockNode& b, const StmtPath&) {
    const ir::StoreNode* st = b.name == name ? nullptr : storeOf(b);
    const auto inner = st ? innermostOutputIter(b) : std::nullopt;
    if (!inner) return;
    std::vector<const ir::LoadNode*> loads;
    loadsOf(st->value, producer->buffer.get(), &loads);
    bool distinct = false, contiguous = !loads.empty();
    for (const ir::LoadNode* l : loads) {
      for (size_t d = 0; d < l->indices.size(); ++d)
        distinct = distinct || !ir::sameExpr(l->indices[d], loads[0]->indices[d]);
      contiguous = contiguous && stepAlong(l->indices.back(), b.iter_vars[*inner].var) == 1;
    }
    keep = keep || (distinct && contiguous);
  });
  return keep;
}

}  // namespace

std::vector<std::string> inlineInjectiveBlocks(Schedule& sch, const std::vector<std::string>& keep) {
  std::vector<std::string> inlined, refused;
  for (bool progress = true; progress;) {
    progress = false;
    for (const Stage& st : stagesOf(sch.func())) {
      if (st.info.kind != BlockKind::Injective || !st.writes_intermediate) continue;
      if (std::count(keep.begin(), keep.end(), st.name) ||
          std::count(refused.begin(), refused.end(), st.name))
        continue;
      BlockRV b = sch.getBlock(st.name);
      if (inliningStaysSmall(sch.func(), st.name) && !keepAsStage(sch.func(), st.name) &&
          attempt([&] { sch.computeInline(b); })) {
        inlined.push_back(st.name);
        progress = true;
      } else {
        refused.push_back(st.name);
      }
    }
    // A refusal may be lifted by a later inlining (e.g. a block read by
    // one that was not inlinable yet): retry the refused ones once more.
    if (progress) refused.clear();
  }
  return inlined;
}

std::optional<int64_t> stepAlong(const ir::PrimExpr& index, const ir::Var& v) {
  using namespace ir::build;
  const std::unordered_map<const ir::VarNode*, ir::PrimExpr> next = {{v.get(), v + 1}};
  int64_t step = 0;
  if (!ir::asConstInt(ir::simplify(ir::substitute(index, next) - index), &step)) return std::nullopt;
  return step;
}

int64_t productOrUnknown(Schedule& sch, const std::vector<LoopRV>& loops) {
  int64_t p = 1;
  for (const auto& l : loops) {
    auto e = constExtent(sch, l);
    if (!e) return -1;
    p *= *e;
  }
  return p;
}

std::optional<LoopRV> parallelizeLoops(Schedule& sch, const std::vector<LoopRV>& loops, int64_t work,
                                       WorkUnit unit, const target::Target& target) {
  if (loops.empty()) return std::nullopt;
  int64_t iters = productOrUnknown(sch, loops);
  if (iters == 1) return std::nullopt;
  const int64_t min_work =
      unit == WorkUnit::Elements ? target.parallel_grain / kMultiplyAddsPerElement : target.parallel_grain;
  if (work >= 0 && work < min_work) return std::nullopt;
  LoopRV fused = loops[0];
  if (loops.size() > 1 && !attempt([&] { fused = sch.fuse(loops); })) {
    // Loops that do not fuse (e.g. not perfectly nested): the outermost alone.
    fused = loops[0];
    auto e = constExtent(sch, fused);
    if (e && *e == 1) return std::nullopt;
  }
  if (!attempt([&] { sch.parallel(fused); })) return std::nullopt;
  return fused;
}

// Whether every buffer the block reads has the output's shape (constant
// dims) and is read at the output's position (an elementwise block): the
// fused index then addresses every buffer contiguously.
static bool readsInOutputLayout(const BlockNode& b) {
  const BufferRegion& out = b.writes.at(0);
  auto sameDims = [](const std::vector<PrimExpr>& x, const std::vector<PrimExpr>& y) {
    if (x.size() != y.size()) return false;
    for (size_t d = 0; d < x.size(); ++d) {
      int64_t a, c;
      if (!asConstInt(x[d], &a) || !asConstInt(y[d], &c) || a != c) return false;
    }
    return true;
  };
  auto atOutput = [&](const BufferRegion& r) {
    if (!sameDims(r.buffer->shape, out.buffer->shape) || r.region.size() != out.region.size()) return false;
    for (size_t d = 0; d < r.region.size(); ++d)
      if (r.region[d].min.get() != out.region[d].min.get()) return false;
    return true;
  };
  for (const BufferRegion& r : b.reads)
    if (!atOutput(r)) return false;
  return true;
}

bool scheduleSpatialNest(Schedule& sch, const BlockRV& block, const target::Target& target) {
  if (!simpleNest(sch, block)) return false;
  auto loops = sch.getLoops(block);
  const BlockNode& b = blockNode(sch, block);
  if (loops.empty()) return false;
  for (const auto& iv : b.iter_vars)
    if (iv.kind != IterKind::spatial) return false;
  auto inner_iter = innermostOutputIter(b);
  const bool contiguous = inner_iter && *inner_iter + 1 == loops.size();
  const int lanes = vectorLanes(target, b.writes.at(0).buffer->dtype);

  // The constant-extent loops inside the symbolic ones.
  size_t first_const = loops.size();
  while (first_const > 0 && constExtent(sch, loops[first_const - 1])) --first_const;
  std::vector<LoopRV> outer(loops.begin(), loops.begin() + first_const);
  std::vector<LoopRV> inner(loops.begin() + first_const, loops.end());
  int64_t elements = productOrUnknown(sch, inner);
  int64_t vf = contiguous && !inner.empty() ? vectorFactor(elements, lanes) : 1;
  int64_t work = outer.empty() ? elements : -1;
  // An innermost extent that is a multiple of the vector is vectorized on
  // its own (the outer indices stay uniform across the lanes: a blocked
  // layout's concat or transform reads whole vectors, no per-lane
  // division), and so is one of half a vector (8 channels of NCHW8c under
  // 16 lanes: fused, each lane divided its index back into the outer
  // dimensions, and a concat's select evaluated every input's resize per
  // lane: UNet's upsampling concat, 1 thread, 141-150 -> 28 us per call);
  // otherwise the constant loops are fused and split.
  const int64_t last = inner.empty() ? 0 : constExtent(sch, inner.back()).value_or(0);  // 0: symbolic
  if (auto rest = contiguous ? splitAtPeriods(sch, block, inner, first_const, lanes) : std::nullopt) {
    outer.insert(outer.end(), rest->begin(), rest->end());
  } else if (vf == lanes && last > 0 && last % lanes == 0 && inner.size() > 1) {
    auto parts = tileLoop(sch, inner.back(), {last / lanes, static_cast<int64_t>(lanes)});
    sch.vectorize(parts[1]);
    outer.insert(outer.end(), inner.begin(), inner.end() - 1);
    outer.push_back(parts[0]);
  } else if (vf == lanes && last * 2 == lanes && inner.size() > 1) {
    sch.vectorize(inner.back());
    outer.insert(outer.end(), inner.begin(), inner.end() - 1);
  } else if (auto rest = contiguous && last > 0 && last < lanes
                             ? vectorizeTranspose(sch, block, inner, first_const, lanes)
                             : std::nullopt) {
    outer.insert(outer.end(), rest->begin(), rest->end());
  } else if (vf == lanes && last >= 4 && last < lanes && lanes % last == 0 && inner.size() > 1 &&
             !readsInOutputLayout(b)) {
    // A quarter vector or less (4 channels of NCHW4c under 16 lanes) read
    // from another layout (ResNeXt's 16c -> 4c conversion before its
    // grouped convolutions): the innermost loop alone, a short vector that
    // reads 4 contiguous floats, rather than fused and split by 16 lanes,
    // each dividing its index back into the dimensions (a gather: 1.9 ms a
    // call for 56 x 56 x 128 floats).
    sch.vectorize(inner.back());
    outer.insert(outer.end(), inner.begin(), inner.end() - 1);
  } else if (last > 2 && last % vf != 0 && !readsInOutputLayout(b)) {
    // An innermost loop that the vector does not divide (197 attention
    // columns, a channel shuffle's 14-wide rows, a 7 x 7 map's) of a block
    // that reads other layouts: fused and split, each lane would divide its
    // index back into the dimensions (64-bit divisions by constants, done
    // lane by lane, then a gather; ViT-B/16's [12, 200, 208] -> [12, 197,
    // 197] slices ran at 4 ns an element, ShuffleNetV2's channel shuffles of
    // 14 x 14 maps at 5, NCHW8c -> NCHW of 7 x 7 at 3). It stays a plain
    // loop, which LLVM's loop vectorizer vectorizes with a scalar remainder
    // where it pays (the shuffles 3x faster, the 7 x 7 transform 9x).
    outer.insert(outer.end(), inner.begin(), inner.end() - 1);
  } else if (vf > 1 && (vf * 4 >= lanes || (last > 0 && last % vf == 0))) {
    // (Not a vector of a few lanes that straddle the innermost rows: 2 x 17
    // x 17 fused and split by 2, each lane dividing its index by 17, is
    // slower than the plain loops, and LLVM refused to vectorize it.)
    LoopRV fused = inner.size() > 1 ? sch.fuse(inner) : inner[0];
    auto parts = tileLoop(sch, fused, {elements / vf, vf});
    sch.vectorize(parts[1]);
    outer.push_back(parts[0]);
  } else {
    outer.insert(outer.end(), inner.begin(), inner.end());
  }
  parallelizeLoops(sch, outer, work, WorkUnit::Elements, target);
  return true;
}

void scheduleStandalone(Schedule& sch, const BlockRV& block, const Stage& stage,
                        const target::Target& target) {
  if (stage.info.kind == BlockKind::Injective)
    scheduleSpatialNest(sch, block, target);
  else if (stage.info.kind == BlockKind::Reduction || stage.info.kind == BlockKind::Gemv)
    scheduleReductionNest(sch, block, target);
  else
    parallelizeOutermost(sch, block);
}

bool vectorizeInnermost(Schedule& sch, const BlockRV& block) {
  auto loops = sch.getLoops(block);
  if (loops.empty()) return false;
  const LoopRV& l = loops.back();
  auto e = constExtent(sch, l);
  if (!e || *e <= 1 || loopNode(sch, l).loop_kind != LoopKind::serial) return false;
  const BlockNode& b = blockNode(sch, block);
  auto inner_iter = innermostOutputIter(b);
  if (!inner_iter) return false;
  const VarNode* lv = sch.loopVar(l).get();
  for (size_t i = 0; i < b.iter_vars.size(); ++i)
    if (usesVar(b.iter_vars[i].binding, lv) != (i == *inner_iter)) return false;
  return attempt([&] { sch.vectorize(l); });
}

bool parallelizeOutermost(Schedule& sch, const BlockRV& block) {
  auto loops = sch.getLoops(block);
  if (loops.empty()) return false;
  auto e = constExtent(sch, loops[0]);
  if (e && *e <= 1) return false;
  if (loopNode(sch, loops[0]).loop_kind != LoopKind::serial) return false;
  return attempt([&] { sch.parallel(loops[0]); });
}

namespace {

bool bindsKind(Schedule& sch, const BlockNode& b, const LoopRV& loop, bool reduce) {
  const VarNode* lv = sch.loopVar(loop).get();
  return std::any_of(b.iter_vars.begin(), b.iter_vars.end(), [&](const IterVar& iv) {
    return (iv.kind == IterKind::reduce) == reduce && usesVar(iv.binding, lv);
  });
}

// The bytes of output an init placed before loops[at] writes: the spatial
// loops from there inwards.
int64_t initBytes(Schedule& sch, const BlockNode& b, const std::vector<LoopRV>& loops, size_t at) {
  int64_t bytes = b.writes.empty() ? 4 : dtypeBytes(b.writes[0].buffer->dtype);
  for (size_t i = at; i < loops.size(); ++i)
    if (bindsKind(sch, b, loops[i], /*reduce=*/false)) bytes *= constExtent(sch, loops[i]).value_or(1);
  return bytes;
}

}  // namespace

std::optional<size_t> firstReduceLoop(Schedule& sch, const BlockRV& block, const std::vector<LoopRV>& loops) {
  const BlockNode& b = blockNode(sch, block);
  for (size_t i = 0; i < loops.size(); ++i)
    if (bindsKind(sch, b, loops[i], /*reduce=*/true)) return i;
  return std::nullopt;
}

std::optional<BlockRV> decomposeReduction(Schedule& sch, const BlockRV& block, int64_t cache_bytes) {
  auto loops = sch.getLoops(block);
  auto first = firstReduceLoop(sch, block, loops);
  if (!first) return std::nullopt;
  std::vector<size_t> places;
  // Where the first reduce loops run once (the reduction is one cache block)
  // and the init would write more than `cache_bytes` ahead of it: before the
  // first reduce loop that iterates, so each tile is zeroed right before its
  // reduction, in cache (a pass over a large output first would leave the
  // reduction to read it back from memory).
  const BlockNode& b = blockNode(sch, block);
  size_t iterating = *first;
  while (iterating < loops.size() &&
         (!bindsKind(sch, b, loops[iterating], /*reduce=*/true) || constExtent(sch, loops[iterating]) == 1))
    ++iterating;
  if (cache_bytes > 0 && iterating < loops.size() && iterating != *first &&
      initBytes(sch, b, loops, *first) > cache_bytes)
    places.push_back(iterating);
  // Else before the first reduce loop (TVM's usage), else before the loop
  // right above it. The init block is returned when it has loops of its own.
  places.push_back(*first);
  if (*first > 0) places.push_back(*first - 1);
  BlockRV init{""};
  for (size_t at : places) {
    if (attempt([&] { init = sch.decomposeReduction(block, loops[at]); })) {
      if (sch.getLoops(init).size() > at) return init;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace mlcc::schedule::cpu
