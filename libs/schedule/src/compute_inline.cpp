// compute_inline and reverse_compute_inline: fold an element-wise block into
// the blocks next to it, removing an intermediate buffer's stores and loads.
//
// compute_inline(%b): %b computes one element of an intermediate buffer per
// iteration (see compute::elementwiseStore: spatial only, a single store at
// its iteration variables, over a domain covering the buffer). Every load of
// that buffer elsewhere becomes %b's stored expression with %b's iteration
// variables replaced by the load's indices; the readers' read regions trade
// the buffer for %b's read regions mapped the same way. %b, its now empty
// loops and, once unused, the buffer's allocation are removed.
//
// reverse_compute_inline(%c): %c is element-wise (a single store, each
// iteration its own element) and reads exactly one intermediate buffer B,
// element for element through its iteration variables; B is written by one
// element-wise producer P and read by %c alone. P then stores %c's value
// (its iteration variables mapped to P's, B's loads replaced by P's value)
// into %c's buffer; %c and its loops go away, and B's allocation once unused.
//
// Moving a computation in time must not change what it reads: both refuse
// when a block that runs between the producer and the consumer (judged by
// top-level loop nests) writes what the moved expression reads, or accesses
// what the consumer writes. A `where` predicate must only cut off iterations
// outside the block's domain (as after a non-divisible split).
#include <algorithm>

#include "compute_location.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule {

using namespace ir;
using namespace compute;
using namespace ir::build;

namespace {

BufferRegion substituteRegion(const BufferRegion& r,
                              const std::unordered_map<const VarNode*, PrimExpr>& map) {
  BufferRegion out{r.buffer, {}};
  for (const auto& rg : r.region)
    out.region.push_back({simplify(substitute(rg.min, map)), simplify(substitute(rg.extent, map))});
  return out;
}

const PlacedBlock& placed(const std::vector<PlacedBlock>& blocks, const BlockNode* b) {
  return *std::find_if(blocks.begin(), blocks.end(), [&](const PlacedBlock& p) { return p.block == b; });
}

// Replaces the loads of the inlined buffer throughout the function, with the
// loops and iteration variables in scope bound for simplification.
class Inliner {
 public:
  Inliner(const BlockNode& producer, const ElementwiseStore& es)
      : p_(producer), es_(es), buf_(es.store->buffer) {}

  Stmt operator()(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        az_.bind(f->loop_var, makeInt(0), f->extent);
        Stmt body = (*this)(f->body);
        az_.unbind(f->loop_var);
        if (body == f->body) return s;
        ForParts parts(*f);
        parts.body = body;
        return parts.build();
      }
      case StmtKind::Block: return block(*s->as<BlockNode>(), s);
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        std::vector<PrimExpr> idx;
        bool changed = false;
        for (const auto& i : st->indices) {
          idx.push_back(expr(i));
          changed |= idx.back() != i;
        }
        PrimExpr v = expr(st->value);
        if (!changed && v == st->value) return s;
        return makeStore(st->buffer, std::move(idx), v);
      }
      case StmtKind::Seq: {
        std::vector<Stmt> items;
        bool changed = false;
        for (const auto& c : s->as<SeqNode>()->stmts) {
          items.push_back((*this)(c));
          changed |= items.back() != c;
        }
        return changed ? makeSeq(std::move(items)) : s;
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        PrimExpr c = expr(i->cond);
        Stmt t = (*this)(i->then_case), e = (*this)(i->else_case);
        if (c == i->cond && t == i->then_case && e == i->else_case) return s;
        return makeIf(c, t, e);
      }
    }
    return s;
  }

 private:
  Stmt block(const BlockNode& b, const Stmt& s) {
    PrimExpr pred = expr(b.predicate);
    for (const auto& iv : b.iter_vars) az_.bind(iv.var, makeInt(0), iv.extent);
    BlockParts parts(b);
    parts.predicate = pred;
    parts.reads.clear();
    for (const auto& r : b.reads)
      addRegions(parts.reads, r.buffer == buf_ ? producerReads(r) : std::vector{r});
    parts.init = (*this)(b.init);
    parts.body = (*this)(b.body);
    for (const auto& iv : b.iter_vars) az_.unbind(iv.var);
    if (pred == b.predicate && parts.init == b.init && parts.body == b.body && !reads(b, buf_)) return s;
    return parts.build();
  }

  PrimExpr expr(const PrimExpr& e) {
    return replaceLoads(e, buf_, [&](const std::vector<PrimExpr>& idx) {
      return az_.simplify(substitute(es_.store->value, iterMap(idx)));
    });
  }

  std::unordered_map<const VarNode*, PrimExpr> iterMap(const std::vector<PrimExpr>& idx) const {
    std::unordered_map<const VarNode*, PrimExpr> map;
    for (size_t d = 0; d < idx.size(); ++d)
      if (es_.dim_iter[d] >= 0) map[p_.iter_vars[es_.dim_iter[d]].var.get()] = idx[d];
    return map;
  }

  // The producer's read regions for a reader's region `r` of the buffer.
  std::vector<BufferRegion> producerReads(const BufferRegion& r) const {
    Analyzer ra;
    for (size_t d = 0; d < r.region.size(); ++d)
      if (es_.dim_iter[d] >= 0)
        ra.bind(p_.iter_vars[es_.dim_iter[d]].var, r.region[d].min, r.region[d].extent);
    std::vector<BufferRegion> out;
    for (const auto& q : p_.reads) {
      BufferRegion m{q.buffer, {}};
      for (size_t e = 0; e < q.region.size(); ++e) {
        auto lo = ra.bounds(q.region[e].min);
        auto hi = ra.bounds(build::lit(q.region[e].min) + q.region[e].extent - 1);
        if (lo && hi) {
          PrimExpr min = az_.simplify(lo->min);
          m.region.push_back({min, az_.simplify(build::lit(hi->max) - min + 1)});
        } else {
          m.region.push_back({makeInt(0), q.buffer->shape[e]});
        }
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  const BlockNode& p_;
  const ElementwiseStore& es_;
  Buffer buf_;
  Analyzer az_;
};

}  // namespace

// --- compute_inline ----------------------------------------------------------

std::vector<RVValue> applyComputeInline(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  std::string name = args.block(0);
  StmtPath path = *findBlock(s.func.body, name);
  const BlockNode& p = *path.target()->as<BlockNode>();
  Refusal fail{s, "cannot inline " + ScheduleState::describe(p) + ": "};

  std::string why;
  auto es = elementwiseStore(p, s.func, &why);
  if (!es) fail("it " + why);
  const Buffer& buf = es->store->buffer;
  if (isParam(s.func, buf)) fail("it writes parameter %" + buf->name);
  if (!predicateCoversDomain(p, loopsAbove(path)))
    fail("its predicate " + exprText(p.predicate, s.func) + " may skip part of its domain");

  auto blocks = allBlocks(s.func.body);
  const PlacedBlock& self = placed(blocks, &p);
  size_t pos = rootPosition(self.path);
  for (const auto& o : blocks) {
    if (o.block == &p) continue;
    if (writes(*o.block, buf)) fail(ScheduleState::describe(*o.block) + " also writes %" + buf->name);
    if (reads(*o.block, buf) && o.order < self.order)
      fail(ScheduleState::describe(*o.block) + " reads %" + buf->name + " before it is computed");
    for (const Buffer& r : readBuffers(p))
      if (writes(*o.block, r) && rootPosition(o.path) >= pos)
        fail(ScheduleState::describe(*o.block) + " writes %" + r->name +
             ", which it reads, in or after its loop nest");
  }

  Stmt body = replaceAt(path, nullptr);  // the block and its emptied loops
  s.setBody(Inliner(p, *es)(body));
  dropAllocIfUnused(s, buf);
  return {};
}

// --- reverse_compute_inline --------------------------------------------------

std::vector<RVValue> applyReverseComputeInline(ScheduleState& s, const InstArgs& args,
                                               std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  std::string name = args.block(0);
  StmtPath path = *findBlock(s.func.body, name);
  const BlockNode& c = *path.target()->as<BlockNode>();
  Refusal fail{s, "cannot reverse-inline " + ScheduleState::describe(c) + ": "};

  // The consumer: element-wise, each iteration its own element.
  for (const auto& iv : c.iter_vars) {
    if (iv.kind == IterKind::reduce) fail("it is a reduction");
    if (iv.kind == IterKind::opaque) fail("it has an opaque iteration variable %" + iv.var->name);
  }
  const auto* st = c.body ? c.body->as<StoreNode>() : nullptr;
  if (!st) fail("it does not consist of a single store");
  const Buffer& out = st->buffer;
  auto written = writeBuffers(c);
  if (written.size() != 1 || written[0] != out) fail("it does not write exactly the buffer it stores into");
  for (const auto& iv : c.iter_vars)
    if (std::find(st->indices.begin(), st->indices.end(), iv.var) == st->indices.end())
      fail("it stores at " + accessText(out, st->indices, s.func) +
           ", which does not use iteration variable %" + iv.var->name);
  if (!c.alloc_buffers.empty()) fail("it allocates buffers");
  if (!predicateCoversDomain(c, loopsAbove(path)))
    fail("its predicate " + exprText(c.predicate, s.func) + " may skip part of its domain");

  // The one intermediate buffer it reads, and its producer.
  std::vector<Buffer> intermediates;
  for (const Buffer& b : readBuffers(c))
    if (!isParam(s.func, b)) intermediates.push_back(b);
  if (intermediates.empty()) fail("it reads no intermediate buffer");
  if (intermediates.size() > 1)
    fail("it reads several intermediate buffers (%" + intermediates[0]->name + ", %" +
         intermediates[1]->name + ")");
  const Buffer& buf = intermediates[0];
  if (buf == out) fail("it writes %" + buf->name + ", which it reads");

  auto blocks = allBlocks(s.func.body);
  const PlacedBlock& self = placed(blocks, &c);
  std::vector<const PlacedBlock*> writers;
  for (const auto& o : blocks) {
    if (o.block == &c) continue;
    if (writes(*o.block, buf))
      writers.push_back(&o);
    else if (reads(*o.block, buf))
      fail(ScheduleState::describe(*o.block) + " also reads %" + buf->name);
  }
  if (writers.size() != 1)
    fail("%" + buf->name + " is written by " + std::to_string(writers.size()) +
         " blocks, not by one producer");
  const PlacedBlock& prod = *writers[0];
  const BlockNode& p = *prod.block;
  if (reads(p, buf)) fail("its producer " + ScheduleState::describe(p) + " also reads %" + buf->name);
  std::string why;
  auto es = elementwiseStore(p, s.func, &why);
  if (!es) fail("its producer " + ScheduleState::describe(p) + " " + why);
  if (!predicateCoversDomain(p, loopsAbove(prod.path)))
    fail("its producer's predicate " + exprText(p.predicate, s.func) + " may skip part of its domain");
  if (prod.order > self.order) fail("its producer " + ScheduleState::describe(p) + " comes after it");

  // Element for element: the consumer's iteration variables map to the producer's.
  std::unordered_map<const VarNode*, PrimExpr> to_producer;
  std::vector<std::vector<PrimExpr>> accesses = loadsOf(c.body, buf);
  for (const auto& r : c.reads) {
    if (r.buffer != buf) continue;
    std::vector<PrimExpr> idx;
    for (const auto& rg : r.region) {
      int64_t e;
      idx.push_back(asConstInt(rg.extent, &e) && e == 1 ? rg.min : nullptr);
    }
    accesses.push_back(idx);
  }
  for (const auto& idx : accesses) {
    auto refuse = [&] {
      std::vector<PrimExpr> shown;
      for (const auto& i : idx) shown.push_back(i ? i : makeInt(-1));
      fail("it reads " + accessText(buf, shown, s.func) +
           ", not element for element through its iteration variables");
    };
    std::unordered_map<const VarNode*, PrimExpr> map;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t v;
      if (!idx[d]) refuse();
      if (es->dim_iter[d] < 0) {
        if (!asConstInt(idx[d], &v) || v != 0) refuse();
        continue;
      }
      const IterVar& piv = p.iter_vars[es->dim_iter[d]];
      auto civ = std::find_if(c.iter_vars.begin(), c.iter_vars.end(),
                              [&](const IterVar& iv) { return iv.var == idx[d]; });
      if (civ == c.iter_vars.end() || map.count(civ->var.get()) || !provablyEqual(civ->extent, piv.extent))
        refuse();
      map[civ->var.get()] = piv.var;
    }
    if (map.size() != c.iter_vars.size()) refuse();
    if (to_producer.empty()) to_producer = map;
    for (const auto& [v, e] : map)
      if (to_producer[v] != e) refuse();
  }

  // Nothing between the producer and the consumer may interfere.
  size_t first = rootPosition(prod.path), last = rootPosition(self.path);
  for (const auto& o : blocks) {
    if (o.block == &c || o.block == &p) continue;
    size_t at = rootPosition(o.path);
    if (at < first || at > last) continue;
    for (const Buffer& r : readBuffers(c))
      if (r != buf && writes(*o.block, r))
        fail(ScheduleState::describe(*o.block) + " writes %" + r->name +
             ", which it reads, between its producer and it");
    if (reads(*o.block, out) || writes(*o.block, out))
      fail(ScheduleState::describe(*o.block) + " accesses %" + out->name +
           ", which it writes, between its producer and it");
  }
  if (reads(p, out) || writes(p, out))
    fail("its producer " + ScheduleState::describe(p) + " accesses %" + out->name);

  // The producer now stores the consumer's value.
  Analyzer az;
  for (const auto& iv : p.iter_vars) az.bind(iv.var, makeInt(0), iv.extent);
  PrimExpr value = replaceLoads(substitute(st->value, to_producer), buf,
                                [&](const std::vector<PrimExpr>&) { return es->store->value; });
  std::vector<PrimExpr> indices;
  for (const auto& i : st->indices) indices.push_back(az.simplify(substitute(i, to_producer)));
  BlockParts parts(p);
  parts.body = makeStore(out, std::move(indices), az.simplify(value));
  parts.writes.clear();
  for (const auto& w : c.writes) parts.writes.push_back(substituteRegion(w, to_producer));
  for (const auto& r : c.reads)
    if (r.buffer != buf) addRegions(parts.reads, {substituteRegion(r, to_producer)});

  Stmt body = replaceAt(path, nullptr);
  auto ppath = findBlock(body, p.name);
  s.setBody(replaceAt(*ppath, parts.build()));
  dropAllocIfUnused(s, buf);
  return {};
}

// --- Schedule methods ----------------------------------------------------------

void Schedule::computeInline(const BlockRV& block) { apply(makeInst("compute_inline", {ref(block)})); }

void Schedule::reverseComputeInline(const BlockRV& block) {
  apply(makeInst("reverse_compute_inline", {ref(block)}));
}

}  // namespace mlcc::schedule
