// grid_sample (artifacts_schema/ops.md): ONNX GridSample (PyTorch's
// F.grid_sample) over k >= 1 spatial axes. Each output element [n, c, o...]
// samples x[n, c] at the point grid[n, o...], whose k components are
// normalized coordinates in [-1, 1], the last spatial axis first (x, y, z).
// Along spatial axis i of size d, as the ONNX reference computes it (f32):
//   position   p = align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2
//   nearest    p = round half to even (p)
//   outside [lo, hi] (align_corners: [0, d - 1], else [-0.5, d - 0.5]):
//              border: p clamped into [0, d - 1]; reflection: p reflected at
//              lo and hi until inside; zeros: p as is
//   taps       nearest: trunc(p); linear: floor(p) + {0, 1}, weights 1 - f, f
//              (f = p - floor(p)); cubic: floor(p) - 1 .. + 2, Keys' weights
//              with a = -0.75
//   a tap j outside the axis reads 0 (zeros), x at clamp(j) (border), or x
//              at trunc(reflect(j)) (reflection)
// and the output is the sum over the taps of every axis of the pixel times
// the axis weights (f32; f16/bf16 operands are computed in f32). The
// reference kernel and the lowering perform the same f32 operations in the
// same order.
#include <array>
#include <cmath>

#include "interpolate_util.h"
#include "legalize_util_mv.h"
#include "legalize_util_nn.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/te.h"
#include "nn_util.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

namespace lm = legal_mv;
using ir::DType;
using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

constexpr const char* kOp = "grid_sample";
constexpr float kCubicA = -0.75f;

enum class Mode : uint8_t { Nearest, Linear, Cubic };
enum class Padding : uint8_t { Zeros, Border, Reflection };

Mode modeOf(const ir::Attrs& attrs) {
  const std::string& m = attrStr(attrs, "mode");
  if (m == "nearest") return Mode::Nearest;
  if (m == "linear") return Mode::Linear;
  if (m == "cubic") return Mode::Cubic;
  nn::fail(kOp, "unknown mode '" + m + "' (expected \"linear\", \"nearest\" or \"cubic\")");
}

Padding paddingOf(const ir::Attrs& attrs) {
  const std::string& p = attrStr(attrs, "padding_mode");
  if (p == "zeros") return Padding::Zeros;
  if (p == "border") return Padding::Border;
  if (p == "reflection") return Padding::Reflection;
  nn::fail(kOp, "unknown padding_mode '" + p + "' (expected \"zeros\", \"border\" or \"reflection\")");
}

int taps(Mode m) { return m == Mode::Nearest ? 1 : m == Mode::Linear ? 2 : 4; }

Type inferGridSample(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, kOp);
  const Type& grid = tensorOperand(inputs, 1, kOp);
  nn::requireFloat(x, kOp, "the input");
  nn::requireFloat(grid, kOp, "the grid");
  modeOf(attrs);
  paddingOf(attrs);
  if (x.rank() < 3)
    nn::fail(kOp,
             "the input " + ir::printType(x) + " needs a batch, a channel and at least one spatial axis");
  const size_t k = x.rank() - 2;
  int64_t comps;
  if (grid.rank() != x.rank() || !ir::asConstInt(grid.shape.back(), &comps) ||
      comps != static_cast<int64_t>(k))
    nn::fail(kOp, "the grid " + ir::printType(grid) + " must be [N, out..., " + std::to_string(k) +
                      "] for the input " + ir::printType(x));
  if (!dimEqual(grid.shape[0], x.shape[0]))
    nn::fail(kOp, "the grid's batch " + nn::dimStr(grid.shape[0]) + " differs from the input's " +
                      nn::dimStr(x.shape[0]));
  Shape out{x.shape[0], x.shape[1]};
  out.insert(out.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  return Type::tensor(x.dtype, out);
}

// ---- the reference kernel --------------------------------------------------

// p reflected at lo and hi until it lies in [lo, hi] (lo when the range is empty).
float reflect(float p, float lo, float hi) {
  const float range = hi - lo;
  if (!(range > 0)) return lo;
  if (p < lo) {
    const float dx = lo - p, n = std::trunc(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0f) == 0 ? lo + r : hi - r;
  }
  if (p > hi) {
    const float dx = p - hi, n = std::trunc(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0f) == 0 ? hi - r : lo + r;
  }
  return p;
}

struct AxisTaps {
  std::array<int64_t, 4> index{};  // always inside the axis
  std::array<float, 4> weight{};
  std::array<bool, 4> inside{};  // false: the tap reads 0 (zeros padding)
};

AxisTaps axisTaps(float g, int64_t dim, Mode mode, Padding pad, bool align) {
  const float d = static_cast<float>(dim);
  const float lo = align ? 0.0f : -0.5f, hi = align ? d - 1.0f : d - 0.5f;
  float p = align ? (g + 1.0f) / 2.0f * (d - 1.0f) : ((g + 1.0f) * d - 1.0f) / 2.0f;
  if (mode == Mode::Nearest) p = std::nearbyint(p);
  if (p < lo || p > hi) {
    if (pad == Padding::Border) p = std::min(std::max(p, 0.0f), d - 1.0f);
    if (pad == Padding::Reflection) p = reflect(p, lo, hi);
  }
  // Far outside the axis (or NaN) every tap reads the zero padding: keep the
  // tap arithmetic in range (a huge p would overflow the integer index).
  if (!(p >= lo - 4.0f && p <= hi + 4.0f)) p = p > hi ? hi + 4.0f : lo - 4.0f;
  AxisTaps t;
  const float base = mode == Mode::Nearest ? std::trunc(p) : std::floor(p), f = p - base;
  if (mode == Mode::Nearest) t.weight[0] = 1.0f;
  if (mode == Mode::Linear) t.weight = {1.0f - f, f};
  if (mode == Mode::Cubic) t.weight = cubicWeights<float>(f, kCubicA);
  const int64_t first = static_cast<int64_t>(base) - (mode == Mode::Cubic ? 1 : 0);
  for (int j = 0; j < taps(mode); ++j) {
    int64_t i = first + j;
    t.inside[j] = pad != Padding::Zeros || (i >= 0 && i < dim);
    if (pad == Padding::Reflection && (i < 0 || i >= dim))
      i = static_cast<int64_t>(std::trunc(reflect(static_cast<float>(i), lo, hi)));
    t.index[j] = std::min(std::max<int64_t>(i, 0), dim - 1);
  }
  return t;
}

std::vector<Tensor> computeGridSample(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor &tx = inputs[0], &tg = inputs[1];
  const Mode mode = modeOf(attrs);
  const Padding pad = paddingOf(attrs);
  const bool align = attrBool(attrs, "align_corners");
  const size_t k = static_cast<size_t>(tx.rank() - 2);
  std::vector<int64_t> oshape{tx.shape()[0], tx.shape()[1]};
  oshape.insert(oshape.end(), tg.shape().begin() + 1, tg.shape().end() - 1);
  int64_t points = 1, plane = 1;  // grid points and input elements per (n, c)
  for (size_t i = 2; i < oshape.size(); ++i) points *= oshape[i];
  for (size_t i = 0; i < k; ++i) plane *= tx.shape()[2 + i];
  std::vector<float> sx, sg, out(static_cast<size_t>(oshape[0] * oshape[1] * points));
  const float* x = nn::f32Data(tx, sx);
  const float* grid = nn::f32Data(tg, sg);
  const int T = taps(mode);
  int64_t combos = 1;
  for (size_t i = 0; i < k; ++i) combos *= T;
  std::vector<AxisTaps> axes(k);
  for (int64_t n = 0; n < oshape[0]; ++n)
    for (int64_t pt = 0; pt < points; ++pt) {
      const float* g = grid + (n * points + pt) * static_cast<int64_t>(k);
      for (size_t i = 0; i < k; ++i) axes[i] = axisTaps(g[k - 1 - i], tx.shape()[2 + i], mode, pad, align);
      for (int64_t c = 0; c < oshape[1]; ++c) {
        const float* xp = x + (n * oshape[1] + c) * plane;
        float acc = 0;
        for (int64_t combo = 0; combo < combos; ++combo) {  // the first axis' tap outermost
          int64_t offset = 0, rest = combo, step = combos;
          bool inside = true;
          std::array<int, 8> tap{};
          for (size_t i = 0; i < k; ++i) {
            step /= T;
            tap[i] = static_cast<int>(rest / step);
            rest %= step;
            offset = offset * tx.shape()[2 + i] + axes[i].index[static_cast<size_t>(tap[i])];
            inside = inside && axes[i].inside[static_cast<size_t>(tap[i])];
          }
          float v = inside ? xp[offset] : 0.0f;
          for (size_t i = 0; i < k; ++i) v = v * axes[i].weight[static_cast<size_t>(tap[i])];
          acc += v;
        }
        out[static_cast<size_t>((n * oshape[1] + c) * points + pt)] = acc;
      }
    }
  return {nn::fromF32(tx.dtype(), oshape, out.data())};
}

// ---- the lowering ----------------------------------------------------------

PrimExpr f32(float v) { return ir::te::constant(DType::f32, v); }

PrimExpr reflectExpr(const PrimExpr& p, float lo, const PrimExpr& hi) {
  using namespace ir::build;
  const PrimExpr range = hi - lo;
  auto side = [&](const PrimExpr& dx, const PrimExpr& even, const PrimExpr& odd_base, bool add_even) {
    PrimExpr n = ir::makeCall("trunc", {dx / range});
    PrimExpr r = dx - n * range;
    PrimExpr is_even = eq(ir::makeCall("fmod", {n, f32(2.0f)}), f32(0.0f));
    return ir::makeSelect(is_even, add_even ? even + r : even - r, add_even ? odd_base - r : odd_base + r);
  };
  PrimExpr below = side(f32(lo) - p, f32(lo), hi, true);
  PrimExpr above = side(p - hi, hi, f32(lo), false);
  PrimExpr reflected = ir::makeSelect(lt(p, f32(lo)), below, ir::makeSelect(gt(p, hi), above, p));
  return ir::makeSelect(gt(range, f32(0.0f)), reflected, f32(lo));
}

// The sampling position p along an axis of size `dim` of a grid component
// g (after nearest's rounding and the padding mode's clamp or reflection).
PrimExpr positionExpr(const PrimExpr& g, const PrimExpr& dim, Mode mode, Padding pad, bool align) {
  using namespace ir::build;
  const PrimExpr d = ir::makeCast(DType::f32, dim);
  const float lo = align ? 0.0f : -0.5f;
  const PrimExpr hi = align ? d - 1.0f : d - 0.5f;
  PrimExpr p = align ? (g + 1.0f) / 2.0f * (d - 1.0f) : ((g + 1.0f) * d - 1.0f) / 2.0f;
  if (mode == Mode::Nearest) p = ir::makeCall("round", {p});
  if (pad == Padding::Zeros) return p;
  PrimExpr fixed = pad == Padding::Border ? minimum(maximum(p, f32(0.0f)), d - 1.0f) : reflectExpr(p, lo, hi);
  return ir::makeSelect(lor(lt(p, f32(lo)), gt(p, hi)), fixed, p);
}

struct AxisExprs {
  PrimExpr base, frac;  // the first tap's position (f32, before the cubic's -1) and fraction
  float lo;
  PrimExpr hi;  // the axis' bounds
};

AxisExprs axisExprs(const PrimExpr& p, const PrimExpr& dim, Mode mode, bool align) {
  using namespace ir::build;
  const PrimExpr d = ir::makeCast(DType::f32, dim);
  PrimExpr base = ir::makeCall(mode == Mode::Nearest ? "trunc" : "floor", {p});
  return {base, p - base, align ? 0.0f : -0.5f, align ? d - 1.0f : d - 0.5f};
}

// The index (clamped into the axis) and whether the tap is inside, for tap
// `j` (a loop variable) of an axis.
std::pair<PrimExpr, PrimExpr> tapIndex(const AxisExprs& a, const PrimExpr& j, const PrimExpr& dim, Mode mode,
                                       Padding pad) {
  using namespace ir::build;
  PrimExpr i = lm::add(ir::makeCast(DType::i64, a.base), lm::add(j, lm::idx(mode == Mode::Cubic ? -1 : 0)));
  PrimExpr inside = lm::both(lm::ge(i, lm::idx(0)), lm::lt(i, dim));
  if (pad == Padding::Reflection) {
    PrimExpr r = ir::makeCast(DType::i64,
                              ir::makeCall("trunc", {reflectExpr(ir::makeCast(DType::f32, i), a.lo, a.hi)}));
    i = ir::makeSelect(inside, i, r);
  }
  return {lm::clampIndex(i, dim), pad == Padding::Zeros ? inside : PrimExpr()};
}

PrimExpr tapWeight(const AxisExprs& a, const PrimExpr& j, Mode mode) {
  using namespace ir::build;
  if (mode == Mode::Nearest) return f32(1.0f);
  if (mode == Mode::Linear) return ir::makeSelect(lm::eq(j, lm::idx(0)), 1.0f - a.frac, a.frac);
  std::array<PrimExpr, 4> w = cubicWeights<PrimExpr>(a.frac, kCubicA);
  return ir::makeSelect(
      lm::eq(j, lm::idx(0)), w[0],
      ir::makeSelect(lm::eq(j, lm::idx(1)), w[1], ir::makeSelect(lm::eq(j, lm::idx(2)), w[2], w[3])));
}

ir::PrimFunc legalizeGridSample(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Mode mode = modeOf(attrs);
  const Padding pad = paddingOf(attrs);
  const bool align = attrBool(attrs, "align_corners");
  const size_t k = inputs[0].rank() - 2;
  if (lm::hasZeroDim(output.shape)) return lm::singleStage(kOp, inputs, output, nullptr);
  ir::te::FuncBuilder fb(kOp);
  ir::Buffer x = fb.input("x", inputs[0]), grid = fb.input("grid", inputs[1]);
  // Stage per axis: the sampling position of every grid point.
  Shape point_shape{output.shape[0]};
  point_shape.insert(point_shape.end(), output.shape.begin() + 2, output.shape.end());
  std::vector<ir::Buffer> position;
  for (size_t i = 0; i < k; ++i)
    position.push_back(
        fb.compute("grid_sample_position", point_shape, DType::f32, [&](const ir::te::Indices& v) {
          std::vector<PrimExpr> g = lm::exprs(v);
          g.push_back(lm::idx(static_cast<int64_t>(k - 1 - i)));
          return positionExpr(nnlegal::castTo(DType::f32, ir::makeLoad(grid, g)), x->shape[2 + i], mode, pad,
                              align);
        }));
  // The sum over the taps of every axis (the first axis' tap outermost).
  auto sample = [&](const std::vector<PrimExpr>& o, const std::vector<PrimExpr>& tap) {
    std::vector<PrimExpr> at{o[0], o[1]}, point{o[0]};
    point.insert(point.end(), o.begin() + 2, o.end());
    PrimExpr inside;
    std::vector<PrimExpr> weights;
    for (size_t i = 0; i < k; ++i) {
      const PrimExpr& dim = x->shape[2 + i];
      AxisExprs a = axisExprs(ir::makeLoad(position[i], point), dim, mode, align);
      auto [index, in] = tapIndex(a, tap[i], dim, mode, pad);
      at.push_back(index);
      if (in) inside = inside ? lm::both(inside, in) : in;
      weights.push_back(tapWeight(a, tap[i], mode));
    }
    PrimExpr v =
        nnlegal::castTo(DType::f32, inside ? ir::te::guardedLoad(x, at, inside, ir::te::constant(x->dtype, 0))
                                           : ir::makeLoad(x, at));
    using namespace ir::build;
    for (const PrimExpr& w : weights) v = v * w;
    return v;
  };
  ir::Buffer acc;
  if (mode == Mode::Nearest) {
    acc = fb.compute(
        output.dtype == DType::f32 ? kOp : "grid_sample_f32", output.shape, DType::f32,
        [&](const ir::te::Indices& i) { return sample(lm::exprs(i), std::vector<PrimExpr>(k, lm::idx(0))); });
  } else {
    acc = fb.reduce(output.dtype == DType::f32 ? kOp : "grid_sample_f32", output.shape, DType::f32,
                    std::vector<PrimExpr>(k, lm::idx(taps(mode))), ir::te::ReduceOp::Sum,
                    [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                      return sample(lm::exprs(i), lm::exprs(r));
                    });
  }
  if (output.dtype == DType::f32) return fb.build({acc});
  ir::Buffer y = fb.compute(kOp, output.shape, output.dtype, [&](const ir::te::Indices& i) {
    return nnlegal::castTo(output.dtype, ir::makeLoad(acc, lm::exprs(i)));
  });
  return fb.build({y});
}

int64_t gridSampleFlops(const std::vector<Type>&, const Type& output, const ir::Attrs& attrs) {
  int64_t per = 1;
  for (size_t i = 2; i < output.rank(); ++i) per = saturatingMul(per, 2 * taps(modeOf(attrs)));
  return saturatingMul(staticCount(output.shape), per);
}

}  // namespace

void registerGridSampleOps(std::vector<OpDef>& ops) {
  using K = AttrKind;
  OpDef def;
  def.name = kOp;
  def.min_inputs = def.max_inputs = 2;
  def.pattern = OpPattern::Opaque;  // linear and cubic reduce over their taps
  def.attrs = {{"mode", K::Str, ir::AttrValue("linear")},
               {"padding_mode", K::Str, ir::AttrValue("zeros")},
               {"align_corners", K::Bool, ir::AttrValue(false)}};
  def.infer = inferGridSample;
  def.compute = computeGridSample;
  def.flops = gridSampleFlops;
  def.legalize = legalizeGridSample;
  ops.push_back(std::move(def));
}

}  // namespace mlcc::ops
