// topk (artifacts_schema/ops.md): ONNX TopK. The k largest (or smallest)
// elements along an axis, in order, and their i64 indices: a tuple (values,
// indices). Equal elements keep their index order (the lower index first);
// NaN orders above every number (first among the largest, last among the
// smallest), so the order is total and the result deterministic.
//
// Legalized without a sort. Where k is small next to a static axis (at
// most kMaxSelectionPasses, and 4 k <= n), by selection: k steps, each two
// reductions over the axis (the best value among the elements after the
// previous pick, then the first index holding it), about 2 k x n
// comparisons per row (DGCNN's 16 nearest of 512 points for 1024 rows, 1
// thread: 47 ms a call ranked, 5 selected). Otherwise by ranking: the rank
// of element i is the number of elements along the axis that come before
// it; output position p takes the element of rank p: n x n comparisons per
// row, fine for short axes.
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

// The most output positions that topk's legalization selects one by one
// (two reduction stages each); more are ranked.
constexpr int64_t kMaxSelectionPasses = 32;

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

// The order of `before` above on loaded values: a comes before b; a and b
// tie (NaN ties NaN).
struct TopkOrder {
  DType dtype;
  bool largest;
  static PrimExpr isNan(const PrimExpr& v) { return ir::makeCall("isnan", {v}); }
  PrimExpr before(const PrimExpr& a, const PrimExpr& b) const {
    using namespace ir::build;
    PrimExpr strict = largest ? gt(a, b) : lt(a, b);
    if (!ir::isFloat(dtype)) return strict;
    PrimExpr nan_a = isNan(a), nan_b = isNan(b);
    PrimExpr by_nan = largest ? land(nan_a, ir::makeUnary(ir::UnaryOp::Not, nan_b))
                              : land(nan_b, ir::makeUnary(ir::UnaryOp::Not, nan_a));
    return ir::makeSelect(lor(nan_a, nan_b), by_nan, strict);
  }
  PrimExpr equal(const PrimExpr& a, const PrimExpr& b) const {
    using namespace ir::build;
    PrimExpr same = eq(a, b);
    return ir::isFloat(dtype) ? lor(same, land(isNan(a), isNan(b))) : same;
  }
  // a, at index ia along the axis, comes before b at ib: the total order
  // of the output (ties by index).
  PrimExpr precedes(const PrimExpr& a, const PrimExpr& ia, const PrimExpr& b, const PrimExpr& ib) const {
    return ir::build::lor(before(a, b), ir::build::land(equal(a, b), lm::lt(ia, ib)));
  }
};

// The indices (shape `out`) by selection, one step per output position p:
// the candidates are the elements that come after the previous pick (its
// value, then its index for ties); the pick is the first of them: the best
// candidate value (NaN left out), then the lowest index holding it, or
// holding a NaN (before the best value when largest, after it otherwise).
ir::Buffer selectedIndices(ir::te::FuncBuilder& fb, const ir::Buffer& in, size_t axis,
                           const std::vector<PrimExpr>& out, int64_t k, int64_t n, const TopkOrder& order) {
  ir::Buffer index = fb.buffer("topk_indices", out, DType::i64);
  std::vector<PrimExpr> rows = in->shape;
  rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(axis));
  auto along = [&](const ir::te::Indices& r, const PrimExpr& j) {
    std::vector<PrimExpr> at = lm::exprs(r);
    at.insert(at.begin() + static_cast<std::ptrdiff_t>(axis), j);
    return at;
  };
  const bool is_float = ir::isFloat(in->dtype);
  // Positions (and n past them, both ways) counted in i32 where they fit:
  // 16-lane vectors.
  const DType pos = 2 * n < (int64_t{1} << 31) ? DType::i32 : DType::i64;
  auto posOf = [&](const PrimExpr& j, int64_t plus) {
    PrimExpr v = ir::makeCast(pos, j);
    return plus == 0 ? v : ir::makeBinary(ir::BinaryOp::Add, v, ir::makeInt(plus, pos));
  };
  const ir::te::ReduceOp best_op = order.largest ? ir::te::ReduceOp::Max : ir::te::ReduceOp::Min;
  for (int64_t p = 0; p < k; ++p) {
    auto candidate = [&](const ir::te::Indices& r, const PrimExpr& j, const PrimExpr& xj) -> PrimExpr {
      if (p == 0) return ir::makeBool(true);
      PrimExpr q = lm::clampIndex(ir::makeLoad(index, along(r, lm::idx(p - 1))), in->shape[axis]);
      return order.precedes(ir::makeLoad(in, along(r, q)), q, xj, j);
    };
    ir::Buffer best =
        fb.reduce("topk_best", rows, in->dtype, {in->shape[axis]}, best_op,
                  [&](const ir::te::Indices& r, const ir::te::Indices& j) {
                    PrimExpr xj = ir::makeLoad(in, along(r, j[0]));
                    PrimExpr ok = candidate(r, j[0], xj);
                    if (is_float)
                      ok = ir::build::land(ok, ir::makeUnary(ir::UnaryOp::Not, TopkOrder::isNan(xj)));
                    return ir::makeSelect(ok, xj, ir::te::reduceIdentity(best_op, in->dtype));
                  });
    ir::Buffer first = fb.reduce(
        "topk_first", rows, pos, {in->shape[axis]}, ir::te::ReduceOp::Min,
        [&](const ir::te::Indices& r, const ir::te::Indices& j) {
          using namespace ir::build;
          PrimExpr xj = ir::makeLoad(in, along(r, j[0]));
          PrimExpr cand = candidate(r, j[0], xj);
          PrimExpr at_best = land(cand, eq(xj, ir::makeLoad(best, lm::exprs(r))));
          if (!is_float) return ir::makeSelect(at_best, posOf(j[0], 0), ir::makeInt(n, pos));
          PrimExpr nan = land(cand, TopkOrder::isNan(xj));
          return order.largest ? ir::makeSelect(nan, posOf(j[0], -n),
                                                ir::makeSelect(at_best, posOf(j[0], 0), ir::makeInt(n, pos)))
                               : ir::makeSelect(at_best, posOf(j[0], 0),
                                                ir::makeSelect(nan, posOf(j[0], n), ir::makeInt(2 * n, pos)));
        });
    fb.update(
        "topk_pick", index, rows, [&](const ir::te::Indices& r) { return along(r, lm::idx(p)); },
        [&](const ir::te::Indices& r) {
          PrimExpr f = ir::makeCast(DType::i64, ir::makeLoad(first, lm::exprs(r)));
          if (!is_float) return f;
          return order.largest ? ir::makeSelect(lm::lt(f, lm::idx(0)), lm::add(f, lm::idx(n)), f)
                               : ir::makeSelect(lm::lt(f, lm::idx(n)), f, lm::sub(f, lm::idx(n)));
        });
  }
  return index;
}

// The indices (shape `out`) by ranking: rank[i] = #{j : x[j] comes before
// x[i], or equals it at a lower index}, counted in i32 along a static axis
// of fewer than 2^31 elements (a 16-lane vector of counts where i64 took
// 8), in i64 otherwise; indices[p] = the element of rank p.
ir::Buffer rankedIndices(ir::te::FuncBuilder& fb, const ir::Buffer& in, size_t axis,
                         const std::vector<PrimExpr>& out, const TopkOrder& order) {
  const PrimExpr n = in->shape[axis];
  int64_t static_n = 0;
  const DType count = ir::asConstInt(n, &static_n) && static_n < (int64_t{1} << 31) ? DType::i32 : DType::i64;
  ir::Buffer rank = fb.reduce("topk_rank", in->shape, count, {n}, ir::te::ReduceOp::Sum,
                              [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                                std::vector<PrimExpr> self = lm::exprs(i), other = self;
                                other[axis] = r[0];
                                PrimExpr first = order.precedes(ir::makeLoad(in, other), r[0],
                                                                ir::makeLoad(in, self), self[axis]);
                                return ir::makeSelect(first, ir::makeInt(1, count), ir::makeInt(0, count));
                              });
  return fb.reduce(
      "topk_indices", out, DType::i64, {n}, ir::te::ReduceOp::Max,
      [&](const ir::te::Indices& i, const ir::te::Indices& r) {
        std::vector<PrimExpr> o = lm::exprs(i), src = o;
        src[axis] = r[0];
        return ir::makeSelect(lm::eq(ir::makeCast(DType::i64, ir::makeLoad(rank, src)), o[axis]),
                              PrimExpr(r[0]), lm::idx(-1));
      },
      lm::idx(-1));
}

ir::PrimFunc legalizeTopk(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  const size_t axis =
      static_cast<size_t>(normalizeAxis(attrInt(attrs, "axis"), static_cast<int64_t>(x.rank()), kOp));
  const TopkOrder order{x.dtype, attrBool(attrs, "largest")};
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
  const int64_t k = attrInt(attrs, "k");
  int64_t n = 0;
  const bool select = ir::asConstInt(x.shape[axis], &n) && k <= kMaxSelectionPasses && 4 * k <= n;
  ir::Buffer index = select ? selectedIndices(fb, in, axis, it.shape, k, n, order)
                            : rankedIndices(fb, in, axis, it.shape, order);
  ir::Buffer values = fb.compute(kOp, vt.shape, vt.dtype, [&](const ir::te::Indices& i) {
    std::vector<PrimExpr> src = lm::exprs(i);
    src[axis] = lm::clampIndex(ir::makeLoad(index, src), x.shape[axis]);
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
