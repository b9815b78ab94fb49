// Converters of the shape and data-movement ONNX ops: Reshape (0 and -1
// resolved, symbolic dims kept), Flatten, Transpose, Squeeze/Unsqueeze and
// Split (axes/sizes as attributes before opset 13, inputs after), Concat,
// Slice, Gather, Expand, Tile, Pad (pads an input from opset 11), Resize and
// Upsample, Constant, ConstantOfShape, Range, Identity. Shape and Size are
// folded before conversion (fold_shape.cpp).
#include <algorithm>
#include <cmath>

#include "convert_util.h"
#include "mlcc/ops/resize.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"

namespace mlcc::frontend::onnx_import {

using ir::PrimExpr;

ValuePtr slice(NodeCtx& c, const ValuePtr& x, int64_t axis, int64_t begin, int64_t end,
               const std::string& n) {
  return c.im.emit("strided_slice", {x},
                   {{"axes", ir::AttrValue::ints({axis})},
                    {"begin", ir::AttrValue::ints({begin})},
                    {"end", ir::AttrValue::ints({end})}},
                   n);
}

ValuePtr item(NodeCtx& c, const ValuePtr& x, int64_t axis, int64_t i, const std::string& n) {
  return c.im.emit("squeeze", {slice(c, x, axis, i, i + 1, n + "_slice")},
                   {{"axes", ir::AttrValue::ints({axis})}}, n);
}

ValuePtr stack(NodeCtx& c, const std::vector<ValuePtr>& parts, int64_t axis, const std::string& n) {
  std::vector<ValuePtr> expanded;
  for (size_t i = 0; i < parts.size(); ++i)
    expanded.push_back(c.im.emit("expand_dims", {parts[i]}, {{"axes", ir::AttrValue::ints({axis})}},
                                 n + "_" + std::to_string(i)));
  if (expanded.size() == 1) return c.im.emitAlias(expanded[0], n);
  return c.im.emit("concat", expanded, {{"axis", axis}}, n);
}

ir::AttrValue dimsAttr(const std::vector<PrimExpr>& shape) {
  ir::AttrValue::List l;
  for (const auto& d : shape) l.emplace_back(d);
  return ir::AttrValue(l);
}

ValuePtr reshapeTo(NodeCtx& c, const ValuePtr& v, const std::vector<PrimExpr>& shape,
                   const std::string& name) {
  if (v->type.rank() == shape.size()) {
    bool same = true;
    for (size_t i = 0; i < shape.size(); ++i) same = same && ops::dimEqual(v->type.shape[i], shape[i]);
    if (same) return v;
  }
  std::vector<int64_t> st;
  if (v->constant && ops::staticShape(shape, &st)) return c.im.constant(v->constant->reshaped(st), name);
  return c.im.emit("reshape", {v}, {{"shape", dimsAttr(shape)}}, name);
}

PrimExpr dimProduct(const std::vector<PrimExpr>& s, size_t b, size_t e) {
  PrimExpr p = ir::makeInt(1);
  for (size_t i = b; i < e; ++i) p = ops::dimMul(p, s[i]);
  return p;
}

ValuePtr filled(NodeCtx& c, ir::DType dtype, double value, const std::vector<PrimExpr>& shape,
                const std::string& name) {
  return c.im.emit("broadcast_to", {c.im.scalar(dtype, value, name + "_value")}, {{"shape", dimsAttr(shape)}},
                   name);
}

namespace {

std::vector<int64_t> axesInputOrAttr(NodeCtx& c, bool input, const char* what) {
  if (input) return c.hasInput(1) ? c.constInts(1, what) : std::vector<int64_t>{};
  return c.attrInts("axes");
}

ir::Tensor constantFromAttr(NodeCtx& c) {
  if (auto* a = c.attr("value")) return tensorFromOnnx(a->t(), c.im.baseDir());
  if (auto* a = c.attr("value_float")) return ir::Tensor::scalar(ir::DType::f32, a->f());
  if (auto* a = c.attr("value_int")) return intTensor({a->i()}, true);
  if (auto* a = c.attr("value_floats")) {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    return ir::Tensor::fromValues(ir::DType::f32, {static_cast<int64_t>(v.size())}, v);
  }
  if (auto* a = c.attr("value_ints"))
    return intTensor(std::vector<int64_t>(a->ints().begin(), a->ints().end()));
  c.fail("only tensor, float(s) and int(s) constants are supported (not sparse or string)");
}

// The [out, in] matrix of an antialiased linear or cubic Resize along one
// axis, as the ONNX reference computes it: the filter stretched by 1 / scale
// when downsampling and normalized, its taps the n integers nearest the
// source coordinate (ties to the lower), read with edge padding (taps
// outside weigh 0 with exclude_outside, the rest renormalized). given_scale:
// as ops::resizeSourceCoord's.
std::vector<double> antialiasMatrix(NodeCtx& c, int64_t in, int64_t out, float given_scale,
                                    const std::string& ctm, bool cubic, double a, bool exclude_outside) {
  const double scale =
      given_scale > 0 ? static_cast<double>(given_scale) : static_cast<double>(out) / static_cast<double>(in);
  if (in <= 0 || out <= 0 || !(scale > 0)) c.fail("antialias needs positive sizes and scales");
  if (mulOrThrow(in, out, "the antialias matrix") > kMaxComputedElements)
    c.fail("antialias: the image is too large");
  const double filter_scale = std::min(scale, 1.0);
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const double src = ops::resizeSourceCoord(o, in, out, ctm, given_scale);
    const double ratio = src == std::floor(src) ? 1.0 : src - std::floor(src);
    std::vector<double> w;
    if (cubic) {
      const int64_t start = static_cast<int64_t>(std::floor(-2 / filter_scale) + 1);
      for (int64_t i = start; i < 2 - start; ++i) {
        const double t = std::abs(filter_scale * (static_cast<double>(i) - ratio)), t2 = t * t, t3 = t2 * t;
        w.push_back(t <= 1  ? (a + 2) * t3 - (a + 3) * t2 + 1
                    : t < 2 ? a * t3 - 5 * a * t2 + 8 * a * t - 4 * a
                            : 0.0);
      }
    } else {
      const int64_t start = static_cast<int64_t>(std::floor(-1 / filter_scale) + 1);
      for (int64_t i = start; i < 2 - start; ++i)
        w.push_back(std::clamp(1 - std::abs((static_cast<double>(i) - ratio) * filter_scale), 0.0, 1.0));
    }
    double sum = 0;
    for (double v : w) sum += v;
    for (double& v : w) v /= sum;
    // The n taps nearest src, ties to the lower, among the axis padded by
    // `pad` at both ends: the window starting at ceil(src - n / 2), kept
    // inside the padded axis.
    const int64_t n = static_cast<int64_t>(w.size()), pad = (n + 1) / 2;
    const int64_t first = std::clamp(static_cast<int64_t>(std::ceil(src - static_cast<double>(n) / 2)) + pad,
                                     int64_t{0}, in + 2 * pad - n) -
                          pad;
    if (exclude_outside) {
      double kept = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (first + k < 0 || first + k >= in) w[static_cast<size_t>(k)] = 0;
        kept += w[static_cast<size_t>(k)];
      }
      for (double& v : w) v /= kept;
    }
    for (int64_t k = 0; k < n; ++k)
      m[static_cast<size_t>(o * in + std::clamp<int64_t>(first + k, 0, in - 1))] += w[static_cast<size_t>(k)];
  }
  return m;
}

// Resize with coordinate_transformation_mode tf_crop_and_resize (TF's
// CropAndResize): output o of a spatial axis samples the input at
// roi_start * (in - 1) + o * (roi_end - roi_start) * (in - 1) / (out - 1)
// (the middle of the crop for out = 1), linear or nearest; a sample outside
// [0, in - 1] is extrapolation_value. Separable like antialias: y = A_h x
// A_w^T with constant per-axis matrices whose rows are the sampling weights
// (zero for extrapolated positions), plus extrapolation_value where the row
// or the column is extrapolated.
ValuePtr cropAndResize(NodeCtx& c, const ValuePtr& x, const std::vector<int64_t>& in,
                       const std::vector<int64_t>& size, const std::vector<double>& scales,
                       const std::vector<int64_t>& axes, const std::string& mode, const std::string& nearest,
                       bool antialias) {
  const std::string n = c.outName();
  if (mode == "cubic" || antialias)
    c.fail("tf_crop_and_resize is supported with linear and nearest modes without antialias");
  if (!c.hasInput(1)) c.fail("tf_crop_and_resize needs roi");
  if (!c.in(1)->constant) c.failNotConstant(1, "roi must be known at import");
  const std::vector<double> given = c.constFloats(1, "roi");
  if (given.size() != 2 * axes.size())
    c.fail("roi must have " + std::to_string(2 * axes.size()) + " values (starts, then ends)");
  for (double v : given)
    if (!std::isfinite(v)) c.fail("roi value " + std::to_string(v) + " is not a finite number");
  std::vector<double> start(4, 0.0), end(4, 1.0);
  for (size_t k = 0; k < axes.size(); ++k) {
    start[static_cast<size_t>(axes[k])] = given[k];
    end[static_cast<size_t>(axes[k])] = given[axes.size() + k];
  }
  for (size_t i = 0; i < 2; ++i)
    if (start[i] != 0.0 || end[i] != 1.0) c.fail("only the spatial dimensions may be cropped");
  const double extrapolation = floatAttr(c.attrFloat("extrapolation_value", 0.0f));
  std::vector<std::vector<bool>> outside(2);
  auto matrix = [&](size_t i, const std::string& name) {  // [out, in] of spatial axis i
    const int64_t len = in[2 + i], out = size[i];
    if (mulOrThrow(len, out, "the crop matrix") > kMaxComputedElements) c.fail("the image is too large");
    // The output length the reference maps by: scale * in when scales are given.
    const double out_len =
        scales.empty() ? static_cast<double>(out) : scales[2 + i] * static_cast<double>(len);
    const double a = start[2 + i], b = end[2 + i], span = static_cast<double>(len - 1);
    std::vector<double> m(static_cast<size_t>(out * len), 0.0);
    outside[i].assign(static_cast<size_t>(out), false);
    for (int64_t o = 0; o < out; ++o) {
      const double src =
          (out_len == 1 ? (b - a) * span / 2 : static_cast<double>(o) * (b - a) * span / (out_len - 1)) +
          a * span;
      if (!std::isfinite(src))
        c.fail("output " + std::to_string(o) + " of spatial axis " + std::to_string(i) +
               " samples no input position (the roi and scales give " + std::to_string(src) + ")");
      if (src < 0 || src > span) {
        outside[i][static_cast<size_t>(o)] = true;
        continue;
      }
      const auto lo = static_cast<int64_t>(std::floor(src));
      const int64_t hi = std::min(lo + 1, len - 1);
      const double r = src - static_cast<double>(lo);
      double* row = &m[static_cast<size_t>(o * len)];
      if (mode == "linear") {
        row[lo] += 1 - r;
        row[hi] += r;
        continue;
      }
      bool up = false;  // nearest: lo or lo + 1 by nearest_mode
      if (r > 0) {
        if (nearest == "round_prefer_floor")
          up = r > 0.5;
        else if (nearest == "round_prefer_ceil")
          up = r >= 0.5;
        else if (nearest == "ceil")
          up = true;
        else if (nearest != "floor")
          c.fail("nearest_mode '" + nearest + "' is not supported");
      }
      row[up ? hi : lo] = 1;
    }
    return c.im.constant(ir::Tensor::fromValues(x->type.dtype, {out, len}, m), name);
  };
  auto ah = matrix(0, n + "_ah");
  auto aw_t =
      c.im.emit("permute_dims", {matrix(1, n + "_aw")}, {{"axes", ir::AttrValue::ints({1, 0})}}, n + "_awt");
  auto y = c.im.emit("matmul", {ah, c.im.emit("matmul", {x, aw_t}, {}, n + "_w")}, {}, n + "_sampled");
  std::vector<double> fill(static_cast<size_t>(size[0] * size[1]), 0.0);
  bool any = false;
  for (int64_t o = 0; o < size[0]; ++o)
    for (int64_t p = 0; p < size[1]; ++p)
      if (outside[0][static_cast<size_t>(o)] || outside[1][static_cast<size_t>(p)]) {
        fill[static_cast<size_t>(o * size[1] + p)] = extrapolation;
        any = true;
      }
  if (!any) return c.im.emitAlias(y, n);
  auto e =
      c.im.constant(ir::Tensor::fromValues(x->type.dtype, {size[0], size[1]}, fill), n + "_extrapolated");
  return c.im.emit("add", {y, e}, {}, n);
}

std::vector<ValuePtr> resize(NodeCtx& c, bool upsample) {
  const ValuePtr& x = c.in(0);
  if (x->type.rank() != 4) c.fail("only 4-D (NCHW) inputs are supported");
  std::string mode = c.attrStr("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail("mode '" + mode + "' is not supported (nearest, linear, cubic are)");
  std::string ctm = "asymmetric", nearest = "floor";
  bool antialias = false;
  if (!upsample && c.opset >= 11) {
    ctm = c.attrStr("coordinate_transformation_mode", "half_pixel");
    nearest = c.attrStr("nearest_mode", "round_prefer_floor");
    antialias = c.attrInt("antialias", 0) != 0;
    if (antialias && mode == "nearest") c.fail("antialias applies to linear and cubic modes, not nearest");
    // Only tf_crop_and_resize reads roi and extrapolation_value (below);
    // exclude_outside changes only cubic's weights.
    if (ctm != "tf_crop_and_resize") {
      c.hasInput(1);
      c.ignoreAttrs({"extrapolation_value"});
    }
  }
  static const std::set<std::string> ctms = {"half_pixel",           "align_corners",
                                             "asymmetric",           "pytorch_half_pixel",
                                             "half_pixel_symmetric", "tf_crop_and_resize"};
  if (!ctms.count(ctm)) c.fail("coordinate_transformation_mode '" + ctm + "' is not supported");
  std::vector<int64_t> size(2);
  std::vector<int64_t> in(4);
  for (size_t i = 0; i < 4; ++i) {
    int64_t d;
    if (!ir::asConstInt(x->type.shape[i], &d)) {
      if (i >= 2) c.fail("needs static spatial dimensions (bind them with --shape)");
      d = -1;
    }
    in[i] = d;
  }
  // Opset 18: scales and sizes may name a subset of the axes (the others keep
  // their size), and sizes may keep the aspect ratio.
  std::vector<int64_t> axes = {0, 1, 2, 3};
  if (c.hasAttr("axes")) {
    axes = c.attrInts("axes");
    std::set<int64_t> seen;
    for (int64_t& a : axes) {
      if (a < -4 || a >= 4) c.fail("axis " + std::to_string(a) + " is out of range for a 4-D input");
      if (a < 0) a += 4;
      if (!seen.insert(a).second) c.fail("axes name axis " + std::to_string(a) + " twice");
    }
  }
  const std::string policy =
      upsample || c.opset < 18 ? "stretch" : c.attrStr("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    c.fail("keep_aspect_ratio_policy '" + policy + "' is not one of stretch, not_larger, not_smaller");
  size_t scales_i = upsample || c.opset < 11 ? 1 : 2, sizes_i = 3;
  std::vector<double> scales;
  if (upsample && c.opset < 9) {
    auto s = c.attrInts("scales");
    if (auto* a = c.attr("scales")) scales.assign(a->floats().begin(), a->floats().end());
    (void)s;
  } else if (c.hasInput(scales_i) && c.in(scales_i)->type.rank() == 1 &&
             !ops::isConstDim(c.in(scales_i)->type.shape[0], 0)) {
    scales = c.constFloats(scales_i, "scales");
  }
  if (!scales.empty()) {
    if (scales.size() != axes.size()) c.fail("scales must have " + std::to_string(axes.size()) + " values");
    std::vector<double> full(4, 1.0);
    for (size_t k = 0; k < axes.size(); ++k) full[static_cast<size_t>(axes[k])] = scales[k];
    scales = full;
    if (scales[0] != 1.0 || scales[1] != 1.0) c.fail("only the spatial dimensions may be scaled");
    for (size_t i = 0; i < 2; ++i) {
      const double scaled = std::floor(static_cast<double>(in[2 + i]) * scales[2 + i]);
      if (!(scaled >= 0 && scaled <= static_cast<double>(kMaxComputedElements)))  // also NaN
        c.fail("scale " + std::to_string(scales[2 + i]) + " gives an output size out of range");
      size[i] = static_cast<int64_t>(scaled);
    }
  } else if (!upsample && c.hasInput(sizes_i)) {
    // Exporters build sizes as Concat(Shape(x)[:2], [oh, ow]): with a
    // symbolic batch only the spatial entries are constants.
    auto given = symElements(c.in(sizes_i));
    if (!given) c.failNotConstant(sizes_i, "sizes must be known at import");
    if (given->size() != axes.size()) c.fail("sizes must have " + std::to_string(axes.size()) + " values");
    std::vector<PrimExpr> sz = x->type.shape;
    for (size_t k = 0; k < axes.size(); ++k) sz[static_cast<size_t>(axes[k])] = (*given)[k];
    for (size_t i = 0; i < 2; ++i) {
      if (!ops::dimEqual(sz[i], x->type.shape[i])) c.fail("only the spatial dimensions may be resized");
      if (!ir::asConstInt(sz[2 + i], &size[i])) c.fail("the spatial sizes must be constants");
    }
    if (policy != "stretch") {
      // One scale for the named spatial axes: the least (not_larger) or the
      // greatest (not_smaller) of sizes / input; sizes = round(scale * input).
      double scale = policy == "not_larger" ? INFINITY : 0.0;
      for (int64_t a : axes)
        if (a >= 2) {
          const double r = static_cast<double>(size[a - 2]) / static_cast<double>(in[static_cast<size_t>(a)]);
          scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
        }
      scales = {1.0, 1.0, 1.0, 1.0};
      for (int64_t a : axes)
        if (a >= 2) {
          scales[static_cast<size_t>(a)] = scale;
          size[a - 2] =
              static_cast<int64_t>(std::floor(scale * static_cast<double>(in[static_cast<size_t>(a)]) + 0.5));
        }
    }
  } else {
    c.fail("needs constant scales or sizes");
  }
  if (ctm == "tf_crop_and_resize")
    return {cropAndResize(c, x, in, size, scales, axes, mode, nearest, antialias)};
  if (antialias) {
    // Separable: y = A_h x A_w^T, two matmuls with constant matrices.
    const std::string n = c.outName();
    const double ca = floatAttr(c.attrFloat("cubic_coeff_a", -0.75f));
    const bool exclude = c.attrInt("exclude_outside", 0) != 0;
    auto matrix = [&](int i, const std::string& name) {  // [out, in] of spatial axis i
      const float given = scales.empty() ? 0.0f : static_cast<float>(scales[2 + i]);
      return c.im.constant(ir::Tensor::fromValues(x->type.dtype, {size[i], in[2 + i]},
                                                  antialiasMatrix(c, in[2 + i], size[i], given, ctm,
                                                                  mode == "cubic", ca, exclude)),
                           name);
    };
    // (A_w^T: a permute_dims of a constant, folded at import.)
    auto aw_t = c.im.emit("permute_dims", {matrix(1, n + "_aw")}, {{"axes", ir::AttrValue::ints({1, 0})}},
                          n + "_awt");
    auto cols = c.im.emit("matmul", {x, aw_t}, {}, n + "_w");
    return {c.im.emit("matmul", {matrix(0, n + "_ah"), cols}, {}, n)};
  }
  ir::Attrs a{{"size", ir::AttrValue::ints(size)}, {"method", mode}, {"coordinate_transformation_mode", ctm}};
  if (mode == "nearest") a["rounding_method"] = nearest;
  if (mode == "cubic") {
    a["cubic_coeff_a"] = floatAttr(c.attrFloat("cubic_coeff_a", -0.75f));
    a["exclude_outside"] = c.attrInt("exclude_outside", 0) != 0;
  } else {
    c.ignoreAttrs({"cubic_coeff_a", "exclude_outside"});  // cubic only
  }
  // Given scales map coordinates back by themselves, not by output / input
  // (a 0.6 scale of 4 gives 2 outputs whose sources are 1 / 0.6 apart).
  if (!scales.empty() && (static_cast<double>(size[0]) != in[2] * scales[2] ||
                          static_cast<double>(size[1]) != in[3] * scales[3]))
    a["scales"] = ir::AttrValue(ir::AttrValue::List{ir::AttrValue(floatAttr(static_cast<float>(scales[2]))),
                                                    ir::AttrValue(floatAttr(static_cast<float>(scales[3])))});
  return {c.im.emit("resize2d", {x}, a, c.outName())};
}

}  // namespace

void registerShapeConverters(ConverterTable& t) {
  auto passThrough = [](NodeCtx& c) -> std::vector<ValuePtr> { return {c.in(0)}; };
  t["Identity"] = passThrough;
  auto folded = [](NodeCtx& c) -> std::vector<ValuePtr> { c.fail("internal: not folded"); };
  t["Shape"] = folded;
  t["Size"] = folded;
  t["Constant"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.constant(constantFromAttr(c), c.outName())};
  };
  t["ConstantOfShape"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    ir::Tensor value = c.hasAttr("value") ? constantFromAttr(c) : ir::Tensor::scalar(ir::DType::f32, 0.0);
    if (value.numel() != 1) c.fail("value must have one element");
    auto dims = symElements(c.in(0));
    if (!dims) c.failNotConstant(0, "the shape input must be known at import");
    std::vector<int64_t> st;
    // A large result stays broadcast_to (a 100-byte node must not allocate gigabytes).
    if (ops::staticShape(*dims, &st) && computedSizeProblem(st).empty()) {
      ir::Tensor out = ir::Tensor::zeros(value.dtype(), st);
      size_t esz = static_cast<size_t>(ir::dtypeBytes(value.dtype()));
      for (int64_t i = 0; i < out.numel(); ++i)
        std::memcpy(out.mutableBytes() + static_cast<size_t>(i) * esz, value.bytes(), esz);
      return {c.im.constant(std::move(out), c.outName())};
    }
    auto s = c.im.constant(value.reshaped({}), c.outName() + "_value");
    return {c.im.emit("broadcast_to", {s}, {{"shape", dimsAttr(*dims)}}, c.outName())};
  };
  t["Range"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    for (size_t i = 0; i < 3; ++i)
      if (!c.in(i)->constant || c.in(i)->constant->numel() != 1)
        c.failNotConstant(i, "start, limit and delta must be constants with one element");
    double start = c.in(0)->constant->at(0), limit = c.in(1)->constant->at(0),
           delta = c.in(2)->constant->at(0);
    if (delta == 0) c.fail("delta is 0");
    double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxComputedElements)))  // also NaN
      c.fail("the range has more than " + std::to_string(kMaxComputedElements) +
             " elements, the most the importer computes");
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    ir::Tensor out = ir::Tensor::zeros(c.in(0)->type.dtype, {n});
    if (out.dtype() == ir::DType::i64) {
      int64_t s = intElements(*c.in(0)->constant)[0], d = intElements(*c.in(2)->constant)[0];
      for (int64_t i = 0; i < n; ++i)
        out.mutableData<int64_t>()[i] = addOrThrow(s, mulOrThrow(i, d, "a Range element"), "a Range element");
    } else {
      for (int64_t i = 0; i < n; ++i) out.set(i, start + static_cast<double>(i) * delta);
    }
    return {c.im.constant(std::move(out), c.outName())};
  };
  t["Reshape"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    std::vector<int64_t> target;
    std::vector<PrimExpr> out;
    auto dims = c.opset < 5 ? std::nullopt : symElements(c.in(1));
    if (c.opset < 5) {
      for (int64_t d : c.attrInts("shape")) out.push_back(ir::makeInt(d));
    } else {
      if (!dims)
        c.failNotConstant(
            1, "the shape input must be known at import (a constant or computed from static shapes)");
      out = *dims;
    }
    bool allowzero = c.attrInt("allowzero", 0) != 0;
    int minus = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t v;
      if (!ir::asConstInt(out[i], &v)) continue;
      if (v == 0 && !allowzero) {
        if (i >= x->type.rank()) c.fail("shape has a 0 beyond the input rank");
        out[i] = x->type.shape[i];
      } else if (v == -1) {
        if (minus >= 0) c.fail("shape has more than one -1");
        minus = static_cast<int>(i);
      } else if (v < 0) {
        c.fail("shape has a negative dimension " + std::to_string(v));
      }
    }
    if (minus >= 0) {
      // -1 = prod(input dims) / prod(other target dims), cancelling equal
      // symbolic factors so that [n, 4, 4] -> [n, -1] gives [n, 16].
      int64_t ct = 1, ck = 1;
      std::vector<PrimExpr> st, sk;
      for (const auto& d : x->type.shape) {
        int64_t v;
        if (ir::asConstInt(d, &v))
          ct = mulOrThrow(ct, v, "the input's element count");
        else
          st.push_back(d);
      }
      for (size_t i = 0; i < out.size(); ++i) {
        if (static_cast<int>(i) == minus) continue;
        int64_t v;
        if (ir::asConstInt(out[i], &v))
          ck = mulOrThrow(ck, v, "the target shape's element count");
        else
          sk.push_back(out[i]);
      }
      std::vector<PrimExpr> rest;
      for (const auto& d : st) {
        auto it = std::find_if(sk.begin(), sk.end(), [&](const PrimExpr& e) { return ops::dimEqual(e, d); });
        if (it != sk.end())
          sk.erase(it);
        else
          rest.push_back(d);
      }
      if (sk.empty() && ck != 0 && ct % ck == 0) {
        PrimExpr r = ir::makeInt(ct / ck);
        for (const auto& d : rest) r = ops::dimMul(r, d);
        out[static_cast<size_t>(minus)] = r;
      } else if (sk.empty() && rest.empty()) {
        c.fail("cannot reshape " + std::to_string(ct) + " elements with -1 and " + std::to_string(ck));
      } else {
        PrimExpr known = ir::makeInt(ck);
        for (const auto& d : sk) known = ops::dimMul(known, d);
        PrimExpr total = ir::makeInt(ct);
        for (const auto& d : rest) total = ops::dimMul(total, d);
        out[static_cast<size_t>(minus)] = ops::dimFloorDiv(total, known);
      }
    }
    return {reshapeTo(c, x, out, c.outName())};
  };
  t["Flatten"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    int64_t rank = static_cast<int64_t>(x->type.rank()), axis = c.attrInt("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) c.fail("axis out of range");
    const auto& s = x->type.shape;
    return {reshapeTo(
        c, x,
        {dimProduct(s, 0, static_cast<size_t>(axis)), dimProduct(s, static_cast<size_t>(axis), s.size())},
        c.outName())};
  };
  t["Transpose"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    ir::Attrs a;
    if (c.hasAttr("perm")) a["axes"] = ir::AttrValue::ints(c.attrInts("perm"));
    return {c.im.emit("permute_dims", {c.in(0)}, a, c.outName())};
  };
  t["Squeeze"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    auto axes = axesInputOrAttr(c, c.opset >= 13, "axes");
    ir::Attrs a;
    if (!axes.empty()) a["axes"] = ir::AttrValue::ints(axes);
    return {c.im.emit("squeeze", {c.in(0)}, a, c.outName())};
  };
  t["Unsqueeze"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    auto axes = axesInputOrAttr(c, c.opset >= 13, "axes");
    return {c.im.emit("expand_dims", {c.in(0)}, {{"axes", ir::AttrValue::ints(axes)}}, c.outName())};
  };
  t["Concat"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    std::vector<ValuePtr> ins;
    for (size_t i = 0; i < c.numInputs(); ++i)
      if (c.hasInput(i)) ins.push_back(c.inputs[i]);
    const int64_t axis = c.attrInt("axis", 0);
    if (ins.size() == 1) return {ins[0]};
    return {c.im.emit("concat", ins, {{"axis", axis}}, c.outName())};
  };
  t["Split"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    int64_t rank = static_cast<int64_t>(x->type.rank()), axis = c.attrInt("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) c.fail("axis out of range");
    std::vector<int64_t> sizes;
    if (c.opset >= 13) {
      if (c.hasInput(1)) sizes = c.constInts(1, "split");
    } else {
      sizes = c.attrInts("split");
    }
    size_t n = c.numOutputs();
    if (n == 0) c.fail("Split has no outputs");
    if (sizes.empty()) {
      int64_t dim;
      if (!ir::asConstInt(x->type.shape[static_cast<size_t>(axis)], &dim))
        c.fail("an even split needs a static dimension");
      int64_t parts = c.attrInt("num_outputs", static_cast<int64_t>(n));
      if (parts != static_cast<int64_t>(n))
        c.fail("num_outputs = " + std::to_string(parts) + " for " + std::to_string(n) + " outputs");
      int64_t each = dim / parts + (dim % parts != 0 ? 1 : 0);
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(std::max<int64_t>(0, std::min(each, dim - i * each)));
    }
    if (sizes.size() != n)
      c.fail(std::to_string(sizes.size()) + " split sizes for " + std::to_string(n) + " outputs");
    int64_t total = 0;  // checked: the begins and ends below are its partial sums
    for (int64_t sz : sizes) {
      if (sz < 0) c.fail("a split size is negative");
      total = addOrThrow(total, sz, "the split sizes' sum");
    }
    if (n == 1) return {x};
    if (x->constant) {
      // Fold a constant input part by part (a tuple is never folded), so that
      // shape arithmetic on the parts stays known at import.
      std::vector<ValuePtr> outs;
      int64_t begin = 0;
      for (size_t i = 0; i < n; ++i) {
        outs.push_back(c.im.emit("strided_slice", {x},
                                 {{"axes", ir::AttrValue::ints({axis})},
                                  {"begin", ir::AttrValue::ints({begin})},
                                  {"end", ir::AttrValue::ints({begin + sizes[i]})}},
                                 c.outName(i)));
        begin += sizes[i];
      }
      return outs;
    }
    auto tup = c.im.emit("split", {x}, {{"axis", axis}, {"sizes", ir::AttrValue::ints(sizes)}},
                         (c.name().empty() ? c.outName() : c.name()) + "_parts");
    std::vector<ValuePtr> outs;
    for (size_t i = 0; i < n; ++i)
      outs.push_back(c.outputUsed(i) ? c.im.emitTupleGet(tup, static_cast<int64_t>(i), c.outName(i))
                                     : nullptr);
    return outs;
  };
  t["Slice"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    std::vector<int64_t> starts, ends, axes, steps;
    if (c.opset < 10) {
      starts = c.attrInts("starts");
      ends = c.attrInts("ends");
      axes = c.attrInts("axes");
    } else {
      starts = c.constInts(1, "starts");
      ends = c.constInts(2, "ends");
      if (c.hasInput(3)) axes = c.constInts(3, "axes");
      if (c.hasInput(4)) steps = c.constInts(4, "steps");
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
      c.fail("starts, ends, axes and steps differ in length");
    return {c.im.emit("strided_slice", {c.in(0)},
                      {{"axes", ir::AttrValue::ints(axes)},
                       {"begin", ir::AttrValue::ints(starts)},
                       {"end", ir::AttrValue::ints(ends)},
                       {"strides", ir::AttrValue::ints(steps)}},
                      c.outName())};
  };
  t["GatherElements"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("gather_elements", {c.in(0), c.in(1)}, {{"axis", c.attrInt("axis", 0)}}, c.outName())};
  };
  // TopK: k an attribute before opset 10, then input 1 ([1], known at import).
  t["TopK"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    int64_t k = 0;
    if (c.opset < 10) {
      k = c.attrInt("k", -1);
    } else {
      std::vector<int64_t> ks = c.constInts(1, "K");
      if (ks.size() != 1) c.fail("K must hold one value, not " + std::to_string(ks.size()));
      k = ks[0];
    }
    auto tup = c.im.emit("topk", {c.in(0)},
                         {{"k", k},
                          {"axis", c.attrInt("axis", -1)},
                          {"largest", c.attrInt("largest", 1) != 0},
                          {"sorted", c.attrInt("sorted", 1) != 0}},
                         c.outName(0) + "_topk");
    return {c.im.emitTupleGet(tup, 0, c.outName(0)), c.im.emitTupleGet(tup, 1, c.outName(1))};
  };
  t["GatherND"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("gather_nd", {c.in(0), c.in(1)}, {{"batch_dims", c.attrInt("batch_dims", 0)}},
                      c.outName())};
  };
  // Scatter (opsets 9-10) is ScatterElements without a reduction.
  for (const char* op : {"Scatter", "ScatterElements"})
    t[op] = [](NodeCtx& c) -> std::vector<ValuePtr> {
      return {c.im.emit("scatter_elements", {c.in(0), c.in(1), c.in(2)},
                        {{"axis", c.attrInt("axis", 0)}, {"reduction", c.attrStr("reduction", "none")}},
                        c.outName())};
    };
  t["ScatterND"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("scatter_nd", {c.in(0), c.in(1), c.in(2)},
                      {{"reduction", c.attrStr("reduction", "none")}}, c.outName())};
  };
  t["Gather"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("take", {c.in(0), c.in(1)}, {{"axis", c.attrInt("axis", 0)}}, c.outName())};
  };
  t["Expand"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    auto dims = symElements(c.in(1));
    if (!dims) c.failNotConstant(1, "the shape input must be known at import");
    // Expand broadcasts both ways: a 1 in the shape keeps the input's dim.
    std::vector<PrimExpr> target = ops::broadcastShapes(x->type.shape, *dims, "Expand");
    if (target.size() == x->type.rank()) {
      bool same = true;
      for (size_t i = 0; i < target.size(); ++i) same = same && ops::dimEqual(target[i], x->type.shape[i]);
      if (same) return {x};
    }
    return {c.im.emit("broadcast_to", {x}, {{"shape", dimsAttr(target)}}, c.outName())};
  };
  t["Tile"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("tile", {c.in(0)}, {{"repeats", ir::AttrValue::ints(c.constInts(1, "repeats"))}},
                      c.outName())};
  };
  t["Pad"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    size_t rank = x->type.rank();
    std::vector<int64_t> pads;
    double value = 0.0;
    if (c.opset < 11) {
      pads = c.attrInts("pads");
      value = floatAttr(c.attrFloat("value", 0.0f));
    } else {
      pads = c.constInts(1, "pads");
      if (c.hasInput(2)) value = c.constFloats(2, "constant_value").at(0);
      if (c.hasInput(3)) {
        auto axes = c.constInts(3, "axes");
        if (pads.size() != 2 * axes.size()) c.fail("pads do not match axes");
        std::vector<int64_t> full(2 * rank, 0);
        for (size_t i = 0; i < axes.size(); ++i) {
          int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
          if (a < 0 || a >= static_cast<int64_t>(rank)) c.fail("axis out of range");
          full[static_cast<size_t>(a)] = pads[i];
          full[rank + static_cast<size_t>(a)] = pads[axes.size() + i];
        }
        pads = full;
      }
    }
    if (pads.size() != 2 * rank) c.fail("pads must have 2 x rank values");
    std::string mode = c.attrStr("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
      c.fail("mode '" + mode + "' is not supported");
    return {c.im.emit("pad", {x},
                      {{"pad_width", ir::AttrValue::ints(pads)}, {"mode", mode}, {"pad_value", value}},
                      c.outName())};
  };
  t["Trilu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    // where(mask, x, 0) with a constant mask over the last two (static) dims.
    const ValuePtr& x = c.in(0);
    size_t r = x->type.rank();
    if (r < 2) c.fail("input rank must be at least 2");
    int64_t rows, cols;
    if (!ir::asConstInt(x->type.shape[r - 2], &rows) || !ir::asConstInt(x->type.shape[r - 1], &cols))
      c.fail("needs static last two dimensions (bind them with --shape)");
    int64_t k = c.hasInput(1) ? c.constInts(1, "k").at(0) : 0;
    bool upper = c.attrInt("upper", 1) != 0;
    checkComputedSize({rows, cols}, "the mask");
    ir::Tensor mask = ir::Tensor::zeros(ir::DType::boolean, {rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (upper ? j - i >= k : j - i <= k) mask.set(i * cols + j, 1.0);
    std::string n = c.outName();
    auto zero = c.im.scalar(x->type.dtype, 0.0, n + "_zero");
    return {c.im.emit("where", {c.im.constant(std::move(mask), n + "_mask"), x, zero}, {}, n)};
  };
  t["EyeLike"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    std::vector<int64_t> shape;
    if (x->type.rank() != 2 || !ops::staticShape(x->type.shape, &shape))
      c.fail("needs a static 2-D input (bind it with --shape)");
    ir::DType dt = c.hasAttr("dtype")
                       ? dtypeFromOnnx(static_cast<int>(c.attrInt("dtype", 1)), "EyeLike dtype")
                       : x->type.dtype;
    int64_t k = c.attrInt("k", 0);
    checkComputedSize(shape, "the result");
    ir::Tensor out = ir::Tensor::zeros(dt, shape);
    for (int64_t i = 0; i < shape[0]; ++i)
      if (k >= -i && k < shape[1] - i) out.set(i * shape[1] + i + k, 1.0);  // 0 <= i + k < cols, no overflow
    return {c.im.constant(std::move(out), c.outName())};
  };
  for (const char* op : {"DepthToSpace", "SpaceToDepth"}) {
    bool to_space = std::string(op) == "DepthToSpace";
    t[op] = [to_space](NodeCtx& c) -> std::vector<ValuePtr> {
      // reshape → permute_dims → reshape, as the ONNX definitions.
      const ValuePtr& x = c.in(0);
      if (x->type.rank() != 4) c.fail("only 4-D (NCHW) inputs are supported");
      int64_t b = c.attrInt("blocksize", 0), ch, h, w;
      if (b <= 0) c.fail("blocksize must be positive");
      const auto& s = x->type.shape;
      if (!ir::asConstInt(s[1], &ch) || !ir::asConstInt(s[2], &h) || !ir::asConstInt(s[3], &w))
        c.fail("needs static C, H and W (bind them with --shape)");
      // blocksize² and the output's C·b² or H·b, W·b, checked (a crafted blocksize overflowed).
      const int64_t bb = mulOrThrow(b, b, "blocksize²");
      const int64_t cbb = mulOrThrow(ch, bb, "the output channels"),
                    hb = mulOrThrow(h, b, "the output height"), wb = mulOrThrow(w, b, "the output width");
      auto I = [](int64_t v) { return ir::makeInt(v); };
      std::string n = c.outName();
      std::vector<PrimExpr> mid, out;
      std::vector<int64_t> perm;
      if (to_space) {
        if (ch % bb != 0) c.fail("channels are not a multiple of blocksize²");
        int64_t oc = ch / bb;
        if (c.attrStr("mode", "DCR") == "CRD") {
          mid = {s[0], I(oc), I(b), I(b), I(h), I(w)};
          perm = {0, 1, 4, 2, 5, 3};
        } else if (c.attrStr("mode", "DCR") == "DCR") {
          mid = {s[0], I(b), I(b), I(oc), I(h), I(w)};
          perm = {0, 3, 4, 1, 5, 2};
        } else {
          c.fail("mode '" + c.attrStr("mode", "") + "' is not supported (DCR, CRD are)");
        }
        out = {s[0], I(oc), I(hb), I(wb)};
      } else {
        if (h % b != 0 || w % b != 0) c.fail("H and W are not multiples of blocksize");
        mid = {s[0], I(ch), I(h / b), I(b), I(w / b), I(b)};
        perm = {0, 3, 5, 1, 2, 4};
        out = {s[0], I(cbb), I(h / b), I(w / b)};
      }
      auto r = reshapeTo(c, x, mid, n + "_split");
      auto p = c.im.emit("permute_dims", {r}, {{"axes", ir::AttrValue::ints(perm)}}, n + "_perm");
      return {reshapeTo(c, p, out, n)};
    };
  }
  t["Resize"] = [](NodeCtx& c) { return resize(c, false); };
  // GridSample: opset 16 names the modes bilinear and bicubic, opset 20 linear and cubic.
  t["GridSample"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    std::string mode = c.attrStr("mode", c.opset >= 20 ? "linear" : "bilinear");
    if (mode == "bilinear") mode = "linear";
    if (mode == "bicubic") mode = "cubic";
    return {c.im.emit("grid_sample", {c.in(0), c.in(1)},
                      {{"mode", mode},
                       {"padding_mode", c.attrStr("padding_mode", "zeros")},
                       {"align_corners", c.attrInt("align_corners", 0) != 0}},
                      c.outName())};
  };
  t["Upsample"] = [](NodeCtx& c) { return resize(c, true); };
}

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    registerElementwiseConverters(t);
    registerNNConverters(t);
    registerShapeConverters(t);
    registerLossConverters(t);
    registerRecurrentConverters(t);
    registerQuantizeConverters(t);
    registerSignalConverters(t);
    registerComposedConverters(t);
    registerEinsumConverter(t);
    registerControlFlowConverters(t);
    registerSelectionConverters(t);
    registerMlConverters(t);
    return t;
  }();
  return table;
}

const Converter* converterFor(const onnx::NodeProto& n) {
  std::string key = n.op_type();
  if (n.domain() == "ai.onnx.ml")
    key = "ai.onnx.ml." + key;  // the ML domain's ops, registered by that name
  else if (!n.domain().empty() && n.domain() != "ai.onnx")
    return nullptr;
  auto it = converters().find(key);
  return it == converters().end() ? nullptr : &it->second;
}

}  // namespace mlcc::frontend::onnx_import
