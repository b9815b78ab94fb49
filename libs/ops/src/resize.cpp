// resize2d (artifacts_schema/ops.md): ONNX Resize on the two spatial axes of
// an NCHW tensor, given the output size. Coordinates map back to the input as
// the ONNX specification defines them (scale = output / input, computed in
// double as the ONNX reference implementation does):
//   half_pixel          x = (o + 0.5) / scale - 0.5
//   pytorch_half_pixel  x = out > 1 ? (o + 0.5) / scale - 0.5 : 0
//   align_corners       x = out > 1 ? o * (in - 1) / (out - 1) : 0
//   asymmetric          x = o / scale
// `nearest` rounds x by `rounding_method` and clamps it into the axis (any
// dtype: pure data movement); `linear` interpolates bilinearly between the
// two neighbours of x clamped into [0, in - 1] (float dtypes, computed in f32).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "manipulate_util.h"
#include "mlcc/ir/float_bits.h"
#include "op_families.h"

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

Type inferResize(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = tensorOperand(inputs, 0, "resize2d");
  if (x.rank() != 4) throw resizeError("expects an NCHW tensor of rank 4, not " + ir::printType(x));
  checkChoice(attrs, "method", {"nearest", "linear"});
  checkChoice(attrs, "coordinate_transformation_mode",
              {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"});
  checkChoice(attrs, "rounding_method", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  if (attrStr(attrs, "method") == "linear" && !ir::isFloat(x.dtype))
    throw resizeError("method 'linear' needs a float tensor, not " + ir::printType(x));
  std::vector<int64_t> size = attrInts(attrs, "size");
  if (size.size() != 2 || size[0] < 0 || size[1] < 0)
    throw resizeError("size " + detail::intsText(size) + " must be two non-negative sizes [oh, ow]");
  for (int a = 0; a < 2; ++a)
    if (size[a] > 0 && isConstDim(x.shape[2 + a], 0))
      throw resizeError("cannot resize the empty axis " + std::to_string(2 + a) + " of " + ir::printType(x));
  return Type::tensor(x.dtype, {x.shape[0], x.shape[1], dimConst(size[0]), dimConst(size[1])});
}

// The input coordinate of output index `o` along an axis (ONNX Resize).
double sourceCoord(int64_t o, int64_t in, int64_t out, const std::string& mode) {
  double scale = static_cast<double>(out) / static_cast<double>(in);
  double x = static_cast<double>(o);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners")
    return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return x / scale;  // asymmetric
}

int64_t roundNearest(double x, const std::string& method) {
  double f = std::floor(x);
  if (method == "floor") return static_cast<int64_t>(f);
  if (method == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x == f + 0.5) return static_cast<int64_t>(method == "round_prefer_floor" ? f : f + 1);
  return static_cast<int64_t>(std::round(x));
}

// Nearest source index per output index along one axis.
std::vector<int64_t> nearestIndices(int64_t in, int64_t out, const ir::Attrs& attrs) {
  const std::string& mode = attrStr(attrs, "coordinate_transformation_mode");
  const std::string& rounding = attrStr(attrs, "rounding_method");
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoord(o, in, out, mode);
    idx.push_back(std::clamp<int64_t>(roundNearest(x, rounding), 0, in - 1));
  }
  return idx;
}

struct LinearTap {
  int64_t i0, i1;
  float w;  // weight of i1
};

std::vector<LinearTap> linearTaps(int64_t in, int64_t out, const std::string& mode) {
  std::vector<LinearTap> taps;
  for (int64_t o = 0; o < out; ++o) {
    double x = std::clamp(sourceCoord(o, in, out, mode), 0.0, static_cast<double>(in - 1));
    int64_t i0 = static_cast<int64_t>(std::floor(x));
    taps.push_back({i0, std::min(i0 + 1, in - 1), static_cast<float>(x - static_cast<double>(i0))});
  }
  return taps;
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
    for (int64_t i : nearestIndices(ih, oh, attrs)) tables[2].push_back(i * iw);
    tables[3] = nearestIndices(iw, ow, attrs);
    return {detail::gatherByTables(x, out_shape, tables)};
  }

  const std::string& mode = attrStr(attrs, "coordinate_transformation_mode");
  std::vector<LinearTap> ty = linearTaps(ih, oh, mode), tx = linearTaps(iw, ow, mode);
  std::vector<float> in = toFloats(x), res(static_cast<size_t>(n * c * oh * ow));
  float* dst = res.data();
  for (int64_t p = 0; p < n * c; ++p) {
    const float* plane = in.data() + p * ih * iw;
    for (const LinearTap& y : ty) {
      const float* r0 = plane + y.i0 * iw;
      const float* r1 = plane + y.i1 * iw;
      for (const LinearTap& t : tx) {
        float top = r0[t.i0] + t.w * (r0[t.i1] - r0[t.i0]);
        float bottom = r1[t.i0] + t.w * (r1[t.i1] - r1[t.i0]);
        *dst++ = top + y.w * (bottom - top);
      }
    }
  }
  Tensor out = Tensor::zeros(x.dtype(), out_shape);
  storeFloats(out, res);
  return {out};
}

// Bilinear: three lerps of two operations each per output element; nearest
// only moves data.
int64_t resizeFlops(const std::vector<Type>&, const Type& output, const ir::Attrs& attrs) {
  if (attrStr(attrs, "method") != "linear") return 0;
  int64_t elems = 1;
  for (const auto& d : output.shape) {
    int64_t v;
    if (ir::asConstInt(d, &v)) elems *= v;
  }
  return 6 * elems;
}

}  // namespace

void registerResizeOps(std::vector<OpDef>& ops) {
  OpDef def;
  def.name = "resize2d";
  def.pattern = OpPattern::Injective;
  def.attrs = {{"size", AttrKind::Ints, std::nullopt},
               {"method", AttrKind::Str, ir::AttrValue("nearest")},
               {"coordinate_transformation_mode", AttrKind::Str, ir::AttrValue("half_pixel")},
               {"rounding_method", AttrKind::Str, ir::AttrValue("round_prefer_floor")}};
  def.infer = inferResize;
  def.compute = computeResize;
  def.flops = resizeFlops;
  ops.push_back(std::move(def));
}

}  // namespace mlcc::ops
