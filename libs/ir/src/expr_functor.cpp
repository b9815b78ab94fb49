// Generic expression traversal (see expr_functor.h).
#include "mlcc/ir/expr_functor.h"

#include <bit>
#include <cstdint>

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

void forEachChild(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f) {
  if (!e) return;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: return;
    case ExprKind::Binary:
      f(e->as<BinaryNode>()->a);
      f(e->as<BinaryNode>()->b);
      return;
    case ExprKind::Unary: f(e->as<UnaryNode>()->a); return;
    case ExprKind::Select: {
      const auto* n = e->as<SelectNode>();
      f(n->cond);
      f(n->true_value);
      f(n->false_value);
      return;
    }
    case ExprKind::Cast: f(e->as<CastNode>()->value); return;
    case ExprKind::Load:
      for (const auto& i : e->as<LoadNode>()->indices) f(i);
      return;
    case ExprKind::Call:
      for (const auto& a : e->as<CallNode>()->args) f(a);
      return;
  }
}

bool anyOf(const PrimExpr& e, const std::function<bool(const PrimExpr&)>& pred) {
  if (!e) return false;
  if (pred(e)) return true;
  bool found = false;
  forEachChild(e, [&](const PrimExpr& x) { found = found || anyOf(x, pred); });
  return found;
}

bool sameExpr(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->dtype != b->dtype) return false;
  auto allSame = [](const std::vector<PrimExpr>& x, const std::vector<PrimExpr>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!sameExpr(x[i], y[i])) return false;
    return true;
  };
  switch (a->kind) {
    case ExprKind::IntImm: return a->as<IntImmNode>()->value == b->as<IntImmNode>()->value;
    case ExprKind::FloatImm:
      return std::bit_cast<uint64_t>(a->as<FloatImmNode>()->value) ==
             std::bit_cast<uint64_t>(b->as<FloatImmNode>()->value);
    case ExprKind::Var: return false;  // different nodes
    case ExprKind::Binary: {
      const auto *x = a->as<BinaryNode>(), *y = b->as<BinaryNode>();
      return x->op == y->op && sameExpr(x->a, y->a) && sameExpr(x->b, y->b);
    }
    case ExprKind::Unary: {
      const auto *x = a->as<UnaryNode>(), *y = b->as<UnaryNode>();
      return x->op == y->op && sameExpr(x->a, y->a);
    }
    case ExprKind::Select: {
      const auto *x = a->as<SelectNode>(), *y = b->as<SelectNode>();
      return allSame({x->cond, x->true_value, x->false_value}, {y->cond, y->true_value, y->false_value});
    }
    case ExprKind::Cast: return sameExpr(a->as<CastNode>()->value, b->as<CastNode>()->value);
    case ExprKind::Load: {
      const auto *x = a->as<LoadNode>(), *y = b->as<LoadNode>();
      return x->buffer == y->buffer && allSame(x->indices, y->indices);
    }
    case ExprKind::Call: {
      const auto *x = a->as<CallNode>(), *y = b->as<CallNode>();
      return x->name == y->name && allSame(x->args, y->args);
    }
  }
  return false;
}

std::vector<PrimExpr> conjuncts(const PrimExpr& pred) {
  if (!pred) return {};
  if (const auto* b = pred->as<BinaryNode>(); b && b->op == BinaryOp::And) {
    std::vector<PrimExpr> out = conjuncts(b->a), rest = conjuncts(b->b);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  int64_t v;
  if (asConstInt(pred, &v) && v != 0) return {};
  return {pred};
}

PrimExpr replaceExpr(const PrimExpr& e, const PrimExpr& part, const PrimExpr& by) {
  if (sameExpr(e, part)) return by;
  const auto* b = e ? e->as<BinaryNode>() : nullptr;
  if (!b) return e;
  PrimExpr x = replaceExpr(b->a, part, by), y = replaceExpr(b->b, part, by);
  return x == b->a && y == b->b ? e : makeBinary(b->op, x, y);
}

}  // namespace mlcc::ir
