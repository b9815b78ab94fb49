// Helpers of the compute-location primitives (see compute_location.h).
#include "compute_location.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <unordered_map>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule::compute {

using namespace ir;

// --- messages and proofs ---------------------------------------------------------

namespace {
void visitExprs(const PrimExpr& e, const std::function<void(const PrimExpr&)>& fn);

bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Comparisons (or other bool expressions) that are the same condition.
bool sameCondition(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  const auto *x = a->as<BinaryNode>(), *y = b->as<BinaryNode>();
  if (!x || !y || x->op != y->op) return false;
  if (x->op == BinaryOp::And || x->op == BinaryOp::Or)
    return sameCondition(x->a, y->a) && sameCondition(x->b, y->b);
  return isComparison(x->op) && provablyEqual(x->a, y->a) && provablyEqual(x->b, y->b);
}
}  // namespace

std::string exprText(const PrimExpr& e, const PrimFunc& f) {
  std::set<std::string> symbolic, local;
  for (const auto& p : f.params)
    for (const auto& d : p->shape)
      visitExprs(d, [&](const PrimExpr& x) {
        if (const auto* v = x->as<VarNode>()) symbolic.insert(v->name);
      });
  visitExprs(e, [&](const PrimExpr& x) {
    if (const auto* v = x->as<VarNode>(); v && !symbolic.count(v->name)) local.insert(v->name);
  });
  std::string text = printExpr(e), out;
  for (size_t i = 0; i < text.size();) {
    if (!identChar(text[i]) || (i > 0 && (identChar(text[i - 1]) || text[i - 1] == '%'))) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && identChar(text[j])) ++j;
    std::string word = text.substr(i, j - i);
    bool call = j < text.size() && text[j] == '(';
    if (local.count(word) && !call) out += "%";
    out += word;
    i = j;
  }
  return out;
}

std::string accessText(const Buffer& buf, const std::vector<PrimExpr>& indices, const PrimFunc& f) {
  std::string t;
  for (const auto& i : indices) t += (t.empty() ? "" : ", ") + exprText(i, f);
  return "%" + buf->name + "[" + t + "]";
}

// --- positions -----------------------------------------------------------------

TopItem topItem(const StmtPath& path) {
  size_t body = 0;  // the index of the scope's body (function body, or a block's body)
  for (size_t i = 0; i + 1 < path.nodes.size(); ++i)
    if (path.nodes[i]->as<BlockNode>()) body = i + 1;
  if (body + 1 < path.nodes.size()) {
    if (const auto* seq = path.nodes[body]->as<SeqNode>()) {
      auto it = std::find(seq->stmts.begin(), seq->stmts.end(), path.nodes[body + 1]);
      return {body + 1, static_cast<size_t>(it - seq->stmts.begin())};
    }
  }
  return {body, 0};
}

namespace {

// The statements of `s` with its nested sequences flattened.
size_t flatCount(const Stmt& s) {
  const auto* seq = s->as<SeqNode>();
  if (!seq) return 1;
  size_t n = 0;
  for (const auto& c : seq->stmts) n += flatCount(c);
  return n;
}

}  // namespace

size_t rootPosition(const StmtPath& path) {
  // Through nested sequences (a body built as seq(seq(nest, nest), ...)),
  // counting the statements before the target's in the flattened one.
  size_t pos = 0;
  for (size_t i = 0; i + 1 < path.nodes.size(); ++i) {
    const auto* seq = path.nodes[i]->as<SeqNode>();
    if (!seq) break;
    for (auto it = seq->stmts.begin(); it != seq->stmts.end() && *it != path.nodes[i + 1]; ++it)
      pos += flatCount(*it);
  }
  return pos;
}

std::vector<PlacedBlock> allBlocks(const Stmt& body) {
  std::vector<PlacedBlock> out;
  forEachBlock(body, [&](const BlockNode& b, const StmtPath& p) {
    out.push_back({&b, p, out.size(), topItem(p)});
  });
  return out;
}

std::vector<PlacedBlock> scopeBlocks(const Stmt& body, const BlockNode* scope) {
  std::vector<PlacedBlock> out;
  for (auto& b : allBlocks(body))
    if (enclosingBlock(b.path) == scope) out.push_back(std::move(b));
  return out;
}

bool isUnder(const StmtPath& path, const Stmt& stmt) {
  return std::find(path.nodes.begin(), path.nodes.end(), stmt) != path.nodes.end();
}

bool aloneInNest(const StmtPath& block_path, size_t top) {
  for (size_t i = top; i + 1 < block_path.nodes.size(); ++i) {
    const auto* f = block_path.nodes[i]->as<ForNode>();
    if (!f || f->body != block_path.nodes[i + 1]) return false;
  }
  return true;
}

// --- buffers -------------------------------------------------------------------

namespace {

void visitExprs(const PrimExpr& e, const std::function<void(const PrimExpr&)>& fn) {
  if (!e) return;
  fn(e);
  forEachChild(e, [&](const PrimExpr& x) { visitExprs(x, fn); });
}

// Every expression of a statement (not its alloc_buffers), and every store.
void visitStmt(const Stmt& s, const std::function<void(const PrimExpr&)>& on_expr,
               const std::function<void(const StoreNode&)>& on_store,
               const std::function<void(const BufferRegion&)>& on_region) {
  if (!s) return;
  auto ex = [&](const PrimExpr& e) { visitExprs(e, on_expr); };
  switch (s->kind) {
    case StmtKind::For:
      ex(s->as<ForNode>()->extent);
      visitStmt(s->as<ForNode>()->body, on_expr, on_store, on_region);
      break;
    case StmtKind::Block: {
      const auto* b = s->as<BlockNode>();
      for (const auto& iv : b->iter_vars) {
        ex(iv.extent);
        ex(iv.binding);
      }
      ex(b->predicate);
      for (const auto* regions : {&b->reads, &b->writes})
        for (const auto& r : *regions) {
          on_region(r);
          for (const auto& rg : r.region) {
            ex(rg.min);
            ex(rg.extent);
          }
        }
      visitStmt(b->init, on_expr, on_store, on_region);
      visitStmt(b->body, on_expr, on_store, on_region);
      break;
    }
    case StmtKind::Store: {
      const auto* st = s->as<StoreNode>();
      on_store(*st);
      for (const auto& i : st->indices) ex(i);
      ex(st->value);
      break;
    }
    case StmtKind::Seq:
      for (const auto& c : s->as<SeqNode>()->stmts) visitStmt(c, on_expr, on_store, on_region);
      break;
    case StmtKind::If: {
      const auto* i = s->as<IfNode>();
      ex(i->cond);
      visitStmt(i->then_case, on_expr, on_store, on_region);
      visitStmt(i->else_case, on_expr, on_store, on_region);
      break;
    }
  }
}

bool hasBuffer(const std::vector<BufferRegion>& regions, const Buffer& buf) {
  return std::any_of(regions.begin(), regions.end(), [&](const BufferRegion& r) { return r.buffer == buf; });
}

}  // namespace

bool reads(const BlockNode& b, const Buffer& buf) { return hasBuffer(b.reads, buf); }
bool writes(const BlockNode& b, const Buffer& buf) { return hasBuffer(b.writes, buf); }

bool isParam(const PrimFunc& f, const Buffer& buf) {
  return std::find(f.params.begin(), f.params.end(), buf) != f.params.end();
}

bool usesBuffer(const Stmt& s, const Buffer& buf) {
  bool used = false;
  visitStmt(
      s,
      [&](const PrimExpr& e) {
        if (const auto* l = e->as<LoadNode>()) used |= l->buffer == buf;
      },
      [&](const StoreNode& st) { used |= st.buffer == buf; },
      [&](const BufferRegion& r) { used |= r.buffer == buf; });
  return used;
}

void dropAllocIfUnused(ScheduleState& s, const Buffer& buf) {
  if (usesBuffer(s.func.body, buf)) return;
  auto it = std::find(s.func.allocs.begin(), s.func.allocs.end(), buf);
  if (it != s.func.allocs.end()) {
    s.func.allocs.erase(it);
    return;
  }
  std::optional<StmtPath> owner;
  forEachBlock(s.func.body, [&](const BlockNode& b, const StmtPath& p) {
    if (!owner && std::find(b.alloc_buffers.begin(), b.alloc_buffers.end(), buf) != b.alloc_buffers.end())
      owner = p;
  });
  if (!owner) return;
  BlockParts parts(*owner->target()->as<BlockNode>());
  std::erase(parts.alloc_buffers, buf);
  s.setBody(replaceAt(*owner, parts.build()));
}

PrimExpr replaceLoads(const PrimExpr& e, const Buffer& buf,
                      const std::function<PrimExpr(const std::vector<PrimExpr>&)>& fn) {
  std::function<PrimExpr(const PrimExpr&)> rec = [&](const PrimExpr& x) -> PrimExpr {
    PrimExpr y = mapChildren(x, rec);  // indices first, as loads nest
    if (const auto* l = y ? y->as<LoadNode>() : nullptr; l && l->buffer == buf) return fn(l->indices);
    return y;
  };
  return rec(e);
}

std::vector<std::vector<PrimExpr>> loadsOf(const Stmt& s, const Buffer& buf) {
  std::vector<std::vector<PrimExpr>> out;
  visitStmt(
      s,
      [&](const PrimExpr& e) {
        if (const auto* l = e->as<LoadNode>(); l && l->buffer == buf) out.push_back(l->indices);
      },
      [](const StoreNode&) {}, [](const BufferRegion&) {});
  return out;
}

std::vector<std::vector<PrimExpr>> storesOf(const Stmt& s, const Buffer& buf) {
  std::vector<std::vector<PrimExpr>> out;
  visitStmt(
      s, [](const PrimExpr&) {},
      [&](const StoreNode& st) {
        if (st.buffer == buf) out.push_back(st.indices);
      },
      [](const BufferRegion&) {});
  return out;
}

namespace {
bool sameRegion(const BufferRegion& a, const BufferRegion& b) {
  if (a.buffer != b.buffer || a.region.size() != b.region.size()) return false;
  for (size_t d = 0; d < a.region.size(); ++d)
    if (!provablyEqual(a.region[d].min, b.region[d].min) ||
        !provablyEqual(a.region[d].extent, b.region[d].extent))
      return false;
  return true;
}
}  // namespace

void addRegions(std::vector<BufferRegion>& regions, const std::vector<BufferRegion>& extra) {
  for (const auto& r : extra)
    if (std::none_of(regions.begin(), regions.end(), [&](const BufferRegion& x) { return sameRegion(x, r); }))
      regions.push_back(r);
}

// --- blocks --------------------------------------------------------------------

std::optional<ElementwiseStore> elementwiseStore(const BlockNode& b, const PrimFunc& f, std::string* why) {
  auto no = [&](std::string reason) -> std::optional<ElementwiseStore> {
    *why = std::move(reason);
    return std::nullopt;
  };
  for (const auto& iv : b.iter_vars) {
    if (iv.kind == IterKind::reduce) return no("is a reduction");
    if (iv.kind == IterKind::opaque) return no("has an opaque iteration variable %" + iv.var->name);
  }
  if (b.iter_vars.empty()) return no("has no iteration variables");
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  if (!st) return no("does not consist of a single store");
  auto written = writeBuffers(b);
  if (written.size() != 1 || written[0] != st->buffer)
    return no("does not write exactly the buffer it stores into");
  const Buffer& buf = st->buffer;
  ElementwiseStore out{st, {}};
  std::vector<bool> used(b.iter_vars.size(), false);
  auto indexText = [&] { return accessText(buf, st->indices, f); };
  for (size_t d = 0; d < st->indices.size(); ++d) {
    const PrimExpr& idx = st->indices[d];
    int64_t c, dim;
    if (asConstInt(idx, &c) && c == 0 && asConstInt(buf->shape[d], &dim) && dim == 1) {
      out.dim_iter.push_back(-1);
      continue;
    }
    int k = -1;
    for (size_t i = 0; i < b.iter_vars.size(); ++i)
      if (idx == b.iter_vars[i].var) k = static_cast<int>(i);
    if (k < 0 || used[k]) return no("stores at " + indexText() + ", not at distinct iteration variables");
    used[k] = true;
    if (!provablyEqual(b.iter_vars[k].extent, buf->shape[d]))
      return no("covers only part of %" + buf->name + " (dimension " + std::to_string(d) + ")");
    out.dim_iter.push_back(k);
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      return no("stores at " + indexText() + ", which does not use iteration variable %" +
                b.iter_vars[i].var->name);
  if (!loadsOf(b.body, buf).empty()) return no("reads %" + buf->name + ", which it writes");
  return out;
}

PrimExpr conjunction(const std::vector<PrimExpr>& conds) {
  PrimExpr out;
  for (const auto& c : conds) out = out ? build::land(out, c) : c;
  return out;
}

bool provablyEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->dtype != DType::i64 || b->dtype != DType::i64) return false;
  int64_t v;
  return asConstInt(simplify(makeBinary(BinaryOp::Sub, a, b)), &v) && v == 0;
}

namespace {
bool usesAnyLoop(const PrimExpr& e, const std::vector<const ForNode*>& loops) {
  return std::any_of(loops.begin(), loops.end(),
                     [&](const ForNode* f) { return usesVar(e, f->loop_var.get()); });
}

// Integer constants and variables combined by +, - and products with a constant.
bool isAffine(const PrimExpr& e) {
  if (e->as<VarNode>() || e->as<IntImmNode>()) return true;
  const auto* b = e->as<BinaryNode>();
  if (!b) return false;
  if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return isAffine(b->a) && isAffine(b->b);
  if (b->op == BinaryOp::Mul)
    return (b->a->as<IntImmNode>() && isAffine(b->b)) || (b->b->as<IntImmNode>() && isAffine(b->a));
  return false;
}
}  // namespace

std::optional<std::vector<PrimExpr>> rebindPredicate(const BlockNode& b,
                                                     const std::vector<const ForNode*>& old_loops,
                                                     const std::vector<PrimExpr>& new_bindings,
                                                     PrimExpr* bad) {
  Analyzer old;
  for (const ForNode* f : old_loops) old.bind(f->loop_var, makeInt(0), f->extent);
  // Loops that are exactly an iteration variable's binding: their variable
  // stands for that iteration variable's value, the new binding.
  std::unordered_map<const VarNode*, PrimExpr> as_iter;
  for (size_t k = 0; k < b.iter_vars.size(); ++k)
    if (const auto* v = b.iter_vars[k].binding->as<VarNode>())
      for (const ForNode* f : old_loops)
        if (f->loop_var.get() == v) as_iter.emplace(v, new_bindings[k]);
  // A bound (<, <=, >, >=) on an affine combination of such loops.
  auto boundOnIterLoops = [&](const PrimExpr& c) {
    const auto* cmp = c->as<BinaryNode>();
    if (!cmp || !(cmp->op == BinaryOp::LT || cmp->op == BinaryOp::LE || cmp->op == BinaryOp::GT ||
                  cmp->op == BinaryOp::GE))
      return false;
    if (!isAffine(cmp->a) || !isAffine(cmp->b)) return false;
    return std::all_of(old_loops.begin(), old_loops.end(), [&](const ForNode* f) {
      return !usesVar(c, f->loop_var.get()) || as_iter.count(f->loop_var.get());
    });
  };
  std::vector<PrimExpr> out;
  for (const auto& c : conjuncts(b.predicate)) {
    if (old.canProve(c)) continue;
    PrimExpr rewritten;
    const auto* cmp = c->as<BinaryNode>();
    if (cmp && isComparison(cmp->op)) {
      for (int side = 0; side < 2 && !rewritten; ++side) {
        const PrimExpr& mine = side == 0 ? cmp->a : cmp->b;
        const PrimExpr& other = side == 0 ? cmp->b : cmp->a;
        if (usesAnyLoop(other, old_loops)) continue;
        for (size_t k = 0; k < b.iter_vars.size() && !rewritten; ++k)
          if (provablyEqual(mine, b.iter_vars[k].binding))
            rewritten = side == 0 ? makeBinary(cmp->op, new_bindings[k], other)
                                  : makeBinary(cmp->op, other, new_bindings[k]);
      }
    }
    // A condition on several such loops (a non-exact split's `k_0 * 16 + k_1 < n` after rfactor).
    if (!rewritten && boundOnIterLoops(c)) rewritten = substitute(c, as_iter);
    if (!rewritten) {
      *bad = c;
      return std::nullopt;
    }
    out.push_back(rewritten);
  }
  return out;
}

bool predicateCoversDomain(const BlockNode& b, const std::vector<const ForNode*>& loops) {
  std::vector<PrimExpr> vars;
  Analyzer dom;
  for (const auto& iv : b.iter_vars) {
    vars.push_back(iv.var);
    dom.bind(iv.var, makeInt(0), iv.extent);
  }
  PrimExpr bad;
  auto conds = rebindPredicate(b, loops, vars, &bad);
  if (!conds) return false;
  return std::all_of(conds->begin(), conds->end(), [&](const PrimExpr& c) { return dom.canProve(c); });
}

// --- exact index sets ----------------------------------------------------------

namespace {

// Adds scale * e to `coeffs` (per inner loop variable); false when e is not
// linear in the inner loops.
bool linearIn(const PrimExpr& e, const std::set<const VarNode*>& vars,
              std::map<const VarNode*, int64_t>& coeffs, int64_t scale) {
  auto usesAny = [&](const PrimExpr& x) {
    return std::any_of(vars.begin(), vars.end(), [&](const VarNode* v) { return usesVar(x, v); });
  };
  if (const auto* v = e->as<VarNode>(); v && vars.count(v)) {
    coeffs[v] += scale;
    return true;
  }
  if (const auto* u = e->as<UnaryNode>(); u && u->op == UnaryOp::Neg)
    return linearIn(u->a, vars, coeffs, -scale);
  if (const auto* b = e->as<BinaryNode>()) {
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)
      return linearIn(b->a, vars, coeffs, scale) &&
             linearIn(b->b, vars, coeffs, b->op == BinaryOp::Add ? scale : -scale);
    int64_t c;
    if (b->op == BinaryOp::Mul && asConstInt(b->b, &c)) return linearIn(b->a, vars, coeffs, scale * c);
    if (b->op == BinaryOp::Mul && asConstInt(b->a, &c)) return linearIn(b->b, vars, coeffs, scale * c);
  }
  return !usesAny(e);
}

}  // namespace

bool exactBox(const std::vector<PrimExpr>& indices, const std::vector<const ForNode*>& inner) {
  std::set<const VarNode*> vars;
  std::map<const VarNode*, const ForNode*> loop_of;
  for (const ForNode* f : inner) {
    vars.insert(f->loop_var.get());
    loop_of[f->loop_var.get()] = f;
  }
  std::set<const VarNode*> used;
  for (const auto& idx : indices) {
    std::map<const VarNode*, int64_t> coeffs;
    if (!linearIn(simplify(idx), vars, coeffs, 1)) return false;
    std::vector<std::pair<int64_t, const VarNode*>> terms;
    for (const auto& [v, c] : coeffs) {
      // A loop of extent 1 contributes nothing (its variable is 0); left in,
      // its coefficient would tie with the loop around it and the outcome
      // would depend on the order of the terms (VarNode addresses).
      int64_t extent;
      if (c == 0 || (asConstInt(loop_of[v]->extent, &extent) && extent == 1)) continue;
      if (!used.insert(v).second) return false;
      terms.emplace_back(std::llabs(c), v);
    }
    std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t expected = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      if (terms[k].first != expected) return false;
      if (k + 1 < terms.size()) {
        int64_t e;
        if (!asConstInt(loop_of[terms[k].second]->extent, &e)) return false;
        expected *= e;
      }
    }
  }
  return true;
}

// --- new loop nests ------------------------------------------------------------

void NewNest::require(const PrimExpr& cond) {
  if (az.canProve(cond)) return;
  for (const auto& c : conditions)
    if (sameCondition(c, cond)) return;
  conditions.push_back(cond);
}

Stmt NewNest::wrap(const BlockNode& b) const {
  BlockParts parts(b);
  for (size_t k = 0; k < parts.iter_vars.size(); ++k) parts.iter_vars[k].binding = bindings[k];
  parts.predicate = conjunction(conditions);
  Stmt s = parts.build();
  for (size_t i = loop_vars.size(); i-- > 0;) s = makeFor(loop_vars[i], extents[i], s);
  return s;
}

std::optional<NewNest> buildNest(const BlockNode& b, const std::vector<std::optional<IterRegion>>& regions,
                                 bool preserve_unit_loops, Analyzer outer,
                                 const std::vector<const ForNode*>& old_loops, PrimExpr* bad) {
  NewNest n;
  n.az = std::move(outer);
  auto newLoop = [&](const PrimExpr& extent) {
    Var v = makeVar("ax" + std::to_string(n.loop_vars.size()));
    n.loop_vars.push_back(v);
    n.extents.push_back(extent);
    n.az.bind(v, makeInt(0), extent);
    return v;
  };
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    const IterVar& iv = b.iter_vars[k];
    int64_t c;
    if (regions[k]) {
      const IterRegion& r = *regions[k];
      PrimExpr binding = r.extent == 1 && !preserve_unit_loops
                             ? n.az.simplify(r.min)
                             : n.az.simplify(makeBinary(BinaryOp::Add, r.min, newLoop(makeInt(r.extent))));
      n.bindings.push_back(binding);
    } else if (asConstInt(iv.extent, &c) && c == 1 && !preserve_unit_loops) {
      n.bindings.push_back(makeInt(0));
    } else {
      n.bindings.push_back(newLoop(iv.extent));
    }
  }
  for (size_t k = 0; k < b.iter_vars.size(); ++k) {
    if (!regions[k]) continue;
    n.require(build::ge(n.bindings[k], 0));
    n.require(build::lt(n.bindings[k], b.iter_vars[k].extent));
  }
  auto own = rebindPredicate(b, old_loops, n.bindings, bad);
  if (!own) return std::nullopt;
  for (const auto& c : *own) n.require(c);
  return n;
}

}  // namespace mlcc::schedule::compute
