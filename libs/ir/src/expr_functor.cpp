// Generic expression traversal (see expr_functor.h).
#include "mlcc/ir/expr_functor.h"

namespace mlcc::ir {

namespace {
bool mapAll(const std::vector<PrimExpr>& in, std::vector<PrimExpr>& out,
            const std::function<PrimExpr(const PrimExpr&)>& f) {
  bool changed = false;
  for (const auto& x : in) {
    out.push_back(f(x));
    changed |= out.back() != x;
  }
  return changed;
}
}  // namespace

PrimExpr mapChildren(const PrimExpr& e, const std::function<PrimExpr(const PrimExpr&)>& f) {
  if (!e) return e;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return e;
    case ExprKind::Binary: {
      const auto* n = e->as<BinaryNode>();
      PrimExpr a = f(n->a), b = f(n->b);
      return a == n->a && b == n->b ? e : makeBinary(n->op, a, b);
    }
    case ExprKind::Unary: {
      const auto* n = e->as<UnaryNode>();
      PrimExpr a = f(n->a);
      return a == n->a ? e : makeUnary(n->op, a);
    }
    case ExprKind::Select: {
      const auto* n = e->as<SelectNode>();
      PrimExpr c = f(n->cond), t = f(n->true_value), v = f(n->false_value);
      return c == n->cond && t == n->true_value && v == n->false_value ? e : makeSelect(c, t, v);
    }
    case ExprKind::Cast: {
      const auto* n = e->as<CastNode>();
      PrimExpr v = f(n->value);
      return v == n->value ? e : makeCast(n->dtype, v);
    }
    case ExprKind::Load: {
      const auto* n = e->as<LoadNode>();
      std::vector<PrimExpr> idx;
      return mapAll(n->indices, idx, f) ? makeLoad(n->buffer, std::move(idx)) : e;
    }
    case ExprKind::Call: {
      const auto* n = e->as<CallNode>();
      std::vector<PrimExpr> args;
      return mapAll(n->args, args, f) ? makeCall(n->name, std::move(args)) : e;
    }
  }
  return e;
}

bool anyOf(const PrimExpr& e, const std::function<bool(const PrimExpr&)>& pred) {
  if (!e) return false;
  if (pred(e)) return true;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return false;
    case ExprKind::Binary: {
      const auto* n = e->as<BinaryNode>();
      return anyOf(n->a, pred) || anyOf(n->b, pred);
    }
    case ExprKind::Unary: return anyOf(e->as<UnaryNode>()->a, pred);
    case ExprKind::Select: {
      const auto* n = e->as<SelectNode>();
      return anyOf(n->cond, pred) || anyOf(n->true_value, pred) || anyOf(n->false_value, pred);
    }
    case ExprKind::Cast: return anyOf(e->as<CastNode>()->value, pred);
    case ExprKind::Load:
      for (const auto& i : e->as<LoadNode>()->indices)
        if (anyOf(i, pred)) return true;
      return false;
    case ExprKind::Call:
      for (const auto& a : e->as<CallNode>()->args)
        if (anyOf(a, pred)) return true;
      return false;
  }
  return false;
}

}  // namespace mlcc::ir
