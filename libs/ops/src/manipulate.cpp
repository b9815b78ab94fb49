// The shape and data movement ops (artifacts_schema/ops.md, pattern `inj`):
// reshape, permute_dims, squeeze, expand_dims, broadcast_to, concat, split,
// strided_slice, take, gather_elements, pad, tile. Type inference works over symbolic
// dimensions; the reference kernels move elements as bytes (any dtype) with
// per-axis offset tables (manipulate_util.h) or contiguous block copies.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "legalize_util_mv.h"
#include "manipulate_util.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/support/checked_math.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

using detail::checkIndexDType;
using detail::intsText;
using detail::kOutside;
using detail::opError;
using detail::rowMajorStrides;
using detail::shapeText;
using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

Type tensorType(const Tensor& t) { return Type::tensor(t.dtype(), t.shape()); }

// The concrete result shape of a shape op, from its own inference on the
// concrete operand types (a symbolic `dims` attribute must be bound first).
std::vector<int64_t> staticResult(const Type& t, const char* op) {
  std::vector<int64_t> dims;
  if (!staticShape(t.shape, &dims))
    throw opError(op, "the result shape " + shapeText(t.shape) +
                          " is symbolic; bind its dimensions before running the kernel");
  return dims;
}

// Distinct axes normalized against `rank`.
std::vector<int64_t> distinctAxes(const std::vector<int64_t>& axes, int64_t rank, const char* op) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    if (rank == 0)  // normalizeAxis lets axis 0 through for scalars
      throw opError(op, "axis " + std::to_string(a) + " is out of range for rank 0");
    int64_t n = normalizeAxis(a, rank, op);
    if (!seen.insert(n).second)
      throw opError(op, "axis " + std::to_string(a) + " is repeated in " + intsText(axes));
    out.push_back(n);
  }
  return out;
}

// Per-axis tables of the identity mapping.
std::vector<std::vector<int64_t>> identityTables(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides = rowMajorStrides(shape);
  std::vector<std::vector<int64_t>> tables(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    tables[d].resize(static_cast<size_t>(shape[d]));
    for (int64_t i = 0; i < shape[d]; ++i) tables[d][i] = i * strides[d];
  }
  return tables;
}

Tensor copyWithShape(const Tensor& x, std::vector<int64_t> shape) {
  return Tensor::copyOf(x.dtype(), std::move(shape), std::span<const std::byte>(x.bytes(), x.nbytes()));
}

// ---- reshape -------------------------------------------------------------

Type inferReshape(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "reshape");
  Shape shape = detail::attrDims(attrs, "shape");
  for (const auto& d : shape) {
    int64_t c;
    if (ir::asConstInt(d, &c) && c < 0)
      throw opError("reshape", "target shape " + shapeText(shape) +
                                   " has a negative dimension (-1 must be resolved by the importer)");
  }
  int64_t in_n = detail::staticNumel(x.shape), out_n = detail::staticNumel(shape);
  if (in_n >= 0 && out_n >= 0 && in_n != out_n)
    throw opError("reshape", "cannot reshape " + ir::printType(x) + " (" + std::to_string(in_n) +
                                 " elements) to " + shapeText(shape) + " (" + std::to_string(out_n) +
                                 " elements)");
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computeReshape(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  Shape shape = detail::attrDims(attrs, "shape");
  // A symbolic dimension of the target is solved from the element count
  // when it is the only one.
  std::vector<int64_t> dims(shape.size());
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (ir::asConstInt(shape[i], &dims[i])) {
      known *= dims[i];
    } else if (unknown < 0) {
      unknown = static_cast<int>(i);
    } else {
      throw opError("reshape",
                    "the target shape " + shapeText(shape) +
                        " has more than one symbolic dimension; bind them before running the kernel");
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.numel() % known != 0)
      throw opError("reshape", "cannot reshape " + ir::printType(tensorType(x)) + " to " + shapeText(shape));
    dims[unknown] = x.numel() / known;
  } else if (known != x.numel()) {
    throw opError("reshape", "cannot reshape " + ir::printType(tensorType(x)) + " to " + intsText(dims));
  }
  return {copyWithShape(x, dims)};
}

// ---- permute_dims --------------------------------------------------------

std::vector<int64_t> permutation(const Type& x, const ir::Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> perm;
  if (!hasAttr(attrs, "axes")) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  std::vector<int64_t> axes = attrInts(attrs, "axes");
  if (static_cast<int64_t>(axes.size()) != rank)
    throw opError("permute_dims", "axes " + intsText(axes) + " must list each of the " +
                                      std::to_string(rank) + " axes of " + ir::printType(x) + " once");
  return distinctAxes(axes, rank, "permute_dims");
}

Type inferPermute(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "permute_dims");
  Shape shape;
  for (int64_t a : permutation(x, attrs)) shape.push_back(x.shape[a]);
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computePermute(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  std::vector<int64_t> perm = permutation(tensorType(x), attrs);
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  std::vector<int64_t> out_shape;
  for (int64_t a : perm) out_shape.push_back(x.shape()[a]);
  if (x.numel() == 0) return {Tensor::zeros(x.dtype(), out_shape)};  // no tables for huge empty dims
  std::vector<std::vector<int64_t>> tables;
  for (int64_t a : perm) {
    tables.emplace_back();
    for (int64_t i = 0; i < x.shape()[a]; ++i) tables.back().push_back(i * strides[a]);
  }
  return {detail::gatherByTables(x, out_shape, tables)};
}

// ---- squeeze / expand_dims -------------------------------------------------

Type inferSqueeze(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "squeeze");
  int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<bool> drop(x.rank(), false);
  if (hasAttr(attrs, "axes")) {
    for (int64_t a : distinctAxes(attrInts(attrs, "axes"), rank, "squeeze")) {
      if (!isConstDim(x.shape[a], 1))
        throw opError("squeeze", "cannot squeeze axis " + std::to_string(a) + " of " + ir::printType(x) +
                                     ": its size is " + ir::printExpr(x.shape[a]) + ", not 1");
      drop[a] = true;
    }
  } else {
    for (size_t i = 0; i < x.rank(); ++i) drop[i] = isConstDim(x.shape[i], 1);
  }
  Shape shape;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!drop[i]) shape.push_back(x.shape[i]);
  return Type::tensor(x.dtype, shape);
}

Type inferExpandDims(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "expand_dims");
  std::vector<int64_t> axes = attrInts(attrs, "axes");
  int64_t out_rank = static_cast<int64_t>(x.rank() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : distinctAxes(axes, out_rank, "expand_dims")) inserted[a] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) shape.push_back(inserted[i] ? dimConst(1) : x.shape[next++]);
  return Type::tensor(x.dtype, shape);
}

// Shape-only ops: the data is unchanged, only the shape differs.
ComputeFn reshapeLike(InferFn infer, const char* op) {
  return [infer, op](const std::vector<Tensor>& inputs, const ir::Attrs& attrs) -> std::vector<Tensor> {
    return {copyWithShape(inputs[0], staticResult(infer({tensorType(inputs[0])}, attrs), op))};
  };
}

// ---- broadcast_to ----------------------------------------------------------

Type inferBroadcastTo(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "broadcast_to");
  Shape shape = detail::attrDims(attrs, "shape");
  if (shape.size() < x.rank())
    throw opError("broadcast_to",
                  "cannot broadcast " + ir::printType(x) + " to the lower rank shape " + shapeText(shape));
  size_t lead = shape.size() - x.rank();
  for (size_t i = 0; i < x.rank(); ++i) {
    const PrimExpr& d = x.shape[i];
    if (!isConstDim(d, 1) && !dimEqual(d, shape[lead + i]))
      throw opError("broadcast_to", "cannot broadcast " + ir::printType(x) + " to " + shapeText(shape) +
                                        " (dimension " + std::to_string(i) + " is " + ir::printExpr(d) +
                                        ", not 1 or " + ir::printExpr(shape[lead + i]) + ")");
  }
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computeBroadcastTo(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  std::vector<int64_t> out_shape = staticResult(inferBroadcastTo({tensorType(x)}, attrs), "broadcast_to");
  if (elementCount(out_shape) == 0)
    return {Tensor::zeros(x.dtype(), out_shape)};  // no tables for huge empty dims
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  size_t lead = out_shape.size() - x.shape().size();
  std::vector<std::vector<int64_t>> tables(out_shape.size());
  for (size_t d = 0; d < out_shape.size(); ++d) {
    bool repeated = d < lead || x.shape()[d - lead] == 1;
    for (int64_t i = 0; i < out_shape[d]; ++i) tables[d].push_back(repeated ? 0 : i * strides[d - lead]);
  }
  return {detail::gatherByTables(x, out_shape, tables)};
}

// ---- concat / split --------------------------------------------------------

Type inferConcat(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& first = tensorOperand(inputs, 0, "concat");
  int64_t rank = static_cast<int64_t>(first.rank());
  if (rank == 0) throw opError("concat", "cannot concatenate scalars");
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), rank, "concat");
  Shape shape = first.shape;
  for (size_t k = 1; k < inputs.size(); ++k) {
    const Type& t = tensorOperand(inputs, k, "concat");
    if (t.dtype != first.dtype || t.rank() != first.rank())
      throw opError("concat", "operand " + std::to_string(k) + " (" + ir::printType(t) +
                                  ") does not match operand 0 (" + ir::printType(first) +
                                  ") in dtype or rank");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (!dimEqual(t.shape[d], first.shape[d]))
        throw opError("concat", "operand " + std::to_string(k) + " (" + ir::printType(t) +
                                    ") does not match operand 0 (" + ir::printType(first) +
                                    ") in dimension " + std::to_string(d));
    }
    shape[axis] = dimAdd(shape[axis], t.shape[axis]);
  }
  return Type::tensor(first.dtype, shape);
}

// Sizes of the [outer, axis, inner] view of a shape around `axis`.
void aroundAxis(const std::vector<int64_t>& shape, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t d = 0; d < axis; ++d) *outer *= shape[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) *inner *= shape[d];
}

std::vector<Tensor> computeConcat(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  std::vector<Type> types;
  for (const auto& t : inputs) types.push_back(tensorType(t));
  std::vector<int64_t> out_shape = staticResult(inferConcat(types, attrs), "concat");
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(out_shape.size()), "concat");
  Tensor out = Tensor::zeros(inputs[0].dtype(), out_shape);
  if (out.numel() == 0) return {out};
  const int64_t es = ir::dtypeBytes(out.dtype());
  int64_t outer, inner;
  aroundAxis(out_shape, axis, &outer, &inner);
  std::byte* dst = out.mutableBytes();
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto& t : inputs) {
      size_t block = static_cast<size_t>(t.shape()[axis] * inner * es);
      std::memcpy(dst, t.bytes() + o * block, block);
      dst += block;
    }
  }
  return {out};
}

Type inferSplit(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "split");
  int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) throw opError("split", "cannot split a scalar");
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), rank, "split");
  std::vector<int64_t> sizes = attrInts(attrs, "sizes");
  if (sizes.empty()) throw opError("split", "sizes must not be empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw opError("split", "sizes " + intsText(sizes) + " has a negative size");
    total = addOrThrow(total, s, "the split sizes' sum");
  }
  int64_t dim;
  if (ir::asConstInt(x.shape[axis], &dim) && dim != total)
    throw opError("split", "sizes " + intsText(sizes) + " add up to " + std::to_string(total) +
                               ", but axis " + std::to_string(axis) + " of " + ir::printType(x) + " has " +
                               std::to_string(dim));
  std::vector<Type> fields;
  for (int64_t s : sizes) {
    Shape shape = x.shape;
    shape[axis] = dimConst(s);
    fields.push_back(Type::tensor(x.dtype, shape));
  }
  return Type::tuple(fields);
}

std::vector<Tensor> computeSplit(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), x.rank(), "split");
  int64_t outer, inner;
  aroundAxis(x.shape(), axis, &outer, &inner);
  const int64_t es = ir::dtypeBytes(x.dtype());
  const int64_t in_block = x.shape()[axis] * inner * es;
  std::vector<Tensor> outs;
  int64_t offset = 0;  // bytes within one outer block
  for (int64_t s : attrInts(attrs, "sizes")) {
    std::vector<int64_t> shape = x.shape();
    shape[axis] = s;
    Tensor out = Tensor::zeros(x.dtype(), shape);
    const size_t block = static_cast<size_t>(s * inner * es);
    if (out.numel() > 0) {
      std::byte* dst = out.mutableBytes();
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * block, x.bytes() + o * in_block + offset, block);
    }
    offset += static_cast<int64_t>(block);
    outs.push_back(std::move(out));
  }
  return outs;
}

// ---- strided_slice ---------------------------------------------------------

struct SliceAxis {
  int64_t axis, begin, end, step;
};

std::vector<SliceAxis> sliceAxes(int64_t rank, const ir::Attrs& attrs) {
  std::vector<int64_t> axes = attrInts(attrs, "axes"), begin = attrInts(attrs, "begin"),
                       end = attrInts(attrs, "end");
  std::vector<int64_t> strides =
      hasAttr(attrs, "strides") ? attrInts(attrs, "strides") : std::vector<int64_t>();
  if (!hasAttr(attrs, "strides")) strides.assign(axes.size(), 1);
  if (begin.size() != axes.size() || end.size() != axes.size() || strides.size() != axes.size())
    throw opError("strided_slice", "axes " + intsText(axes) + ", begin " + intsText(begin) + ", end " +
                                       intsText(end) + " and strides " + intsText(strides) +
                                       " must have the same length");
  std::vector<int64_t> norm = distinctAxes(axes, rank, "strided_slice");
  std::vector<SliceAxis> out;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (strides[i] == 0)
      throw opError("strided_slice", "stride of axis " + std::to_string(axes[i]) + " is 0");
    out.push_back({norm[i], begin[i], end[i], strides[i]});
  }
  return out;
}

// ONNX Slice on an axis of size `dim`: the first index and the count.
void sliceRange(int64_t dim, const SliceAxis& s, int64_t* start, int64_t* count) {
  int64_t b = s.begin < 0 ? s.begin + dim : s.begin;  // INT64_MIN + dim cannot overflow
  int64_t e = s.end < 0 ? s.end + dim : s.end;
  // Counts in unsigned arithmetic: |step| may be 2^63 (INT64_MIN).
  if (s.step > 0) {
    b = std::clamp<int64_t>(b, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    *count =
        e > b ? static_cast<int64_t>((static_cast<uint64_t>(e - b) - 1) / static_cast<uint64_t>(s.step) + 1)
              : 0;
  } else {
    b = std::clamp<int64_t>(b, 0, dim - 1);
    e = std::clamp<int64_t>(e, -1, dim - 1);
    uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(s.step);
    *count = b > e ? static_cast<int64_t>((static_cast<uint64_t>(b - e) - 1) / magnitude + 1) : 0;
  }
  *start = b;
}

// A slice that keeps a whole axis of unknown size (ONNX exporters write the
// ends as INT64_MAX / INT64_MIN; any bound beyond 2^31 counts as "to the end").
bool isFullSlice(const SliceAxis& s) {
  constexpr int64_t kHuge = int64_t{1} << 31;
  if (s.step == 1) return (s.begin == 0 || s.begin <= -kHuge) && s.end >= kHuge;
  return false;
}

bool isFullReverse(const SliceAxis& s) {
  constexpr int64_t kHuge = int64_t{1} << 31;
  return s.step == -1 && (s.begin == -1 || s.begin >= kHuge) && s.end <= -kHuge;
}

Type inferStridedSlice(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "strided_slice");
  Shape shape = x.shape;
  for (const SliceAxis& s : sliceAxes(static_cast<int64_t>(x.rank()), attrs)) {
    int64_t dim;
    if (!ir::asConstInt(x.shape[s.axis], &dim)) {
      if (isFullSlice(s) || isFullReverse(s)) continue;
      throw opError("strided_slice", "slicing axis " + std::to_string(s.axis) + " of " + ir::printType(x) +
                                         " (symbolic size " + ir::printExpr(x.shape[s.axis]) +
                                         ") is not supported yet, except a full slice");
    }
    int64_t start, count;
    sliceRange(dim, s, &start, &count);
    shape[s.axis] = dimConst(count);
  }
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computeStridedSlice(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  if (x.numel() == 0) {  // an empty slice of an empty tensor (whose other dims may be huge: no tables)
    std::vector<int64_t> out_shape = x.shape();
    for (const SliceAxis& s : sliceAxes(x.rank(), attrs)) {
      int64_t start, count;
      sliceRange(x.shape()[s.axis], s, &start, &count);
      out_shape[s.axis] = count;
    }
    return {Tensor::zeros(x.dtype(), out_shape)};
  }
  std::vector<std::vector<int64_t>> tables = identityTables(x.shape());
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  std::vector<int64_t> out_shape = x.shape();
  for (const SliceAxis& s : sliceAxes(x.rank(), attrs)) {
    int64_t start, count;
    sliceRange(x.shape()[s.axis], s, &start, &count);
    out_shape[s.axis] = count;
    auto& t = tables[s.axis];
    t.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) t[i] = (start + i * s.step) * strides[s.axis];
  }
  return {detail::gatherByTables(x, out_shape, tables)};
}

// ---- take ------------------------------------------------------------------

Type inferTake(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "take");
  const Type& idx = tensorOperand(inputs, 1, "take");
  checkIndexDType(idx, "take");
  if (x.rank() == 0) throw opError("take", "cannot take from a scalar");
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), "take");
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computeTake(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  const Tensor& idx = inputs[1];
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), x.rank(), "take");
  int64_t outer, inner;
  aroundAxis(x.shape(), axis, &outer, &inner);
  const int64_t dim = x.shape()[axis];
  std::vector<int64_t> index(static_cast<size_t>(idx.numel()));
  for (size_t i = 0; i < index.size(); ++i)
    index[i] = detail::wrappedIndex(idx, static_cast<int64_t>(i), dim, axis, "take");
  std::vector<int64_t> out_shape(x.shape().begin(), x.shape().begin() + axis);
  out_shape.insert(out_shape.end(), idx.shape().begin(), idx.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
  Tensor out = Tensor::zeros(x.dtype(), out_shape);
  if (out.numel() == 0) return {out};
  const size_t block = static_cast<size_t>(inner * ir::dtypeBytes(x.dtype()));
  std::byte* dst = out.mutableBytes();
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte* src = x.bytes() + o * dim * block;
    for (int64_t i : index) {
      std::memcpy(dst, src + i * block, block);
      dst += block;
    }
  }
  return {out};
}

// ---- gather_elements -------------------------------------------------------

Type inferGatherElements(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "gather_elements");
  const Type& idx = tensorOperand(inputs, 1, "gather_elements");
  checkIndexDType(idx, "gather_elements");
  if (x.rank() == 0 || idx.rank() != x.rank())
    throw opError("gather_elements", "indices " + ir::printType(idx) + " must have the rank of the data " +
                                         ir::printType(x) + " (at least 1)");
  normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), "gather_elements");
  return Type::tensor(x.dtype, idx.shape);
}

// out[i] = x[i with its axis coordinate replaced by indices[i]].
std::vector<Tensor> computeGatherElements(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  const Tensor& idx = inputs[1];
  const int rank = x.rank();
  const int64_t axis = normalizeAxis(attrInt(attrs, "axis"), rank, "gather_elements");
  for (int d = 0; d < rank; ++d)
    if (d != axis && idx.shape()[d] > x.shape()[d])
      throw opError("gather_elements", "indices dimension " + std::to_string(d) + " (" +
                                           std::to_string(idx.shape()[d]) + ") exceeds the data's (" +
                                           std::to_string(x.shape()[d]) + ")");
  Tensor out = Tensor::zeros(x.dtype(), idx.shape());
  std::vector<int64_t> pos(static_cast<size_t>(rank), 0), x_strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) x_strides[d] = x_strides[d + 1] * x.shape()[d + 1];
  const int64_t dim = x.shape()[axis];
  const size_t elem = ir::dtypeBytes(x.dtype());
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    const int64_t v = detail::wrappedIndex(idx, flat, dim, axis, "gather_elements");
    int64_t src = 0;
    for (int d = 0; d < rank; ++d) src += (d == axis ? v : pos[d]) * x_strides[d];
    std::memcpy(out.mutableBytes() + flat * elem, x.bytes() + src * elem, elem);
    for (int d = rank - 1; d >= 0 && ++pos[d] == idx.shape()[d]; --d) pos[d] = 0;
  }
  return {out};
}

// ---- pad -------------------------------------------------------------------

void checkPadMode(const std::string& mode) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    throw opError("pad",
                  "unknown mode '" + mode + "' (expected \"constant\", \"reflect\", \"edge\" or \"wrap\")");
}

Type inferPad(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "pad");
  const std::string& mode = attrStr(attrs, "mode");
  checkPadMode(mode);
  // An integer or bool tensor's pad value must be one of its values: the
  // reference kernel saturated 300 to 127 for i8 where the legalized loop
  // wrapped it to 44.
  if (ir::isInt(x.dtype) || x.dtype == ir::DType::boolean) {
    const double v = attrFloat(attrs, "pad_value");
    const bool is_bool = x.dtype == ir::DType::boolean;
    const double lo = is_bool ? 0 : static_cast<double>(ir::intMin(x.dtype));
    const double hi = is_bool ? 1 : static_cast<double>(ir::intMax(x.dtype));
    if (!(v >= lo && v <= hi) || v != std::floor(v))
      throw opError("pad", "pad_value " + ir::detail::shortestFloatText(v, ir::DType::i64) +
                               " is not a value of " + std::string(ir::dtypeName(x.dtype)));
  }
  std::vector<int64_t> pads = attrInts(attrs, "pad_width");
  size_t rank = x.rank();
  if (pads.size() != 2 * rank)
    throw opError("pad", "pad_width " + intsText(pads) + " must have 2 * rank = " + std::to_string(2 * rank) +
                             " entries (all begins, then all ends) for " + ir::printType(x));
  Shape shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t extra = addOrThrow(pads[d], pads[d + rank], "pad_width"), dim;
    if (ir::asConstInt(x.shape[d], &dim)) {
      if (addOrThrow(dim, extra, "the padded dimension") < 0)
        throw opError("pad", "pad_width " + intsText(pads) + " removes more than axis " + std::to_string(d) +
                                 " of " + ir::printType(x) + " holds");
      if (dim == 0 && mode != "constant" && (pads[d] > 0 || pads[d + rank] > 0))
        throw opError("pad", "cannot pad the empty axis " + std::to_string(d) + " of " + ir::printType(x) +
                                 " in mode '" + mode + "'");
    }
    shape.push_back(dimAdd(x.shape[d], dimConst(extra)));
  }
  return Type::tensor(x.dtype, shape);
}

// The input index that output index `o` reads along an axis of size `dim`
// padded by `before` (kOutside: the pad value).
int64_t padSource(int64_t o, int64_t before, int64_t dim, const std::string& mode) {
  int64_t c = o - before;
  if (c >= 0 && c < dim) return c;
  if (mode == "constant") return kOutside;
  if (mode == "edge") return c < 0 ? 0 : dim - 1;
  if (mode == "wrap") return (c % dim + dim) % dim;
  if (dim == 1) return 0;  // reflect (numpy): mirror without repeating the edge
  int64_t period = 2 * (dim - 1);
  c %= period;
  if (c < 0) c += period;
  return c < dim ? c : period - c;
}

std::vector<Tensor> computePad(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  const std::string& mode = attrStr(attrs, "mode");
  std::vector<int64_t> pads = attrInts(attrs, "pad_width");
  size_t rank = x.shape().size();
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> tables(rank);
  for (size_t d = 0; d < rank; ++d) {
    out_shape.push_back(x.shape()[d] + pads[d] + pads[d + rank]);
    for (int64_t o = 0; o < out_shape[d]; ++o) {
      int64_t c = padSource(o, pads[d], x.shape()[d], mode);
      tables[d].push_back(c == kOutside ? kOutside : c * strides[d]);
    }
  }
  Tensor fill = Tensor::scalar(x.dtype(), attrFloat(attrs, "pad_value"));
  return {detail::gatherByTables(x, out_shape, tables, fill.bytes())};
}

// ---- tile ------------------------------------------------------------------

Type inferTile(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "tile");
  std::vector<int64_t> repeats = attrInts(attrs, "repeats");
  if (repeats.size() != x.rank())
    throw opError("tile",
                  "repeats " + intsText(repeats) + " must have one entry per axis of " + ir::printType(x));
  Shape shape;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (repeats[d] < 0) throw opError("tile", "repeats " + intsText(repeats) + " has a negative entry");
    shape.push_back(dimMul(x.shape[d], dimConst(repeats[d])));
  }
  return Type::tensor(x.dtype, shape);
}

std::vector<Tensor> computeTile(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  std::vector<int64_t> repeats = attrInts(attrs, "repeats");
  std::vector<int64_t> strides = rowMajorStrides(x.shape());
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> tables(x.shape().size());
  for (size_t d = 0; d < x.shape().size(); ++d) {
    int64_t dim = x.shape()[d];
    out_shape.push_back(dim * repeats[d]);
    for (int64_t o = 0; o < out_shape[d]; ++o) tables[d].push_back((o % dim) * strides[d]);
  }
  return {detail::gatherByTables(x, out_shape, tables)};
}

// ---- legalization (TensorIR compute definitions) ---------------------------
//
// Every op here is one compute stage named after the op (split: one per
// field) whose element is a load of the input at an index formula of the
// output index. Selects evaluate both arms, so every load that a select may
// discard reads a clamped (in-bounds) index.

namespace lm = legal_mv;

ir::PrimFunc legalizeReshape(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  const Type& x = inputs[0];
  bool same = x.rank() == output.rank();
  for (size_t d = 0; same && d < x.rank(); ++d) same = dimEqual(x.shape[d], output.shape[d]);
  return lm::singleStage("reshape", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    if (same) return ir::makeLoad(in[0], o);
    // The input index, simplified over the output index's ranges: where the
    // shapes share their inner dimensions, (a * 512 + j) / 512 becomes a and
    // the copy has no division left.
    ir::Analyzer ranges;
    for (size_t d = 0; d < o.size(); ++d)
      ranges.bind(std::static_pointer_cast<const ir::VarNode>(o[d]), ir::makeInt(0), output.shape[d]);
    std::vector<PrimExpr> src = lm::unflatten(lm::flatten(o, output.shape), x.shape);
    for (auto& e : src) e = ranges.simplify(e);
    return ir::makeLoad(in[0], src);
  });
}

ir::PrimFunc legalizePermute(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  std::vector<int64_t> perm = permutation(inputs[0], attrs);
  return lm::singleStage("permute_dims", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) src[perm[k]] = o[k];
    return ir::makeLoad(in[0], src);
  });
}

// squeeze / expand_dims: the input index is the output index without the
// unit axes that only one side has. `kept[d]`: input axis d maps to an output
// axis (squeeze), or output axis d maps to an input axis (expand_dims).
ir::PrimFunc legalizeSqueeze(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  std::vector<bool> drop(x.rank(), false);
  if (hasAttr(attrs, "axes")) {
    for (int64_t a : distinctAxes(attrInts(attrs, "axes"), static_cast<int64_t>(x.rank()), "squeeze"))
      drop[a] = true;
  } else {
    for (size_t i = 0; i < x.rank(); ++i) drop[i] = isConstDim(x.shape[i], 1);
  }
  return lm::singleStage("squeeze", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src;
    size_t next = 0;
    for (size_t d = 0; d < x.rank(); ++d) src.push_back(drop[d] ? lm::idx(0) : o[next++]);
    return ir::makeLoad(in[0], src);
  });
}

ir::PrimFunc legalizeExpandDims(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  int64_t out_rank = static_cast<int64_t>(output.rank());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : distinctAxes(attrInts(attrs, "axes"), out_rank, "expand_dims")) inserted[a] = true;
  return lm::singleStage("expand_dims", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src;
    for (int64_t d = 0; d < out_rank; ++d)
      if (!inserted[d]) src.push_back(o[d]);
    return ir::makeLoad(in[0], src);
  });
}

ir::PrimFunc legalizeBroadcastTo(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  const Type& x = inputs[0];
  size_t lead = output.rank() - x.rank();
  return lm::singleStage("broadcast_to", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src;
    for (size_t d = 0; d < x.rank(); ++d) src.push_back(isConstDim(x.shape[d], 1) ? lm::idx(0) : o[lead + d]);
    return ir::makeLoad(in[0], src);
  });
}

// concat: operand k covers [offset_k, offset_k + dim_k) of the axis. One
// block per operand (with a non-empty axis) writes its slice of the
// output: a copy that reads one operand, where one block choosing among
// the operands by a select per element read them all (each load clamped):
// the blocked channel concatenations of SqueezeNet's fire modules ran at
// 3 GFLOPS, 10% of the model.
ir::PrimFunc legalizeConcat(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(output.rank()), "concat");
  if (lm::hasZeroDim(output.shape))
    return lm::singleStage("concat", inputs, output, [&](const auto&, const std::vector<PrimExpr>&) {
      return ir::te::constant(output.dtype, 0);
    });
  ir::te::FuncBuilder fb("concat");
  std::vector<ir::Buffer> in;
  for (size_t k = 0; k < inputs.size(); ++k)
    in.push_back(fb.input(k == 0 ? "x" : "x" + std::to_string(k), inputs[k]));
  ir::Buffer out = fb.buffer("concat", output.shape, output.dtype);
  PrimExpr offset = lm::idx(0);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!lm::hasZeroDim(inputs[k].shape))
      fb.update(
          "concat", out, inputs[k].shape,
          [&](const ir::te::Indices& i) {
            std::vector<PrimExpr> at = lm::exprs(i);
            at[static_cast<size_t>(axis)] = lm::add(at[static_cast<size_t>(axis)], offset);
            return at;
          },
          [&](const ir::te::Indices& i) { return ir::makeLoad(in[k], lm::exprs(i)); });
    offset = lm::add(offset, inputs[k].shape[static_cast<size_t>(axis)]);
  }
  return fb.build({out});
}

ir::PrimFunc legalizeSplit(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  int64_t axis = normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), "split");
  ir::te::FuncBuilder fb("split");
  ir::Buffer in = fb.input("x", x);
  std::vector<ir::Buffer> outs, computed;
  int64_t offset = 0;
  for (const Type& field : output.fields) {
    if (lm::hasZeroDim(field.shape)) {  // an empty field gets no stage (no loop of extent 0)
      outs.push_back(ir::makeBuffer("split", field.dtype, field.shape));
    } else {
      outs.push_back(fb.compute("split", field.shape, field.dtype, [&](const ir::te::Indices& i) {
        std::vector<PrimExpr> src = lm::exprs(i);
        src[axis] = lm::add(src[axis], lm::idx(offset));
        return ir::makeLoad(in, src);
      }));
      computed.push_back(outs.back());
    }
    offset += lm::constValue(field.shape[axis]);
  }
  ir::PrimFunc f = fb.build(computed);
  f.params.resize(1);
  f.params.insert(f.params.end(), outs.begin(), outs.end());
  return f;
}

// strided_slice: begin/end/strides are normalized at lowering time for static
// dimensions exactly as the kernel does (sliceRange); a symbolic axis may
// only be kept whole or reversed whole (as type inference allows).
ir::PrimFunc legalizeStridedSlice(const std::vector<Type>& inputs, const Type& output,
                                  const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  std::vector<SliceAxis> slices = sliceAxes(static_cast<int64_t>(x.rank()), attrs);
  return lm::singleStage("strided_slice", inputs, output,
                         [&](const auto& in, const std::vector<PrimExpr>& o) {
                           std::vector<PrimExpr> src = o;
                           for (const SliceAxis& s : slices) {
                             int64_t dim;
                             if (!ir::asConstInt(x.shape[s.axis], &dim)) {
                               if (isFullReverse(s))
                                 src[s.axis] = lm::sub(lm::sub(x.shape[s.axis], lm::idx(1)), o[s.axis]);
                               continue;  // a full slice keeps the index
                             }
                             int64_t start, count;
                             sliceRange(dim, s, &start, &count);
                             src[s.axis] = lm::add(lm::idx(start), lm::mul(o[s.axis], lm::idx(s.step)));
                           }
                           return ir::makeLoad(in[0], src);
                         });
}

// take: out[pre, j, post] = x[pre, wrap(indices[j]), post]. Negative indices
// wrap once (index + dim) as in the kernel; an index still out of range is
// clamped into the axis, since TensorIR cannot raise an error where the
// kernel throws.
ir::PrimFunc legalizeTake(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  const Type& indices = inputs[1];
  size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), "take"));
  const PrimExpr& dim = x.shape[axis];
  return lm::singleStage("take", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    using namespace ir::build;
    std::vector<PrimExpr> j(o.begin() + static_cast<std::ptrdiff_t>(axis),
                            o.begin() + static_cast<std::ptrdiff_t>(axis + indices.rank()));
    std::vector<PrimExpr> src(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(axis));
    src.push_back(lm::wrappedIndex(ir::makeLoad(in[1], j), dim));
    src.insert(src.end(), o.begin() + static_cast<std::ptrdiff_t>(axis + indices.rank()), o.end());
    return ir::makeLoad(in[0], src);
  });
}

// gather_elements: out[o] = x[o with o[axis] = wrap(indices[o])]; an index
// out of range is clamped into the axis, as in take.
ir::PrimFunc legalizeGatherElements(const std::vector<Type>& inputs, const Type& output,
                                    const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  size_t axis = static_cast<size_t>(
      normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), "gather_elements"));
  const PrimExpr& dim = x.shape[axis];
  return lm::singleStage("gather_elements", inputs, output,
                         [&](const auto& in, const std::vector<PrimExpr>& o) {
                           using namespace ir::build;
                           std::vector<PrimExpr> src = o;
                           src[axis] = lm::wrappedIndex(ir::makeLoad(in[1], o), dim);
                           return ir::makeLoad(in[0], src);
                         });
}

// pad: c = o - before per axis; constant mode selects the pad value outside
// the input (guarded load), edge clamps c, wrap takes c modulo dim, reflect
// folds c into one period 2 * (dim - 1) and mirrors its second half (numpy;
// dim 1 reads index 0).
ir::PrimFunc legalizePad(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  const std::string& mode = attrStr(attrs, "mode");
  std::vector<int64_t> pads = attrInts(attrs, "pad_width");
  PrimExpr fill = ir::te::constant(x.dtype, attrFloat(attrs, "pad_value"));
  size_t rank = x.rank();
  return lm::singleStage("pad", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    using namespace ir::build;
    if (mode == "constant" && lm::hasZeroDim(x.shape)) return fill;  // nothing to read
    std::vector<PrimExpr> src;
    PrimExpr inside;
    for (size_t d = 0; d < rank; ++d) {
      const PrimExpr& dim = x.shape[d];
      PrimExpr c = lm::sub(o[d], lm::idx(pads[d]));
      if (pads[d] <= 0 && pads[d + rank] <= 0) {  // no padding on this axis: always inside
        src.push_back(c);
        continue;
      }
      if (mode == "constant") {
        PrimExpr ok = lm::both(lm::ge(c, lm::idx(0)), lm::lt(c, dim));
        inside = inside ? lm::both(inside, ok) : ok;
        src.push_back(c);
      } else if (mode == "edge") {
        src.push_back(lm::clampIndex(c, dim));
      } else if (mode == "wrap") {
        src.push_back(lm::floorMod(c, dim));
      } else {  // reflect
        int64_t n;
        if (ir::asConstInt(dim, &n) && n == 1) {
          src.push_back(lm::idx(0));
          continue;
        }
        PrimExpr last = lm::sub(dim, lm::idx(1));
        PrimExpr period = lm::maxOf(lm::mul(lm::idx(2), last), lm::idx(1));  // dim 1 at run time: 0 % 1
        if (ir::asConstInt(dim, &n)) period = lm::idx(2 * (n - 1));
        PrimExpr m = lm::floorMod(c, period);
        src.push_back(ir::makeSelect(lm::lt(m, dim), m, lm::sub(period, m)));
      }
    }
    if (inside) return ir::te::guardedLoad(in[0], src, inside, fill);
    return ir::makeLoad(in[0], src);
  });
}

ir::PrimFunc legalizeTile(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  const Type& x = inputs[0];
  return lm::singleStage("tile", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    if (lm::hasZeroDim(x.shape)) return ir::te::constant(x.dtype, 0);  // the output is empty
    std::vector<PrimExpr> src;
    for (size_t d = 0; d < x.rank(); ++d) src.push_back(lm::floorMod(o[d], x.shape[d]));
    return ir::makeLoad(in[0], src);
  });
}

// A data movement op: its kernel and loop nest copy elements, so f64 works.
OpDef injective(std::string name, std::vector<AttrSpec> attrs, InferFn infer, ComputeFn compute,
                LegalizeFn legalize) {
  OpDef d = detail::movementOp(std::move(name), OpPattern::Injective, 1, std::move(attrs), std::move(infer),
                               std::move(compute), std::move(legalize));
  d.f64 = true;
  return d;
}

}  // namespace

void registerManipulateOps(std::vector<OpDef>& ops) {
  using K = AttrKind;
  const std::optional<ir::AttrValue> required;
  ops.push_back(
      injective("reshape", {{"shape", K::Dims, required}}, inferReshape, computeReshape, legalizeReshape));
  ops.push_back(injective("permute_dims", {{"axes", K::Ints, required, true}}, inferPermute, computePermute,
                          legalizePermute));
  ops.push_back(injective("squeeze", {{"axes", K::Ints, required, true}}, inferSqueeze,
                          reshapeLike(inferSqueeze, "squeeze"), legalizeSqueeze));
  ops.push_back(injective("expand_dims", {{"axes", K::Ints, required}}, inferExpandDims,
                          reshapeLike(inferExpandDims, "expand_dims"), legalizeExpandDims));
  ops.push_back(injective("broadcast_to", {{"shape", K::Dims, required}}, inferBroadcastTo,
                          computeBroadcastTo, legalizeBroadcastTo));
  OpDef concat =
      injective("concat", {{"axis", K::Int, required}}, inferConcat, computeConcat, legalizeConcat);
  concat.max_inputs = -1;
  ops.push_back(std::move(concat));
  ops.push_back(injective("split",
                          {{"axis", K::Int, ir::AttrValue(int64_t{0})}, {"sizes", K::Ints, required}},
                          inferSplit, computeSplit, legalizeSplit));
  ops.push_back(injective("strided_slice",
                          {{"axes", K::Ints, required},
                           {"begin", K::Ints, required},
                           {"end", K::Ints, required},
                           {"strides", K::Ints, required, true}},
                          inferStridedSlice, computeStridedSlice, legalizeStridedSlice));
  OpDef take =
      injective("take", {{"axis", K::Int, ir::AttrValue(int64_t{0})}}, inferTake, computeTake, legalizeTake);
  take.min_inputs = take.max_inputs = 2;
  ops.push_back(std::move(take));
  OpDef gather_elements = injective("gather_elements", {{"axis", K::Int, ir::AttrValue(int64_t{0})}},
                                    inferGatherElements, computeGatherElements, legalizeGatherElements);
  gather_elements.min_inputs = gather_elements.max_inputs = 2;
  ops.push_back(std::move(gather_elements));
  ops.push_back(injective("pad",
                          {{"pad_width", K::Ints, required},
                           {"mode", K::Str, ir::AttrValue("constant")},
                           {"pad_value", K::Float, ir::AttrValue(0.0)}},
                          inferPad, computePad, legalizePad));
  ops.push_back(injective("tile", {{"repeats", K::Ints, required}}, inferTile, computeTile, legalizeTile));
}

}  // namespace mlcc::ops
