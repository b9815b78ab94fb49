// Reduction primitives: decompose_reduction and rfactor.
//
//   %b1 = decompose_reduction(%b0, %l2)   # block, loop above it
//   %b1 = rfactor(%l1, factor_axis = 0)   # loop; factor_axis defaults to 0
//
// decompose_reduction moves a block's init into a new block `<name>_init`
// (the spatial and opaque iteration variables with their bindings, the
// reduce ones replaced by 0, where the init runs: the original runs it at
// each value of an opaque one, such as a scan's step) in a copy of the loops from %l2
// inwards that the spatial bindings use, inserted right before %l2; the
// block loses its init. The block's predicate goes along, without its
// conditions on reduce loops, which must provably hold where the init runs
// (as a non-divisible split of a reduce loop makes them). %l2 itself may be
// a reduce loop (as TVM's usual decompose_reduction(block, k)), and below
// reduce loops of extent 1 (a tile's init right above its reduction when
// the outer reduction block is the whole reduction). Refused when a loop of
// extent > 1 above %l2 binds a reduce iteration variable (the init would run
// again in each of its iterations), when a loop from %l2 inwards of extent
// > 1 binds nothing (the original re-runs the init for each of its
// iterations), when a copied loop's extent depends on a reduce loop, when
// the init is not plain stores or loads what it stores, or when another
// block under %l2 accesses what the init stores or writes what it loads.
//
// rfactor takes a loop %l1 that binds (part of) a reduce iteration variable
// of exactly one block, a reduction `init { C[I] = e } C[I] = C[I] op f`
// with op one of + * max min and e its identity. It makes an intermediate
// `<C>_rf` (C's shape with the loop's extent inserted at factor_axis, in
// [-rank - 1, rank], negative counting from the end) and a block
// `<name>_rf`, which takes the original block's place in its loop nest and
// reduces into `<C>_rf` with %l1's value as a new spatial iteration
// variable (every other loop that binds a reduce variable becomes a reduce
// iteration variable of its own). The original block (same name) moves to a
// new nest right after its top-level nest, where it reduces `<C>_rf` over
// that dimension into C, with its init. Returns the rf block. Refused: a
// block nested in another block, loops binding both spatial and reduce
// variables, loops of extent > 1 that bind nothing, a condition of the
// predicate on reduce loops that might skip the first iteration of the
// other reduce loops for some value of %l1 (leaving a partial result
// uninitialized), a reduce loop extent that depends on another loop, other
// blocks in the same top-level nest that access C, and anything that is not
// such a reduction.
//
// Both assume, as everywhere in TensorIR, that a block runs every point of
// its iteration domain, and its init exactly where its reduce iteration
// variables are all 0.
#include <algorithm>

#include "cache_util.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/schedule/reduction_form.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// How a loop above a block is used by the block's bindings.
struct LoopUse {
  const ForNode* loop;
  bool spatial = false;  // some spatial iteration variable's binding uses it
  bool reduce = false;   // some reduce iteration variable's binding uses it
  const IterVar* reduce_var = nullptr;
};

// An opaque iteration variable counts as spatial (where `allow_opaque`).
std::vector<LoopUse> classifyLoops(const InstArgs& args, const BlockNode& b,
                                   const std::vector<const ForNode*>& loops, bool allow_opaque) {
  for (const auto& iv : b.iter_vars)
    if (iv.kind == IterKind::opaque && !allow_opaque)
      args.fail(ScheduleState::describe(b) + " has an opaque iteration variable %" + iv.var->name);
  std::vector<LoopUse> uses;
  for (const ForNode* f : loops) {
    LoopUse u{f};
    for (const auto& iv : b.iter_vars) {
      if (!usesVar(iv.binding, f->loop_var.get())) continue;
      if (iv.kind == IterKind::spatial || iv.kind == IterKind::opaque) u.spatial = true;
      if (iv.kind == IterKind::reduce && !u.reduce) {
        u.reduce = true;
        u.reduce_var = &iv;
      }
    }
    uses.push_back(u);
  }
  return uses;
}

PrimExpr conjoin(const std::vector<PrimExpr>& cs) {
  PrimExpr out;
  for (const auto& c : cs) out = out ? build::land(out, c) : c;
  return out;
}

bool usesAnyLoop(const PrimExpr& e, const std::vector<const ForNode*>& loops) {
  return std::any_of(loops.begin(), loops.end(),
                     [&](const ForNode* f) { return usesVar(e, f->loop_var.get()); });
}

// For messages: "loop %k0" or "loops %k0, %k1", those of `loops` that `e` uses.
std::string describeLoopsIn(const PrimExpr& e, const std::vector<const ForNode*>& loops) {
  std::string names;
  int n = 0;
  for (const ForNode* f : loops)
    if (usesVar(e, f->loop_var.get())) names += (n++ ? ", %" : "%") + f->loop_var->name;
  return (n == 1 ? "loop " : "loops ") + names;
}

// An analyzer that knows the ranges of the loops.
Analyzer loopRanges(const std::vector<const ForNode*>& loops) {
  Analyzer az;
  for (const ForNode* f : loops) az.bind(f->loop_var, makeInt(0), f->extent);
  return az;
}

// `e` with the given loops' variables replaced by 0 (except `keep`).
PrimExpr atZero(const PrimExpr& e, const std::vector<const ForNode*>& loops, const ForNode* keep = nullptr) {
  Substituter zero;
  for (const ForNode* f : loops)
    if (f != keep) zero.mapVar(f->loop_var, makeInt(0));
  return zero(e);
}

bool isUnitLoop(const ForNode& f) {
  int64_t e;
  return asConstInt(f.extent, &e) && e == 1;
}

// A loop of extent > 1 that binds nothing makes the block (and its init) run
// again for each of its iterations.
void rejectIdleLoop(const InstArgs& args, const BlockNode& b, const LoopUse& u) {
  if (!u.spatial && !u.reduce && !isUnitLoop(*u.loop))
    args.fail(ScheduleState::describe(u.loop->loop_var) + " binds no iteration variable of " +
              ScheduleState::describe(b) +
              ", so the block and its init run again for each of its iterations");
}

// Point regions of the loads (or stores) among `accesses`, without duplicates.
std::vector<BufferRegion> pointRegions(const std::vector<Access>& accesses, bool stores) {
  std::vector<BufferRegion> out;
  std::vector<const Access*> seen;
  for (const auto& a : accesses) {
    if (a.is_store != stores) continue;
    bool dup = std::any_of(seen.begin(), seen.end(), [&](const Access* x) {
      return x->buffer == a.buffer && sameIndices(x->indices, a.indices);
    });
    if (dup) continue;
    seen.push_back(&a);
    out.push_back(build::point(a.buffer, a.indices));
  }
  return out;
}

}  // namespace

// --- decompose_reduction ---------------------------------------------------------

std::vector<RVValue> applyDecomposeReduction(ScheduleState& s, const InstArgs& args,
                                             std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  const std::string name = args.block(0);
  const Var at = args.loop(1);
  StmtPath path = *findBlock(s.func.body, name);
  const BlockNode& b = *path.target()->as<BlockNode>();
  if (!b.init) args.fail(ScheduleState::describe(b) + " has no init");
  std::vector<const ForNode*> loops = loopsAbove(path);
  std::vector<LoopUse> uses = classifyLoops(args, b, loops, /*allow_opaque=*/true);
  size_t pos = 0;
  while (pos < loops.size() && loops[pos]->loop_var != at) ++pos;
  if (pos == loops.size())
    args.fail(ScheduleState::describe(at) + " is not a loop above " + ScheduleState::describe(b));
  // Reduce loops of extent 1 above `at` run once: the init still runs once
  // per spatial point, where they are 0.
  std::vector<const ForNode*> reduce_loops;
  for (size_t i = 0; i < pos; ++i) {
    if (uses[i].reduce && isUnitLoop(*loops[i])) {
      reduce_loops.push_back(loops[i]);
      continue;
    }
    if (uses[i].reduce)
      args.fail(ScheduleState::describe(loops[i]->loop_var) + " (above " + ScheduleState::describe(at) + ")" +
                " binds reduce iteration variable %" + uses[i].reduce_var->var->name + " of " +
                ScheduleState::describe(b) + "; the init would run again in each of its iterations");
  }

  // The init: plain stores that do not read what they store (running it
  // more than once, as the copied loops may, changes nothing).
  for (const auto& st : flattenSeq(b.init))
    if (!st->as<StoreNode>())
      args.fail("the init of " + ScheduleState::describe(b) + " is not a sequence of stores");
  std::vector<Access> init_accesses = accessesIn(b.init);
  for (const auto& ld : init_accesses)
    for (const auto& st : init_accesses)
      if (!ld.is_store && st.is_store && ld.buffer == st.buffer)
        args.fail("the init of " + ScheduleState::describe(b) + " reads %" + ld.buffer->name +
                  ", which it writes");

  // Loops from `at` inwards: copied (binding spatial variables), replaced
  // by 0 (unit loops binding nothing), or left out (reduce loops).
  Substituter outer;  // loop variables -> the copies' variables
  std::vector<std::pair<Var, const ForNode*>> copied;
  for (size_t i = pos; i < loops.size(); ++i) {
    rejectIdleLoop(args, b, uses[i]);
    const Var& v = loops[i]->loop_var;
    if (uses[i].spatial) {
      Var nv = makeVar(v->name + "_init");
      outer.mapVar(v, nv);
      copied.push_back({nv, loops[i]});
    } else if (uses[i].reduce) {
      reduce_loops.push_back(loops[i]);
    } else {
      outer.mapVar(v, makeInt(0));
    }
  }
  for (const auto& [nv, f] : copied)
    if (usesAnyLoop(f->extent, reduce_loops))
      args.fail("the extent of " + ScheduleState::describe(f->loop_var) +
                " depends on a loop that binds a reduce iteration variable");

  // The predicate: conditions on the reduce loops are dropped when they hold
  // where the original runs the init (all reduce loops at 0, where the
  // reduce variables are 0); the others stay, on the copied loops.
  std::vector<PrimExpr> kept;
  Analyzer ranges = loopRanges(loops);
  for (const auto& c : conjuncts(b.predicate)) {
    if (!usesAnyLoop(c, reduce_loops)) {
      kept.push_back(outer(c));
      continue;
    }
    bool holds = ranges.canProve(atZero(c, reduce_loops));
    for (const auto& iv : b.iter_vars)
      if (iv.kind == IterKind::reduce)
        holds = holds && ranges.canProve(build::eq(atZero(iv.binding, reduce_loops), 0));
    if (!holds)
      args.fail("the predicate of " + ScheduleState::describe(b) + " has a condition on " +
                describeLoopsIn(c, reduce_loops) + " that may not hold where its init runs");
  }

  // Other blocks under `at` must not touch what the init writes, nor
  // write what it reads: the init now runs before all of them.
  StmtPath at_path = *findLoop(s.func.body, at.get());
  for (const auto& a : init_accesses) {
    const BlockNode* other = otherBlockAccessing(at_path.target(), &b, a.buffer, /*writes=*/true);
    if (!other && a.is_store) other = otherBlockAccessing(at_path.target(), &b, a.buffer, /*writes=*/false);
    if (other)
      args.fail(ScheduleState::describe(*other) + " accesses %" + a.buffer->name + " under " +
                ScheduleState::describe(at) + ", which the init of " + ScheduleState::describe(b) +
                (a.is_store ? " writes" : " reads"));
  }

  // The init block.
  Substituter inner;  // the block's iteration variables -> the init block's (reduce ones: 0)
  std::vector<IterVar> ivs;
  for (const auto& iv : b.iter_vars) {
    if (iv.kind == IterKind::reduce) {
      inner.mapVar(iv.var, makeInt(0));
      continue;
    }
    Var nv = makeVar(iv.var->name);
    inner.mapVar(iv.var, nv);
    ivs.push_back({nv, iv.extent, iv.kind, outer(iv.binding)});
  }
  Stmt init = inner(b.init);
  std::vector<Access> accesses = accessesIn(init);
  std::string init_name = uniqueBlockName(s.func, name + "_init");
  Stmt nest = makeBlock(init_name, ivs, pointRegions(accesses, false), pointRegions(accesses, true), init,
                        nullptr, conjoin(kept));
  for (size_t i = copied.size(); i-- > 0;) {
    const ForNode* f = copied[i].second;
    nest = makeFor(copied[i].first, outer(f->extent), nest, f->loop_kind, f->thread_tag);
  }

  BlockParts without_init(b);
  without_init.init = nullptr;
  Stmt body = replaceAt(path, without_init.build());
  StmtPath new_at = *findLoop(body, at.get());
  s.setBody(insertAround(new_at, new_at.nodes.size() - 1, nest, nullptr));
  return {BlockHandle{init_name}};
}

// --- rfactor ----------------------------------------------------------------------

namespace {

// `init { C[I] = identity } C[I] = C[I] op value` (or `value op C[I]`).
ReductionForm matchReduction(const InstArgs& args, const BlockNode& b) {
  const std::string what = ScheduleState::describe(b);
  const std::string form =
      " (rfactor needs `init { C[I] = identity } C[I] = C[I] op f` with op one of + * max min)";
  std::string why;
  std::optional<ReductionForm> found = matchReductionForm(b, why);
  if (!found) {
    if (why.rfind("combines with", 0) == 0) why += ", which rfactor does not support";
    args.fail(what + " " + why + (why.rfind("stores at", 0) == 0 ? "" : form));
  }
  const ReductionForm& r = *found;
  const auto* init = b.init ? b.init->as<StoreNode>() : nullptr;
  if (!init || init->buffer != r.out || !sameIndices(init->indices, r.indices))
    args.fail(what + " has no init that stores the element it reduces into" + form);
  if (!structuralEqual(init->value, r.identity))
    args.fail("the init of " + what + " stores " + printExpr(init->value) + ", not " + printExpr(r.identity) +
              ", the identity of its '" + binaryOpName(r.op) + "' reduction");
  return r;
}

std::vector<PrimExpr> insertAt(std::vector<PrimExpr> v, size_t pos, PrimExpr x) {
  v.insert(v.begin() + static_cast<std::ptrdiff_t>(pos), std::move(x));
  return v;
}

}  // namespace

std::vector<RVValue> applyRFactor(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({"factor_axis"});
  const Var lv = args.loop(0);
  int64_t factor_axis = args.intAttr("factor_axis", 0);
  StmtPath loop_path = *findLoop(s.func.body, lv.get());
  const ForNode& rf_loop = *loop_path.target()->as<ForNode>();

  std::vector<const BlockNode*> found;
  forEachBlock(loop_path.target(), [&](const BlockNode& b, const StmtPath&) {
    for (const auto& iv : b.iter_vars)
      if (iv.kind == IterKind::reduce && usesVar(iv.binding, lv.get())) {
        found.push_back(&b);
        break;
      }
  });
  if (found.empty())
    args.fail(ScheduleState::describe(lv) + " binds no reduce iteration variable of any block");
  if (found.size() > 1)
    args.fail(ScheduleState::describe(lv) + " binds reduce iteration variables of " +
              ScheduleState::describe(*found[0]) + " and " + ScheduleState::describe(*found[1]) +
              "; rfactor needs exactly one block");
  const std::string name = found[0]->name;
  StmtPath path = topLevelBlockPath(s, args, name);
  const BlockNode& b = *path.target()->as<BlockNode>();
  const std::string what = ScheduleState::describe(b);
  ReductionForm red = matchReduction(args, b);

  std::vector<const ForNode*> loops = loopsAbove(path);
  std::vector<LoopUse> uses = classifyLoops(args, b, loops, /*allow_opaque=*/false);
  std::vector<const ForNode*> reduce_loops;
  for (const auto& u : uses) {
    rejectIdleLoop(args, b, u);
    if (u.spatial && u.reduce)
      args.fail(ScheduleState::describe(u.loop->loop_var) +
                " binds both spatial and reduce iteration variables of " + what);
    if (u.reduce) reduce_loops.push_back(u.loop);
  }
  // The rf block keeps the predicate. Each partial result (a value of the
  // rf loop) must still be initialized: a condition on the reduce loops must
  // hold where the other reduce loops are 0, for every value of the rf loop.
  Analyzer ranges = loopRanges(loops);
  for (const auto& c : conjuncts(b.predicate))
    if (usesAnyLoop(c, reduce_loops) && !ranges.canProve(atZero(c, reduce_loops, &rf_loop)))
      args.fail("the predicate of " + what + " has a condition on " + describeLoopsIn(c, reduce_loops) +
                " that may skip the first iteration for some value of " + ScheduleState::describe(lv) +
                "; some partial results would stay uninitialized");
  for (const ForNode* f : reduce_loops)
    for (const ForNode* g : loops)
      if (usesVar(f->extent, g->loop_var.get()))
        args.fail("the extent of " + ScheduleState::describe(f->loop_var) + " depends on " +
                  ScheduleState::describe(g->loop_var));
  const int64_t rank = static_cast<int64_t>(red.out->shape.size());
  if (factor_axis < -rank - 1 || factor_axis > rank)
    args.fail("factor_axis " + std::to_string(factor_axis) + " is out of range [" +
              std::to_string(-rank - 1) + ", " + std::to_string(rank) + "] for %" + red.out->name);
  if (factor_axis < 0) factor_axis += rank + 1;
  const Stmt& nest = path.nodes[topLevelIndex(path)];
  for (bool writes : {true, false})
    if (const BlockNode* o = otherBlockAccessing(nest, &b, red.out, writes))
      args.fail(ScheduleState::describe(*o) + " accesses %" + red.out->name + " in the loop nest of " + what +
                "; the reduction into it moves after that nest");

  // The intermediate: C's shape with the loop's extent at factor_axis.
  const PrimExpr& rf_extent = rf_loop.extent;
  Buffer rf_buf = makeBuffer(uniqueBufferName(s.func, red.out->name + "_rf"), red.out->dtype,
                             insertAt(red.out->shape, factor_axis, rf_extent));
  bool reads_out =
      std::any_of(b.reads.begin(), b.reads.end(), [&](const auto& r) { return r.buffer == red.out; });

  // The rf block: the spatial variables, the rf loop's, and one reduce
  // variable per other reduce loop; the old reduce variables become their
  // bindings in terms of those.
  Substituter sub;
  std::vector<IterVar> rf_ivs;
  for (const auto& iv : b.iter_vars) {
    if (iv.kind != IterKind::spatial) continue;
    Var nv = makeVar(iv.var->name);
    sub.mapVar(iv.var, nv);
    rf_ivs.push_back({nv, iv.extent, IterKind::spatial, iv.binding});
  }
  Var vrf = makeVar("v" + lv->name);
  rf_ivs.push_back({vrf, rf_extent, IterKind::spatial, lv});
  Substituter loop_to_iter;
  loop_to_iter.mapVar(lv, vrf);
  bool has_reduce = false;
  for (const ForNode* f : reduce_loops) {
    if (f == &rf_loop) continue;
    Var nv = makeVar("v" + f->loop_var->name);
    loop_to_iter.mapVar(f->loop_var, nv);
    rf_ivs.push_back({nv, f->extent, IterKind::reduce, f->loop_var});
    has_reduce = true;
  }
  Analyzer az;
  for (const auto& iv : b.iter_vars)
    if (iv.kind == IterKind::reduce) sub.mapVar(iv.var, az.simplify(loop_to_iter(iv.binding)));

  std::vector<PrimExpr> out_idx;
  for (const auto& i : red.indices) out_idx.push_back(sub(i));
  std::vector<PrimExpr> rf_idx = insertAt(out_idx, factor_axis, vrf);
  PrimExpr value = sub(red.value);
  // Without other reduce loops each partial result is `identity op f` once.
  Stmt rf_body = makeStore(
      rf_buf, rf_idx, combineReduction(red, has_reduce ? makeLoad(rf_buf, rf_idx) : red.identity, value));
  Stmt rf_init = has_reduce ? makeStore(rf_buf, rf_idx, red.identity) : nullptr;
  std::vector<BufferRegion> rf_reads;
  for (const auto& r : b.reads) {
    if (r.buffer == red.out) {
      if (has_reduce) rf_reads.push_back(build::point(rf_buf, rf_idx));
      continue;
    }
    BufferRegion nr{r.buffer, {}};
    for (const auto& rg : r.region)
      nr.region.push_back({az.simplify(sub(rg.min)), az.simplify(sub(rg.extent))});
    rf_reads.push_back(std::move(nr));
  }
  const std::string rf_name = uniqueBlockName(s.func, name + "_rf");
  Stmt rf_block = makeBlock(rf_name, rf_ivs, rf_reads, {build::point(rf_buf, rf_idx)}, rf_body, rf_init,
                            b.predicate, b.alloc_buffers, b.attrs);

  // The write-back: the original block, reducing rf_buf over its new
  // dimension, in a fresh nest over its spatial domain.
  Substituter wb;
  std::vector<Var> wb_loops;
  std::vector<PrimExpr> wb_extents;
  std::vector<IterVar> wb_ivs;
  for (const auto& iv : b.iter_vars) {
    if (iv.kind != IterKind::spatial) continue;
    Var ax = makeVar(std::string("ax") + std::to_string(wb_loops.size()));
    Var nv = makeVar(iv.var->name);
    wb.mapVar(iv.var, nv);
    wb_ivs.push_back({nv, iv.extent, IterKind::spatial, ax});
    wb_loops.push_back(ax);
    wb_extents.push_back(iv.extent);
  }
  Var ax_rf = makeVar(std::string("ax") + std::to_string(wb_loops.size()));
  Var v_rf = makeVar("v" + lv->name);
  wb_ivs.push_back({v_rf, rf_extent, IterKind::reduce, ax_rf});
  wb_loops.push_back(ax_rf);
  wb_extents.push_back(rf_extent);
  std::vector<PrimExpr> wb_idx;
  for (const auto& i : red.indices) wb_idx.push_back(wb(i));
  std::vector<PrimExpr> wb_rf_idx = insertAt(wb_idx, factor_axis, v_rf);
  std::vector<BufferRegion> wb_reads;
  if (reads_out) wb_reads.push_back(build::point(red.out, wb_idx));
  wb_reads.push_back(build::point(rf_buf, wb_rf_idx));
  Stmt wb_nest =
      makeBlock(name, wb_ivs, wb_reads, {build::point(red.out, wb_idx)},
                makeStore(red.out, wb_idx,
                          combineReduction(red, makeLoad(red.out, wb_idx), makeLoad(rf_buf, wb_rf_idx))),
                wb(b.init), nullptr, {}, b.attrs);
  for (size_t i = wb_loops.size(); i-- > 0;) wb_nest = makeFor(wb_loops[i], wb_extents[i], wb_nest);

  Stmt body = replaceAt(path, rf_block);
  StmtPath rf_path = *findBlock(body, rf_name);
  s.setBody(insertAround(rf_path, topLevelIndex(rf_path), nullptr, wb_nest));
  s.func.allocs.push_back(rf_buf);
  return {BlockHandle{rf_name}};
}

// --- Schedule methods ----------------------------------------------------------

BlockRV Schedule::decomposeReduction(const BlockRV& block, const LoopRV& loop) {
  return BlockRV{apply(makeInst("decompose_reduction", {ref(block), ref(loop)}))[0]};
}

BlockRV Schedule::rfactor(const LoopRV& loop, int factor_axis) {
  return BlockRV{apply(makeInst("rfactor", {ref(loop)}, {{"factor_axis", factor_axis}}))[0]};
}

}  // namespace mlcc::schedule
