// Generic traversal of TensorIR expressions, so that passes write only the
// cases they care about:
//
//   // every load of buffer B replaced, the rest rebuilt only where it changed
//   std::function<PrimExpr(const PrimExpr&)> f = [&](const PrimExpr& e) {
//     if (auto* l = e->as<LoadNode>(); l && l->buffer == B) return ...;
//     return mapChildren(e, f);
//   };
//   bool uses_i = anyOf(e, [&](const PrimExpr& x) { return x == i; });
//   // a walk that visits every load, each before its indices
//   std::function<void(const PrimExpr&)> walk = [&](const PrimExpr& x) {
//     if (auto* l = x->as<LoadNode>()) loads.push_back(l);
//     forEachChild(x, walk);
//   };
#pragma once

#include <functional>
#include <vector>

#include "mlcc/ir/expr.h"

namespace mlcc::ir {

// `e` with each direct sub-expression x replaced by f(x); `e` itself (the
// same node) when none changed. Leaves (constants, variables) are returned
// as they are.
PrimExpr mapChildren(const PrimExpr& e, const std::function<PrimExpr(const PrimExpr&)>& f);

// Calls f on each direct sub-expression of `e`, in order (a binary's a then
// b; a select's condition, true then false value; a cast's value; a load's
// indices; a call's arguments). Nothing for leaves or a null expression.
void forEachChild(const PrimExpr& e, const std::function<void(const PrimExpr&)>& f);

// Whether `pred` holds for `e` or any of its sub-expressions (pre-order,
// stopping at the first hit). False for a null expression.
bool anyOf(const PrimExpr& e, const std::function<bool(const PrimExpr&)>& pred);

// Whether a and b are the same expression: the same structure over the same
// Var and Buffer nodes (variables compare by identity, not by name), float
// constants of the same bits. Both null counts as the same.
bool sameExpr(const PrimExpr& a, const PrimExpr& b);

// The operands of a predicate's && chain, nested ones flattened, constant
// true ones left out (none for a null predicate).
std::vector<PrimExpr> conjuncts(const PrimExpr& pred);

// `e` with every sub-expression that is the same as `part` (sameExpr)
// replaced by `by`, looking through binary operators only.
PrimExpr replaceExpr(const PrimExpr& e, const PrimExpr& part, const PrimExpr& by);

}  // namespace mlcc::ir
