// Layout transformation: transform_layout re-indexes one buffer a block
// accesses by an index map, e.g. a dense weight [N, K] packed as
// [N / 16, K, 16] with `[o, i] -> [o / 16, i, o % 16]`.
//
//   transform_layout(%b0, "w", [o, i], [o / 16, i, o % 16])
//
// The buffer is named by its name among the buffers the block reads or
// writes. `from` are fresh index variables, one per dimension (matched by
// name in `to`), `to` the new indices in terms of them. The map must be
// one-to-one; only maps built from the standard patterns are accepted: each
// new index is a variable `x`, `x / c` or `x % c` (c a positive constant),
// and every variable is used either once plainly or exactly as the pair
// `x / c`, `x % c` with the same c (permutations, splits). Anything else is
// refused. The new shape is the range of each new index over the old shape
// (elements no old index maps to are padding, never read).
//
// An intermediate buffer (a function-level or block alloc_buffer) is
// rewritten in place: every load, store and region of it in the function.
// A parameter keeps its layout (the signature is fixed): a new intermediate
// `<name>_layout` in the new layout is filled by a copy block (its own loop
// nest at the start of the function) and the given block reads it instead.
// That needs the parameter to be read-only in the function, and the block
// not nested in another block (whose regions would not name the copy).
#include <algorithm>
#include <functional>
#include <set>

#include "cache_util.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;
using namespace ir::build;

namespace {

// A checked one-to-one index map: new index k is to[k] in terms of from[d].
struct IndexMap {
  std::vector<Var> from;
  std::vector<PrimExpr> to;

  // to[] with from[d] replaced by idx[d].
  std::vector<PrimExpr> apply(const std::vector<PrimExpr>& idx, const Analyzer& az) const {
    std::unordered_map<const VarNode*, PrimExpr> sub;
    for (size_t d = 0; d < from.size(); ++d) sub[from[d].get()] = idx[d];
    std::vector<PrimExpr> out;
    for (const auto& t : to) out.push_back(az.simplify(substitute(t, sub)));
    return out;
  }

  // The region of the new buffer covering an old region: exact along
  // single elements, else the bounds of each new index over the old ranges
  // (the whole dimension when they cannot be found).
  std::vector<Range> apply(const std::vector<Range>& old, const std::vector<PrimExpr>& new_shape) const {
    Analyzer az;
    std::unordered_map<const VarNode*, PrimExpr> at_min;
    for (size_t d = 0; d < from.size(); ++d) {
      int64_t extent = 0;
      if (asConstInt(old[d].extent, &extent) && extent == 1)
        at_min[from[d].get()] = old[d].min;
      else
        az.bind(from[d], old[d].min, old[d].extent);
    }
    std::vector<Range> out;
    for (size_t k = 0; k < to.size(); ++k) {
      auto b = az.bounds(substitute(to[k], at_min));
      if (b)
        out.push_back(Range{simplify(b->min), simplify(b->max - b->min + lit(int64_t{1}))});
      else
        out.push_back(Range{makeInt(0), new_shape[k]});
    }
    return out;
  }
};

std::string exprText(const PrimExpr& e) { return printExpr(e); }

void collectVars(const PrimExpr& e, std::vector<Var>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Var) {
    auto v = std::static_pointer_cast<const VarNode>(e);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    return;
  }
  if (const auto* b = e->as<BinaryNode>()) {
    collectVars(b->a, out);
    collectVars(b->b, out);
  } else if (const auto* u = e->as<UnaryNode>()) {
    collectVars(u->a, out);
  } else if (const auto* s = e->as<SelectNode>()) {
    collectVars(s->cond, out);
    collectVars(s->true_value, out);
    collectVars(s->false_value, out);
  } else if (const auto* c = e->as<CastNode>()) {
    collectVars(c->value, out);
  } else if (const auto* l = e->as<LoadNode>()) {
    for (const auto& i : l->indices) collectVars(i, out);
  } else if (const auto* call = e->as<CallNode>()) {
    for (const auto& a : call->args) collectVars(a, out);
  }
}

// Reads the index map of the instruction and checks that it is one-to-one.
IndexMap readIndexMap(const InstArgs& args, const Buffer& buf) {
  const std::string bname = "%" + buf->name;
  const AttrValue& from_v = args.input(2);
  const AttrValue& to_v = args.input(3);
  if (!from_v.isList()) args.fail("argument 3 must be a list of index variables, e.g. [o, i]");
  if (!to_v.isList()) args.fail("argument 4 must be a list of new indices, e.g. [o / 16, i, o % 16]");
  IndexMap m;
  for (const auto& v : from_v.asList()) {
    if (!v.isExpr() || v.asExpr()->kind != ExprKind::Var)
      args.fail("argument 3 must list index variables (names like o, i), not " + printAttrValue(v));
    auto var = std::static_pointer_cast<const VarNode>(v.asExpr());
    for (const auto& w : m.from)
      if (w->name == var->name) args.fail("index variable " + var->name + " is listed twice");
    m.from.push_back(makeVar(var->name));
  }
  if (m.from.size() != buf->shape.size())
    args.fail("the index map has " + std::to_string(m.from.size()) + " index variable(s), but " + bname +
              " has rank " + std::to_string(buf->shape.size()));
  if (to_v.asList().empty()) args.fail("the new indices are empty");

  // Match the variables of `to` with `from` by name.
  std::unordered_map<const VarNode*, PrimExpr> by_name;
  for (const auto& v : to_v.asList()) {
    if (!v.isExpr())
      args.fail("new index " + printAttrValue(v) + " is not an expression of the index variables");
    std::vector<Var> vars;
    collectVars(v.asExpr(), vars);
    for (const auto& var : vars) {
      auto it =
          std::find_if(m.from.begin(), m.from.end(), [&](const Var& f) { return f->name == var->name; });
      if (it == m.from.end())
        args.fail("new index " + exprText(v.asExpr()) + " uses " + var->name +
                  ", which is not one of the index variables");
      by_name[var.get()] = *it;
    }
    m.to.push_back(substitute(v.asExpr(), by_name));
  }

  // Each new index: x, x / c or x % c. Per variable: the forms it appears in.
  struct Uses {
    int plain = 0;
    std::vector<int64_t> div, mod;
  };
  std::vector<Uses> uses(m.from.size());
  auto indexOf = [&](const PrimExpr& e) -> int {
    for (size_t d = 0; d < m.from.size(); ++d)
      if (e == m.from[d]) return static_cast<int>(d);
    return -1;
  };
  for (const auto& t : m.to) {
    const std::string unsupported = "new index " + exprText(t) +
                                    " is not of a supported form (x, x / c or x % c, with x an index "
                                    "variable and c a positive constant), so the map may not be one-to-one";
    if (int d = indexOf(t); d >= 0) {
      uses[d].plain++;
      continue;
    }
    const auto* bin = t->as<BinaryNode>();
    int64_t c = 0;
    if (!bin || (bin->op != BinaryOp::Div && bin->op != BinaryOp::Mod) || !asConstInt(bin->b, &c) || c <= 0)
      args.fail(unsupported);
    int d = indexOf(bin->a);
    if (d < 0) args.fail(unsupported);
    (bin->op == BinaryOp::Div ? uses[d].div : uses[d].mod).push_back(c);
  }
  for (size_t d = 0; d < m.from.size(); ++d) {
    const Uses& u = uses[d];
    const std::string& x = m.from[d]->name;
    const bool plain = u.plain == 1 && u.div.empty() && u.mod.empty();
    const bool split = u.plain == 0 && u.div.size() == 1 && u.mod.size() == 1 && u.div[0] == u.mod[0];
    if (plain || split) continue;
    if (u.plain == 0 && u.div.empty() && u.mod.empty())
      args.fail("index variable " + x + " is not used in the new indices, so elements of " + bname +
                " would share a place (the map is not one-to-one)");
    args.fail("index variable " + x + " must appear either once as itself or as the pair " + x + " / c, " +
              x + " % c (same c) for the map to be one-to-one");
  }
  return m;
}

// The shape of the buffer in the new layout: the range of each new index.
std::vector<PrimExpr> newShape(const InstArgs& args, const IndexMap& m, const Buffer& buf) {
  Analyzer az;
  for (size_t d = 0; d < m.from.size(); ++d) az.bind(m.from[d], makeInt(0), buf->shape[d]);
  std::vector<PrimExpr> shape;
  for (const auto& t : m.to) {
    auto b = az.bounds(t);
    int64_t lo = -1;
    if (!b || !asConstInt(simplify(b->min), &lo) || lo != 0)
      args.fail("cannot find the extent of new index " + exprText(t) + " over the shape of %" + buf->name);
    PrimExpr extent = simplify(b->max + lit(int64_t{1}));
    std::vector<Var> vars;
    collectVars(extent, vars);
    for (const auto& v : vars)
      for (const auto& f : m.from)
        if (v == f) args.fail("cannot find the extent of new index " + exprText(t));
    shape.push_back(extent);
  }
  return shape;
}

// Rewrites every access to `old_buf` as an access to `new_buf` through the
// index map: loads, stores, block regions and alloc_buffers.
class AccessRewriter {
 public:
  AccessRewriter(Buffer old_buf, Buffer new_buf, const IndexMap& m)
      : old_(std::move(old_buf)), new_(std::move(new_buf)), map_(m) {}

  Stmt stmt(const Stmt& s, const Analyzer& az) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::For: {
        ForParts f(*s->as<ForNode>());
        f.body = stmt(f.body, az);
        return f.build();
      }
      case StmtKind::Block: {
        BlockParts b(*s->as<BlockNode>());
        b.predicate = expr(b.predicate, az);
        Analyzer inner = az;
        for (const auto& iv : b.iter_vars) inner.bind(iv.var, makeInt(0), iv.extent);
        for (auto* regions : {&b.reads, &b.writes})
          for (auto& r : *regions)
            if (r.buffer == old_) r = BufferRegion{new_, map_.apply(r.region, new_->shape)};
        for (auto& a : b.alloc_buffers)
          if (a == old_) a = new_;
        b.init = stmt(b.init, inner);
        b.body = stmt(b.body, inner);
        return b.build();
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        std::vector<PrimExpr> idx;
        for (const auto& i : st->indices) idx.push_back(expr(i, az));
        PrimExpr value = expr(st->value, az);
        if (st->buffer == old_) return makeStore(new_, map_.apply(idx, az), value);
        return makeStore(st->buffer, idx, value);
      }
      case StmtKind::Seq: {
        std::vector<Stmt> items;
        for (const auto& c : s->as<SeqNode>()->stmts) items.push_back(stmt(c, az));
        return makeSeq(std::move(items));
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        return makeIf(expr(i->cond, az), stmt(i->then_case, az), stmt(i->else_case, az));
      }
    }
    return s;
  }

  PrimExpr expr(const PrimExpr& e, const Analyzer& az) {
    if (const auto* n = e ? e->as<LoadNode>() : nullptr; n && n->buffer == old_) {
      std::vector<PrimExpr> idx;
      for (const auto& i : n->indices) idx.push_back(expr(i, az));
      return makeLoad(new_, map_.apply(idx, az));
    }
    return mapChildren(e, [&](const PrimExpr& x) { return expr(x, az); });
  }

 private:
  Buffer old_, new_;
  const IndexMap& map_;
};

// Every buffer and block name in the function, to make fresh ones.
void collectNames(const PrimFunc& f, std::set<std::string>& buffers, std::set<std::string>& blocks) {
  for (const auto& b : f.params) buffers.insert(b->name);
  for (const auto& b : f.allocs) buffers.insert(b->name);
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
    blocks.insert(b.name);
    for (const auto& a : b.alloc_buffers) buffers.insert(a->name);
  });
}

std::string freshIn(const std::set<std::string>& taken, const std::string& base) {
  if (!taken.count(base)) return base;
  for (int i = 1;; ++i)
    if (!taken.count(base + std::to_string(i))) return base + std::to_string(i);
}

// The loop nest copying `param` into `packed` element by element:
//   for %i0, %i1, ... over param's shape { block: packed[map(v)] = param[v] }
Stmt copyNest(const Buffer& param, const Buffer& packed, const IndexMap& m, const std::string& block_name) {
  return elementNest(block_name, param->shape, "i", [&](const std::vector<Var>& v) {
    Analyzer az;
    for (size_t d = 0; d < v.size(); ++d) az.bind(v[d], makeInt(0), param->shape[d]);
    const std::vector<PrimExpr> vs(v.begin(), v.end());
    std::vector<PrimExpr> dst = m.apply(vs, az);
    return ElementBlock{point(param, vs), point(packed, dst), makeStore(packed, dst, makeLoad(param, vs))};
  });
}

}  // namespace

std::vector<RVValue> applyTransformLayout(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(4);
  args.allowAttrs({});
  const std::string block_name = args.block(0);
  const std::string buffer_name = args.string(1);
  const BlockNode& block = s.block(block_name);

  // The buffer, by name, among those the block accesses.
  Buffer buf;
  std::vector<std::string> accessed;
  for (const auto& list : {readBuffers(block), writeBuffers(block)})
    for (const auto& b : list) {
      if (b->name == buffer_name) buf = b;
      if (std::find(accessed.begin(), accessed.end(), "%" + b->name) == accessed.end())
        accessed.push_back("%" + b->name);
    }
  if (!buf) {
    std::string list;
    for (const auto& a : accessed) list += (list.empty() ? "" : ", ") + a;
    args.fail(ScheduleState::describe(block) + " accesses no buffer named \"" + buffer_name + "\"" +
              (list.empty() ? "" : " (it accesses " + list + ")"));
  }

  IndexMap m = readIndexMap(args, buf);
  std::vector<PrimExpr> shape = newShape(args, m, buf);
  std::set<std::string> buffer_names, block_names;
  collectNames(s.func, buffer_names, block_names);

  const bool is_param = std::find(s.func.params.begin(), s.func.params.end(), buf) != s.func.params.end();
  if (!is_param) {
    // An intermediate: rewritten in place, everywhere in the function.
    Buffer nb = makeBuffer(buf->name, buf->dtype, shape, buf->scope);
    AccessRewriter rw(buf, nb, m);
    s.setBody(rw.stmt(s.func.body, Analyzer()));
    for (auto& a : s.func.allocs)
      if (a == buf) a = nb;
    return {};
  }

  // A parameter: only read-only ones can be copied up front.
  forEachBlock(s.func.body, [&](const BlockNode& b, const StmtPath&) {
    auto w = writeBuffers(b);
    if (std::find(w.begin(), w.end(), buf) != w.end())
      args.fail("cannot transform the layout of parameter %" + buf->name + ": " + ScheduleState::describe(b) +
                " writes it (a parameter gets a layout-converted copy, which needs it to be read-only)");
  });
  auto path = findBlock(s.func.body, block_name);
  if (const BlockNode* outer = enclosingBlock(*path))
    args.fail("cannot give " + ScheduleState::describe(block) + " a layout-converted copy of parameter %" +
              buf->name + ": it is nested in " + ScheduleState::describe(*outer) +
              ", whose regions would not name the copy");
  const std::string name = freshIn(buffer_names, buf->name + "_layout");
  Buffer packed = makeBuffer(name, buf->dtype, shape, StorageScope::global);
  AccessRewriter rw(buf, packed, m);
  Stmt body = replaceAt(*path, rw.stmt(path->target(), Analyzer()));
  std::vector<Stmt> items{copyNest(buf, packed, m, freshIn(block_names, name))};
  for (const auto& x : flattenSeq(body)) items.push_back(x);
  s.setBody(makeSeq(std::move(items)));
  s.func.allocs.push_back(packed);
  return {};
}

void Schedule::transformLayout(const BlockRV& block, const std::string& buffer, const std::vector<Var>& from,
                               const std::vector<PrimExpr>& to) {
  // The trace records the index variables of `to` as those of `from` (they
  // are matched by name), as the parser reads them back.
  std::unordered_map<const VarNode*, PrimExpr> by_name;
  AttrValue::List f, t;
  for (const auto& v : from) f.push_back(AttrValue(PrimExpr(v)));
  for (const auto& e : to) {
    std::vector<Var> used;
    collectVars(e, used);
    for (const auto& u : used)
      for (const auto& v : from)
        if (u->name == v->name) by_name[u.get()] = v;
    t.push_back(AttrValue(substitute(e, by_name)));
  }
  apply(makeInst("transform_layout", {ref(block), buffer, AttrValue(std::move(f)), AttrValue(std::move(t))}));
}

}  // namespace mlcc::schedule
