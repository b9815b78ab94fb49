// The index ops (artifacts_schema/ops.md): gather_nd, scatter_elements and
// scatter_nd, as ONNX GatherND, ScatterElements and ScatterND define them
// (negative indices count from the end). The scatters' `reduction` combines
// an update with what is there: "none" (the last update to an element wins,
// in index order), "add", "mul", "max", "min".
//
// A scatter is legalized in gather form, so every block writes its own
// output element: out[o] searches the updates whose index names o. "none"
// finds the last such update (a max reduction over the update positions)
// and a second stage takes it or the data; the others reduce the matching
// updates (identity elsewhere) and combine the result with the data. This
// costs data x updates comparisons, fine for the update counts of
// inference graphs (a KV-cache write, a label scatter), not for scattering
// a whole large tensor. In compiled code an index out of range is clamped
// into its axis (as take); the reference kernels reject it.
#include <algorithm>
#include <cstring>

#include "legalize_util_mv.h"
#include "manipulate_util.h"
#include "mlcc/ir/builder.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

namespace lm = legal_mv;
namespace te = ir::te;
using detail::checkIndexDType;
using detail::opError;
using detail::shapeText;
using ir::DType;
using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

// ---- reduction -------------------------------------------------------------

enum class Reduction : uint8_t { None, Add, Mul, Max, Min };

Reduction reductionOf(const ir::Attrs& attrs, const char* op) {
  const std::string& r = attrStr(attrs, "reduction");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  throw opError(op,
                "unknown reduction '" + r + "' (expected \"none\", \"add\", \"mul\", \"max\" or \"min\")");
}

void checkReductionType(const ir::Attrs& attrs, DType t, const char* op) {
  if (reductionOf(attrs, op) != Reduction::None && t == DType::boolean)
    throw opError(op, "reduction '" + attrStr(attrs, "reduction") + "' needs a numeric operand, not bool");
}

template <class T>
T combine(Reduction r, T a, T b) {
  switch (r) {
    case Reduction::None: return b;
    case Reduction::Add: return a + b;
    case Reduction::Mul: return a * b;
    case Reduction::Max: return std::max(a, b);
    case Reduction::Min: return std::min(a, b);
  }
  return b;
}

// out[dst] = combine(out[dst], updates[src]): i64 exactly, other dtypes
// through double (exact for one add or multiply of f32/i32 values).
void scatterElement(Tensor& out, int64_t dst, const Tensor& updates, int64_t src, Reduction r) {
  if (r == Reduction::None) {
    const size_t elem = ir::dtypeBytes(out.dtype());
    std::memcpy(out.mutableBytes() + dst * elem, updates.bytes() + src * elem, elem);
  } else if (out.dtype() == DType::i64) {
    int64_t* o = out.mutableData<int64_t>();
    o[dst] = combine(r, o[dst], updates.data<int64_t>()[src]);
  } else {
    out.set(dst, combine(r, out.at(dst), updates.at(src)));
  }
}

te::ReduceOp reduceOpOf(Reduction r) {
  return r == Reduction::Add   ? te::ReduceOp::Sum
         : r == Reduction::Mul ? te::ReduceOp::Prod
         : r == Reduction::Max ? te::ReduceOp::Max
                               : te::ReduceOp::Min;
}

PrimExpr combineExpr(Reduction r, const PrimExpr& data, const PrimExpr& reduced) {
  using namespace ir::build;
  switch (r) {
    case Reduction::Add: return data + reduced;
    case Reduction::Mul: return data * reduced;
    case Reduction::Max: return maximum(data, reduced);
    default: return minimum(data, reduced);
  }
}

// The prim func of a scatter in gather form over the update positions k
// (extents `positions`): `matches(in, o, k)` says whether update k lands on
// output element o, `update(in, o, k)` loads it. in = (data, indices, updates).
using ScatterMatch = std::function<PrimExpr(const std::vector<ir::Buffer>&, const std::vector<PrimExpr>&,
                                            const std::vector<PrimExpr>&)>;
ir::PrimFunc scatterFunc(const char* op, const std::vector<Type>& inputs, const Type& output, Reduction r,
                         const std::vector<PrimExpr>& positions, const ScatterMatch& matches,
                         const ScatterMatch& update) {
  if (lm::hasZeroDim(output.shape) || lm::hasZeroDim(positions))  // nothing to scatter: a copy
    return lm::singleStage(op, inputs, output, [](const auto& in, const std::vector<PrimExpr>& o) {
      return ir::makeLoad(in[0], o);
    });
  te::FuncBuilder fb(op);
  std::vector<ir::Buffer> in{fb.input("x", inputs[0]), fb.input("indices", inputs[1]),
                             fb.input("updates", inputs[2])};
  auto data = [&](const std::vector<PrimExpr>& o) { return ir::makeLoad(in[0], o); };
  if (r == Reduction::None) {
    // The last matching update position (flattened), -1 for none.
    ir::Buffer last = fb.reduce(
        std::string(op) + "_last", output.shape, DType::i64, positions, te::ReduceOp::Max,
        [&](const te::Indices& i, const te::Indices& k) {
          auto o = lm::exprs(i), kk = lm::exprs(k);
          return ir::makeSelect(matches(in, o, kk), lm::flatten(kk, positions), lm::idx(-1));
        },
        lm::idx(-1));
    ir::Buffer y = fb.compute(op, output.shape, output.dtype, [&](const te::Indices& i) {
      auto o = lm::exprs(i);
      PrimExpr l = ir::makeLoad(last, o);
      auto k = lm::unflatten(lm::maxOf(l, lm::idx(0)), positions);
      return ir::makeSelect(lm::lt(l, lm::idx(0)), data(o), update(in, o, k));
    });
    return fb.build({y});
  }
  const te::ReduceOp rop = reduceOpOf(r);
  ir::Buffer acc = fb.reduce(std::string(op) + "_updates", output.shape, output.dtype, positions, rop,
                             [&](const te::Indices& i, const te::Indices& k) {
                               auto o = lm::exprs(i), kk = lm::exprs(k);
                               return ir::makeSelect(matches(in, o, kk), update(in, o, kk),
                                                     te::reduceIdentity(rop, output.dtype));
                             });
  ir::Buffer y = fb.compute(op, output.shape, output.dtype, [&](const te::Indices& i) {
    auto o = lm::exprs(i);
    return combineExpr(r, data(o), ir::makeLoad(acc, o));
  });
  return fb.build({y});
}

// ---- scatter_elements ------------------------------------------------------

Type inferScatterElements(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "scatter_elements";
  const Type& x = tensorOperand(inputs, 0, op);
  const Type& idx = tensorOperand(inputs, 1, op);
  const Type& upd = tensorOperand(inputs, 2, op);
  checkIndexDType(idx, op);
  if (x.rank() == 0 || idx.rank() != x.rank())
    throw opError(op, "indices " + ir::printType(idx) + " must have the rank of the data " +
                          ir::printType(x) + " (at least 1)");
  if (upd.dtype != x.dtype || upd.rank() != idx.rank())
    throw opError(op, "updates " + ir::printType(upd) + " must have the data's dtype and the indices' shape");
  const int64_t axis = normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), op);
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!dimEqual(upd.shape[d], idx.shape[d]))
      throw opError(
          op, "updates " + shapeText(upd.shape) + " must have the indices' shape " + shapeText(idx.shape));
    int64_t xi, ii;
    if (static_cast<int64_t>(d) != axis && ir::asConstInt(x.shape[d], &xi) &&
        ir::asConstInt(idx.shape[d], &ii) && ii > xi)
      throw opError(op, "indices " + shapeText(idx.shape) + " exceed the data " + shapeText(x.shape) +
                            " on axis " + std::to_string(d));
  }
  checkReductionType(attrs, x.dtype, op);
  return x;
}

// For each update position p: out[p with its axis coordinate replaced by indices[p]] (+)= updates[p].
std::vector<Tensor> computeScatterElements(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const char* op = "scatter_elements";
  const Tensor &x = inputs[0], &idx = inputs[1], &upd = inputs[2];
  const int rank = x.rank();
  const int64_t axis = normalizeAxis(attrInt(attrs, "axis"), rank, op);
  const Reduction r = reductionOf(attrs, op);
  Tensor out = x.clone();  // (indices larger than the data: rejected by inferScatterElements)
  const std::vector<int64_t> strides = detail::rowMajorStrides(x.shape());
  std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
  for (int64_t p = 0; p < idx.numel(); ++p) {
    int64_t dst = 0;
    for (int d = 0; d < rank; ++d)
      dst += (d == axis ? detail::wrappedIndex(idx, p, x.shape()[axis], axis, op) : pos[d]) * strides[d];
    scatterElement(out, dst, upd, p, r);
    for (int d = rank - 1; d >= 0 && ++pos[d] == idx.shape()[d]; --d) pos[d] = 0;
  }
  return {out};
}

// Update k (the indices' position, its axis coordinate free) lands on o when
// o agrees with k off the axis and indices[k] names o's axis coordinate.
ir::PrimFunc legalizeScatterElements(const std::vector<Type>& inputs, const Type& output,
                                     const ir::Attrs& attrs) {
  const char* op = "scatter_elements";
  const Type &x = inputs[0], &idx = inputs[1];
  const size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), op));
  // The update position of output element o at axis step k (clamped into the
  // indices where o lies beyond them; `inside` says whether it does not).
  auto position = [&](const std::vector<PrimExpr>& o, const PrimExpr& k, PrimExpr* inside) {
    std::vector<PrimExpr> p = o;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d == axis) {
        p[d] = k;
      } else if (!dimEqual(idx.shape[d], x.shape[d])) {
        PrimExpr in = lm::lt(o[d], idx.shape[d]);
        *inside = *inside ? lm::both(*inside, in) : in;
        p[d] = lm::clampIndex(o[d], idx.shape[d]);
      }
    }
    return p;
  };
  auto matches = [&](const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& o,
                     const std::vector<PrimExpr>& k) {
    PrimExpr inside;
    auto p = position(o, k[0], &inside);
    PrimExpr hit = lm::eq(lm::wrappedIndex(ir::makeLoad(in[1], p), x.shape[axis]), o[axis]);
    return inside ? lm::both(inside, hit) : hit;
  };
  auto update = [&](const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& o,
                    const std::vector<PrimExpr>& k) {
    PrimExpr inside;
    return ir::makeLoad(in[2], position(o, k[0], &inside));
  };
  return scatterFunc(op, inputs, output, reductionOf(attrs, op), {idx.shape[axis]}, matches, update);
}

// ---- scatter_nd ------------------------------------------------------------

// The depth q of ScatterND/GatherND indices [..., q] (its last dimension, static).
int64_t indexDepth(const Type& idx, size_t data_rank, size_t batch_dims, const char* op) {
  int64_t q;
  if (idx.rank() == 0 || !ir::asConstInt(idx.shape.back(), &q))
    throw opError(op, "indices " + ir::printType(idx) + " need a static last dimension (the index depth)");
  if (q < 1 || batch_dims + static_cast<size_t>(q) > data_rank)
    throw opError(op, "the index depth " + std::to_string(q) + " must be between 1 and the data's rank " +
                          std::to_string(data_rank) + (batch_dims ? " less batch_dims" : ""));
  return q;
}

Type inferScatterNd(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "scatter_nd";
  const Type& x = tensorOperand(inputs, 0, op);
  const Type& idx = tensorOperand(inputs, 1, op);
  const Type& upd = tensorOperand(inputs, 2, op);
  checkIndexDType(idx, op);
  const size_t q = static_cast<size_t>(indexDepth(idx, x.rank(), 0, op));
  Shape want(idx.shape.begin(), idx.shape.end() - 1);
  want.insert(want.end(), x.shape.begin() + static_cast<long>(q), x.shape.end());
  bool same = upd.dtype == x.dtype && upd.rank() == want.size();
  for (size_t d = 0; same && d < want.size(); ++d) same = dimEqual(upd.shape[d], want[d]);
  if (!same)
    throw opError(op, "updates " + ir::printType(upd) + " must be " + std::string(ir::dtypeName(x.dtype)) +
                          shapeText(want) +
                          " (the indices' batch, then the data's dimensions past the depth)");
  checkReductionType(attrs, x.dtype, op);
  return x;
}

// For each index tuple k: out[indices[k], ...] (+)= updates[k, ...].
std::vector<Tensor> computeScatterNd(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const char* op = "scatter_nd";
  const Tensor &x = inputs[0], &idx = inputs[1], &upd = inputs[2];
  const Reduction r = reductionOf(attrs, op);
  const int64_t q = idx.shape().back();
  const int64_t tuples = q == 0 ? 0 : idx.numel() / q;
  int64_t slice = 1;  // elements per update: the data's dimensions past q
  for (size_t d = static_cast<size_t>(q); d < x.shape().size(); ++d) slice *= x.shape()[d];
  const std::vector<int64_t> strides = detail::rowMajorStrides(x.shape());
  Tensor out = x.clone();
  for (int64_t k = 0; k < tuples; ++k) {
    int64_t base = 0;
    for (int64_t j = 0; j < q; ++j)
      base += detail::wrappedIndex(idx, k * q + j, x.shape()[static_cast<size_t>(j)], j, op) * strides[j];
    for (int64_t e = 0; e < slice; ++e) scatterElement(out, base + e, upd, k * slice + e, r);
  }
  return {out};
}

// Update position k (the indices' batch) lands on o when its index tuple is o's first q coordinates.
ir::PrimFunc legalizeScatterNd(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const char* op = "scatter_nd";
  const Type &x = inputs[0], &idx = inputs[1];
  const size_t q = static_cast<size_t>(indexDepth(idx, x.rank(), 0, op));
  const std::vector<PrimExpr> positions(idx.shape.begin(), idx.shape.end() - 1);
  auto matches = [&](const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& o,
                     const std::vector<PrimExpr>& k) {
    PrimExpr all;
    for (size_t j = 0; j < q; ++j) {
      std::vector<PrimExpr> at = k;
      at.push_back(lm::idx(static_cast<int64_t>(j)));
      PrimExpr hit = lm::eq(lm::wrappedIndex(ir::makeLoad(in[1], at), x.shape[j]), o[j]);
      all = all ? lm::both(all, hit) : hit;
    }
    return all;
  };
  auto update = [&](const std::vector<ir::Buffer>& in, const std::vector<PrimExpr>& o,
                    const std::vector<PrimExpr>& k) {
    std::vector<PrimExpr> at = k;
    at.insert(at.end(), o.begin() + static_cast<long>(q), o.end());
    return ir::makeLoad(in[2], at);
  };
  return scatterFunc(op, inputs, output, reductionOf(attrs, op), positions, matches, update);
}

// ---- gather_nd -------------------------------------------------------------

// indices [B..., I..., q] over data [B..., D...] (B: the batch_dims leading
// dimensions, shared) -> [B..., I..., D[q:]...].
Type inferGatherNd(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "gather_nd";
  const Type& x = tensorOperand(inputs, 0, op);
  const Type& idx = tensorOperand(inputs, 1, op);
  checkIndexDType(idx, op);
  const int64_t b = attrInt(attrs, "batch_dims");
  if (b < 0 || static_cast<size_t>(b) >= std::min(x.rank(), idx.rank()))
    throw opError(op, "batch_dims " + std::to_string(b) + " must be less than both ranks");
  for (size_t d = 0; d < static_cast<size_t>(b); ++d)
    if (!dimEqual(x.shape[d], idx.shape[d]))
      throw opError(op, "the batch dimensions of the data " + shapeText(x.shape) + " and the indices " +
                            shapeText(idx.shape) + " differ");
  const size_t q = static_cast<size_t>(indexDepth(idx, x.rank(), static_cast<size_t>(b), op));
  Shape out(idx.shape.begin(), idx.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + static_cast<long>(q), x.shape.end());
  return Type::tensor(x.dtype, out);
}

std::vector<Tensor> computeGatherNd(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const char* op = "gather_nd";
  const Tensor &x = inputs[0], &idx = inputs[1];
  const size_t b = static_cast<size_t>(attrInt(attrs, "batch_dims"));
  const int64_t q = idx.shape().back();
  int64_t batch = 1, slice = 1;
  for (size_t d = 0; d < b; ++d) batch *= x.shape()[d];
  for (size_t d = b + static_cast<size_t>(q); d < x.shape().size(); ++d) slice *= x.shape()[d];
  const int64_t per_batch = batch == 0 || q == 0 ? 0 : idx.numel() / q / batch;  // index tuples per batch
  const std::vector<int64_t> strides = detail::rowMajorStrides(x.shape());
  const int64_t batch_stride = b == 0 ? 0 : strides[b - 1];
  std::vector<int64_t> oshape(idx.shape().begin(), idx.shape().end() - 1);
  oshape.insert(oshape.end(), x.shape().begin() + static_cast<long>(b) + q, x.shape().end());
  Tensor out = Tensor::zeros(x.dtype(), oshape);
  const size_t elem = ir::dtypeBytes(x.dtype());
  for (int64_t t = 0; t < batch * per_batch; ++t) {
    int64_t src = (t / std::max<int64_t>(per_batch, 1)) * batch_stride;
    for (int64_t j = 0; j < q; ++j)
      src += detail::wrappedIndex(idx, t * q + j, x.shape()[b + static_cast<size_t>(j)],
                                  static_cast<int64_t>(b) + j, op) *
             strides[b + static_cast<size_t>(j)];
    std::memcpy(out.mutableBytes() + t * slice * static_cast<int64_t>(elem),
                x.bytes() + src * static_cast<int64_t>(elem), static_cast<size_t>(slice) * elem);
  }
  return {out};
}

ir::PrimFunc legalizeGatherNd(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const char* op = "gather_nd";
  const Type &x = inputs[0], &idx = inputs[1];
  const size_t b = static_cast<size_t>(attrInt(attrs, "batch_dims"));
  const size_t q = static_cast<size_t>(indexDepth(idx, x.rank(), b, op));
  const size_t lead = idx.rank() - 1;  // the output's index dimensions
  return lm::singleStage(op, inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    std::vector<PrimExpr> src(o.begin(), o.begin() + static_cast<long>(b));
    for (size_t j = 0; j < q; ++j) {
      std::vector<PrimExpr> at(o.begin(), o.begin() + static_cast<long>(lead));
      at.push_back(lm::idx(static_cast<int64_t>(j)));
      src.push_back(lm::wrappedIndex(ir::makeLoad(in[1], at), x.shape[b + j]));
    }
    src.insert(src.end(), o.begin() + static_cast<long>(lead), o.end());
    return ir::makeLoad(in[0], src);
  });
}

}  // namespace

void registerScatterOps(std::vector<OpDef>& ops) {
  using K = AttrKind;
  const AttrSpec reduction{"reduction", K::Str, ir::AttrValue("none")};
  ops.push_back(detail::movementOp("gather_nd", OpPattern::Injective, 2,
                                   {{"batch_dims", K::Int, ir::AttrValue(int64_t{0})}}, inferGatherNd,
                                   computeGatherNd, legalizeGatherNd));
  // Opaque: the gather form has a reduction stage over the updates.
  ops.push_back(detail::movementOp("scatter_elements", OpPattern::Opaque, 3,
                                   {{"axis", K::Int, ir::AttrValue(int64_t{0})}, reduction},
                                   inferScatterElements, computeScatterElements, legalizeScatterElements));
  ops.push_back(detail::movementOp("scatter_nd", OpPattern::Opaque, 3, {reduction}, inferScatterNd,
                                   computeScatterNd, legalizeScatterNd));
}

}  // namespace mlcc::ops
