// Shared helpers of the linalg, conv and pool legalizations (TensorIR
// compute definitions built with ir::te): folded index arithmetic, the
// accumulation dtype of the reference kernels (f16/bf16 compute in f32),
// padding and cast stages, and the count of in-range window taps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/expr.h"
#include "mlcc/ir/te.h"

namespace mlcc::ops::nnlegal {

// e * c and e + c, folding c == 1 / c == 0 (index arithmetic, i64).
ir::PrimExpr mulC(const ir::PrimExpr& e, int64_t c);
ir::PrimExpr addC(const ir::PrimExpr& e, int64_t c);

// The dtype the reference kernels compute in: f32 for f16/bf16 (they
// convert to f32 and round the result), else the dtype itself.
ir::DType accDType(ir::DType t);

// `e` converted to `t` (no cast when it already is one).
ir::PrimExpr castTo(ir::DType t, const ir::PrimExpr& e);

// a < b as an IR comparison. (Write it so when both sides are PrimExprs:
// `a < b` on two std::shared_ptrs picks std::operator<, comparing pointers.)
ir::PrimExpr less(const ir::PrimExpr& a, const ir::PrimExpr& b);

// 0 <= e && e < limit.
ir::PrimExpr inRange(const ir::PrimExpr& e, const ir::PrimExpr& limit);

// te::guardedLoad clamping only the axes where `clamp` is true (the others'
// indices are always in bounds), so the read regions stay exact there.
ir::PrimExpr guardedLoad(const ir::Buffer& buffer, const std::vector<ir::PrimExpr>& indices,
                         const std::vector<bool>& clamp, const ir::PrimExpr& in_bounds,
                         const ir::PrimExpr& fallback);

// A stage `name` holding `src` converted to `t`; `src` itself when it
// already has dtype `t`.
ir::Buffer castStage(ir::te::FuncBuilder& fb, const std::string& name, const ir::Buffer& src, ir::DType t);

// A stage `name`: `x` padded by before[d] / after[d] elements of `value` on
// each axis d (as TVM's topi.nn.pad). `x` itself when every pad is 0.
ir::Buffer padStage(ir::te::FuncBuilder& fb, const std::string& name, const ir::Buffer& x,
                    const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                    const ir::PrimExpr& value);

// The number of taps j in [0, k) with 0 <= start + j * dilation < limit
// (an i64 expression, >= 0).
ir::PrimExpr validTaps(const ir::PrimExpr& start, int64_t k, int64_t dilation, const ir::PrimExpr& limit);

// Whether every tap of every window of a pooled axis lies in [0, limit):
// windows start at o * stride - pad_before for o in [0, out), with taps
// j * dilation for j in [0, k). False when `in` or `out` is symbolic.
bool windowsInside(const ir::PrimExpr& limit, const ir::PrimExpr& out, int64_t k, int64_t stride,
                   int64_t pad_before, int64_t dilation);

}  // namespace mlcc::ops::nnlegal
