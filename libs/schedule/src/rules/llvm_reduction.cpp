// Rule "reduction" (llvm): functions of reductions (other than matmul-like
// ones) and injective blocks: softmax, layer_norm, pooling, mean/sum.
//
// Injective intermediates are inlined first, except those that call a math
// function and are read by a reduction and another block (softmax's exp:
// rowValuesToKeep). Then:
//   - When the last block is injective and reads the reductions' results
//     (softmax, layer_norm, mean's division): its leading loops that index
//     those results are the rows; every earlier block is computed at the
//     innermost row loop (each row's reductions right before the row's
//     output), the row loops are fused and parallel, and the inner loops of
//     the last block are fused, split by the vector width and vectorized.
//     A kept injective block (softmax's exp) is computed a row at a time
//     there too and vectorized like the last block. The reductions' inits
//     are decomposed out. A reduction along the contiguous axis of what it
//     reads (softmax's max and sum of exp, a layer norm's mean) is first split
//     by the vector width and rfactor'ed (vectorizeRowReduction): a vector of
//     partial results over the row, then the lanes' final reduction. When that
//     would vectorize nothing (every loop of the last block is a row, no
//     reduction along a row) and a reduction can be vectorized along its
//     output, the blocks are scheduled on their own instead; so are they when
//     the last block does not read every earlier block's result itself (topk's
//     ranks).
//   - A reduction that stays on its own (pooling, a reduction writing the
//     output): its spatial loops fused and parallel; when its innermost
//     spatial loop walks the innermost dimension of the output and of every
//     input it reads that depends on it (pooling windows; a mean over the
//     rows of a matrix), that loop is split by the vector
//     width and the vector part moved inside the reduce loops and
//     vectorized; otherwise, when it reduces along the contiguous axis of
//     what it reads, a vector of partial results per output element
//     (vectorizeRowReduction) is computed right before its lanes are
//     reduced; the init decomposed out.
// Other reductions stay serial along their reduce loops.
#include <algorithm>
#include <set>

#include "../tree.h"
#include "llvm_common.h"
#include "mlcc/ir/expr_functor.h"

namespace mlcc::schedule::cpu {

using namespace ir;

namespace {

void collectLoads(const PrimExpr& e, std::vector<const LoadNode*>& out) {
  if (!e) return;
  if (const auto* l = e->as<LoadNode>()) {
    out.push_back(l);
    for (const auto& i : l->indices) collectLoads(i, out);
  } else if (const auto* b = e->as<BinaryNode>()) {
    collectLoads(b->a, out);
    collectLoads(b->b, out);
  } else if (const auto* u = e->as<UnaryNode>()) {
    collectLoads(u->a, out);
  } else if (const auto* s = e->as<SelectNode>()) {
    collectLoads(s->cond, out);
    collectLoads(s->true_value, out);
    collectLoads(s->false_value, out);
  } else if (const auto* c = e->as<CastNode>()) {
    collectLoads(c->value, out);
  } else if (const auto* c = e->as<CallNode>()) {
    for (const auto& a : c->args) collectLoads(a, out);
  }
}

std::vector<const LoadNode*> loadsOf(const BlockNode& b) {
  std::vector<const LoadNode*> out;
  std::vector<Stmt> work{b.body};
  while (!work.empty()) {
    Stmt s = work.back();
    work.pop_back();
    if (!s) continue;
    if (const auto* st = s->as<StoreNode>()) {
      collectLoads(st->value, out);
      for (const auto& i : st->indices) collectLoads(i, out);
    } else if (const auto* i = s->as<IfNode>()) {
      collectLoads(i->cond, out);
    }
    for (const auto& c : children(s)) work.push_back(c);
  }
  return out;
}

// Whether a block's value calls a math function (softmax's exp).
bool callsMath(const StoreNode* store) {
  return store && anyOf(store->value, [](const PrimExpr& e) { return e->as<CallNode>() != nullptr; });
}

void decomposeAndVectorizeInit(Schedule& sch, const BlockRV& block) {
  if (auto init = decomposeReduction(sch, block)) vectorizeInnermost(sch, *init);
}

// `loop` (of constant `extent`) split into ceil(extent / lanes) vectors of
// `lanes`: the last one runs past the end, where the predicate the split
// adds (`i_0 * lanes + i_1 < extent`) masks its lanes.
std::vector<LoopRV> splitPastEnd(Schedule& sch, const LoopRV& loop, int64_t extent, int64_t lanes) {
  return sch.split(loop, {Factor((extent + lanes - 1) / lanes), Factor(lanes)});
}

// A reduction `C[..] = C[..] op f(x[.., k], ..)` in its own simple nest
// whose one reduce variable k is last and indexes only the last dimension
// of every buffer it reads (plainly: contiguous along k), over at least two
// vectors (or one when each element calls a math function; a partial last
// vector is masked: splitPastEnd): k is split by the vector width and the
// inner part rfactor'ed, so that a block `<name>_rf` accumulates a
// vector of partial results (each lane its own, along contiguous loads; one
// vector exp per 16 elements where a scalar loop called exp per element)
// and the block itself reduces the lanes. Returns the rf block's name, or
// nullopt (the nest unchanged) when the block does not qualify.
// (Softmax of [4, 128, 128] over its 128 columns, 1 thread: 0.44 -> 0.09 ms;
// of [12, 197, 197], ViT-B/16's attention: 2.49 -> 0.51 ms.)
std::optional<std::string> vectorizeRowReduction(Schedule& sch, const std::string& name,
                                                 const target::Target& target) {
  BlockRV blk = sch.getBlock(name);
  if (!simpleNest(sch, blk)) return std::nullopt;
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  const BlockInfo info = analyzeBlock(b);
  if (info.kind != BlockKind::Reduction || info.reduce.size() != 1 ||
      info.reduce[0] + 1 != b.iter_vars.size())
    return std::nullopt;
  const VarNode* k = b.iter_vars.back().var.get();
  const Buffer& out = b.writes.at(0).buffer;
  for (const LoadNode* l : loadsOf(b)) {
    if (l->buffer == out) continue;
    for (size_t i = 0; i + 1 < l->indices.size(); ++i)
      if (usesVar(l->indices[i], k)) return std::nullopt;
    if (!l->indices.empty() && usesVar(l->indices.back(), k) && l->indices.back().get() != k)
      return std::nullopt;
  }
  const int64_t lanes = vectorLanes(target, out->dtype);
  const auto extent = constExtent(sch, loops.back());
  // Over a single vector the partial results cost a pass of their own: it
  // pays only where each element costs a math call (softmax's exp: 16-wide
  // rows of attention, 1 thread, 8-10 -> 4 us per call; a plain sum or max
  // of 16 got slower, 0.5 -> 0.75 us).
  if (!extent || *extent < (callsMath(storeOf(b)) ? 1 : 2) * lanes) return std::nullopt;
  const int out_rank = static_cast<int>(b.writes.at(0).region.size());
  // (Should rfactor refuse, the reduce loop stays split: the same loops.)
  // An extent that the vector does not divide (ViT's 197 tokens) is split
  // past its end, the blocks guarded by `k < extent` (masked vector lanes).
  auto parts = *extent % lanes == 0 ? tileLoop(sch, loops.back(), {*extent / lanes, lanes})
                                    : splitPastEnd(sch, loops.back(), *extent, lanes);
  std::optional<std::string> rf_name;
  attempt([&] { rf_name = blockName(sch, sch.rfactor(parts[1], out_rank)); });
  return rf_name;
}

// Under a row loop, compute_at gives an rf block (vectorizeRowReduction)
// its lanes loop outside its reduce loop: the lanes go inside (each
// iteration of the reduction updates the vector of partial results), before
// its init is decomposed.
void lanesInsideReduction(Schedule& sch, const BlockRV& rf) {
  auto loops = sch.getLoops(rf);
  if (loops.size() >= 2) attempt([&] { sch.reorder({loops.back(), loops[loops.size() - 2]}); });
}

// A reduction block in a simple nest, its spatial loops first: the vector
// factor of its innermost spatial loop when that loop walks the innermost
// dimension of the output and of every input that depends on it (an input
// that does not is the same value in every lane: a per-row scale of a layer
// norm fused into a mean over the rows); 1 when it cannot be the vector.
// `loops` are the block's loops (sch.getLoops, which the trace records).
int64_t vectorAlongOutput(Schedule& sch, const BlockRV& blk, const std::vector<LoopRV>& loops,
                          const target::Target& target) {
  if (!simpleNest(sch, blk)) return 1;
  const BlockNode& b = blockNode(sch, blk);
  size_t ns = 0;
  while (ns < b.iter_vars.size() && b.iter_vars[ns].kind == IterKind::spatial) ++ns;
  if (ns == 0 || ns == b.iter_vars.size()) return 1;
  for (size_t i = ns; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].kind != IterKind::reduce) return 1;
  auto inner = innermostOutputIter(b);
  const int64_t inner_extent = constExtent(sch, loops[ns - 1]).value_or(0);
  if (!inner || *inner + 1 != ns || inner_extent <= 1) return 1;
  const Buffer& out = b.writes.at(0).buffer;
  const VarNode* v = b.iter_vars[*inner].var.get();
  for (const LoadNode* l : loadsOf(b)) {
    if (l->buffer == out) continue;
    bool uses = false;
    for (const auto& index : l->indices) uses = uses || usesVar(index, v);
    if (uses && !usesVar(l->indices.back(), v)) return 1;
  }
  return vectorFactor(inner_extent, vectorLanes(target, out->dtype));
}

}  // namespace

// A reduction block on its own (see the header comment).
void scheduleReductionNest(Schedule& sch, const BlockRV& blk, const target::Target& target) {
  if (!simpleNest(sch, blk)) {
    parallelizeOutermost(sch, blk);
    return;
  }
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  size_t ns = 0;  // the spatial iteration variables come first
  while (ns < b.iter_vars.size() && b.iter_vars[ns].kind == IterKind::spatial) ++ns;
  for (size_t i = ns; i < b.iter_vars.size(); ++i)
    if (b.iter_vars[i].kind != IterKind::reduce) {
      parallelizeOutermost(sch, blk);
      return;
    }
  std::vector<LoopRV> spatial(loops.begin(), loops.begin() + ns), reduce(loops.begin() + ns, loops.end());
  const int64_t work = productOrUnknown(sch, loops);

  std::optional<LoopRV> vec;
  std::optional<BlockRV> partials;
  if (const int64_t vf = vectorAlongOutput(sch, blk, loops, target); vf > 1) {
    const int64_t inner_extent = *constExtent(sch, spatial.back());
    auto parts = tileLoop(sch, spatial.back(), {inner_extent / vf, vf});
    std::vector<LoopRV> order{parts[0]};
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.push_back(parts[1]);
    sch.reorder(order);
    spatial.back() = parts[0];
    vec = parts[1];
  } else if (ns > 0) {
    // Rows reduced along their contiguous axis: a vector of partial results
    // per row (vectorizeRowReduction), computed right before the row's
    // lanes are reduced. (topk's selection steps, each a best value and a
    // first index over 512 elements for 1024 rows, 1 thread: 16 -> 5 ms a
    // call.)
    const std::string name = blockNode(sch, blk).name;
    if (auto rf = vectorizeRowReduction(sch, name, target)) {
      partials = sch.getBlock(*rf);
      loops = sch.getLoops(blk);
      spatial.assign(loops.begin(), loops.begin() + ns);
      sch.computeAt(*partials, spatial.back());
      lanesInsideReduction(sch, *partials);
    }
  }
  parallelizeLoops(sch, spatial, work, WorkUnit::MultiplyAdds, target);
  if (partials) {
    decomposeAndVectorizeInit(sch, *partials);
    vectorizeInnermost(sch, *partials);
  }
  decomposeAndVectorizeInit(sch, blk);
  if (vec) sch.vectorize(*vec);
}

namespace {

// The last block `out` computes rows from the earlier blocks' results (see
// the header comment). Returns the blocks it moved under the row loop;
// nullopt when `out` does not read them row by row (nothing changed).
std::optional<std::vector<std::string>> scheduleRows(Schedule& sch, const std::string& out,
                                                     const std::vector<std::string>& earlier,
                                                     const target::Target& target) {
  BlockRV blk = sch.getBlock(out);
  if (!simpleNest(sch, blk)) return std::nullopt;
  auto loops = sch.getLoops(blk);
  const BlockNode& b = blockNode(sch, blk);
  // The earlier blocks are reductions and kept injective blocks (the
  // rule's functions have no other kind).
  std::set<std::string> injective;
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (std::count(earlier.begin(), earlier.end(), x.name) && analyzeBlock(x).kind == BlockKind::Injective)
      injective.insert(x.name);
  });
  // The rows: the leading loops of `out` that index the earlier reductions'
  // results (an earlier injective block, softmax's exp, is read whole).
  std::set<const BufferNode*> produced;
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (std::count(earlier.begin(), earlier.end(), x.name) && !injective.count(x.name))
      for (const auto& w : writeBuffers(x)) produced.insert(w.get());
  });
  size_t rows = 0;
  for (const LoadNode* l : loadsOf(b)) {
    if (!produced.count(l->buffer.get())) continue;
    for (const auto& index : l->indices)
      for (size_t i = 0; i < b.iter_vars.size(); ++i)
        if (usesVar(index, b.iter_vars[i].var.get())) rows = std::max(rows, i + 1);
  }
  if (rows == 0) return std::nullopt;
  // Every earlier block's result read by `out` itself, row by row: a
  // reduction read only by another one (topk's ranks, read by the indices
  // that `out` gathers) would be computed for every output element, and is
  // scheduled on its own instead.
  // (Or by an earlier injective block that `out` reads: softmax's max, read
  // by its exp.)
  std::set<const BufferNode*> read_by_out, injective_read;
  for (const LoadNode* l : loadsOf(b)) read_by_out.insert(l->buffer.get());
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (!injective.count(x.name)) return;
    bool read = false;
    for (const auto& w : writeBuffers(x)) read = read || read_by_out.count(w.get());
    if (read)
      for (const LoadNode* l : loadsOf(x)) injective_read.insert(l->buffer.get());
  });
  read_by_out.insert(injective_read.begin(), injective_read.end());
  bool all_read = true;
  forEachBlock(sch.func().body, [&](const BlockNode& x, const StmtPath&) {
    if (std::count(earlier.begin(), earlier.end(), x.name))
      for (const auto& w : writeBuffers(x)) all_read = all_read && read_by_out.count(w.get());
  });
  if (!all_read) return std::nullopt;
  const int64_t work = functionWork(sch.func());
  auto inner_iter = innermostOutputIter(b);
  const bool contiguous = inner_iter && *inner_iter + 1 == loops.size();
  const int lanes = vectorLanes(target, b.writes.at(0).buffer->dtype);

  // Row reductions vectorized through rfactor: each rf block goes right
  // before its reduction.
  std::vector<std::string> blocks, vector_partials;
  for (const auto& name : earlier) {
    if (auto rf = vectorizeRowReduction(sch, name, target)) {
      blocks.push_back(*rf);
      vector_partials.push_back(*rf);
    }
    blocks.push_back(name);
  }
  // Every loop of `out` a row and no reduction vectorized along its row:
  // nothing would be vectorized here. When a reduction can be vectorized
  // along its output instead, the blocks are scheduled on their own (a mean over the tokens of a
  // layer norm's output, [1, 128, 256] -> [1, 256]: 75-83 -> 13-17 us).
  if (vector_partials.empty() && rows == loops.size() &&
      std::any_of(earlier.begin(), earlier.end(), [&](const std::string& name) {
        BlockRV r = sch.getBlock(name);
        return simpleNest(sch, r) && vectorAlongOutput(sch, r, sch.getLoops(r), target) > 1;
      }))
    return std::nullopt;
  blk = sch.getBlock(out);
  loops = sch.getLoops(blk);
  std::vector<LoopRV> row_loops(loops.begin(), loops.begin() + rows),
      inner(loops.begin() + rows, loops.end());

  std::vector<std::string> moved;
  std::vector<BlockRV> moved_rvs;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    BlockRV p = sch.getBlock(*it);
    if (attempt([&] { sch.computeAt(p, row_loops.back()); })) {
      moved.push_back(*it);
      moved_rvs.push_back(p);
    }
  }
  for (const auto& name : vector_partials) lanesInsideReduction(sch, sch.getBlock(name));
  for (const auto& p : moved_rvs) decomposeAndVectorizeInit(sch, p);
  for (const auto& name : vector_partials) vectorizeInnermost(sch, sch.getBlock(name));

  // A row's loops (of `out`, or of an injective block moved under the row
  // loop) fused and vectorized. A row of at least two vectors that only a
  // short vector divides (197 columns: none), or only a vector of a width
  // that is no power of two (1500 attention scores: 15 lanes, which LLVM
  // ran as 4-lane vectors and a scalar rest: Whisper's softmax at 3.5
  // GFLOPS), takes whole vectors, the last one masked.
  auto vectorizeRow = [&](const std::vector<LoopRV>& row) {
    const int64_t elements = productOrUnknown(sch, row);
    if (row.empty() || elements <= 1) return;
    const int64_t vf = vectorFactor(elements, lanes);
    const bool past_end = (vf * 2 < lanes || (vf & (vf - 1)) != 0) && elements >= 2 * lanes;
    if (vf > 1 || past_end) {
      LoopRV fused = row.size() > 1 ? sch.fuse(row) : row[0];
      auto parts =
          past_end ? splitPastEnd(sch, fused, elements, lanes) : tileLoop(sch, fused, {elements / vf, vf});
      sch.vectorize(parts[1]);
    }
  };
  if (contiguous) vectorizeRow(inner);
  for (const auto& name : moved) {
    if (!injective.count(name)) continue;
    BlockRV p = sch.getBlock(name);
    auto p_loops = sch.getLoops(p);
    auto p_inner = innermostOutputIter(blockNode(sch, p));
    if (p_loops.size() > rows && p_inner && *p_inner + 1 == blockNode(sch, p).iter_vars.size())
      vectorizeRow(std::vector<LoopRV>(p_loops.begin() + static_cast<std::ptrdiff_t>(rows), p_loops.end()));
  }
  parallelizeLoops(sch, row_loops, work, WorkUnit::MultiplyAdds, target);
  return moved;
}

// Injective intermediates that call a math function and are read both by
// a reduction and by another block (softmax's exp(x - max), read by its sum
// and by the normalization): kept, not inlined into both, so that each
// element's exp is computed once (scheduleRows computes a row of it under
// the row loop, in L1). At 1 thread, softmax over 6 x 1500 x 1500: 20.9 ->
// 18.3 ms (1504 columns, no masked tail: 18.0 -> 12.1); models, medians of
// 5 alternating rounds: a graph attention network -15%, a diffusion block
// -16%, MobileViT -9%, Swin-T and a Conformer -5%, Whisper-style -3%.
std::vector<std::string> rowValuesToKeep(const PrimFunc& f, const std::vector<Stage>& stages) {
  std::vector<std::string> keep;
  for (const Stage& st : stages) {
    if (st.info.kind != BlockKind::Injective || !st.writes_intermediate) continue;
    const StoreNode* producer = storeOfBlock(f, st.name);
    if (!callsMath(producer)) continue;
    bool by_reduction = false;
    int readers = 0;
    forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
      if (b.name == st.name) return;
      for (const LoadNode* l : loadsOf(b))
        if (l->buffer == producer->buffer) {
          ++readers;
          by_reduction = by_reduction || analyzeBlock(b).kind == BlockKind::Reduction;
          break;
        }
    });
    if (by_reduction && readers >= 2) keep.push_back(st.name);
  }
  return keep;
}

}  // namespace

bool applyReductionRule(Schedule& sch, const target::Target& target) {
  bool any_reduction = false;
  const std::vector<Stage> original = stagesOf(sch.func());
  for (const Stage& st : original) {
    if (st.info.kind == BlockKind::Reduction) {
      any_reduction = true;
    } else if (st.info.kind != BlockKind::Injective) {
      return false;
    }
  }
  if (!any_reduction) return false;
  inlineInjectiveBlocks(sch, rowValuesToKeep(sch.func(), original));

  std::vector<Stage> stages = stagesOf(sch.func());
  std::vector<std::string> done;
  const Stage& last = stages.back();
  if (last.info.kind == BlockKind::Injective) {
    std::vector<std::string> earlier;
    for (size_t i = 0; i + 1 < stages.size(); ++i) earlier.push_back(stages[i].name);
    if (auto moved = scheduleRows(sch, last.name, earlier, target)) {
      done = *moved;
      done.push_back(last.name);
    }
  }
  for (const Stage& st : stages) {
    if (std::count(done.begin(), done.end(), st.name)) continue;
    scheduleStandalone(sch, sch.getBlock(st.name), st, target);
  }
  return true;
}

}  // namespace mlcc::schedule::cpu
