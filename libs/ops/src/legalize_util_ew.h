// Helpers for the TensorIR compute definitions (legalization, see
// OpDef::legalize) of the elementwise, reduction and normalization families:
// numpy-broadcast indexing, f16/bf16 staging through f32, the kernels' exact
// scalar semantics (NaN-propagating maximum, truncating integer division,
// std::min/std::max) and reductions over a list of axes.
//
// Expression semantics to keep in mind (libs/interp, expr.h): integer `/`
// and `%` are floor division/modulo and throw on a zero divisor; float
// min/max are fmin/fmax (a NaN operand is ignored); every f16/bf16
// operation rounds to its dtype, so kernels that stage in f32 are lowered by
// casting the loads to f32 and the result back once.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/te.h"
#include "mlcc/ops/shape.h"

namespace mlcc::ops::lew {

// Comparisons and logic come from the IR builder.
using ir::build::ge;
using ir::build::gt;
using ir::build::land;
using ir::build::le;
using ir::build::lor;
using ir::build::lt;

using ir::Buffer;
using ir::DType;
using ir::PrimExpr;

// ---------------------------------------------------------------------------
// Broadcasting.

// The indices into an operand of shape `in_shape` for output indices `out_idx`
// of the broadcast shape `out_shape` (numpy: right-aligned; an operand dim
// that is the constant 1 where the output's is not is indexed with 0; any
// other dim, symbolic or constant, equals the output's and takes its index).
std::vector<PrimExpr> broadcastIndices(const Shape& in_shape, const Shape& out_shape,
                                       const std::vector<ir::Var>& out_idx);

// load(b, broadcastIndices(b->shape, out_shape, out_idx)).
PrimExpr loadBroadcast(const Buffer& b, const Shape& out_shape, const std::vector<ir::Var>& out_idx);

// ---------------------------------------------------------------------------
// Scalar helpers.

// Whether the kernels stage this dtype through f32 (f16, bf16).
bool isHalf(DType t);
// A float expression in the dtype its op computes in: f16/bf16 cast to f32,
// f32 and f64 as they are; and a computed value cast back to `t`.
PrimExpr staged(const PrimExpr& e);
PrimExpr fromF32(const PrimExpr& e, DType t);

// Comparisons and logic of two expressions. (The builder's operators do not
// apply to two PrimExprs for `<`...: std::shared_ptr's own comparison
// operators, which compare pointers, are picked.)

// A literal of the expression's dtype.
PrimExpr lit(const PrimExpr& like, double v);

// std::min(a, b) = b < a ? b : a and std::max(a, b) = a < b ? b : a (a NaN
// operand is kept only in some positions; the kernels' exact semantics).
PrimExpr stdMin(const PrimExpr& a, const PrimExpr& b);
PrimExpr stdMax(const PrimExpr& a, const PrimExpr& b);
// numpy maximum/minimum: a NaN in either operand propagates; integers as usual.
PrimExpr nanMaximum(const PrimExpr& a, const PrimExpr& b);
PrimExpr nanMinimum(const PrimExpr& a, const PrimExpr& b);

// Integer division truncating toward zero (C++ / ONNX), x / 0 = 0 (the
// kernels' convention; TIR `/` would trap). Wraps as the dtype does.
PrimExpr truncDiv(const PrimExpr& a, const PrimExpr& b);
// The remainder of truncDiv (sign of a; C++ %), and the floor modulo (sign
// of b; python %), both 0 for b = 0.
PrimExpr truncMod(const PrimExpr& a, const PrimExpr& b);
PrimExpr floorMod(const PrimExpr& a, const PrimExpr& b);

// ---------------------------------------------------------------------------
// Reductions over a set of axes.

struct AxesReduce {
  Shape out_shape;                // kept dims (reduced ones as 1 with keepdims)
  std::vector<PrimExpr> extents;  // the reduced dims, in order
  std::vector<bool> reduced;      // per input dim
  bool keepdims = false;
  PrimExpr count;  // number of elements reduced into each output (i64)

  // The input indices of output indices `i` and reduce indices `r`.
  std::vector<PrimExpr> inputIndices(const std::vector<ir::Var>& i, const std::vector<ir::Var>& r) const;
  // The output indices (for a stage of out_shape) of the input element at
  // input indices `in` (reduced dims: 0 with keepdims, else dropped), e.g.
  // to read a reduced statistic from a stage of the input's shape.
  std::vector<PrimExpr> statIndices(const std::vector<ir::Var>& in) const;
};

AxesReduce planAxesReduce(const Shape& in_shape, const std::vector<bool>& reduced, bool keepdims);

// A stage `name` of `plan.out_shape` that is 1 (i8) where some reduced
// element of `value` (given input indices) is NaN, else 0.
Buffer anyNaN(ir::te::FuncBuilder& fb, const std::string& name, const AxesReduce& plan,
              const std::function<PrimExpr(const std::vector<PrimExpr>& in_idx)>& value);

}  // namespace mlcc::ops::lew
