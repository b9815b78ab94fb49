// resize2d (artifacts_schema/ops.md): ONNX Resize on the two spatial axes of
// an NCHW tensor, given the output size. Coordinates map back to the input as
// the ONNX specification defines them (scale = the `scales` attribute's f32
// value when given, else output / input; computed in double as the ONNX
// reference implementation does):
//   half_pixel          x = (o + 0.5) / scale - 0.5
//   pytorch_half_pixel  x = length > 1 ? (o + 0.5) / scale - 0.5 : -0.5
//   half_pixel_symmetric x = in / 2 * (1 - out / length) + (o + 0.5) / scale - 0.5
// (length: the resized length in * scale, unrounded; out when no scale is given)
//   align_corners       x = out > 1 ? o * (in - 1) / (out - 1) : 0
//   asymmetric          x = o / scale
// `nearest` rounds x by `rounding_method` and clamps it into the axis (any
// dtype: pure data movement); `linear` interpolates bilinearly between the
// two neighbours of x clamped into [0, in - 1] (float dtypes, computed in f32);
// `cubic` weighs the four neighbours floor(x) - 1 .. floor(x) + 2 (indices
// clamped into the axis, as ONNX's edge padding) with Keys' cubic of
// coefficient `cubic_coeff_a`; with `exclude_outside` the neighbours outside
// the axis weigh 0 and the others are renormalized (float dtypes).
#include "mlcc/ops/resize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "interpolate_util.h"
#include "legalize_util_mv.h"
#include "manipulate_util.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/float_bits.h"
#include "op_families.h"
#include "op_util.h"

namespace mlcc::ops {

namespace {

using ir::Tensor;
using ir::Type;

Error resizeError(const std::string& msg) { return Error("op 'resize2d': " + msg); }

bool oneOf(const std::string& v, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (v == o) return true;
  return false;
}

void checkChoice(const ir::Attrs& attrs, const char* name, std::initializer_list<const char*> options) {
  const std::string& v = attrStr(attrs, name);
  if (oneOf(v, options)) return;
  std::string list;
  for (const char* o : options) list += (list.empty() ? "\"" : ", \"") + std::string(o) + "\"";
  throw resizeError(std::string("unknown ") + name + " '" + v + "' (expected one of " + list + ")");
}

// The scale of spatial axis `a` (0: height, 1: width): the `scales`
// attribute's value rounded to f32 (as ONNX gives it), or 0 for output / input.
float axisScale(const ir::Attrs& attrs, int a) {
  if (!hasAttr(attrs, "scales")) return 0.0f;
  return static_cast<float>(attrFloats(attrs, "scales")[static_cast<size_t>(a)]);
}

Type inferResize(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "resize2d");
  if (hasAttr(attrs, "scales")) {
    std::vector<double> scales = attrFloats(attrs, "scales");
    if (scales.size() != 2)
      throw resizeError("scales must have two values [sh, sw], not " + std::to_string(scales.size()));
    for (double v : scales)
      if (!(v >= 1.0 / 65536 && v <= 65536.0))  // also NaN
        throw resizeError("scale " + std::to_string(v) + " is out of range [2^-16, 2^16]");
  }
  if (x.rank() != 4) throw resizeError("expects an NCHW tensor of rank 4, not " + ir::printType(x));
  checkChoice(attrs, "method", {"nearest", "linear", "cubic"});
  checkChoice(attrs, "coordinate_transformation_mode",
              {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric"});
  checkChoice(attrs, "rounding_method", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  if (attrStr(attrs, "method") != "nearest" && !ir::isFloat(x.dtype))
    throw resizeError("method '" + attrStr(attrs, "method") + "' needs a float tensor, not " +
                      ir::printType(x));
  std::vector<int64_t> size = attrInts(attrs, "size");
  if (size.size() != 2 || size[0] < 0 || size[1] < 0)
    throw resizeError("size " + detail::intsText(size) + " must be two non-negative sizes [oh, ow]");
  for (int a = 0; a < 2; ++a)
    if (size[a] > 0 && isConstDim(x.shape[2 + a], 0))
      throw resizeError("cannot resize the empty axis " + std::to_string(2 + a) + " of " + ir::printType(x));
  return Type::tensor(x.dtype, {x.shape[0], x.shape[1], dimConst(size[0]), dimConst(size[1])});
}

int64_t roundNearest(double x, const std::string& method) {
  double f = std::floor(x);
  if (method == "floor") return static_cast<int64_t>(f);
  if (method == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x == f + 0.5) return static_cast<int64_t>(method == "round_prefer_floor" ? f : f + 1);
  return static_cast<int64_t>(std::round(x));
}

// Nearest source index per output index along one axis.
std::vector<int64_t> nearestIndices(int64_t in, int64_t out, float scale, const ir::Attrs& attrs) {
  const std::string& mode = attrStr(attrs, "coordinate_transformation_mode");
  const std::string& rounding = attrStr(attrs, "rounding_method");
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < out; ++o) {
    double x = resizeSourceCoord(o, in, out, mode, scale);
    idx.push_back(std::clamp<int64_t>(roundNearest(x, rounding), 0, in - 1));
  }
  return idx;
}

// floor(x) and its fraction for the source coordinate x of an output index:
// linear's (x clamped into [0, in - 1]: it interpolates i0 and
// min(i0 + 1, in - 1) with weight frac) and cubic's (x as it is).
struct Tap {
  int64_t i0;  // floor(x)
  float frac;  // x - floor(x)
};

std::vector<Tap> axisTaps(int64_t in, int64_t out, float scale, const std::string& mode, bool clamp) {
  std::vector<Tap> taps;
  for (int64_t o = 0; o < out; ++o) {
    double x = resizeSourceCoord(o, in, out, mode, scale);
    if (clamp) x = std::clamp(x, 0.0, static_cast<double>(in - 1));
    const double f = std::floor(x);
    taps.push_back({static_cast<int64_t>(f), static_cast<float>(x - f)});
  }
  return taps;
}

// The four (clamped index, f32 weight) pairs of one tap along an axis of
// size `in`, and the weights' sum; with `exclude`, the neighbours outside
// the axis weigh 0 (the caller divides by both axes' sums at the end). In
// f32, in the lowering's order, so that both compute the same values.
std::array<std::pair<int64_t, float>, 4> cubicNeighbours(const Tap& tap, int64_t in, float a, bool exclude,
                                                         float* sum) {
  std::array<float, 4> w = cubicWeights<float>(tap.frac, a);
  std::array<std::pair<int64_t, float>, 4> out;
  *sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = tap.i0 - 1 + k;
    if (exclude && (i < 0 || i >= in)) w[static_cast<size_t>(k)] = 0;
    *sum = k == 0 ? w[0] : *sum + w[static_cast<size_t>(k)];
    out[static_cast<size_t>(k)] = {std::clamp<int64_t>(i, 0, in - 1), w[static_cast<size_t>(k)]};
  }
  return out;
}

std::vector<float> toFloats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == ir::DType::f32) {
    std::memcpy(v.data(), t.bytes(), t.nbytes());
  } else {
    const uint16_t* bits = t.data<uint16_t>();
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(t.dtype() == ir::DType::f16 ? ir::detail::halfBitsToDouble(bits[i])
                                                            : ir::detail::bf16BitsToDouble(bits[i]));
  }
  return v;
}

void storeFloats(Tensor& t, const std::vector<float>& v) {
  if (t.dtype() == ir::DType::f32) {
    std::memcpy(t.mutableBytes(), v.data(), t.nbytes());
    return;
  }
  uint16_t* bits = t.mutableData<uint16_t>();
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] =
        t.dtype() == ir::DType::f16 ? ir::detail::doubleToHalfBits(v[i]) : ir::detail::doubleToBF16Bits(v[i]);
}

// The [N, C, oh, ow] result of value(plane, row tap, column tap) for every
// output element of every N x C plane, computed in f32.
template <class Tap, class F>
Tensor interpolatePlanes(const Tensor& x, const std::vector<int64_t>& out_shape, const std::vector<Tap>& ty,
                         const std::vector<Tap>& tx, F value) {
  const int64_t planes = out_shape[0] * out_shape[1], ih = x.shape()[2], iw = x.shape()[3];
  std::vector<float> in = toFloats(x), res(static_cast<size_t>(planes * out_shape[2] * out_shape[3]));
  float* dst = res.data();
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = in.data() + p * ih * iw;
    for (const Tap& y : ty)
      for (const Tap& t : tx) *dst++ = value(plane, y, t);
  }
  Tensor out = Tensor::zeros(x.dtype(), out_shape);
  storeFloats(out, res);
  return out;
}

std::vector<Tensor> computeResize(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& x = inputs[0];
  const std::vector<int64_t>& s = x.shape();
  std::vector<int64_t> size = attrInts(attrs, "size");
  const int64_t n = s[0], c = s[1], ih = s[2], iw = s[3], oh = size[0], ow = size[1];
  std::vector<int64_t> out_shape{n, c, oh, ow};
  if (n * c * oh * ow == 0) return {Tensor::zeros(x.dtype(), out_shape)};

  if (attrStr(attrs, "method") == "nearest") {
    std::vector<std::vector<int64_t>> tables(4);
    for (int64_t i = 0; i < n; ++i) tables[0].push_back(i * c * ih * iw);
    for (int64_t i = 0; i < c; ++i) tables[1].push_back(i * ih * iw);
    for (int64_t i : nearestIndices(ih, oh, axisScale(attrs, 0), attrs)) tables[2].push_back(i * iw);
    tables[3] = nearestIndices(iw, ow, axisScale(attrs, 1), attrs);
    return {detail::gatherByTables(x, out_shape, tables)};
  }

  const std::string& mode = attrStr(attrs, "coordinate_transformation_mode");
  if (attrStr(attrs, "method") == "cubic") {
    const float a = static_cast<float>(attrFloat(attrs, "cubic_coeff_a"));
    const bool exclude = attrBool(attrs, "exclude_outside");
    return {interpolatePlanes(x, out_shape, axisTaps(ih, oh, axisScale(attrs, 0), mode, false),
                              axisTaps(iw, ow, axisScale(attrs, 1), mode, false),
                              [&](const float* plane, const Tap& y, const Tap& t) {
                                float row_sum, col_sum;
                                auto rows = cubicNeighbours(y, ih, a, exclude, &row_sum);
                                auto cols = cubicNeighbours(t, iw, a, exclude, &col_sum);
                                float v = 0;
                                for (size_t r = 0; r < 4; ++r) {
                                  float row = 0;
                                  for (size_t k = 0; k < 4; ++k) {
                                    const float term =
                                        cols[k].second * plane[rows[r].first * iw + cols[k].first];
                                    row = k == 0 ? term : row + term;
                                  }
                                  v = r == 0 ? rows[r].second * row : v + rows[r].second * row;
                                }
                                return exclude ? v / (row_sum * col_sum) : v;
                              })};
  }
  return {interpolatePlanes(x, out_shape, axisTaps(ih, oh, axisScale(attrs, 0), mode, true),
                            axisTaps(iw, ow, axisScale(attrs, 1), mode, true),
                            [&](const float* plane, const Tap& y, const Tap& t) {
                              const float* r0 = plane + y.i0 * iw;
                              const float* r1 = plane + std::min(y.i0 + 1, ih - 1) * iw;
                              const int64_t c0 = t.i0, c1 = std::min(t.i0 + 1, iw - 1);
                              float top = r0[c0] + t.frac * (r0[c1] - r0[c0]);
                              float bottom = r1[c0] + t.frac * (r1[c1] - r1[c0]);
                              return top + y.frac * (bottom - top);
                            })};
}

// Bilinear: three lerps of two operations each per output element; nearest
// only moves data.
int64_t resizeFlops(const std::vector<Type>&, const Type& output, const ir::Attrs& attrs) {
  if (attrStr(attrs, "method") == "cubic")
    return flopsProduct(40, staticCount(output.shape));  // 16 taps + weights
  if (attrStr(attrs, "method") != "linear") return 0;
  return flopsProduct(6, staticCount(output.shape));
}

// ---- legalization (TensorIR compute definition) ----------------------------
//
// The source coordinate of output index o along an axis is the rational
// p / q (q > 0, p an integer expression of o and the input size), so the
// integer parts (floor, rounding, clamping) are exact integer arithmetic in
// TensorIR:
//   half_pixel          ((2o + 1) * in - out) / (2 * out)
//   pytorch_half_pixel  the same when out > 1, else -1 / 2
//   half_pixel_symmetric the same as half_pixel
//   align_corners       o * (in - 1) / (out - 1) when out > 1, else 0
//   asymmetric          o * in / out
// With a given scale s = a / b (an f32: exact as a ratio of integers), the
// half_pixel forms are ((2o + 1) * b - a) / 2a, asymmetric o * b / a, and
// align_corners o * (in - 1) * b / (in * a - b) (ONNX: the resized length is
// in * s, unrounded).
// The kernel computes the coordinate in double, which can land just beside
// an integer or a tie that the exact value hits (half_pixel 3 -> 5 gives
// 0.9999999999999998 for 1). For a static input size the lowering compares
// the formula with the kernel's table for every output index and patches the
// indices (and linear weights) that differ with selects on the output index,
// so the results match the kernel exactly; a symbolic input size keeps the
// exact formula.
//   nearest  floor p / q, ceil (p + q - 1) / q, round_prefer_floor
//            (2p + q - 1) / 2q, round_prefer_ceil (2p + q) / 2q, clamped
//            into [0, in - 1]; any dtype (pure data movement).
//   linear   p clamped into [0, (in - 1) q], i0 = p / q, i1 = min(i0 + 1,
//            in - 1), weight of i1 f32(p - i0 q) / f32(q); the three lerps in
//            f32 in the kernel's order, f16/bf16 loaded through casts and the
//            result rounded to the dtype once.

namespace lm = legal_mv;
using ir::PrimExpr;

struct Rational {
  PrimExpr p;
  int64_t q;
};

// f (positive, finite, in [2^-16, 2^16]) as a / b in lowest terms.
std::pair<int64_t, int64_t> exactRatio(float f) {
  int exp = 0;
  const double m = std::frexp(static_cast<double>(f), &exp);   // f = m * 2^exp, m in [0.5, 1)
  int64_t a = static_cast<int64_t>(std::ldexp(m, 24)), b = 1;  // f32 has 24 significant bits
  if (24 - exp >= 0)
    b = int64_t{1} << (24 - exp);
  else
    a <<= (exp - 24);
  while (a % 2 == 0 && b % 2 == 0) a /= 2, b /= 2;
  return {a, b};
}

Rational sourceRational(const PrimExpr& o, const PrimExpr& in, int64_t out, const std::string& mode,
                        float scale) {
  if (out <= 0) return {lm::idx(0), 1};
  if (scale > 0) {
    auto [a, b] = exactRatio(scale);
    if (mode == "align_corners") {  // o * (in - 1) / (in * a / b - 1)
      int64_t n;
      if (!ir::asConstInt(in, &n))
        throw resizeError("align_corners with given scales needs a static input size");
      int64_t q = n * a - b;
      if (q == 0) return {lm::idx(0), 1};
      PrimExpr p = lm::mul(o, lm::idx((n - 1) * b));
      return q > 0 ? Rational{p, q} : Rational{lm::sub(lm::idx(0), p), -q};
    }
    if (mode == "asymmetric") return {lm::mul(o, lm::idx(b)), a};
    int64_t n;
    if (!ir::asConstInt(in, &n)) throw resizeError(mode + " with given scales needs a static input size");
    if (mode == "pytorch_half_pixel" && n * a == b) return {lm::idx(-1), 2};  // a resized length of 1: -0.5
    // (2o + 1) b - a over 2a; half_pixel_symmetric adds the offset (n a - out b) / 2a.
    PrimExpr p = lm::sub(lm::mul(lm::add(lm::mul(lm::idx(2), o), lm::idx(1)), lm::idx(b)), lm::idx(a));
    if (mode == "half_pixel_symmetric") p = lm::add(p, lm::idx(n * a - out * b));
    return {p, 2 * a};
  }
  if (mode == "pytorch_half_pixel" && out == 1) return {lm::idx(-1), 2};
  if (mode == "half_pixel" || mode == "pytorch_half_pixel" || mode == "half_pixel_symmetric")
    return {lm::sub(lm::mul(lm::add(lm::mul(lm::idx(2), o), lm::idx(1)), in), lm::idx(out)), 2 * out};
  if (mode == "align_corners" && out > 1) return {lm::mul(o, lm::sub(in, lm::idx(1))), out - 1};
  if (mode == "asymmetric") return {lm::mul(o, in), out};
  return {lm::idx(0), 1};  // align_corners with out <= 1
}

PrimExpr nearestFormula(const PrimExpr& o, const PrimExpr& in, int64_t out, float scale,
                        const ir::Attrs& attrs) {
  Rational r = sourceRational(o, in, out, attrStr(attrs, "coordinate_transformation_mode"), scale);
  const std::string& rounding = attrStr(attrs, "rounding_method");
  PrimExpr two_p = lm::mul(lm::idx(2), r.p), i;
  if (rounding == "floor")
    i = lm::floorDiv(r.p, lm::idx(r.q));
  else if (rounding == "ceil")
    i = lm::floorDiv(lm::add(r.p, lm::idx(r.q - 1)), lm::idx(r.q));
  else if (rounding == "round_prefer_floor")
    i = lm::floorDiv(lm::add(two_p, lm::idx(r.q - 1)), lm::idx(2 * r.q));
  else
    i = lm::floorDiv(lm::add(two_p, lm::idx(r.q)), lm::idx(2 * r.q));
  return lm::clampIndex(i, in);
}

// select(o == k, value_k, e) for each patched output index k.
template <class T>
PrimExpr patch(PrimExpr e, const PrimExpr& o, const std::vector<std::pair<int64_t, T>>& fixes,
               ir::DType dtype) {
  for (const auto& [k, v] : fixes)
    e = ir::makeSelect(lm::eq(o, lm::idx(k)), ir::te::constant(dtype, static_cast<double>(v)), e);
  return e;
}

PrimExpr nearestIndex(const PrimExpr& o, const PrimExpr& in, int64_t out, float scale,
                      const ir::Attrs& attrs) {
  PrimExpr e = nearestFormula(o, in, out, scale, attrs);
  int64_t n;
  if (!ir::asConstInt(in, &n)) return e;
  std::vector<int64_t> kernel = nearestIndices(n, out, scale, attrs);
  std::vector<std::pair<int64_t, int64_t>> fixes;
  for (int64_t k = 0; k < out; ++k)
    if (lm::constValue(nearestFormula(lm::idx(k), in, out, scale, attrs)) != kernel[k])
      fixes.push_back({k, kernel[k]});
  return patch(e, o, fixes, ir::DType::i64);
}

// floor(x) and its f32 fraction for the exact coordinate x = p / q of output
// index o, p clamped into [0, (in - 1) q] when `clamp` (linear) or not
// (cubic); for a static input size, patched with selects on o wherever the
// kernel's taps (axisTaps) differ.
struct IndexFraction {
  PrimExpr i0, frac;  // frac: f32
};

IndexFraction exactIndexFraction(const PrimExpr& o, const PrimExpr& in, int64_t out, float scale,
                                 const std::string& mode, bool clamp) {
  using namespace ir::build;
  Rational r = sourceRational(o, in, out, mode, scale);
  PrimExpr q = lm::idx(r.q);
  PrimExpr p = clamp ? lm::maxOf(lm::minOf(r.p, lm::mul(lm::sub(in, lm::idx(1)), q)), lm::idx(0)) : r.p;
  IndexFraction e;
  e.i0 = lm::floorDiv(p, q);
  e.frac =
      ir::makeCast(ir::DType::f32, lm::sub(p, lm::mul(e.i0, q))) / ir::makeFloat(static_cast<double>(r.q));
  int64_t n;
  if (!ir::asConstInt(in, &n)) return e;
  const std::vector<Tap> kernel = axisTaps(n, out, scale, mode, clamp);
  std::vector<std::pair<int64_t, int64_t>> fix_i;
  std::vector<std::pair<int64_t, float>> fix_f;
  for (int64_t k = 0; k < out; ++k) {
    Rational rk = sourceRational(lm::idx(k), in, out, mode, scale);
    int64_t pk = lm::constValue(rk.p);
    if (clamp) pk = std::clamp<int64_t>(pk, 0, (n - 1) * rk.q);
    const int64_t i0 = (pk >= 0 ? pk : pk - rk.q + 1) / rk.q;  // floor
    const float f =
        static_cast<float>(pk - i0 * rk.q) / static_cast<float>(rk.q);  // as the interpreter's f32
    const Tap& want = kernel[static_cast<size_t>(k)];
    if (i0 != want.i0) fix_i.push_back({k, want.i0});
    if (f != want.frac) fix_f.push_back({k, want.frac});
  }
  e.i0 = patch(e.i0, o, fix_i, ir::DType::i64);
  e.frac = patch(e.frac, o, fix_f, ir::DType::f32);
  return e;
}

struct LinearExprs {
  PrimExpr i0, i1, w;  // w: f32
};

LinearExprs linearAxis(const PrimExpr& o, const PrimExpr& in, int64_t out, float scale,
                       const std::string& mode) {
  IndexFraction f = exactIndexFraction(o, in, out, scale, mode, true);
  return {f.i0, lm::minOf(lm::add(f.i0, lm::idx(1)), lm::sub(in, lm::idx(1))), f.frac};
}

// cubic: from the unclamped coordinate's floor and fraction (e), the four
// (index, f32 weight) pairs along an axis of size `in`: Keys' cubic weights,
// the indices clamped into the axis; with
// `exclude`, outside neighbours weigh 0 and `sum` is set to the weights' sum
// (the caller divides once by the product of both axes' sums).
std::array<std::pair<PrimExpr, PrimExpr>, 4> cubicNeighbourExprs(const IndexFraction& e, const PrimExpr& in,
                                                                 float a, bool exclude, PrimExpr* sum) {
  using namespace ir::build;
  std::array<PrimExpr, 4> w = cubicWeights<PrimExpr>(e.frac, a);
  std::array<std::pair<PrimExpr, PrimExpr>, 4> out;
  for (size_t k = 0; k < 4; ++k) {
    PrimExpr i = lm::add(e.i0, lm::idx(static_cast<int64_t>(k) - 1));
    if (exclude) {
      w[k] = ir::makeSelect(lm::both(lm::ge(i, lm::idx(0)), lm::lt(i, in)), w[k], ir::makeFloat(0.0));
      *sum = *sum ? *sum + w[k] : w[k];
    }
    out[k] = {lm::clampIndex(i, in), w[k]};
  }
  return out;
}

// `v` of dtype `from` as `to` (itself when they are the same): the kernels
// compute in f32 whatever the input dtype.
PrimExpr castTo(const PrimExpr& v, ir::DType from, ir::DType to) {
  return from == to ? v : ir::makeCast(to, v);
}

// a + w (b - a): linear interpolation, in the order the reference kernel
// rounds it.
PrimExpr lerp(const PrimExpr& a, const PrimExpr& b, const PrimExpr& w) {
  using namespace ir::build;
  return a + w * (b - a);
}

// Bilinear upsampling along H, in two stages: "resize2d_columns" resizes
// each input row along W (its gathers and index arithmetic run over the
// input's rows only), then "resize2d" blends two of those rows per output
// row, contiguous along W. The same operations in the same order as the
// one-stage form (top and bottom rows blended along W, then together), so
// the same values. LR-ASPP's 28 x 28 -> 224 x 224 of 21 channels (1
// thread): 2.1 -> 0.65 ms, the model 9.0 -> 8.1 ms (ONNX Runtime 8.6).
ir::PrimFunc legalizeSeparableLinear(const Type& x, const Type& output, const std::vector<int64_t>& size,
                                     const std::string& mode, const ir::Attrs& attrs) {
  ir::te::FuncBuilder fb("resize2d");
  ir::Buffer in = fb.input("x", x);
  ir::Buffer columns = fb.compute(
      "resize2d_columns", {x.shape[0], x.shape[1], x.shape[2], lm::idx(size[1])}, ir::DType::f32,
      [&](const ir::te::Indices& i) {
        const std::vector<PrimExpr> o = lm::exprs(i);
        LinearExprs tx = linearAxis(o[3], x.shape[3], size[1], axisScale(attrs, 1), mode);
        return lerp(castTo(ir::makeLoad(in, {o[0], o[1], o[2], tx.i0}), x.dtype, ir::DType::f32),
                    castTo(ir::makeLoad(in, {o[0], o[1], o[2], tx.i1}), x.dtype, ir::DType::f32), tx.w);
      });
  ir::Buffer out = fb.compute("resize2d", output.shape, output.dtype, [&](const ir::te::Indices& i) {
    const std::vector<PrimExpr> o = lm::exprs(i);
    LinearExprs ty = linearAxis(o[2], x.shape[2], size[0], axisScale(attrs, 0), mode);
    return castTo(lerp(ir::makeLoad(columns, {o[0], o[1], ty.i0, o[3]}),
                       ir::makeLoad(columns, {o[0], o[1], ty.i1, o[3]}), ty.w),
                  ir::DType::f32, x.dtype);
  });
  return fb.build({out});
}

ir::PrimFunc legalizeResize(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const Type& x = inputs[0];
  std::vector<int64_t> size = attrInts(attrs, "size");
  const std::string& mode = attrStr(attrs, "coordinate_transformation_mode");
  const bool linear = attrStr(attrs, "method") == "linear";
  int64_t rows = 0;
  if (linear && !lm::hasZeroDim(output.shape) && !lm::hasZeroDim(x.shape) &&
      ir::asConstInt(x.shape[2], &rows) && size[0] > rows)
    return legalizeSeparableLinear(x, output, size, mode, attrs);
  return lm::singleStage("resize2d", inputs, output, [&](const auto& in, const std::vector<PrimExpr>& o) {
    using namespace ir::build;
    if (lm::hasZeroDim(x.shape)) return ir::te::constant(x.dtype, 0);  // the output is empty
    if (attrStr(attrs, "method") == "cubic") {
      const float a = static_cast<float>(attrFloat(attrs, "cubic_coeff_a"));
      const bool exclude = attrBool(attrs, "exclude_outside");
      PrimExpr row_sum, col_sum;
      auto rows =
          cubicNeighbourExprs(exactIndexFraction(o[2], x.shape[2], size[0], axisScale(attrs, 0), mode, false),
                              x.shape[2], a, exclude, &row_sum);
      auto cols =
          cubicNeighbourExprs(exactIndexFraction(o[3], x.shape[3], size[1], axisScale(attrs, 1), mode, false),
                              x.shape[3], a, exclude, &col_sum);
      PrimExpr v;
      for (const auto& [r, wr] : rows) {
        PrimExpr row;
        for (const auto& [col, wc] : cols) {
          PrimExpr e = castTo(ir::makeLoad(in[0], {o[0], o[1], r, col}), x.dtype, ir::DType::f32);
          row = row ? row + wc * e : wc * e;
        }
        v = v ? v + wr * row : wr * row;
      }
      if (exclude) v = v / (row_sum * col_sum);
      return castTo(v, ir::DType::f32, x.dtype);
    }
    if (!linear)
      return ir::makeLoad(in[0],
                          {o[0], o[1], nearestIndex(o[2], x.shape[2], size[0], axisScale(attrs, 0), attrs),
                           nearestIndex(o[3], x.shape[3], size[1], axisScale(attrs, 1), attrs)});
    LinearExprs ty = linearAxis(o[2], x.shape[2], size[0], axisScale(attrs, 0), mode);
    LinearExprs tx = linearAxis(o[3], x.shape[3], size[1], axisScale(attrs, 1), mode);
    auto at = [&](const PrimExpr& r, const PrimExpr& c) {
      return castTo(ir::makeLoad(in[0], {o[0], o[1], r, c}), x.dtype, ir::DType::f32);
    };
    PrimExpr top = lerp(at(ty.i0, tx.i0), at(ty.i0, tx.i1), tx.w);
    PrimExpr bottom = lerp(at(ty.i1, tx.i0), at(ty.i1, tx.i1), tx.w);
    return castTo(lerp(top, bottom, ty.w), ir::DType::f32, x.dtype);
  });
}

}  // namespace

double resizeSourceCoord(int64_t o, int64_t in, int64_t out, const std::string& mode, float given_scale) {
  double scale =
      given_scale > 0 ? static_cast<double>(given_scale) : static_cast<double>(out) / static_cast<double>(in);
  double x = static_cast<double>(o);
  if (mode == "align_corners" && given_scale > 0) {  // ONNX: the unrounded resized length in * scale
    const double length = static_cast<double>(in) * static_cast<double>(given_scale);
    return length == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (length - 1.0);
  }
  // ONNX's resized length: in * scale, unrounded (out when no scale is given).
  const double length = given_scale > 0 ? static_cast<double>(in) * scale : static_cast<double>(out);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return length == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {  // half_pixel, shifted so that the centers meet
    const double offset = static_cast<double>(in) / 2.0 * (1.0 - static_cast<double>(out) / length);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "align_corners")
    return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return x / scale;  // asymmetric
}

void registerResizeOps(std::vector<OpDef>& ops) {
  OpDef def;
  def.name = "resize2d";
  def.pattern = OpPattern::Injective;
  def.attrs = {{"size", AttrKind::Ints, std::nullopt},
               {"method", AttrKind::Str, ir::AttrValue("nearest")},
               {"coordinate_transformation_mode", AttrKind::Str, ir::AttrValue("half_pixel")},
               {"rounding_method", AttrKind::Str, ir::AttrValue("round_prefer_floor")},
               {"scales", AttrKind::Floats, std::nullopt, true},
               {"cubic_coeff_a", AttrKind::Float, ir::AttrValue(-0.75)},
               {"exclude_outside", AttrKind::Bool, ir::AttrValue(false)}};
  def.infer = inferResize;
  def.compute = computeResize;
  def.flops = resizeFlops;
  def.legalize = legalizeResize;
  ops.push_back(std::move(def));
}

}  // namespace mlcc::ops
