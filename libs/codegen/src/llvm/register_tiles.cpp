// Scalar replacement of register tiles before emission, invisible in the IR
// (values are unchanged). A reduction's register tile is the box of output
// elements a block updates under its innermost unrolled and vectorized
// loops; the loops around those that only run the reduction (the store's
// index does not depend on them) update the same box again and again:
//
//   for %k in 0..144 {                        // reduction loops
//     for %r in 0..8 unrolled {               // the register tile
//       for %l in 0..16 vectorized {
//         block: %out[%h, %w0 + %r, %l] += %in[...] * %wt[...]
//
// becomes
//
//   block (alloc %tile: f32[8, 16], not zeroed) {
//     for %r', %l': %tile[%r', %l'] = %out[%h, %w0 + %r', %l']
//     for %k in 0..144 { for %r, %l: %tile[%r, %l] += %in[...] * %wt[...] }
//     for %r', %l': %out[%h, %w0 + %r', %l'] = %tile[%r', %l']
//   }
//
// The tile is a stack array indexed by constants once the tile loops are
// unrolled and vectorized, so LLVM's SROA keeps it in registers across the
// reduction loops without having to prove that the tile's addresses in
// %out differ from each other (LICM's promotion needs that, and loses it
// where the tile covers a whole dimension: a 3x3 convolution to 32 output
// channels ran at 62 GFLOPS, its accumulators loaded and stored around
// every FMA). Only reductions whose block has no predicate, whose body is
// one store and whose loads of the output read the stored element are
// rewritten, and only when the tile's index is a one-to-one affine map of
// the tile loops (so the copies touch exactly what the loops touched), and,
// into an output that codegen compacts onto the stack, only tiles of more
// than 16 vectors or at a place that loops outside the tile move (smaller
// ones at a constant place SROA handles). A vectorized tile loop over
// several vectors is split into unrolled whole vectors first
// (splitWideVector).
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "llvm/kernel_emitter.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/stmt_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::codegen {

namespace {

using namespace ir;

constexpr int64_t kMaxTileBytes = 4096;  // 64 AVX-512 vectors: anything larger is no register tile
// A tile of a compacted alloc up to this size is left to SROA (16 AVX-512 vectors).
constexpr int64_t kMaxCompactedTileBytes = 1024;

bool isTileLoop(const ForNode& f, int64_t extent) {
  return extent == 1 || f.loop_kind == LoopKind::unrolled || f.loop_kind == LoopKind::vectorized;
}

bool usesAny(const PrimExpr& e, const std::vector<const VarNode*>& vars) {
  return anyOf(e,
               [&](const PrimExpr& x) { return std::find(vars.begin(), vars.end(), x.get()) != vars.end(); });
}

// Whether every load of `buf` in `e` reads exactly `indices`.
bool readsOnly(const PrimExpr& e, const Buffer& buf, const std::vector<PrimExpr>& indices) {
  return !anyOf(e, [&](const PrimExpr& x) {
    const auto* l = x->as<LoadNode>();
    if (!l || l->buffer != buf) return false;
    for (size_t d = 0; d < indices.size(); ++d)
      if (!sameExpr(l->indices[d], indices[d])) return true;
    return false;
  });
}

PrimExpr replaceLoads(const PrimExpr& e, const Buffer& buf, const Buffer& tile,
                      const std::vector<PrimExpr>& at) {
  std::function<PrimExpr(const PrimExpr&)> f = [&](const PrimExpr& x) -> PrimExpr {
    if (const auto* l = x->as<LoadNode>(); l && l->buffer == buf) return makeLoad(tile, at);
    return mapChildren(x, f);
  };
  return f(e);
}

// The loop nest from `outer` down to its block: the loops and the block.
struct Nest {
  std::vector<const ForNode*> loops;
  const BlockNode* block = nullptr;
};

Nest perfectNest(const ForNode& outer) {
  Nest n;
  const StmtNode* s = &outer;
  while (const auto* f = s->as<ForNode>()) {
    n.loops.push_back(f);
    if (!f->body) return {};
    s = f->body.get();
  }
  n.block = s->as<BlockNode>();
  return n;
}

// `body` under the first `count` loops of a nest, as they were.
Stmt withLoops(const std::vector<const ForNode*>& loops, size_t count, Stmt body) {
  for (size_t i = count; i-- > 0;)
    body = makeFor(loops[i]->loop_var, loops[i]->extent, body, loops[i]->loop_kind, loops[i]->thread_tag,
                   loops[i]->attrs);
  return body;
}

// The tile of the reduction `nest` when the rewrite applies (see the file
// comment), as the statement that replaces the nest; null otherwise.
// `unit_loops`: the variables of the enclosing loops that run once.
Stmt promoteNest(const Stmt& nest_stmt, AllocPlan* plan,
                 const std::unordered_set<const VarNode*>& unit_loops) {
  const Nest nest = perfectNest(*nest_stmt->as<ForNode>());
  const BlockNode* blk = nest.block;
  if (!blk || blk->predicate || !blk->alloc_buffers.empty() || blk->attrs.count("tensor_intrin"))
    return nullptr;
  const auto* st = blk->body ? blk->body->as<StoreNode>() : nullptr;
  if (!st) return nullptr;
  const auto* init = blk->init ? blk->init->as<StoreNode>() : nullptr;
  if (blk->init && (!init || init->buffer != st->buffer)) return nullptr;
  const Buffer& out = st->buffer;
  if (!readsOnly(st->value, out, st->indices) || (init && !readsOnly(init->value, out, st->indices)))
    return nullptr;
  for (size_t d = 0; d < st->indices.size(); ++d) {
    if (anyOf(st->indices[d], [](const PrimExpr& x) { return x->as<LoadNode>() != nullptr; })) return nullptr;
    if (init && !sameExpr(init->indices[d], st->indices[d])) return nullptr;
  }

  // Split the loops: the reduction loops, then the tile loops (a suffix).
  std::vector<int64_t> extents;
  for (const ForNode* f : nest.loops) {
    int64_t e;
    if (!asConstInt(f->extent, &e) || e < 1) return nullptr;
    if (f->loop_kind == LoopKind::parallel || f->loop_kind == LoopKind::thread_binding) return nullptr;
    extents.push_back(e);
  }
  size_t first_tile = nest.loops.size();
  while (first_tile > 0 && isTileLoop(*nest.loops[first_tile - 1], extents[first_tile - 1])) --first_tile;
  int64_t reduction_trips = 1;
  std::vector<const VarNode*> reduction_vars, tile_vars;
  for (size_t i = 0; i < nest.loops.size(); ++i) {
    if (i < first_tile) {
      if (nest.loops[i]->loop_kind == LoopKind::vectorized) return nullptr;
      reduction_trips *= extents[i];
      reduction_vars.push_back(nest.loops[i]->loop_var.get());
    } else {
      tile_vars.push_back(nest.loops[i]->loop_var.get());
    }
  }
  if (first_tile == 0 || reduction_trips < 2) return nullptr;

  // The stored index in loop variables: free of the reduction loops, affine
  // in the tile loops.
  std::unordered_map<const VarNode*, PrimExpr> bindings;
  for (const auto& iv : blk->iter_vars) bindings[iv.var.get()] = iv.binding;
  Analyzer az;
  for (size_t i = 0; i < nest.loops.size(); ++i) az.bind(nest.loops[i]->loop_var, 0, extents[i]);
  std::vector<PrimExpr> index;
  for (const auto& e : st->indices) {
    index.push_back(az.simplify(substitute(e, bindings)));
    if (usesAny(index.back(), reduction_vars)) return nullptr;
  }
  auto at = [&](const std::unordered_map<const VarNode*, PrimExpr>& values) {
    std::vector<PrimExpr> r;
    for (const auto& e : index) r.push_back(az.simplify(substitute(e, values)));
    return r;
  };
  // coeff[k][d]: how far tile loop k moves dimension d per iteration (the
  // index is affine in the tile loops when each enters linearly).
  std::vector<std::vector<int64_t>> coeff(tile_vars.size(), std::vector<int64_t>(index.size(), 0));
  for (size_t k = 0; k < tile_vars.size(); ++k)
    for (size_t d = 0; d < index.size(); ++d) {
      auto c = coefficient(index[d], {{tile_vars[k], 1}});
      if (!c) return nullptr;
      coeff[k][d] = *c;
    }
  // One to one: each tile loop that moves the index moves one dimension,
  // forward, and the loops moving one dimension do not overlap (mixed radix).
  std::vector<size_t> dims_of_tile;  // the tile's dimensions: the tile loops that move the index
  for (size_t k = 0; k < tile_vars.size(); ++k) {
    int moved = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      if (coeff[k][d] < 0) return nullptr;
      moved += coeff[k][d] > 0;
    }
    if (moved > 1) return nullptr;
    if (moved == 1 && extents[first_tile + k] > 1) dims_of_tile.push_back(k);
  }
  for (size_t d = 0; d < index.size(); ++d) {
    std::vector<std::pair<int64_t, int64_t>> steps;  // (coefficient, extent) of the loops moving d
    for (size_t k : dims_of_tile)
      if (coeff[k][d] > 0) steps.emplace_back(coeff[k][d], extents[first_tile + k]);
    std::sort(steps.begin(), steps.end());
    int64_t reach = 0;  // the largest offset the smaller steps reach
    for (const auto& [c, e] : steps) {
      if (c <= reach) return nullptr;
      reach += c * (e - 1);
    }
  }
  // A single vector (or scalar) accumulator has one address: LICM promotes it.
  if (dims_of_tile.empty() || (dims_of_tile.size() == 1 && dims_of_tile[0] + 1 == tile_vars.size() &&
                               nest.loops.back()->loop_kind == LoopKind::vectorized))
    return nullptr;
  int64_t elements = 1;
  std::vector<PrimExpr> shape;
  for (size_t k : dims_of_tile) {
    elements *= extents[first_tile + k];
    shape.push_back(makeInt(extents[first_tile + k]));
  }
  const int64_t tile_bytes = elements * static_cast<int64_t>(dtypeBytes(out->dtype));
  if (tile_bytes > kMaxTileBytes) return nullptr;
  // A compacted alloc is a stack array already: up to 16 vectors LLVM keeps
  // its tile in registers (a second array over it only got in its way, 60%
  // slower transposed convolutions); of 20 or more it kept some in the array
  // (LICM promotes part of them): a 5 x 4-vector convolution into a
  // compacted intermediate 0.93 -> 0.38 ms with the tile, a GRU's 10 x
  // 2-vector dense layers 2.3x slower without it. That holds where the tile
  // is at a constant place in the compacted array (the array is the tile):
  // where loops outside the tile move it (an epilogue under a larger block
  // of the output), its accumulators have no constant addresses for SROA,
  // and LLVM loaded and stored them around every FMA (Inception-v3's 3 x 3
  // convolution to 64 channels at 147 x 147: 7 x 2-vector tiles in a 3-row
  // block, 47 GFLOPS on a Zen 4 core).
  std::unordered_set<const VarNode*> fixed = unit_loops;  // the variables that leave the place constant
  for (size_t i = 0; i < nest.loops.size(); ++i)
    if (i >= first_tile || extents[i] == 1) fixed.insert(nest.loops[i]->loop_var.get());
  const bool at_constant_place = std::none_of(index.begin(), index.end(), [&](const PrimExpr& e) {
    return anyOf(e, [&](const PrimExpr& x) { return x->as<VarNode>() && !fixed.count(x->as<VarNode>()); });
  });
  for (const auto& [alloc, box] : plan->compacted)
    if (box == out && tile_bytes <= kMaxCompactedTileBytes && at_constant_place) return nullptr;

  // The rewrite.
  Buffer tile = makeBuffer(out->name + "_tile", out->dtype, shape);
  plan->written_before_read.insert(tile.get());
  std::vector<PrimExpr> in_tile;
  for (size_t k : dims_of_tile) in_tile.push_back(nest.loops[first_tile + k]->loop_var);
  Stmt body = makeStore(tile, in_tile, replaceLoads(st->value, out, tile, in_tile));
  Stmt new_init = init ? makeStore(tile, in_tile, replaceLoads(init->value, out, tile, in_tile)) : nullptr;
  Stmt inner =
      makeBlock(blk->name, blk->iter_vars, blk->reads, blk->writes, body, new_init, nullptr, {}, blk->attrs);
  inner = withLoops(nest.loops, nest.loops.size(), inner);
  // The copies: one loop per tile dimension, unrolled, the last vectorized
  // when the tile's was and is a whole vector of consecutive elements (the
  // emitter makes such a loop one vector; any other stays a loop, and the
  // tile's elements must be constants for SROA).
  auto copy = [&](bool in) {
    std::vector<Var> vars;
    std::unordered_map<const VarNode*, PrimExpr> values;
    for (const VarNode* v : tile_vars) values[v] = makeInt(0);
    for (size_t k : dims_of_tile) {
      vars.push_back(makeVar(nest.loops[first_tile + k]->loop_var->name + (in ? "_load" : "_store")));
      values[tile_vars[k]] = vars.back();
    }
    std::vector<PrimExpr> tile_at(vars.begin(), vars.end());
    const std::vector<PrimExpr> out_at = at(values);
    Stmt s = in ? makeStore(tile, tile_at, makeLoad(out, out_at))
                : makeStore(out, out_at, makeLoad(tile, tile_at));
    for (size_t j = dims_of_tile.size(); j-- > 0;) {
      const ForNode* f = nest.loops[first_tile + dims_of_tile[j]];
      const int64_t e = extents[first_tile + dims_of_tile[j]];
      const bool vector = f->loop_kind == LoopKind::vectorized && (e & (e - 1)) == 0 && e <= 16 &&
                          j + 1 == dims_of_tile.size() && coeff[dims_of_tile[j]].back() == 1;
      s = makeFor(vars[j], makeInt(e), s, vector ? LoopKind::vectorized : LoopKind::unrolled);
    }
    return s;
  };
  return makeBlock(blk->name + "_register_tile", {}, {}, {}, makeSeq({copy(true), inner, copy(false)}),
                   nullptr, nullptr, {tile});
}

// A nest whose innermost loop is vectorized over a multiple of one vector
// (kMaxTileLanes) wider than it, with that loop split into whole vectors:
// `for %l in 0..64 vectorized` becomes `for %l_o in 0..4 unrolled { for
// %l_i in 0..16 vectorized }`, %l = %l_o * 16 + %l_i. The emitter makes a
// 64-lane loop a loop over four vectors, where a register tile's elements
// are not constants (its accumulators stay on the stack, loaded and stored
// around every FMA: an LSTM step's 2 x 64 gate tile ran at half speed);
// split, they are. Null when the nest has no such loop.
constexpr int64_t kMaxSplitVectors = 8;

Stmt splitWideVector(const Stmt& nest_stmt) {
  const Nest nest = perfectNest(*nest_stmt->as<ForNode>());
  if (!nest.block) return nullptr;
  const ForNode* inner = nest.loops.back();
  int64_t e;
  if (inner->loop_kind != LoopKind::vectorized || !asConstInt(inner->extent, &e) || e <= kMaxTileLanes ||
      e % kMaxTileLanes != 0 || e / kMaxTileLanes > kMaxSplitVectors)
    return nullptr;
  Var outer_var = makeVar(inner->loop_var->name + "_o"), lane_var = makeVar(inner->loop_var->name + "_i");
  Stmt s = substitute(
      inner->body,
      {{inner->loop_var.get(),
        makeBinary(BinaryOp::Add, makeBinary(BinaryOp::Mul, outer_var, makeInt(kMaxTileLanes)), lane_var)}});
  s = makeFor(lane_var, makeInt(kMaxTileLanes), s, LoopKind::vectorized, {}, inner->attrs);
  s = makeFor(outer_var, makeInt(e / kMaxTileLanes), s, LoopKind::unrolled);
  return withLoops(nest.loops, nest.loops.size() - 1, s);
}

Stmt promote(const Stmt& nest_stmt, AllocPlan* plan, const std::unordered_set<const VarNode*>& unit_loops) {
  if (Stmt split = splitWideVector(nest_stmt))
    if (Stmt p = promoteNest(split, plan, unit_loops)) return p;
  return promoteNest(nest_stmt, plan, unit_loops);
}

Stmt rewrite(const Stmt& s, AllocPlan* plan, std::unordered_set<const VarNode*>& unit_loops) {
  const auto* f = s->as<ForNode>();
  if (!f) return mapChildren(s, [&](const Stmt& c) { return rewrite(c, plan, unit_loops); });
  if (Stmt p = promote(s, plan, unit_loops)) return p;
  int64_t extent = 0;
  const bool unit = asConstInt(f->extent, &extent) && extent == 1;
  if (unit) unit_loops.insert(f->loop_var.get());
  Stmt out = mapChildren(s, [&](const Stmt& c) { return rewrite(c, plan, unit_loops); });
  if (unit) unit_loops.erase(f->loop_var.get());
  return out;
}

}  // namespace

Stmt promoteRegisterTiles(const Stmt& body, AllocPlan* plan) {
  std::unordered_set<const VarNode*> unit_loops;
  return body ? rewrite(body, plan, unit_loops) : body;
}

}  // namespace mlcc::codegen
