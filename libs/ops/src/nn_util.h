// Internal helpers of the linalg, conv and pool op families: error messages,
// attribute checks, f32 conversion of host tensors, and the blocked f32 GEMM
// that matmul, dense and the convolutions share (defined in linalg.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "op_util.h"

namespace mlcc::ops::nn {

[[noreturn]] inline void fail(const char* op, const std::string& msg) {
  throw Error(std::string("op '") + op + "': " + msg);
}

inline std::string dimStr(const ir::PrimExpr& d) { return ir::printExpr(d); }

// Tensor operand `i` of rank `rank` (-1: any); `what` names it in messages.
inline const ir::Type& operand(const std::vector<ir::Type>& inputs, size_t i, const char* op, int rank,
                               const char* what) {
  const ir::Type& t = tensorOperand(inputs, i, op);
  if (rank >= 0 && static_cast<int>(t.rank()) != rank)
    fail(op, std::string(what) + " must have rank " + std::to_string(rank) + ", not " + ir::printType(t));
  return t;
}

inline void requireFloat(const ir::Type& t, const char* op, const char* what) {
  if (!ir::isFloat(t.dtype))
    fail(op, std::string(what) + " must be a float tensor (f32, f16, bf16), not " + ir::printType(t));
}

inline void requireSameDType(const ir::Type& a, const ir::Type& b, const char* op) {
  if (a.dtype != b.dtype)
    fail(op, "operands must have the same dtype, not " + std::string(ir::dtypeName(a.dtype)) + " and " +
                 std::string(ir::dtypeName(b.dtype)));
}

// A list-of-ints attribute with `size` items, each >= `min`.
inline std::vector<int64_t> intsAttr(const ir::Attrs& attrs, const char* name, const char* op, size_t size,
                                     int64_t min) {
  std::vector<int64_t> v = attrInts(attrs, name);
  if (v.size() != size)
    fail(op, std::string("attribute '") + name + "' must have " + std::to_string(size) + " items, not " +
                 std::to_string(v.size()));
  // Window sizes, strides, dilations and paddings are bounded (2^31), so the
  // window arithmetic on any valid dimension cannot overflow.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (int64_t x : v)
    if (x < min || x > kMax)
      fail(op, std::string("attribute '") + name + "' items must be between " + std::to_string(min) +
                   " and " + std::to_string(kMax) + ", not " + std::to_string(x));
  return v;
}

// A constant dimension, or an error naming it when it is symbolic.
inline int64_t constDim(const ir::PrimExpr& d, const char* op, const std::string& what) {
  int64_t v;
  if (!ir::asConstInt(d, &v)) fail(op, what + " must be a constant, not " + dimStr(d));
  return v;
}

// The elements of a float tensor as f32: the tensor's own data when it is
// f32, else converted into `storage`.
inline const float* f32Data(const ir::Tensor& t, std::vector<float>& storage) {
  if (t.dtype() == ir::DType::f32) return t.data<float>();
  int64_t n = t.numel();
  storage.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) storage[static_cast<size_t>(i)] = static_cast<float>(t.at(i));
  return storage.data();
}

// A tensor of `dtype` from f32 values (rounded to the dtype).
inline ir::Tensor fromF32(ir::DType dtype, std::vector<int64_t> shape, const float* values) {
  ir::Tensor out = ir::Tensor::zeros(dtype, std::move(shape));
  int64_t n = out.numel();
  if (dtype == ir::DType::f32) {
    float* o = out.mutableData<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = values[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out.set(i, values[i]);
  }
  return out;
}

// The indices i in [0, count) with 0 <= i * stride + offset < limit, as [*lo, *hi).
inline void validRange(int64_t count, int64_t stride, int64_t offset, int64_t limit, int64_t* lo,
                       int64_t* hi) {
  int64_t l = offset < 0 ? (-offset + stride - 1) / stride : 0;
  int64_t h = limit - 1 - offset < 0 ? 0 : (limit - 1 - offset) / stride + 1;
  h = h < count ? h : count;
  *lo = l < h ? l : h;
  *hi = h;
}

// C[M, N] (row stride ldc, contiguous rows) = (accumulate ? C : 0) + A·B, where
// A[i, k] = a[i * a_rs + k * a_cs] and B[k, j] = b[k * b_rs + j * b_cs].
// Packs panels of A and B and runs a register-blocked micro-kernel.
void sgemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
           int64_t b_rs, int64_t b_cs, float* c, int64_t ldc, bool accumulate);

}  // namespace mlcc::ops::nn
