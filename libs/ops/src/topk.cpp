// topk (artifacts_schema/ops.md): ONNX TopK. The k largest (or smallest)
// elements along an axis, in order, and their i64 indices: a tuple (values,
// indices). Equal elements keep their index order (the lower index first);
// NaN orders above every number (first among the largest, last among the
// smallest), so the order is total and the result deterministic.
//
// Legalized by ranking, without a sort: the rank of element i is the number
// of elements along the axis that come before it; output position p takes
// the element of rank p. Two reductions over the axis per element, so
// n x n comparisons per row: fine for the short axes of detection heads and
// beam widths, slow for a whole vocabulary.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "legalize_util_mv.h"
#include "manipulate_util.h"
#include "mlcc/ir/builder.h"
#include "op_families.h"
#include "op_util.h"

namespace mlcc::ops {

namespace {

namespace lm = legal_mv;
using ir::DType;
using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

constexpr const char* kOp = "topk";

Type inferTopk(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, kOp);
  if (x.dtype == DType::boolean) throw detail::opError(kOp, "needs a numeric operand, not bool");
  if (x.rank() == 0) throw detail::opError(kOp, "needs an operand of rank >= 1");
  const size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), kOp));
  const int64_t k = attrInt(attrs, "k");
  int64_t n;
  if (k < 0) throw detail::opError(kOp, "k must be >= 0, not " + std::to_string(k));
  if (ir::asConstInt(x.shape[axis], &n) && k > n)
    throw detail::opError(
        kOp, "k = " + std::to_string(k) + " exceeds the axis' " + std::to_string(n) + " elements");
  Shape out = x.shape;
  out[axis] = dimConst(k);
  return Type::tuple({Type::tensor(x.dtype, out), Type::tensor(DType::i64, out)});
}

// Whether a comes before b among the largest (the smallest with `!largest`):
// NaN above every number.
template <class T>
bool before(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b))
      return largest ? std::isnan(a) && !std::isnan(b) : std::isnan(b) && !std::isnan(a);
  }
  return largest ? a > b : a < b;
}

std::vector<Tensor> computeTopk(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  const int rank = x.rank();
  const int64_t axis = normalizeAxis(attrInt(attrs, "axis"), rank, kOp);
  const int64_t k = attrInt(attrs, "k"), n = x.shape()[static_cast<size_t>(axis)];
  const bool largest = attrBool(attrs, "largest");
  std::vector<int64_t> oshape = x.shape();
  oshape[static_cast<size_t>(axis)] = k;
  Tensor values = Tensor::zeros(x.dtype(), oshape), indices = Tensor::zeros(DType::i64, oshape);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= x.shape()[static_cast<size_t>(d)];
  const size_t elem = ir::dtypeBytes(x.dtype());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int64_t j) { return base + j * inner; };
      if (x.dtype() == DType::i64) {
        const int64_t* v = x.data<int64_t>();
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return before(v[at(a)], v[at(b)], largest); });
      } else {
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t a, int64_t b) { return before(x.at(at(a)), x.at(at(b)), largest); });
      }
      for (int64_t p = 0; p < k; ++p) {
        const int64_t dst = o * k * inner + p * inner + i;
        std::memcpy(values.mutableBytes() + dst * static_cast<int64_t>(elem),
                    x.bytes() + at(order[static_cast<size_t>(p)]) * static_cast<int64_t>(elem), elem);
        indices.mutableData<int64_t>()[dst] = order[static_cast<size_t>(p)];
      }
    }
  return {values, indices};
}

ir::PrimFunc legalizeTopk(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  const size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), kOp));
  const bool largest = attrBool(attrs, "largest");
  const Type &vt = output.fields[0], &it = output.fields[1];
  if (lm::hasZeroDim(vt.shape)) {  // nothing selected: no stage
    ir::PrimFunc f;
    f.name = kOp;
    f.params = {ir::makeBuffer("x", x.dtype, x.shape), ir::makeBuffer("values", vt.dtype, vt.shape),
                ir::makeBuffer("indices", it.dtype, it.shape)};
    f.body = ir::makeSeq({});
    return f;
  }
  ir::te::FuncBuilder fb(kOp);
  ir::Buffer in = fb.input("x", x);
  const PrimExpr n = x.shape[axis];
  auto isNan = [&](const PrimExpr& v) { return ir::makeCall("isnan", {v}); };
  // a comes before b: the order of `before` above, expressed on loads.
  auto comesBefore = [&](const PrimExpr& a, const PrimExpr& b) {
    using namespace ir::build;
    PrimExpr strict = largest ? gt(a, b) : lt(a, b);
    if (!ir::isFloat(x.dtype)) return strict;
    PrimExpr nan_a = isNan(a), nan_b = isNan(b);
    PrimExpr by_nan = largest ? land(nan_a, ir::makeUnary(ir::UnaryOp::Not, nan_b))
                              : land(nan_b, ir::makeUnary(ir::UnaryOp::Not, nan_a));
    return ir::makeSelect(lor(nan_a, nan_b), by_nan, strict);
  };
  auto equal = [&](const PrimExpr& a, const PrimExpr& b) {
    using namespace ir::build;
    PrimExpr same = eq(a, b);
    return ir::isFloat(x.dtype) ? lor(same, land(isNan(a), isNan(b))) : same;
  };
  // rank[i] = #{j : x[j] comes before x[i], or equals it at a lower index},
  // counted in i32 along a static axis of fewer than 2^31 elements (a
  // 16-lane vector of counts where i64 took 8: DGCNN's k-nearest of 512
  // points, 74 -> 45 ms a call), in i64 otherwise.
  int64_t static_n = 0;
  const DType count = ir::asConstInt(n, &static_n) && static_n < (int64_t{1} << 31) ? DType::i32 : DType::i64;
  ir::Buffer rank = fb.reduce("topk_rank", x.shape, count, {n}, ir::te::ReduceOp::Sum,
                              [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                                using namespace ir::build;
                                std::vector<PrimExpr> self = lm::exprs(i), other = self;
                                other[axis] = r[0];
                                PrimExpr a = ir::makeLoad(in, other), b = ir::makeLoad(in, self);
                                PrimExpr first =
                                    lor(comesBefore(a, b), land(equal(a, b), lm::lt(r[0], self[axis])));
                                return ir::makeSelect(first, ir::makeInt(1, count), ir::makeInt(0, count));
                              });
  // indices[p] = the element of rank p.
  ir::Buffer index = fb.reduce(
      "topk_indices", it.shape, DType::i64, {n}, ir::te::ReduceOp::Max,
      [&](const ir::te::Indices& i, const ir::te::Indices& r) {
        std::vector<PrimExpr> o = lm::exprs(i), src = o;
        src[axis] = r[0];
        return ir::makeSelect(lm::eq(ir::makeCast(DType::i64, ir::makeLoad(rank, src)), o[axis]),
                              PrimExpr(r[0]), lm::idx(-1));
      },
      lm::idx(-1));
  ir::Buffer values = fb.compute(kOp, vt.shape, vt.dtype, [&](const ir::te::Indices& i) {
    std::vector<PrimExpr> src = lm::exprs(i);
    src[axis] = lm::clampIndex(ir::makeLoad(index, src), n);
    return ir::makeLoad(in, src);
  });
  return fb.build({values, index});
}

int64_t topkFlops(const std::vector<Type>& inputs, const Type&, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  const size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), kOp));
  int64_t n = 1;
  (void)ir::asConstInt(x.shape[axis], &n);
  return saturatingMul(staticCount(x.shape), n);  // the ranking's comparisons
}

}  // namespace

void registerTopkOps(std::vector<OpDef>& ops) {
  using K = AttrKind;
  OpDef def;
  def.name = kOp;
  def.pattern = OpPattern::Opaque;
  def.attrs = {{"k", K::Int, std::nullopt},
               {"axis", K::Int, ir::AttrValue(int64_t{-1})},
               {"largest", K::Bool, ir::AttrValue(true)},
               {"sorted", K::Bool, ir::AttrValue(true)}};
  def.infer = inferTopk;
  def.compute = computeTopk;
  def.flops = topkFlops;
  def.legalize = legalizeTopk;
  ops.push_back(std::move(def));
}

}  // namespace mlcc::ops
