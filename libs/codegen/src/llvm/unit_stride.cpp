// Also: whether a loop updates a reduction (a register tile's vector), and
// the coefficient of a variable in an index that both build on.
// Whether a vectorized loop's memory accesses are all contiguous along it
// (kernel_emitter.cpp makes small such loops one vector of their extent;
// strided ones, e.g. a stride-2 convolution's input, would become gathers).
// The loop variable's coefficient is followed through block bindings into
// every load and store index; an index it enters other than linearly (a
// division, a modulo, a select, a call) counts as not contiguous.
#include <optional>
#include <unordered_map>

#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

namespace {

bool independent(const ir::PrimExpr& e, const Coeffs& c) {
  auto k = coefficient(e, c);
  return k && *k == 0;
}

}  // namespace

std::optional<int64_t> coefficient(const ir::PrimExpr& e, const Coeffs& c) {
  if (!e) return 0;
  if (const auto* v = e->as<ir::VarNode>()) {
    auto it = c.find(v);
    return it == c.end() ? 0 : it->second;
  }
  if (e->as<ir::IntImmNode>() || e->as<ir::FloatImmNode>()) return 0;
  if (const auto* b = e->as<ir::BinaryNode>()) {
    auto x = coefficient(b->a, c), y = coefficient(b->b, c);
    if (!x || !y) return std::nullopt;
    int64_t k;
    switch (b->op) {
      case ir::BinaryOp::Add: return *x + *y;
      case ir::BinaryOp::Sub: return *x - *y;
      case ir::BinaryOp::Mul:
        if (*y == 0 && ir::asConstInt(b->b, &k)) return *x * k;
        if (*x == 0 && ir::asConstInt(b->a, &k)) return *y * k;
        break;
      default: break;
    }
    return *x == 0 && *y == 0 ? std::optional<int64_t>(0) : std::nullopt;
  }
  if (const auto* u = e->as<ir::UnaryNode>())
    return independent(u->a, c) ? std::optional<int64_t>(0) : std::nullopt;
  if (const auto* s = e->as<ir::SelectNode>())
    return independent(s->cond, c) && independent(s->true_value, c) && independent(s->false_value, c)
               ? std::optional<int64_t>(0)
               : std::nullopt;
  if (const auto* cast = e->as<ir::CastNode>())
    return independent(cast->value, c) ? std::optional<int64_t>(0) : std::nullopt;
  if (const auto* call = e->as<ir::CallNode>()) {
    for (const auto& a : call->args)
      if (!independent(a, c)) return std::nullopt;
    return 0;
  }
  return std::nullopt;  // a load's value (or anything else) varies unpredictably
}

namespace {

// Every index of an access: the last one moves by 0 or 1 per iteration, the
// others do not move.
bool contiguousAccess(const std::vector<ir::PrimExpr>& indices, const Coeffs& c) {
  for (size_t i = 0; i < indices.size(); ++i) {
    auto k = coefficient(indices[i], c);
    if (!k || (i + 1 == indices.size() ? (*k != 0 && *k != 1) : *k != 0)) return false;
  }
  return true;
}

bool contiguousExpr(const ir::PrimExpr& e, const Coeffs& c) {
  if (!e) return true;
  if (const auto* l = e->as<ir::LoadNode>()) {
    if (!contiguousAccess(l->indices, c)) return false;
    for (const auto& i : l->indices)
      if (!contiguousExpr(i, c)) return false;
    return true;
  }
  if (const auto* b = e->as<ir::BinaryNode>()) return contiguousExpr(b->a, c) && contiguousExpr(b->b, c);
  if (const auto* u = e->as<ir::UnaryNode>()) return contiguousExpr(u->a, c);
  if (const auto* s = e->as<ir::SelectNode>())
    return contiguousExpr(s->cond, c) && contiguousExpr(s->true_value, c) &&
           contiguousExpr(s->false_value, c);
  if (const auto* cast = e->as<ir::CastNode>()) return contiguousExpr(cast->value, c);
  if (const auto* call = e->as<ir::CallNode>()) {
    for (const auto& a : call->args)
      if (!contiguousExpr(a, c)) return false;
  }
  return true;
}

bool contiguousStmt(const ir::Stmt& s, Coeffs& c) {
  if (!s) return true;
  if (const auto* st = s->as<ir::StoreNode>()) {
    if (!contiguousAccess(st->indices, c) || !contiguousExpr(st->value, c)) return false;
    for (const auto& i : st->indices)
      if (!contiguousExpr(i, c)) return false;
    return true;
  }
  if (const auto* seq = s->as<ir::SeqNode>()) {
    for (const auto& x : seq->stmts)
      if (!contiguousStmt(x, c)) return false;
    return true;
  }
  if (const auto* i = s->as<ir::IfNode>())
    return contiguousExpr(i->cond, c) && contiguousStmt(i->then_case, c) && contiguousStmt(i->else_case, c);
  if (const auto* f = s->as<ir::ForNode>()) return independent(f->extent, c) && contiguousStmt(f->body, c);
  if (const auto* b = s->as<ir::BlockNode>()) {
    for (const auto& iv : b->iter_vars) {
      auto k = coefficient(iv.binding, c);
      if (!k) return false;
      c[iv.var.get()] = *k;
    }
    return contiguousExpr(b->predicate, c) && contiguousStmt(b->init, c) && contiguousStmt(b->body, c);
  }
  return false;
}

}  // namespace

bool contiguousAlongLoop(const ir::ForNode& f) {
  Coeffs c{{f.loop_var.get(), 1}};
  return contiguousStmt(f.body, c);
}

namespace {

bool reduces(const ir::Stmt& s) {
  if (!s) return false;
  if (const auto* seq = s->as<ir::SeqNode>()) {
    for (const auto& x : seq->stmts)
      if (reduces(x)) return true;
    return false;
  }
  if (const auto* i = s->as<ir::IfNode>()) return reduces(i->then_case) || reduces(i->else_case);
  if (const auto* f = s->as<ir::ForNode>()) return reduces(f->body);
  if (const auto* b = s->as<ir::BlockNode>()) {
    for (const auto& iv : b->iter_vars)
      if (iv.kind == ir::IterKind::reduce) return true;
    return reduces(b->body);
  }
  return false;
}

}  // namespace

bool updatesReduction(const ir::ForNode& f) { return reduces(f.body); }

}  // namespace mlcc::codegen
