// Internal helpers of the data movement kernels (manipulate.cpp, resize.cpp):
// row-major strides, printing of shapes for messages, the `dims` attribute,
// and a generic gather kernel driven by per-axis offset tables.
//
// The gather kernel covers every op whose input offset is a sum of one term
// per output axis (permute_dims, broadcast_to, strided_slice, tile, pad): for
// each output axis d a table maps the output index i to the element offset it
// contributes in the input (kOutside: the element is the pad value). Elements
// are moved as bytes of the dtype's size, so one kernel serves every dtype.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ops::detail {

// Data movement does no arithmetic: its FLOP count.
inline int64_t zeroFlops(const std::vector<ir::Type>&, const ir::Type&, const ir::Attrs&) { return 0; }

// The OpDef of a data movement op taking `inputs` operands.
inline OpDef movementOp(std::string name, OpPattern pattern, int inputs, std::vector<AttrSpec> attrs,
                        InferFn infer, ComputeFn compute, LegalizeFn legalize) {
  OpDef def;
  def.name = std::move(name);
  def.min_inputs = def.max_inputs = inputs;
  def.pattern = pattern;
  def.attrs = std::move(attrs);
  def.infer = std::move(infer);
  def.compute = std::move(compute);
  def.flops = zeroFlops;
  def.legalize = std::move(legalize);
  return def;
}

// "op 'NAME': MSG".
inline Error opError(const char* op, const std::string& msg) {
  return Error(std::string("op '") + op + "': " + msg);
}

// The index operand of take, gather_elements and the scatters must be an integer tensor.
inline void checkIndexDType(const ir::Type& idx, const char* op) {
  if (idx.dtype != ir::DType::i32 && idx.dtype != ir::DType::i64)
    throw opError(op, "indices must be i32 or i64, not " + ir::printType(idx));
}

// Element `flat` of an i32/i64 index tensor as an index into `axis` of size
// `dim`: negative ones count from the end; out of range is an error (the
// reference kernels'; compiled code clamps, legal_mv::wrappedIndex).
inline int64_t wrappedIndex(const ir::Tensor& idx, int64_t flat, int64_t dim, int64_t axis, const char* op) {
  const int64_t v = idx.dtype() == ir::DType::i32 ? idx.data<int32_t>()[flat] : idx.data<int64_t>()[flat];
  if (v < -dim || v >= dim)
    throw opError(op, "index " + std::to_string(v) + " is out of range for axis " + std::to_string(axis) +
                          " of size " + std::to_string(dim));
  return v < 0 ? v + dim : v;
}

// Row-major element strides of a shape.
inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// "[4, n, 2]" for messages.
inline std::string shapeText(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + ir::printExpr(shape[i]);
  return s + "]";
}
// A list of ints for an error message: at most 16 of them, then how many more.
using ir::intsText;

// A `dims` attribute as a shape (ints become constants).
inline Shape attrDims(const ir::Attrs& attrs, const std::string& name) {
  Shape out;
  for (const auto& v : attrs.at(name).asList()) out.push_back(v.isInt() ? dimConst(v.asInt()) : v.asExpr());
  return out;
}

// The static element count of a shape, or -1 when a dimension is symbolic.
// Throws mlcc::Error on a negative dimension or an overflowing count.
inline int64_t staticNumel(const Shape& s) {
  std::vector<int64_t> dims;
  if (!staticShape(s, &dims)) return -1;
  return elementCount(dims);
}

// Copies one element of `size` bytes (a fixed-size memcpy per case, so the
// compiler emits a single load/store).
inline void copyElement(std::byte* dst, const std::byte* src, int size) {
  switch (size) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, static_cast<size_t>(size)); break;
  }
}

inline constexpr int64_t kOutside = INT64_MIN;

// out[i0, ..., ik] = in[sum_d tables[d][i_d]] (element offsets), or the bytes
// of `fill` (one element) where any table entry is kOutside.
inline ir::Tensor gatherByTables(const ir::Tensor& in, const std::vector<int64_t>& out_shape,
                                 const std::vector<std::vector<int64_t>>& tables,
                                 const std::byte* fill = nullptr) {
  ir::Tensor out = ir::Tensor::zeros(in.dtype(), out_shape);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const int es = ir::dtypeBytes(in.dtype());
  const std::byte* src = in.bytes();
  std::byte* dst = out.mutableBytes();
  const size_t rank = out_shape.size();
  if (rank == 0) {
    copyElement(dst, src, es);
    return out;
  }
  // The innermost axis runs in a tight loop; a contiguous run (entries
  // base, base+1, ...) with no pad becomes one memcpy.
  const std::vector<int64_t>& inner = tables[rank - 1];
  const int64_t inner_n = out_shape[rank - 1];
  bool inner_contiguous = true;
  for (int64_t i = 0; i < inner_n; ++i)
    if (inner[i] == kOutside || inner[i] != inner[0] + i) inner_contiguous = false;
  std::vector<int64_t> idx(rank, 0);
  const int64_t rows = n / inner_n;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool outside = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t t = tables[d][idx[d]];
      if (t == kOutside)
        outside = true;
      else
        base += t;
    }
    std::byte* row = dst + r * inner_n * es;
    if (outside) {
      for (int64_t i = 0; i < inner_n; ++i) copyElement(row + i * es, fill, es);
    } else if (inner_contiguous) {
      std::memcpy(row, src + (base + inner[0]) * es, static_cast<size_t>(inner_n * es));
    } else {
      for (int64_t i = 0; i < inner_n; ++i) {
        int64_t t = inner[i];
        copyElement(row + i * es, t == kOutside ? fill : src + (base + t) * es, es);
      }
    }
    for (size_t d = rank - 1; d-- > 0;) {  // odometer over the outer axes
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace mlcc::ops::detail
