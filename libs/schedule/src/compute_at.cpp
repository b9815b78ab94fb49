// compute_at and reverse_compute_at: move a block that is alone in its own
// top-level loop nest under a loop of another nest of the same scope.
//
// compute_at(%b, %loop): the producer %b comes before the loop's nest and
// all its consumers are under %loop. At each iteration of %loop it computes
// only the region of its output that those consumers read in that iteration
// (the union of their read regions, the loops below %loop over their whole
// ranges), in a new nest at the start of %loop's body. Its spatial
// iteration variables must index its output one to one; reduce iteration
// variables keep their whole domain (recomputing a reduction with its init
// gives the same values). A producer of a `shared` buffer computed under a
// loop bound to threadIdx.* computes what the consumers of all the block's
// threads read (the region relaxed over the threadIdx loops at or above
// %loop, as TVM does): the threads share the buffer, so its tile is the
// thread block's, which they can then fetch together (a loop under it bound
// to the same thread axis, loop_kind.cpp). Computing more of the output
// than one iteration reads keeps the meaning.
//
// reverse_compute_at(%c, %loop): the consumer %c comes after the loop's
// nest. At each iteration of %loop it computes the part of its domain that
// the producers under %loop have just finished: it must read each produced
// buffer element for element through its spatial iteration variables, and
// each producer must write an exact box of that buffer per iteration (its
// reduction, if any, entirely below %loop). The new nest goes at the end of
// %loop's body.
//
// Both refuse when a block between the old and the new place writes what
// the moved block reads, or accesses what it writes, and when a region
// extent per iteration is not a constant. Where the region may leave the
// block's domain a `where` predicate keeps it inside. Loops of extent 1 are
// dropped unless preserve_unit_loops. A LoopRV bound to the root leaves the
// block where it is (what sample_compute_location decides for "root").
#include <algorithm>

#include "compute_location.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule {

using namespace ir;
using namespace compute;
using namespace ir::build;

namespace {

// The moved block, the target loop and the blocks of their scope.
struct Move {
  const ScheduleState& s;
  const BlockNode* block = nullptr;
  StmtPath block_path;
  TopItem block_top{};
  Var loop_var;
  StmtPath loop_path;
  TopItem loop_top{};
  std::vector<PlacedBlock> others;  // the scope's other blocks
  std::string prefix;

  [[noreturn]] void fail(const std::string& why) const { s.fail(prefix + why); }
  const Stmt& loopStmt() const { return loop_path.target(); }
  bool underLoop(const PlacedBlock& b) const { return isUnder(b.path, loopStmt()); }

  // The loops above a block of the scope that are strictly below the loop.
  std::vector<const ForNode*> loopsBelow(const StmtPath& p) const {
    auto loops = loopsAbove(p);
    auto it =
        std::find_if(loops.begin(), loops.end(), [&](const ForNode* f) { return f->loop_var == loop_var; });
    if (it == loops.end()) return {};
    return {it + 1, loops.end()};
  }
  // The loop and the loops above it, in the scope.
  std::vector<const ForNode*> loopsAtOrAbove() const {
    auto loops = loopsAbove(loop_path);
    loops.push_back(loopStmt()->as<ForNode>());
    return loops;
  }
  Analyzer outerAnalyzer() const {
    Analyzer az;
    for (const ForNode* f : loopsAtOrAbove()) az.bind(f->loop_var, makeInt(0), f->extent);
    return az;
  }
  bool between(const PlacedBlock& b) const {
    size_t lo = std::min(block_top.position, loop_top.position),
           hi = std::max(block_top.position, loop_top.position);
    bool reverse = block_top.position > loop_top.position;
    // compute_at: the nests after the block's, up to the loop's (included);
    // reverse: from the loop's nest (included) up to the block's.
    return reverse ? b.top.position >= lo && b.top.position < hi
                   : b.top.position > lo && b.top.position <= hi;
  }
};

Move locate(const ScheduleState& s, const std::string& name, const Var& loop, bool reverse) {
  Move m{s, nullptr, {}, {}, nullptr, {}, {}, {}, {}};
  m.block_path = *findBlock(s.func.body, name);
  m.block = m.block_path.target()->as<BlockNode>();
  m.loop_var = loop;
  m.loop_path = *findLoop(s.func.body, loop.get());
  m.prefix = std::string(reverse ? "cannot reverse-compute " : "cannot compute ") +
             ScheduleState::describe(*m.block) + " at " + ScheduleState::describe(loop) + ": ";
  const BlockNode* scope = enclosingBlock(m.block_path);
  if (enclosingBlock(m.loop_path) != scope) m.fail("the loop is not in the same block scope as the block");
  m.block_top = topItem(m.block_path);
  m.loop_top = topItem(m.loop_path);
  if (isUnder(m.block_path, m.loopStmt())) m.fail("the loop is one of the block's own loops");
  if (!aloneInNest(m.block_path, m.block_top.depth))
    m.fail("it is not alone in its loop nest (only a block in a perfect nest of its own loops can move)");
  if (!reverse && m.block_top.position > m.loop_top.position)
    m.fail("it comes after the loop nest of that loop (use reverse_compute_at to move a consumer)");
  if (reverse && m.block_top.position < m.loop_top.position)
    m.fail("it comes before the loop nest of that loop (use compute_at to move a producer)");
  for (auto& b : scopeBlocks(s.func.body, scope))
    if (b.block != m.block) m.others.push_back(std::move(b));
  bool has_reduce = false;
  for (const auto& iv : m.block->iter_vars) {
    if (iv.kind == IterKind::opaque) m.fail("it has an opaque iteration variable %" + iv.var->name);
    has_reduce |= iv.kind == IterKind::reduce;
  }
  if (has_reduce && !m.block->init) m.fail("it is a reduction without an init, which cannot be recomputed");
  return m;
}

// The per-dimension iteration variable (or -1 for a constant index) through
// which the block writes `buf`: one element per iteration, at distinct
// spatial iteration variables covering all of them.
std::vector<int> outputDims(const Move& m, const BlockNode& b, const Buffer& buf) {
  std::vector<const BufferRegion*> regions;
  for (const auto& r : b.writes)
    if (r.buffer == buf) regions.push_back(&r);
  std::vector<PrimExpr> idx;
  for (const auto& rg : regions[0]->region) idx.push_back(rg.min);
  auto refuse = [&] {
    m.fail("it writes " + accessText(buf, idx, m.s.func) +
           "; its spatial iteration variables must index its output one to one");
  };
  if (regions.size() != 1) refuse();
  std::vector<int> dims;
  std::vector<bool> used(b.iter_vars.size(), false);
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t c;
    if (!asConstInt(regions[0]->region[d].extent, &c) || c != 1) refuse();
    if (asConstInt(idx[d], &c)) {
      dims.push_back(-1);
      continue;
    }
    int k = -1;
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      if (idx[d] == b.iter_vars[i].var && b.iter_vars[i].kind == IterKind::spatial) k = static_cast<int>(i);
    if (k < 0 || used[k]) refuse();
    used[k] = true;
    dims.push_back(k);
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i] && b.iter_vars[i].kind == IterKind::spatial) refuse();
  for (const Stmt& part : {b.init, b.body})
    for (const auto& st : storesOf(part, buf))
      for (size_t d = 0; d < idx.size(); ++d)
        if (!provablyEqual(st[d], idx[d])) refuse();
  return dims;
}

Stmt insertInLoop(const Stmt& body, const Var& loop, const Stmt& nest, bool at_start) {
  auto path = findLoop(body, loop.get());
  ForParts f(*path->target()->as<ForNode>());
  std::vector<Stmt> items = flattenSeq(f.body);
  items.insert(at_start ? items.begin() : items.end(), nest);
  f.body = makeSeq(std::move(items));
  return replaceAt(*path, f.build());
}

NewNest rebuild(const Move& m, const std::vector<std::optional<IterRegion>>& regions,
                bool preserve_unit_loops) {
  PrimExpr bad;
  auto nest =
      buildNest(*m.block, regions, preserve_unit_loops, m.outerAnalyzer(), loopsAbove(m.block_path), &bad);
  if (!nest)
    m.fail("its predicate " + exprText(bad, m.s.func) + " is not a bound on its iteration variables");
  return std::move(*nest);
}

std::unordered_map<const VarNode*, PrimExpr> bindingsOf(const BlockNode& b) {
  std::unordered_map<const VarNode*, PrimExpr> map;
  for (const auto& iv : b.iter_vars) map[iv.var.get()] = iv.binding;
  return map;
}

// --- reverse_compute_at ------------------------------------------------------

// The indices through which the consumer reads `buf` (the same in every
// load and read region): distinct spatial iteration variables or constants.
std::vector<PrimExpr> elementAccess(const Move& m, const BlockNode& c, const Buffer& buf) {
  std::optional<std::vector<PrimExpr>> access;
  auto check = [&](const std::vector<PrimExpr>& idx) {
    auto refuse = [&] {
      m.fail("it reads " + accessText(buf, idx, m.s.func) +
             ", not element for element through its spatial iteration variables");
    };
    std::vector<const ExprNode*> seen;
    for (const auto& i : idx) {
      int64_t v;
      if (asConstInt(i, &v)) continue;
      bool spatial = std::any_of(c.iter_vars.begin(), c.iter_vars.end(), [&](const IterVar& iv) {
        return iv.var == i && iv.kind == IterKind::spatial;
      });
      if (!spatial || std::find(seen.begin(), seen.end(), i.get()) != seen.end()) refuse();
      seen.push_back(i.get());
    }
    if (!access) {
      access = idx;
      return;
    }
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t x, y;
      bool same =
          idx[d] == (*access)[d] || (asConstInt(idx[d], &x) && asConstInt((*access)[d], &y) && x == y);
      if (!same) refuse();
    }
  };
  for (const auto& r : c.reads) {
    if (r.buffer != buf) continue;
    std::vector<PrimExpr> idx;
    std::string text;
    bool point = true;
    for (const auto& rg : r.region) {
      int64_t e;
      bool one = asConstInt(rg.extent, &e) && e == 1;
      point &= one;
      text += (text.empty() ? "" : ", ") + exprText(rg.min, m.s.func) +
              (one ? "" : " +: " + exprText(rg.extent, m.s.func));
      idx.push_back(rg.min);
    }
    if (!point)
      m.fail("it reads %" + buf->name + "[" + text +
             "], not element for element through its spatial iteration variables");
    check(idx);
  }
  for (const Stmt& part : {c.init, c.body})
    for (const auto& idx : loadsOf(part, buf)) check(idx);
  return *access;
}

// A condition `index <op> bound` from a producer's predicate.
struct Restriction {
  size_t dim;
  BinaryOp op;
  PrimExpr bound;
};

BinaryOp flip(BinaryOp op) {
  switch (op) {
    case BinaryOp::LT: return BinaryOp::GT;
    case BinaryOp::LE: return BinaryOp::GE;
    case BinaryOp::GT: return BinaryOp::LT;
    case BinaryOp::GE: return BinaryOp::LE;
    default: return op;
  }
}

// Whether a restriction keeps all of [0, extent) along its dimension.
bool keepsDomain(const Restriction& r, const PrimExpr& extent, const Analyzer& az) {
  using namespace build;
  switch (r.op) {
    case BinaryOp::LT: return az.canProve(ge(r.bound, extent));
    case BinaryOp::LE: return az.canProve(ge(r.bound, extent - 1));
    case BinaryOp::GT: return az.canProve(lt(r.bound, 0));
    case BinaryOp::GE: return az.canProve(le(r.bound, 0));
    default: return false;
  }
}

Stmt reverseComputeAtBody(const ScheduleState& s, const std::string& name, const Var& loop, bool preserve) {
  Move m = locate(s, name, loop, true);
  const BlockNode& c = *m.block;

  struct Produced {
    Buffer buf;
    const PlacedBlock* producer;
  };
  std::vector<Produced> produced;
  for (const Buffer& r : readBuffers(c)) {
    const PlacedBlock* under = nullptr;
    for (const auto& o : m.others) {
      if (!writes(*o.block, r)) continue;
      if (m.underLoop(o)) {
        if (under)
          m.fail(ScheduleState::describe(*under->block) + " and " + ScheduleState::describe(*o.block) +
                 " under that loop both write %" + r->name + ", which it reads");
        under = &o;
      } else if (m.between(o)) {
        m.fail(ScheduleState::describe(*o.block) + " writes %" + r->name +
               ", which it reads, outside that loop but before it");
      }
    }
    if (under) produced.push_back({r, under});
  }
  for (const Buffer& w : writeBuffers(c))
    for (const auto& o : m.others)
      if (m.between(o) && (reads(*o.block, w) || writes(*o.block, w)))
        m.fail(ScheduleState::describe(*o.block) + " accesses %" + w->name + ", which it writes, before it");
  if (produced.empty()) m.fail("no block under that loop writes a buffer it reads");

  std::vector<std::optional<IterRegion>> regions(c.iter_vars.size());
  std::vector<std::pair<size_t, Restriction>> restrictions;  // per consumer iteration variable
  for (const auto& [buf, placed] : produced) {
    const BlockNode& p = *placed->block;
    const std::string pname = "its producer " + ScheduleState::describe(p);
    for (const auto& iv : p.iter_vars) {
      if (iv.kind != IterKind::reduce) continue;
      for (const ForNode* f : m.loopsAtOrAbove())
        if (usesVar(iv.binding, f->loop_var.get()))
          m.fail(pname + " reduces over " + ScheduleState::describe(f->loop_var) + ", so %" + buf->name +
                 " is not final within one iteration of that loop");
    }
    std::vector<PrimExpr> access = elementAccess(m, c, buf);

    // The indices the producer writes, in terms of the loops.
    std::vector<const BufferRegion*> wr;
    for (const auto& r : p.writes)
      if (r.buffer == buf) wr.push_back(&r);
    std::vector<PrimExpr> idx;
    for (size_t d = 0; d < wr[0]->region.size(); ++d) {
      const Range& rg = wr[0]->region[d];
      int64_t e;
      bool one = wr.size() == 1 && asConstInt(rg.extent, &e) && e == 1;
      for (const Stmt& part : {p.init, p.body})
        for (const auto& st : storesOf(part, buf)) one &= provablyEqual(st[d], rg.min);
      if (!one) m.fail(pname + " writes more than one element of %" + buf->name + " per iteration");
      idx.push_back(simplify(substitute(rg.min, bindingsOf(p))));
    }
    std::vector<const ForNode*> inner = m.loopsBelow(placed->path), all = loopsAbove(placed->path);
    if (!exactBox(idx, inner) || !exactBox(idx, all))
      m.fail("the elements of %" + buf->name + " that " + ScheduleState::describe(p) +
             " writes in one iteration of that loop are not a box");
    Analyzer in_az, all_az;
    for (const ForNode* f : inner) in_az.bind(f->loop_var, makeInt(0), f->extent);
    for (const ForNode* f : all) all_az.bind(f->loop_var, makeInt(0), f->extent);

    // The producer's predicate may only bound the indices it writes.
    std::vector<Restriction> found;
    for (const auto& cond : conjuncts(p.predicate)) {
      if (all_az.canProve(cond)) continue;
      const auto* cmp = cond->as<BinaryNode>();
      bool ok = false;
      if (cmp && (cmp->op == BinaryOp::LT || cmp->op == BinaryOp::LE || cmp->op == BinaryOp::GT ||
                  cmp->op == BinaryOp::GE)) {
        for (int side = 0; side < 2 && !ok; ++side) {
          const PrimExpr& mine = side == 0 ? cmp->a : cmp->b;
          const PrimExpr& other = side == 0 ? cmp->b : cmp->a;
          if (std::any_of(inner.begin(), inner.end(),
                          [&](const ForNode* f) { return usesVar(other, f->loop_var.get()); }))
            continue;
          for (size_t d = 0; d < idx.size() && !ok; ++d)
            if (provablyEqual(mine, idx[d])) {
              found.push_back({d, side == 0 ? cmp->op : flip(cmp->op), other});
              ok = true;
            }
        }
      }
      if (!ok)
        m.fail(pname + " has predicate " + exprText(cond, s.func) +
               ", which is not a bound on an index of %" + buf->name + " it writes");
    }

    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t k;
      if (asConstInt(access[d], &k)) {
        auto b = all_az.constBounds(idx[d]);
        if (!b || b->first != k || b->second != k)
          m.fail(pname + " does not write index " + std::to_string(k) + " of %" + buf->name +
                 " in dimension " + std::to_string(d) + " alone");
        continue;
      }
      size_t kc = 0;
      while (c.iter_vars[kc].var != access[d]) ++kc;
      const PrimExpr& dom = c.iter_vars[kc].extent;
      auto ib = in_az.bounds(idx[d]);
      auto fb = all_az.bounds(idx[d]);
      bool covers = ib && fb && all_az.canProve(build::le(fb->min, 0)) &&
                    all_az.canProve(build::ge(fb->max, build::lit(dom) - 1));
      for (const auto& r : found)
        if (r.dim == d) covers &= keepsDomain(r, dom, all_az);
      if (!covers) m.fail("the blocks under that loop do not write all of %" + buf->name + " that it reads");
      PrimExpr min = in_az.simplify(ib->min);
      PrimExpr extent = in_az.simplify(build::lit(ib->max) - min + 1);
      int64_t e;
      if (!asConstInt(extent, &e))
        m.fail("the part of %" + buf->name + " written per iteration of that loop has extent " +
               exprText(extent, s.func) + " in dimension " + std::to_string(d) + ", not a constant");
      if (regions[kc] && (!provablyEqual(regions[kc]->min, min) || regions[kc]->extent != e))
        m.fail("its producers under that loop write different parts of its iteration space");
      regions[kc] = IterRegion{min, e};
      for (const auto& r : found)
        if (r.dim == d) restrictions.emplace_back(kc, r);
    }
  }

  NewNest nest = rebuild(m, regions, preserve);
  for (const auto& [kc, r] : restrictions) nest.require(makeBinary(r.op, nest.bindings[kc], r.bound));
  Stmt moved = nest.wrap(c);
  Stmt body = replaceAt(m.block_path, m.block_top.depth, nullptr);
  return insertInLoop(body, loop, moved, /*at_start=*/false);
}

std::vector<RVValue> applyMove(ScheduleState& s, const InstArgs& args, bool reverse) {
  args.expectCount(2);
  args.allowAttrs({"preserve_unit_loops"});
  std::string name = args.block(0);
  Var loop = args.loop(1, /*allow_root=*/true);
  bool preserve = args.boolAttr("preserve_unit_loops", false);
  if (!loop) return {};  // the root: the block stays where it is
  s.setBody(reverse ? reverseComputeAtBody(s, name, loop, preserve)
                    : compute::computeAtBody(s, name, loop, preserve));
  return {};
}

}  // namespace

// --- compute_at ------------------------------------------------------------------

Stmt compute::computeAtBody(const ScheduleState& s, const std::string& name, const Var& loop, bool preserve) {
  Move m = locate(s, name, loop, false);
  const BlockNode& p = *m.block;
  auto written = writeBuffers(p);
  if (written.size() != 1)
    m.fail("it writes " + std::to_string(written.size()) +
           " buffers; only a block writing one buffer can move");
  const Buffer& out = written[0];
  if (isParam(s.func, out)) m.fail("it writes parameter %" + out->name + ", which must be computed whole");
  std::vector<int> dims = outputDims(m, p, out);

  std::vector<const PlacedBlock*> consumers;
  for (const auto& o : m.others) {
    if (writes(*o.block, out)) m.fail(ScheduleState::describe(*o.block) + " also writes %" + out->name);
    if (reads(*o.block, out)) {
      if (!m.underLoop(o))
        m.fail("its consumer " + ScheduleState::describe(*o.block) + " is not under that loop");
      consumers.push_back(&o);
    }
    if (m.between(o))
      for (const Buffer& r : readBuffers(p))
        if (writes(*o.block, r))
          m.fail(ScheduleState::describe(*o.block) + " writes %" + r->name +
                 ", which it reads, before that loop's iterations end");
  }
  if (consumers.empty()) m.fail("it has no consumer under that loop");

  // The region of the output the consumers read in one iteration of the loop.
  Analyzer inner;
  for (const PlacedBlock* c : consumers)
    for (const ForNode* f : m.loopsBelow(c->path)) inner.bind(f->loop_var, makeInt(0), f->extent);
  if (out->scope == StorageScope::shared)
    for (const ForNode* f : m.loopsAtOrAbove())
      if (f->loop_kind == LoopKind::thread_binding && f->thread_tag.rfind("threadIdx.", 0) == 0)
        inner.bind(f->loop_var, makeInt(0), f->extent);
  // Both the declared read regions and the loads count (the loads must not
  // stray from the regions, but a wrong region must not make a wrong program).
  std::vector<std::optional<IntBounds>> region(dims.size());
  for (const PlacedBlock* c : consumers) {
    auto bindings = bindingsOf(*c->block);
    std::vector<std::vector<Range>> accesses;
    for (const auto& r : c->block->reads)
      if (r.buffer == out) accesses.push_back(r.region);
    for (const Stmt& part : {c->block->init, c->block->body})
      for (const auto& idx : loadsOf(part, out)) {
        accesses.emplace_back();
        for (const auto& i : idx) accesses.back().push_back({i, makeInt(1)});
      }
    for (const auto& ranges : accesses) {
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] < 0) continue;
        PrimExpr min = substitute(ranges[d].min, bindings);
        PrimExpr last = substitute(build::lit(ranges[d].min) + ranges[d].extent - 1, bindings);
        auto lo = inner.bounds(min), hi = inner.bounds(last);
        if (!lo || !hi)
          m.fail("cannot bound the region of %" + out->name + " that " + ScheduleState::describe(*c->block) +
                 " reads");
        if (!region[d]) {
          region[d] = IntBounds{lo->min, hi->max};
        } else {
          region[d] = IntBounds{inner.simplify(build::minimum(region[d]->min, lo->min)),
                                inner.simplify(build::maximum(region[d]->max, hi->max))};
        }
      }
    }
  }
  std::vector<std::optional<IterRegion>> regions(p.iter_vars.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0) continue;
    PrimExpr min = inner.simplify(region[d]->min);
    PrimExpr extent = inner.simplify(build::lit(region[d]->max) - min + 1);
    int64_t e;
    if (!asConstInt(extent, &e))
      m.fail("the region of %" + out->name + " needed per iteration has extent " + exprText(extent, s.func) +
             " in dimension " + std::to_string(d) + ", not a constant");
    regions[dims[d]] = IterRegion{min, e};
  }

  NewNest nest = rebuild(m, regions, preserve);
  Stmt moved = nest.wrap(p);
  Stmt body = replaceAt(m.block_path, m.block_top.depth, nullptr);
  return insertInLoop(body, loop, moved, /*at_start=*/true);
}

std::vector<RVValue> applyComputeAt(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return applyMove(s, args, false);
}

std::vector<RVValue> applyReverseComputeAt(ScheduleState& s, const InstArgs& args,
                                           std::optional<AttrValue>&) {
  return applyMove(s, args, true);
}

// --- Schedule methods ----------------------------------------------------------

namespace {
Attrs unitLoopAttrs(bool preserve_unit_loops) {
  Attrs attrs;
  if (preserve_unit_loops) attrs["preserve_unit_loops"] = true;
  return attrs;
}
}  // namespace

void Schedule::computeAt(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops) {
  apply(makeInst("compute_at", {ref(block), ref(loop)}, unitLoopAttrs(preserve_unit_loops)));
}

void Schedule::reverseComputeAt(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops) {
  apply(makeInst("reverse_compute_at", {ref(block), ref(loop)}, unitLoopAttrs(preserve_unit_loops)));
}

}  // namespace mlcc::schedule
