// Internal helpers of the elementwise, reduction and normalization kernels:
// dtype classes for type checks, f16/bf16 <-> f32 staging, dtype dispatch
// and a broadcasting iterator over precomputed strides.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/dtype_storage.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "op_util.h"

namespace mlcc::ops::ew {

// Which dtypes an operand accepts (ops.md: float, num, any, bool).
enum class DClass : uint8_t { Float, Num, Any, Bool, Int };

inline bool inClass(ir::DType t, DClass c) {
  switch (c) {
    case DClass::Float: return ir::isFloat(t);
    case DClass::Num: return ir::isFloat(t) || ir::isInt(t);
    case DClass::Any: return true;
    case DClass::Bool: return t == ir::DType::boolean;
    case DClass::Int: return ir::isInt(t);
  }
  return false;
}

inline const char* className(DClass c) {
  switch (c) {
    case DClass::Float: return "a float";
    case DClass::Num: return "a numeric";
    case DClass::Any: return "any";
    case DClass::Bool: return "a bool";
    case DClass::Int: return "an integer";
  }
  return "?";
}

// Throws "op 'sigmoid' needs a float operand, not i64".
inline void checkClass(const std::string& op, ir::DType t, DClass c, const char* what = "operand") {
  if (!inClass(t, c))
    throw Error("op '" + op + "' needs " + className(c) + " " + what + ", not " +
                std::string(ir::dtypeName(t)));
}

// Operands `first..` must all have the dtype of operand `first`.
inline void checkSameDType(const std::string& op, const std::vector<ir::Type>& in, size_t first = 0) {
  for (size_t i = first + 1; i < in.size(); ++i)
    if (in[i].dtype != in[first].dtype)
      throw Error("op '" + op + "' needs operands of the same dtype, not " +
                  std::string(ir::dtypeName(in[first].dtype)) + " and " +
                  std::string(ir::dtypeName(in[i].dtype)));
}

// A copy of a float tensor as f32 (f32 tensors are returned as they are).
// Never used on f64 operands: ops that stage in f32 refuse f64 (OpDef::f64).
inline ir::Tensor toF32(const ir::Tensor& t) {
  if (t.dtype() == ir::DType::f32) return t;
  ir::Tensor out = ir::Tensor::zeros(ir::DType::f32, t.shape());
  float* o = out.mutableData<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) o[i] = static_cast<float>(t.at(i));
  return out;
}

// An f32 tensor converted to dtype `t` (rounded to nearest even).
inline ir::Tensor fromF32(const ir::Tensor& f, ir::DType t) {
  if (t == ir::DType::f32) return f;
  ir::Tensor out = ir::Tensor::zeros(t, f.shape());
  const float* p = f.data<float>();
  for (int64_t i = 0, n = f.numel(); i < n; ++i) out.set(i, p[i]);
  return out;
}

// Calls fn(T{}) with the C++ storage type of a dtype other than f16/bf16
// (mlcc/ir/dtype_storage.h); callers stage f16/bf16 in f32.
template <class Fn>
decltype(auto) dispatchStorage(ir::DType t, Fn&& fn) {
  return ir::withStorageType(t, std::forward<Fn>(fn));
}

inline std::vector<int64_t> shapeOf(const ir::Type& t, bool* is_static = nullptr) {
  std::vector<int64_t> s;
  bool ok = staticShape(t.shape, &s);
  if (is_static) *is_static = ok;
  return ok ? s : std::vector<int64_t>{};
}

// numpy broadcasting of concrete shapes (already validated by inference).
inline std::vector<int64_t> broadcastConcrete(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
      if (s[i] == 0) o = 0;
    }
  return out;
}

// Iteration of an output shape with up to 3 broadcast inputs: dims are
// coalesced where every operand is contiguous across them, then each
// innermost row is handed to `row(out_offset, in_offsets, n, in_inner_strides)`.
struct BcastPlan {
  static constexpr int kMax = 3;
  int nin = 0;
  std::vector<int64_t> shape;                      // coalesced output shape
  std::vector<std::array<int64_t, kMax>> strides;  // per dim, element strides of inputs (0: broadcast)
  int64_t numel = 0;

  BcastPlan(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
    nin = static_cast<int>(ins.size());
    numel = elementCount(out);  // also bounds every stride below
    size_t rank = out.size();
    std::vector<std::array<int64_t, kMax>> st(rank, std::array<int64_t, kMax>{0, 0, 0});
    for (int k = 0; k < nin; ++k) {
      const auto& s = ins[k];
      int64_t stride = 1;
      for (size_t j = s.size(); j-- > 0;) {
        size_t o = rank - s.size() + j;
        st[o][k] = s[j] == 1 ? 0 : stride;
        stride *= s[j];
      }
    }
    // Drop size-1 dims, then merge dim i into i+1 when contiguous for all.
    for (size_t i = 0; i < rank; ++i) {
      if (out[i] == 1) continue;
      if (!shape.empty()) {
        bool merge = true;
        for (int k = 0; k < nin; ++k)
          if (strides.back()[k] != st[i][k] * out[i]) merge = false;
        if (merge) {
          shape.back() *= out[i];
          strides.back() = st[i];
          continue;
        }
      }
      shape.push_back(out[i]);
      strides.push_back(st[i]);
    }
    if (shape.empty()) {
      shape.push_back(1);
      strides.push_back({0, 0, 0});
    }
  }

  template <class Row>
  void run(Row&& row) const {
    if (numel == 0) return;
    size_t r = shape.size();
    int64_t n = shape[r - 1];
    const auto& inner = strides[r - 1];
    std::vector<int64_t> idx(r, 0);
    int64_t offs[kMax] = {0, 0, 0};
    for (int64_t out_off = 0; out_off < numel; out_off += n) {
      row(out_off, offs, n, inner.data());
      // Advance the odometer over dims 0..r-2.
      for (size_t d = r - 1; d-- > 0;) {
        for (int k = 0; k < nin; ++k) offs[k] += strides[d][k];
        if (++idx[d] < shape[d]) break;
        for (int k = 0; k < nin; ++k) offs[k] -= strides[d][k] * shape[d];
        idx[d] = 0;
      }
    }
  }
};

// The reduced axes of an `axes` attribute for a rank: normalized, sorted,
// duplicates rejected. Absent: all axes.
inline std::vector<bool> reducedAxes(const ir::Attrs& attrs, int64_t rank, const std::string& op) {
  std::vector<bool> red(static_cast<size_t>(rank), !hasAttr(attrs, "axes"));
  if (hasAttr(attrs, "axes"))
    for (int64_t a : attrInts(attrs, "axes")) {
      int64_t n = normalizeAxis(a, rank, op.c_str());
      if (n >= rank)
        throw Error("op '" + op + "': axis " + std::to_string(a) + " is out of range for rank " +
                    std::to_string(rank));
      if (red[static_cast<size_t>(n)])
        throw Error("op '" + op + "': axis " + std::to_string(a) + " is repeated");
      red[static_cast<size_t>(n)] = true;
    }
  return red;
}

// [outer, mid, inner] sizes around axis range [a, b) of a shape.
struct Split3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
inline Split3 split3(const std::vector<int64_t>& s, size_t a, size_t b) {
  Split3 r;
  for (size_t i = 0; i < s.size(); ++i) (i < a ? r.outer : i < b ? r.mid : r.inner) *= s[i];
  return r;
}

}  // namespace mlcc::ops::ew
