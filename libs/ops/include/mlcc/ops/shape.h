// Shape helpers for type inference over symbolic dimensions: numpy
// broadcasting, dimension equality and simple arithmetic that folds
// constants, so inferred shapes stay readable (`n`, not `n * 1 + 0`).
#pragma once

#include <cstdint>
#include <vector>

#include "mlcc/ir/expr.h"
#include "mlcc/ir/graph.h"

namespace mlcc::ops {

using Shape = std::vector<ir::PrimExpr>;

// Dimension arithmetic (i64), folding constants and identities.
ir::PrimExpr dimAdd(const ir::PrimExpr& a, const ir::PrimExpr& b);
ir::PrimExpr dimSub(const ir::PrimExpr& a, const ir::PrimExpr& b);
ir::PrimExpr dimMul(const ir::PrimExpr& a, const ir::PrimExpr& b);
ir::PrimExpr dimFloorDiv(const ir::PrimExpr& a, const ir::PrimExpr& b);
ir::PrimExpr dimConst(int64_t v);

// True when the two dimensions are the same: equal constants, the same
// variable, or structurally identical expressions.
bool dimEqual(const ir::PrimExpr& a, const ir::PrimExpr& b);
bool isConstDim(const ir::PrimExpr& d, int64_t value);

// numpy broadcasting of shapes; throws mlcc::Error naming `op` when two
// dimensions are neither equal nor 1.
Shape broadcastShapes(const Shape& a, const Shape& b, const char* op);

// The concrete shape of a static type; nullopt-like: returns false when a
// dimension is symbolic.
bool staticShape(const Shape& s, std::vector<int64_t>* out);
Shape constShape(const std::vector<int64_t>& dims);

// The tensor type of operand `i` (throws when it is a tuple).
const ir::Type& tensorOperand(const std::vector<ir::Type>& inputs, size_t i, const char* op);

}  // namespace mlcc::ops

namespace mlcc::ops {

// True when two i64 dimension expressions are the same function of their
// symbolic variables (`batch + batch` and `batch * 2`): they are evaluated
// at several assignments of the variables and must agree at each.
bool dimsEquivalent(const ir::PrimExpr& a, const ir::PrimExpr& b);

// Types equal up to dimsEquivalent dimensions (dtype, rank, tuple structure).
bool typesEquivalent(const ir::Type& a, const ir::Type& b);

}  // namespace mlcc::ops
