// Helpers of the data movement legalizations (manipulate.cpp, resize.cpp):
// index arithmetic on PrimExprs that folds constants (so static shapes give
// plain literals), row-major flattening of an index and its inverse, clamped
// indices, and a one-stage prim func builder for ops computing one output
// element from an index formula over their inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/te.h"
#include "mlcc/ops/op.h"

namespace mlcc::ops::legal_mv {

// Comparisons and logic come from the IR builder.
using ir::build::eq;
using ir::build::ge;
using ir::build::lt;
template <class A, class B>
ir::PrimExpr both(const A& a, const B& b) {
  return ir::build::land(a, b);
}

using ir::PrimExpr;

// a + b, a - b, a * b, a / b (floor) and a % b (floor) on i64 index
// expressions, folded when both are constants and simplified for 0 and 1.
PrimExpr add(const PrimExpr& a, const PrimExpr& b);
PrimExpr sub(const PrimExpr& a, const PrimExpr& b);
PrimExpr mul(const PrimExpr& a, const PrimExpr& b);
PrimExpr floorDiv(const PrimExpr& a, const PrimExpr& b);
PrimExpr floorMod(const PrimExpr& a, const PrimExpr& b);
PrimExpr idx(int64_t v);
// Comparisons and conjunction as expressions. (builder.h's `<` on two
// PrimExprs loses overload resolution to std::operator<=> on shared_ptr and
// silently compares pointers; these never do.)
// min(a, b) and max(a, b), folded when both are constants.
PrimExpr minOf(const PrimExpr& a, const PrimExpr& b);
PrimExpr maxOf(const PrimExpr& a, const PrimExpr& b);
// The value of an expression folded to a constant (throws when it is not).
int64_t constValue(const PrimExpr& e);

// The iteration variables of a stage as expressions.
std::vector<PrimExpr> exprs(const ir::te::Indices& vars);

// Row-major linear offset of `index` in `shape` (0 for a scalar).
PrimExpr flatten(const std::vector<PrimExpr>& index, const std::vector<PrimExpr>& shape);
// The index of linear offset `linear` in `shape` (the first axis takes the
// quotient without a modulo, so its extent is never needed).
std::vector<PrimExpr> unflatten(const PrimExpr& linear, const std::vector<PrimExpr>& shape);

// e clamped into [0, extent - 1].
PrimExpr clampIndex(const PrimExpr& e, const PrimExpr& extent);

// A loaded index `v` (i32 or i64) into an axis of size `extent`, as i64:
// negative counts from the end, then clamped into the axis (TensorIR cannot
// raise where the reference kernels reject an index out of range).
PrimExpr wrappedIndex(PrimExpr v, const PrimExpr& extent);

// Whether any dimension of `shape` is the constant 0.
bool hasZeroDim(const std::vector<PrimExpr>& shape);

// A prim func of one compute stage named `op`: parameters are one buffer per
// input type (named x, x_1, ... by te) then the output; `value` computes an
// output element from the input buffers and the output index. An output
// with a constant 0 dimension gives a function without statements.
using MoveFn =
    std::function<PrimExpr(const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& out_idx)>;
ir::PrimFunc singleStage(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Type& output,
                         const MoveFn& value);

}  // namespace mlcc::ops::legal_mv
