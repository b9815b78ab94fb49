// Generic traversal of TensorIR expressions, so that passes write only the
// cases they care about:
//
//   // every load of buffer B replaced, the rest rebuilt only where it changed
//   std::function<PrimExpr(const PrimExpr&)> f = [&](const PrimExpr& e) {
//     if (auto* l = e->as<LoadNode>(); l && l->buffer == B) return ...;
//     return mapChildren(e, f);
//   };
//   bool uses_i = anyOf(e, [&](const PrimExpr& x) { return x == i; });
#pragma once

#include <functional>

#include "mlcc/ir/expr.h"

namespace mlcc::ir {

// `e` with each direct sub-expression x replaced by f(x); `e` itself (the
// same node) when none changed. Leaves (constants, variables) are returned
// as they are.
PrimExpr mapChildren(const PrimExpr& e, const std::function<PrimExpr(const PrimExpr&)>& f);

// Whether `pred` holds for `e` or any of its sub-expressions (pre-order,
// stopping at the first hit). False for a null expression.
bool anyOf(const PrimExpr& e, const std::function<bool(const PrimExpr&)>& pred);

}  // namespace mlcc::ir
