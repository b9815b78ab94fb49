// Replacing a predicate-bounded part of an index by the variable that
// stands for it (see arith.h replaceBoundedPart).
#include <functional>
#include <set>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"

namespace mlcc::ir {

namespace {

void varsOf(const PrimExpr& e, std::set<const VarNode*>& out) {
  if (!e) return;
  if (const auto* v = e->as<VarNode>()) out.insert(v);
  forEachChild(e, [&](const PrimExpr& x) { varsOf(x, out); });
}

// The positive constant divisors of the floor divisions and modulos in `e`.
std::set<int64_t> divisors(const PrimExpr& e) {
  std::set<int64_t> out;
  std::function<void(const PrimExpr&)> walk = [&](const PrimExpr& x) {
    if (const auto* b = x->as<BinaryNode>(); b && (b->op == BinaryOp::Div || b->op == BinaryOp::Mod))
      if (int64_t d; asConstInt(b->b, &d) && d > 0) out.insert(d);
    forEachChild(x, walk);
  };
  walk(e);
  return out;
}

}  // namespace

PrimExpr replaceBoundedPart(const PrimExpr& binding, const PrimExpr& part, const Var& z, const Analyzer& az) {
  PrimExpr replaced = replaceExpr(binding, part, z);
  if (replaced != binding) return replaced;
  std::set<const VarNode*> vars;
  varsOf(part, vars);
  // rest + part / d or rest + part % d (d = 1: rest + part), rest free of
  // the part's variables.
  std::set<int64_t> ds = divisors(binding);
  ds.insert(1);
  for (int64_t d : ds)
    for (BinaryOp op : {BinaryOp::Div, BinaryOp::Mod}) {
      if (d == 1 && op == BinaryOp::Mod) continue;
      const PrimExpr piece = d == 1 ? part : makeBinary(op, part, makeInt(d));
      const PrimExpr rest = az.simplify(makeBinary(BinaryOp::Sub, binding, az.simplify(piece)));
      std::set<const VarNode*> left;
      varsOf(rest, left);
      bool free = true;
      for (const auto* v : vars) free &= !left.count(v);
      if (free) return makeBinary(BinaryOp::Add, rest, d == 1 ? PrimExpr(z) : makeBinary(op, z, makeInt(d)));
    }
  // Or in the operands (`(%f * 4 + (%t * 8 + %u) / 16) % 3`: the part
  // divided inside a modulo).
  if (const auto* b = binding->as<BinaryNode>()) {
    PrimExpr x = replaceBoundedPart(b->a, part, z, az), y = replaceBoundedPart(b->b, part, z, az);
    if (x != b->a || y != b->b) return makeBinary(b->op, x, y);
  }
  return binding;
}

}  // namespace mlcc::ir
