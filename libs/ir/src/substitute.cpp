// Substitution of variables and buffers in TensorIR (see substitute.h).
#include "mlcc/ir/substitute.h"

#include "mlcc/ir/expr_functor.h"

namespace mlcc::ir {

void Substituter::mapVar(const Var& from, PrimExpr to) { vars_[from.get()] = std::move(to); }

void Substituter::mapBuffer(const Buffer& from, Buffer to) { buffers_[from.get()] = std::move(to); }

Buffer Substituter::operator()(const Buffer& b) {
  if (!b) return b;
  if (auto it = buffers_.find(b.get()); it != buffers_.end()) return it->second;
  if (auto it = rebuilt_.find(b.get()); it != rebuilt_.end()) return it->second;
  std::vector<PrimExpr> shape;
  bool changed = false;
  for (const auto& d : b->shape) {
    shape.push_back((*this)(d));
    changed |= shape.back() != d;
  }
  if (!changed) return b;
  Buffer nb = makeBuffer(b->name, b->dtype, std::move(shape), b->scope);
  rebuilt_[b.get()] = nb;
  return nb;
}

PrimExpr Substituter::operator()(const PrimExpr& e) {
  if (!e) return e;
  if (const auto* v = e->as<VarNode>()) {
    auto it = vars_.find(v);
    return it == vars_.end() ? e : it->second;
  }
  if (const auto* n = e->as<LoadNode>()) {
    Buffer buf = (*this)(n->buffer);
    if (buf != n->buffer) {
      std::vector<PrimExpr> idx;
      for (const auto& i : n->indices) idx.push_back((*this)(i));
      return makeLoad(buf, std::move(idx));
    }
  }
  return mapChildren(e, [this](const PrimExpr& x) { return (*this)(x); });
}

AttrValue Substituter::attr(const AttrValue& v) {
  if (v.isExpr()) return AttrValue((*this)(v.asExpr()));
  if (v.isList()) {
    AttrValue::List out;
    for (const auto& x : v.asList()) out.push_back(attr(x));
    return AttrValue(std::move(out));
  }
  return v;
}

Attrs Substituter::operator()(const Attrs& a) {
  Attrs out;
  for (const auto& [k, v] : a) out.emplace(k, attr(v));
  return out;
}

BufferRegion Substituter::region(const BufferRegion& r) {
  BufferRegion out{(*this)(r.buffer), {}};
  for (const auto& rg : r.region) out.region.push_back({(*this)(rg.min), (*this)(rg.extent)});
  return out;
}

Stmt Substituter::operator()(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::For: {
      const auto* n = s->as<ForNode>();
      PrimExpr lv = (*this)(PrimExpr(n->loop_var));
      Var v = lv && lv->kind == ExprKind::Var ? std::static_pointer_cast<const VarNode>(lv) : n->loop_var;
      return makeFor(v, (*this)(n->extent), (*this)(n->body), n->loop_kind, n->thread_tag, (*this)(n->attrs));
    }
    case StmtKind::Block: {
      const auto* n = s->as<BlockNode>();
      std::vector<IterVar> ivs;
      for (const auto& iv : n->iter_vars) {
        PrimExpr v = (*this)(PrimExpr(iv.var));
        Var var = v && v->kind == ExprKind::Var ? std::static_pointer_cast<const VarNode>(v) : iv.var;
        ivs.push_back({var, (*this)(iv.extent), iv.kind, (*this)(iv.binding)});
      }
      std::vector<BufferRegion> reads, writes;
      for (const auto& r : n->reads) reads.push_back(region(r));
      for (const auto& w : n->writes) writes.push_back(region(w));
      std::vector<Buffer> allocs;
      for (const auto& b : n->alloc_buffers) allocs.push_back((*this)(b));
      std::string name = rename_block ? rename_block(n->name) : n->name;
      Stmt init = (*this)(n->init);
      Stmt body = (*this)(n->body);
      return makeBlock(std::move(name), std::move(ivs), std::move(reads), std::move(writes), std::move(body),
                       std::move(init), (*this)(n->predicate), std::move(allocs), (*this)(n->attrs));
    }
    case StmtKind::Store: {
      const auto* n = s->as<StoreNode>();
      std::vector<PrimExpr> idx;
      for (const auto& i : n->indices) idx.push_back((*this)(i));
      return makeStore((*this)(n->buffer), std::move(idx), (*this)(n->value));
    }
    case StmtKind::Seq: {
      const auto* n = s->as<SeqNode>();
      std::vector<Stmt> stmts;
      for (const auto& x : n->stmts) stmts.push_back((*this)(x));
      return makeSeq(std::move(stmts));
    }
    case StmtKind::If: {
      const auto* n = s->as<IfNode>();
      return makeIf((*this)(n->cond), (*this)(n->then_case), (*this)(n->else_case));
    }
  }
  return s;
}

namespace {

// Non-owning handles for map keys (the maps hold the real nodes' addresses).
Var varKey(const VarNode* v) { return Var(std::shared_ptr<const VarNode>{}, v); }
Buffer bufferKey(const BufferNode* b) { return Buffer(std::shared_ptr<const BufferNode>{}, b); }

}  // namespace

PrimExpr substitute(const PrimExpr& e, const std::unordered_map<const VarNode*, PrimExpr>& vars) {
  Substituter sub;
  for (const auto& [k, v] : vars) sub.mapVar(varKey(k), v);
  return sub(e);
}

Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, PrimExpr>& vars,
                const std::unordered_map<const BufferNode*, Buffer>& buffers) {
  Substituter sub;
  for (const auto& [k, v] : vars) sub.mapVar(varKey(k), v);
  for (const auto& [k, v] : buffers) sub.mapBuffer(bufferKey(k), v);
  return sub(s);
}

}  // namespace mlcc::ir
