// Generic traversal of TensorIR statements, so that passes write only the
// cases they care about (as mlcc/ir/expr_functor.h for expressions):
//
//   // every block's predicate dropped, the rest rebuilt only where it changed
//   std::function<Stmt(const Stmt&)> f = [&](const Stmt& s) {
//     Stmt out = mapChildren(s, f);
//     if (auto* b = out->as<BlockNode>(); b && b->predicate) return makeBlock(..., nullptr, ...);
//     return out;
//   };
#pragma once

#include <functional>

#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

// `s` with `f` applied to its child statements (a loop's body, a sequence's
// items, an if's branches, a block's init and body; a store has none),
// rebuilt only where one changed.
Stmt mapChildren(const Stmt& s, const std::function<Stmt(const Stmt&)>& f);

}  // namespace mlcc::ir
