// Converters of the neural-network ONNX ops: MatMul, Gemm (dense when it is
// x·Wᵀ, else matmul/permute_dims/multiply/add), Conv (1-D to 3-D) and
// ConvTranspose (1-D to 3-D; auto_pad resolved to explicit pads; bias as an
// add of a [1,O,1,1] constant), pooling (1-D to N-D windows as 2-D pools; LpPool through
// avg_pool2d), Softmax/LogSoftmax (the pre-13 2-D coercion),
// Hardmax, BatchNormalization, LayerNormalization, InstanceNormalization,
// GroupNormalization, LRN, MeanVarianceNormalization, Dropout.
#include <functional>
#include <limits>

#include "convert_util.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"

namespace mlcc::frontend::onnx_import {

namespace {

using ir::PrimExpr;

// Explicit pads [begins..., ends...] from auto_pad for a conv/pool window.
std::vector<int64_t> resolvePads(NodeCtx& c, const ValuePtr& x, const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dil) {
  size_t k = kernel.size();
  std::string auto_pad = c.attrStr("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    auto pads = c.attrInts("pads", std::vector<int64_t>(2 * k, 0));
    if (pads.size() != 2 * k)
      c.fail("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * k));
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * k, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") c.fail("unknown auto_pad '" + auto_pad + "'");
  std::vector<int64_t> pads(2 * k);
  for (size_t i = 0; i < k; ++i) {
    int64_t in = staticDim(c, x->type.shape[2 + i], "auto_pad SAME");
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0)
      c.fail("kernel_shape, strides and dilations must be positive");
    int64_t out = in / strides[i] + (in % strides[i] != 0 ? 1 : 0);
    // (out - 1) * stride + (kernel - 1) * dilation + 1 - in, checked (crafted attributes overflowed).
    int64_t span =
        addOrThrow(mulOrThrow(std::max<int64_t>(out - 1, 0), strides[i], "auto_pad SAME's padding"),
                   addOrThrow(mulOrThrow(kernel[i] - 1, dil[i], "auto_pad SAME's padding"), 1,
                              "auto_pad SAME's padding"),
                   "auto_pad SAME's padding");
    int64_t total = std::max<int64_t>(0, span - in);
    int64_t small = total / 2, big = total - small;
    pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    pads[k + i] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return pads;
}

// A convolution or pooling window of any rank: its strides, dilations and
// explicit pads [begins..., ends...] from the node's attributes, checked.
struct Window {
  std::vector<int64_t> kernel, strides, dil, pads;
};

Window windowOf(NodeCtx& c, const ValuePtr& x, std::vector<int64_t> kernel) {
  size_t k = kernel.size();
  if (x->type.rank() != k + 2)
    c.fail("input rank " + std::to_string(x->type.rank()) + " does not match the kernel");
  Window w;
  w.strides = c.attrInts("strides", std::vector<int64_t>(k, 1));
  w.dil = c.attrInts("dilations", std::vector<int64_t>(k, 1));
  if (w.strides.size() != k || w.dil.size() != k) c.fail("strides/dilations do not match the kernel rank");
  for (size_t i = 0; i < k; ++i)
    if (w.strides[i] <= 0 || w.dil[i] <= 0 || kernel[i] <= 0)
      c.fail("kernel_shape, strides and dilations must be positive");
  w.pads = resolvePads(c, x, kernel, w.strides, w.dil);
  w.kernel = std::move(kernel);
  return w;
}

// Conv / ConvTranspose / pools on 1-D inputs run as 2-D with a unit height.
struct Spatial {
  bool one_d = false;
  std::vector<int64_t> kernel, strides, dil, pads;  // 2-D forms
};

void require2d(NodeCtx& c, size_t k) {
  if (k != 1 && k != 2)
    c.fail(std::to_string(k) +
           "-D windows are not supported (1-D and 2-D are; Conv and ConvTranspose also 3-D)");
}

// The 2-D form of a 1-D or 2-D window.
Spatial lift2d(const Window& w) {
  if (w.kernel.size() == 2) return {false, w.kernel, w.strides, w.dil, w.pads};
  return {true, {1, w.kernel[0]}, {1, w.strides[0]}, {1, w.dil[0]}, {0, w.pads[0], 0, w.pads[1]}};
}

Spatial spatial2d(NodeCtx& c, const ValuePtr& x, std::vector<int64_t> kernel) {
  require2d(c, kernel.size());
  return lift2d(windowOf(c, x, std::move(kernel)));
}

ValuePtr to2d(NodeCtx& c, const ValuePtr& v, const std::string& name) {
  return c.im.emit("expand_dims", {v}, {{"axes", ir::AttrValue::ints({2})}}, name);
}
ValuePtr from2d(NodeCtx& c, const ValuePtr& v, const std::string& name) {
  return c.im.emit("squeeze", {v}, {{"axes", ir::AttrValue::ints({2})}}, name);
}

ValuePtr addChannelBias(NodeCtx& c, const ValuePtr& y, size_t bias_input, const std::string& name) {
  if (!c.hasInput(bias_input)) return y;
  std::vector<PrimExpr> shape(y->type.rank(), ir::makeInt(1));
  shape[1] = y->type.shape[1];
  auto b = reshapeTo(c, c.in(bias_input), shape, name + "_bias");
  return c.im.emit("add", {y, b}, {}, name);
}

// ConvTranspose's pads from the requested output shape (default with SAME:
// input x stride), auto_pad deciding the split (`upper`: the larger half at
// the end); a negative total padding grows the output at the end
// (output_padding).
void resolveTransposePads(NodeCtx& c, const ValuePtr& x, Window& win, std::vector<int64_t>& out_pad,
                          bool upper) {
  const size_t k = win.kernel.size();
  std::vector<int64_t> out_shape = c.attrInts("output_shape");
  if (out_shape.size() > k) out_shape.erase(out_shape.begin(), out_shape.end() - static_cast<long>(k));
  if (out_shape.empty())
    for (size_t i = 0; i < k; ++i)
      out_shape.push_back(
          mulOrThrow(staticDim(c, x->type.shape[2 + i], "auto_pad SAME"), win.strides[i], "the output size"));
  if (out_shape.size() != k) c.fail("output_shape does not match the kernel rank");
  for (size_t i = 0; i < k; ++i) {
    if (out_shape[i] < 1)
      c.fail("output_shape[" + std::to_string(i) + "] is " + std::to_string(out_shape[i]) +
             ", not a positive size");
    int64_t in = staticDim(c, x->type.shape[2 + i], "output_shape");
    const char* what = "ConvTranspose's padding";
    int64_t total =
        addOrThrow(addOrThrow(mulOrThrow(win.strides[i], in - 1, what), out_pad[i], what),
                   addOrThrow(mulOrThrow(win.kernel[i] - 1, win.dil[i], what), 1 - out_shape[i], what), what);
    if (total < 0) {
      if (total == std::numeric_limits<int64_t>::min()) c.fail(std::string(what) + " overflows");
      out_pad[i] = addOrThrow(out_pad[i], -total, what);
      total = 0;
    }
    win.pads[i] = upper ? total / 2 : total - total / 2;
    win.pads[k + i] = upper ? total - total / 2 : total / 2;
  }
}

// The 3-D windows below import one op (or one slice) per depth tap: a
// window deeper than this is refused (an empty weight may declare any depth).
constexpr int64_t kMaxDepthTaps = 256;

void checkDepthTaps(NodeCtx& c, int64_t taps) {
  if (taps > kMaxDepthTaps)
    c.fail("a 3-D window of " + std::to_string(taps) + " depth taps is not supported (at most " +
           std::to_string(kMaxDepthTaps) + ")");
}

// A 3-D convolution whose window spans the depth only (kernel KD x 1 x 1,
// unit strides and no padding along H and W: R(2+1)D's temporal
// convolutions) as a 2-D convolution over [N, C, D, H * W] with a KD x 1
// kernel: the data stays where it is (no stacked taps, no transposes).
ValuePtr depthOnlyConv(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, const Window& win,
                       const std::string& name) {
  const std::vector<PrimExpr>& xs = x->type.shape;
  const std::vector<PrimExpr>& ws = w->type.shape;
  ValuePtr x2 = reshapeTo(c, x, {xs[0], xs[1], xs[2], dimProduct(xs, 3, 5)}, name + "_x2d");
  ValuePtr w2 = reshapeTo(c, w, {ws[0], ws[1], ws[2], ir::makeInt(1)}, name + "_w2d");
  ir::Attrs a{{"strides", ir::AttrValue::ints({win.strides[0], 1})},
              {"padding", ir::AttrValue::ints({win.pads[0], 0, win.pads[3], 0})},
              {"dilation", ir::AttrValue::ints({win.dil[0], 1})},
              {"groups", c.attrInt("group", 1)}};
  ValuePtr y = c.im.emit("conv2d", {x2, w2}, a, name + "_conv2d");
  const std::vector<PrimExpr>& ys = y->type.shape;
  return reshapeTo(c, y, {ys[0], ys[1], ys[2], xs[3], xs[4]}, name);
}

// A 3-D convolution as one 2-D convolution: the depth taps become input
// channels. x [N, C, D, H, W] padded along the depth, depth moved before the
// channels, and for each depth tap kd the strided slice of the D_out depths
// it reads (kd * dilation + d * stride); the taps stacked next to the
// channels, [N * D_out, (group, kd, c), H, W], meet the weight w [O, C/g,
// KD, KH, KW] as [O, (kd, c), KH, KW], so conv2d's reduction over its input
// channels adds up the depth taps too (one conv2d, which convert-layout
// blocks like any other); then [N, D_out, O, H', W'] goes back to
// [N, O, D_out, H', W']. The stacked input is KD times the input's size.
ValuePtr conv3dAsConv2d(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, const Window& win,
                        const std::string& name) {
  const std::vector<PrimExpr>& xs = x->type.shape;
  const int64_t channels = staticDim(c, xs[1], "Conv's input channels");
  const int64_t depth = staticDim(c, xs[2], "a 3-D Conv's input depth");
  const int64_t groups = c.attrInt("group", 1);
  if (groups <= 0 || channels % groups != 0)
    c.fail("group " + std::to_string(groups) + " does not divide the " + std::to_string(channels) +
           " input channels");
  if (w->type.rank() != 5) c.fail("a 3-D Conv's weight must have rank 5");
  const int64_t kd_taps = win.kernel[0], stride = win.strides[0], dil = win.dil[0];
  checkDepthTaps(c, kd_taps);
  const int64_t padded =
      addOrThrow(depth, addOrThrow(win.pads[0], win.pads[3], "Conv's padding"), "Conv's padding");
  const int64_t span = addOrThrow(mulOrThrow(kd_taps - 1, dil, "Conv's window"), 1, "Conv's window");
  if (win.pads[0] < 0 || win.pads[3] < 0 || padded < span)
    c.fail("the depth window (" + std::to_string(span) + ") is larger than the padded depth (" +
           std::to_string(padded) + ")");
  const int64_t out_depth = (padded - span) / stride + 1;
  if (win.kernel[1] == 1 && win.kernel[2] == 1 && win.strides[1] == 1 && win.strides[2] == 1 &&
      win.pads[1] == 0 && win.pads[2] == 0 && win.pads[4] == 0 && win.pads[5] == 0)
    return depthOnlyConv(c, x, w, win, name);
  ValuePtr xp = x;
  if (win.pads[0] || win.pads[3])
    xp = c.im.emit("pad", {x},
                   {{"pad_width", ir::AttrValue::ints({0, 0, win.pads[0], 0, 0, 0, 0, win.pads[3], 0, 0})}},
                   name + "_dpad");
  ValuePtr moved =
      c.im.emit("permute_dims", {xp}, {{"axes", ir::AttrValue::ints({0, 2, 1, 3, 4})}}, name + "_dfirst");
  std::vector<ValuePtr> taps;
  for (int64_t kd = 0; kd < kd_taps; ++kd) {
    const int64_t begin = kd * dil;
    taps.push_back(c.im.emit("strided_slice", {moved},
                             {{"axes", ir::AttrValue::ints({1})},
                              {"begin", ir::AttrValue::ints({begin})},
                              {"end", ir::AttrValue::ints({begin + (out_depth - 1) * stride + 1})},
                              {"strides", ir::AttrValue::ints({stride})}},
                             name + "_tap" + std::to_string(kd)));
  }
  const PrimExpr n = xs[0], h = xs[3], wd = xs[4], d_out = ir::makeInt(out_depth);
  const int64_t per_group = channels / groups;
  ValuePtr stacked = stack(c, taps, 2, name + "_taps");  // [N, D_out, KD, C, H, W]
  if (groups > 1) {
    stacked = reshapeTo(c, stacked,
                        {n, d_out, ir::makeInt(kd_taps), ir::makeInt(groups), ir::makeInt(per_group), h, wd},
                        name + "_taps_g");
    stacked = c.im.emit("permute_dims", {stacked}, {{"axes", ir::AttrValue::ints({0, 1, 3, 2, 4, 5, 6})}},
                        name + "_taps_gk");
  }
  ValuePtr x2 = reshapeTo(c, stacked, {dimProduct({n, d_out}, 0, 2), ir::makeInt(kd_taps * channels), h, wd},
                          name + "_x2d");
  const std::vector<PrimExpr>& ws = w->type.shape;
  ValuePtr wt =
      c.im.emit("permute_dims", {w}, {{"axes", ir::AttrValue::ints({0, 2, 1, 3, 4})}}, name + "_wk");
  ValuePtr w2 = reshapeTo(c, wt, {ws[0], ir::makeInt(kd_taps * per_group), ws[3], ws[4]}, name + "_w2d");
  ir::Attrs a{{"strides", ir::AttrValue::ints({win.strides[1], win.strides[2]})},
              {"padding", ir::AttrValue::ints({win.pads[1], win.pads[2], win.pads[4], win.pads[5]})},
              {"dilation", ir::AttrValue::ints({win.dil[1], win.dil[2]})},
              {"groups", groups}};
  ValuePtr y = c.im.emit("conv2d", {x2, w2}, a, name + "_conv2d");
  const std::vector<PrimExpr>& ys = y->type.shape;
  ValuePtr y5 = reshapeTo(c, y, {n, d_out, ys[1], ys[2], ys[3]}, name + "_y5");
  return c.im.emit("permute_dims", {y5}, {{"axes", ir::AttrValue::ints({0, 2, 1, 3, 4})}}, name);
}

}  // namespace

// A 3-D transposed convolution as one 2-D transposed convolution per depth
// tap: x [N, C, D, H, W] as [N * D, C, H, W] meets the weight's tap kd
// [C, O/g, KH, KW], giving what input depth d adds at output depth
// d * stride + kd * dilation (before the depth padding is cut); each tap's
// [N, D, O, H', W'] is spread to those depths (zeros between the strided
// ones), the taps added, the depth padding cut, and the result moved back
// to [N, O, D', H', W']. (The depth output_padding lengthens the end.)
ValuePtr convTranspose3d(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, const ConvTransposeWindow& win,
                         int64_t groups, const std::string& name) {
  const std::vector<PrimExpr>& xs = x->type.shape;
  if (x->type.rank() != 5 || w->type.rank() != 5)
    c.fail("a 3-D ConvTranspose needs a rank-5 input and weight");
  const int64_t depth = staticDim(c, xs[2], "a 3-D ConvTranspose's input depth");
  for (size_t i = 0; i < 3; ++i)
    if (staticDim(c, w->type.shape[2 + i], "the kernel") != win.kernel[i])
      c.fail("kernel_shape's " + std::to_string(win.kernel[i]) + " differs from the weight's " +
             std::to_string(staticDim(c, w->type.shape[2 + i], "the kernel")) + " (window axis " +
             std::to_string(i) + ")");
  const int64_t kd_taps = win.kernel[0], stride = win.strides[0], dil = win.dil[0];
  checkDepthTaps(c, kd_taps);
  const char* what = "ConvTranspose's output depth";
  // Every depth a tap reaches, output_padding included; the padding is cut from it.
  const int64_t full = addOrThrow(addOrThrow(mulOrThrow(stride, depth - 1, what), win.out_pad[0], what),
                                  addOrThrow(mulOrThrow(kd_taps - 1, dil, what), 1, what), what);
  // (Checked without overflow: a crafted pad of -2^63 overflowed the subtraction.)
  if (win.pads[0] < 0 || win.pads[3] < 0 || win.pads[0] >= full || win.pads[3] > full - win.pads[0] - 1)
    c.fail("the depth padding (" + std::to_string(win.pads[0]) + ", " + std::to_string(win.pads[3]) +
           ") leaves no output depth");
  const int64_t out_depth = full - win.pads[0] - win.pads[3];
  checkComputedSize({full, mulOrThrow(depth, stride, what)}, what);
  const PrimExpr n = xs[0];
  ValuePtr x2 = reshapeTo(
      c, c.im.emit("permute_dims", {x}, {{"axes", ir::AttrValue::ints({0, 2, 1, 3, 4})}}, name + "_dfirst"),
      {dimProduct({n, ir::makeInt(depth)}, 0, 2), xs[1], xs[3], xs[4]}, name + "_x2d");
  ir::Attrs a{{"strides", ir::AttrValue::ints({win.strides[1], win.strides[2]})},
              {"padding", ir::AttrValue::ints({win.pads[1], win.pads[2], win.pads[4], win.pads[5]})},
              {"dilation", ir::AttrValue::ints({win.dil[1], win.dil[2]})},
              {"groups", groups},
              {"output_padding", ir::AttrValue::ints({win.out_pad[1], win.out_pad[2]})}};
  ValuePtr sum;
  for (int64_t kd = 0; kd < kd_taps; ++kd) {
    const std::string tn = name + "_tap" + std::to_string(kd);
    ValuePtr y = c.im.emit("conv2d_transpose", {x2, item(c, w, 2, kd, tn + "_w")}, a, tn);
    const std::vector<PrimExpr>& ys = y->type.shape;  // [N * D, O, H', W']
    // [N, D, 1, O, H', W'] padded to the stride along the new axis: input depth d at d * stride.
    ValuePtr spread =
        reshapeTo(c, y, {n, ir::makeInt(depth), ir::makeInt(1), ys[1], ys[2], ys[3]}, tn + "_d");
    if (stride > 1)
      spread = c.im.emit("pad", {spread},
                         {{"pad_width", ir::AttrValue::ints({0, 0, 0, 0, 0, 0, 0, 0, stride - 1, 0, 0, 0})}},
                         tn + "_spread");
    spread = reshapeTo(c, spread, {n, ir::makeInt(depth * stride), ys[1], ys[2], ys[3]}, tn + "_strided");
    // Shifted to kd * dilation, cut or padded to the full depth.
    const int64_t begin = kd * dil, length = begin + depth * stride;
    if (length > full)
      spread = c.im.emit("strided_slice", {spread},
                         {{"axes", ir::AttrValue::ints({1})},
                          {"begin", ir::AttrValue::ints({0})},
                          {"end", ir::AttrValue::ints({full - begin})}},
                         tn + "_cut");
    const int64_t after = std::max<int64_t>(0, full - length);
    if (begin > 0 || after > 0)
      spread = c.im.emit("pad", {spread},
                         {{"pad_width", ir::AttrValue::ints({0, begin, 0, 0, 0, 0, after, 0, 0, 0})}},
                         tn + "_placed");
    sum = sum ? c.im.emit("add", {sum, spread}, {}, tn + "_sum") : spread;
  }
  if (win.pads[0] > 0 || win.pads[3] > 0)
    sum = c.im.emit("strided_slice", {sum},
                    {{"axes", ir::AttrValue::ints({1})},
                     {"begin", ir::AttrValue::ints({win.pads[0]})},
                     {"end", ir::AttrValue::ints({win.pads[0] + out_depth})}},
                    name + "_dcut");
  return c.im.emit("permute_dims", {sum}, {{"axes", ir::AttrValue::ints({0, 2, 1, 3, 4})}}, name);
}

ValuePtr convolution(NodeCtx& c, const ValuePtr& x, const ValuePtr& w, bool transpose, size_t bias_input,
                     const std::string& name) {
  std::vector<int64_t> kernel = c.attrInts("kernel_shape");
  if (kernel.empty())
    for (size_t i = 2; i < w->type.rank(); ++i)
      kernel.push_back(staticDim(c, w->type.shape[i], "the kernel"));
  if (!transpose && kernel.size() == 3) {
    ValuePtr y =
        conv3dAsConv2d(c, x, w, windowOf(c, x, kernel), c.hasInput(bias_input) ? name + "_conv" : name);
    return addChannelBias(c, y, bias_input, name);
  }
  Spatial s;
  std::vector<int64_t> out_pad = c.attrInts("output_padding", std::vector<int64_t>(kernel.size(), 0));
  const std::string auto_pad = c.attrStr("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (transpose && kernel.size() == 3) {
    Window win = windowOf(c, x, kernel);
    if (out_pad.size() != 3) c.fail("output_padding does not match the kernel rank");
    if (c.hasAttr("output_shape") || same) resolveTransposePads(c, x, win, out_pad, auto_pad == "SAME_UPPER");
    ValuePtr y = convTranspose3d(c, x, w, {win.kernel, win.strides, win.dil, win.pads, out_pad},
                                 c.attrInt("group", 1), c.hasInput(bias_input) ? name + "_conv" : name);
    return addChannelBias(c, y, bias_input, name);
  }
  if (transpose && (c.hasAttr("output_shape") || same)) {
    const size_t k = kernel.size();
    require2d(c, k);
    Window win = windowOf(c, x, kernel);
    if (out_pad.size() != k) c.fail("output_padding does not match the kernel rank");
    resolveTransposePads(c, x, win, out_pad, auto_pad == "SAME_UPPER");
    s = lift2d(win);
  } else {
    s = spatial2d(c, x, kernel);
  }
  ValuePtr xi = x, wi = w;
  if (s.one_d) {
    xi = to2d(c, x, name + "_x2d");
    wi = to2d(c, w, name + "_w2d");
    out_pad = {0, out_pad.empty() ? 0 : out_pad[0]};
  }
  ir::Attrs a{{"strides", ir::AttrValue::ints(s.strides)},
              {"padding", ir::AttrValue::ints(s.pads)},
              {"dilation", ir::AttrValue::ints(s.dil)},
              {"groups", c.attrInt("group", 1)}};
  if (transpose) a["output_padding"] = ir::AttrValue::ints(out_pad);
  bool more = s.one_d || c.hasInput(bias_input);
  ValuePtr y =
      c.im.emit(transpose ? "conv2d_transpose" : "conv2d", {xi, wi}, a, more ? name + "_conv" : name);
  if (s.one_d) y = from2d(c, y, c.hasInput(bias_input) ? name + "_conv1d" : name);
  return addChannelBias(c, y, bias_input, name);
}

namespace {

std::vector<ValuePtr> conv(NodeCtx& c, bool transpose) {
  return {convolution(c, c.in(0), c.in(1), transpose, 2, c.outName())};
}

// `op` over the last two axes of the rank-4 `x` with the 2-D window `s`.
ValuePtr pool2d(NodeCtx& c, const std::string& op, const ValuePtr& x, const Spatial& s, bool include_pad,
                const std::string& name) {
  ir::Attrs a{{"pool_size", ir::AttrValue::ints(s.kernel)},
              {"strides", ir::AttrValue::ints(s.strides)},
              {"padding", ir::AttrValue::ints(s.pads)},
              {"dilation", ir::AttrValue::ints(s.dil)},
              {"ceil_mode", c.attrInt("ceil_mode", 0) != 0}};
  if (op == "avg_pool2d") a["count_include_pad"] = include_pad;
  if (op == "max_pool2d_indices") a["storage_order"] = c.attrInt("storage_order", 0);
  return c.im.emit(op, {x}, a, name);
}

// A window over k >= 3 spatial axes as 2-D pools, exact because the window
// is a box and each pool factors over its axes (the max; the average's
// divisor, a product of per-axis counts): first the last two axes, the
// leading spatial axes folded into the channels, then each leading axis
// alone as a (k, 1) window over [N, all before it, the axis, all after it].
ValuePtr poolNd(NodeCtx& c, const std::string& op, const ValuePtr& x, const Window& w, bool include_pad,
                const std::string& name) {
  const size_t k = w.kernel.size(), r = x->type.rank();
  std::vector<PrimExpr> shape = x->type.shape;
  auto product = [&](size_t from, size_t to) { return dimProduct(shape, from, to); };
  auto axes = [&](size_t i, size_t j) {  // the 2-D window of spatial axes i (height) and j (width)
    auto pick = [&](const std::vector<int64_t>& v, int64_t none) {
      return std::vector<int64_t>{v[i], j < k ? v[j] : none};
    };
    return Spatial{false,
                   pick(w.kernel, 1),
                   pick(w.strides, 1),
                   pick(w.dil, 1),
                   {w.pads[i], j < k ? w.pads[j] : 0, w.pads[k + i], j < k ? w.pads[k + j] : 0}};
  };
  ValuePtr y = reshapeTo(c, x, {shape[0], product(1, r - 2), shape[r - 2], shape[r - 1]}, name + "_in");
  y = pool2d(c, op, y, axes(k - 2, k - 1), include_pad, name + "_last2");
  shape[r - 2] = y->type.shape[2];
  shape[r - 1] = y->type.shape[3];
  for (size_t i = k - 2; i-- > 0;) {
    const size_t a = 2 + i;
    const std::string n = name + "_axis" + std::to_string(a);
    y = reshapeTo(c, y, {shape[0], product(1, a), shape[a], product(a + 1, r)}, n + "_in");
    y = pool2d(c, op, y, axes(i, k), include_pad, n);
    shape[a] = y->type.shape[2];
  }
  return reshapeTo(c, y, shape, name);
}

// The pooling window of the node's attributes over x (input 0 unless given),
// as `op`; count_include_pad from the attribute unless `include_pad` says;
// `window` receives the window's size.
ValuePtr pool(NodeCtx& c, const std::string& op, const ValuePtr& x, const std::string& name,
              std::optional<bool> include_pad = std::nullopt, int64_t* window = nullptr) {
  std::vector<int64_t> kernel = c.attrInts("kernel_shape");
  if (kernel.empty()) c.fail("kernel_shape is required");
  c.ignoreAttrs({"storage_order"});  // the Indices output's (max_pool2d_indices reads it)
  if (window) {
    std::optional<int64_t> size = 1;
    for (int64_t d : kernel) size = size ? checkedMul(*size, d) : size;
    if (!size) c.fail("kernel_shape is too large (its product overflows int64)");
    *window = *size;
  }
  const bool incl = include_pad ? *include_pad : c.attrInt("count_include_pad", 0) != 0;
  if (kernel.size() > 2) {
    if (op == "max_pool2d_indices")
      c.fail("the Indices output of pooling over more than 2 axes is not supported");
    return poolNd(c, op, x, windowOf(c, x, kernel), incl, name);
  }
  Spatial s = spatial2d(c, x, kernel);
  if (!s.one_d) return pool2d(c, op, x, s, incl, name);
  return from2d(c, pool2d(c, op, to2d(c, x, name + "_x2d"), s, incl, name + "_pool"), name);
}

// LpPool: (sum over the window of |x|^p)^(1/p), as the average of |x|^p with
// the padding counted (zeros add nothing) times the window size.
ValuePtr lpPool(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const ir::DType t = x->type.dtype;
  const int64_t p = c.attrInt("p", 2);
  if (p < 1) c.fail("p = " + std::to_string(p) + " is not supported (p >= 1 is)");
  ValuePtr a = c.im.emit("abs", {x}, {}, n + "_abs");
  if (p > 1) a = c.im.emit("power", {a, c.im.scalar(t, static_cast<double>(p), n + "_p")}, {}, n + "_pow");
  int64_t window = 1;
  ValuePtr mean = pool(c, "avg_pool2d", a, n + "_mean", true, &window);
  ValuePtr sum = c.im.emit("multiply", {mean, c.im.scalar(t, static_cast<double>(window), n + "_window")}, {},
                           p == 1 ? n : n + "_sum");
  if (p == 1) return sum;
  return c.im.emit("power", {sum, c.im.scalar(t, 1.0 / static_cast<double>(p), n + "_inv_p")}, {}, n);
}

// Softmax, LogSoftmax and Hardmax: `along(x, axis, name)` computes the op
// along one axis. Before opset 13 the input is coerced to 2-D
// [prod(:axis), prod(axis:)] and the op runs along the second axis.
using AlongAxis = std::function<ValuePtr(const ValuePtr& x, int64_t axis, const std::string& name)>;
std::vector<ValuePtr> alongAxis(NodeCtx& c, const AlongAxis& along) {
  const ValuePtr& x = c.in(0);
  int64_t rank = static_cast<int64_t>(x->type.rank());
  if (c.opset >= 13) return {along(x, c.attrInt("axis", -1), c.outName())};
  int64_t axis = c.attrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) c.fail("axis out of range");
  if (axis == rank - 1) return {along(x, -1, c.outName())};
  PrimExpr rows = ir::makeInt(1), cols = ir::makeInt(1);
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? rows : cols) = ops::dimMul(i < axis ? rows : cols, x->type.shape[static_cast<size_t>(i)]);
  auto x2 = reshapeTo(c, x, {rows, cols}, c.outName() + "_2d");
  auto y2 = along(x2, -1, c.outName() + "_sm");
  return {reshapeTo(c, y2, x->type.shape, c.outName())};
}

std::vector<ValuePtr> softmax(NodeCtx& c, const std::string& op) {
  return alongAxis(c, [&](const ValuePtr& x, int64_t axis, const std::string& name) {
    return c.im.emit(op, {x}, {{"axis", axis}}, name);
  });
}

// Hardmax: 1 where the first maximum along the axis is, else 0: the argmax
// compared with the indices along the axis (a constant; its extent must be static).
std::vector<ValuePtr> hardmax(NodeCtx& c) {
  return alongAxis(c, [&](const ValuePtr& x, int64_t axis, const std::string& name) {
    const int64_t rank = static_cast<int64_t>(x->type.rank());
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) c.fail("axis " + std::to_string(axis) + " is out of range");
    const int64_t extent = staticDim(c, x->type.shape[static_cast<size_t>(a)], "the hardmax axis");
    std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
    shape[static_cast<size_t>(a)] = extent;
    checkComputedSize(shape, "the hardmax axis positions");
    std::vector<double> positions(static_cast<size_t>(extent));
    for (int64_t i = 0; i < extent; ++i) positions[static_cast<size_t>(i)] = static_cast<double>(i);
    auto index = c.im.constant(ir::Tensor::fromValues(ir::DType::i64, shape, positions), name + "_positions");
    auto first_max = c.im.emit("argmax", {x}, {{"axis", a}, {"keepdims", true}}, name + "_argmax");
    auto hit = c.im.emit("equal", {index, first_max}, {}, name + "_hit");
    return c.im.emit("cast", {hit}, {{"dtype", std::string(ir::dtypeName(x->type.dtype))}}, name);
  });
}

// The mean over `axes` (kept as size 1), x minus it, and the variance.
struct Moments {
  ValuePtr mean, centered, var;
};
Moments moments(NodeCtx& c, const ValuePtr& x, const std::vector<int64_t>& axes, const std::string& n) {
  ir::Attrs ra{{"axes", ir::AttrValue::ints(axes)}, {"keepdims", true}};
  Moments m;
  m.mean = c.im.emit("mean", {x}, ra, n + "_mean");
  m.centered = c.im.emit("subtract", {x, m.mean}, {}, n + "_centered");
  m.var = c.im.emit("mean", {c.im.emit("multiply", {m.centered, m.centered}, {}, n + "_sq")}, ra, n + "_var");
  return m;
}

// rsqrt(var + eps).
ValuePtr invStdDev(NodeCtx& c, const Moments& m, double epsilon, const std::string& name) {
  auto eps = c.im.scalar(m.var->type.dtype, epsilon, name + "_eps");
  return c.im.emit("rsqrt", {c.im.emit("add", {m.var, eps}, {}, name + "_vareps")}, {}, name);
}

// (x - mean) * rsqrt(var + eps) over `axes`: the normalization that
// InstanceNormalization and GroupNormalization share.
ValuePtr normalized(NodeCtx& c, const ValuePtr& x, const std::vector<int64_t>& axes, double epsilon,
                    const std::string& n) {
  Moments m = moments(c, x, axes, n);
  return c.im.emit("multiply", {m.centered, invStdDev(c, m, epsilon, n + "_rstd")}, {}, n + "_norm");
}

// GroupNormalization: x [N, C, ...] normalized per group of C / num_groups
// channels, then scaled and shifted per channel (opset 21) or per group
// (opsets 18-20, whose scale and bias have num_groups entries).
ValuePtr groupNorm(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  if (x->type.rank() < 3) c.fail("the input must have a batch, a channel and a spatial axis (rank >= 3)");
  if (c.attrInt("stash_type", 1) != 1 && x->type.dtype != ir::DType::f32)
    c.fail("stash_type other than float is not supported");
  const int64_t groups = c.attrInt("num_groups", 0);
  const int64_t channels = staticDim(c, x->type.shape[1], "GroupNormalization's channel axis");
  if (groups <= 0 || channels % groups != 0)
    c.fail("num_groups " + std::to_string(groups) + " does not divide the " + std::to_string(channels) +
           " channels");
  PrimExpr group_size = ir::makeInt(channels / groups);
  for (size_t d = 2; d < x->type.rank(); ++d) group_size = ops::dimMul(group_size, x->type.shape[d]);
  auto xg = reshapeTo(c, x, {x->type.shape[0], ir::makeInt(groups), group_size}, n + "_groups");
  auto y = reshapeTo(c, normalized(c, xg, {2}, floatAttr(c.attrFloat("epsilon", 1e-5f)), n), x->type.shape,
                     n + "_normalized");
  std::vector<PrimExpr> cshape(x->type.rank(), ir::makeInt(1));
  cshape[1] = x->type.shape[1];
  auto perChannel = [&](const ValuePtr& v, const std::string& what) {
    if (c.opset >= 21) return reshapeTo(c, v, cshape, n + "_" + what);
    // One value per group: channel k takes group k / (C / num_groups)'s.
    checkComputedSize({channels}, "GroupNormalization's channel-to-group index");
    std::vector<double> group_of(static_cast<size_t>(channels));
    for (int64_t k = 0; k < channels; ++k)
      group_of[static_cast<size_t>(k)] = static_cast<double>(k / (channels / groups));
    auto index = c.im.constant(ir::Tensor::fromValues(ir::DType::i64, {channels}, group_of), n + "_group_of");
    auto v_c = c.im.emit("take", {v, index}, {{"axis", int64_t{0}}}, n + "_" + what + "_c");
    return reshapeTo(c, v_c, cshape, n + "_" + what);
  };
  y = c.im.emit("multiply", {y, perChannel(c.in(1), "scale")}, {}, n + "_scaled");
  return c.im.emit("add", {y, perChannel(c.in(2), "bias")}, {}, n);
}

// LRN: x / (bias + alpha / size * sum of x^2 over the size channels around
// each)^beta; the channel sum is an average pool of x^2 seen as [N, 1, C, rest]
// with the padding counted, times size.
ValuePtr localResponseNorm(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const ir::DType t = x->type.dtype;
  if (x->type.rank() < 3) c.fail("the input must be at least [N, C, D1]");
  const int64_t size = c.attrInt("size", 0);
  if (size <= 0) c.fail("size must be positive");
  const double alpha = floatAttr(c.attrFloat("alpha", 1e-4f)), beta = floatAttr(c.attrFloat("beta", 0.75f)),
               bias = floatAttr(c.attrFloat("bias", 1.0f));
  PrimExpr rest = ir::makeInt(1);
  for (size_t d = 2; d < x->type.rank(); ++d) rest = ops::dimMul(rest, x->type.shape[d]);
  auto sq = reshapeTo(c, c.im.emit("multiply", {x, x}, {}, n + "_sq"),
                      {x->type.shape[0], ir::makeInt(1), x->type.shape[1], rest}, n + "_sq4d");
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  ir::Attrs pa{{"pool_size", ir::AttrValue::ints({size, 1})},
               {"strides", ir::AttrValue::ints({1, 1})},
               {"padding", ir::AttrValue::ints({before, 0, after, 0})},
               {"count_include_pad", true}};
  auto avg = reshapeTo(c, c.im.emit("avg_pool2d", {sq}, pa, n + "_avg"), x->type.shape, n + "_avg_nd");
  auto scaled = c.im.emit("multiply", {avg, c.im.scalar(t, alpha, n + "_alpha")}, {}, n + "_scaled");
  auto base = c.im.emit("add", {scaled, c.im.scalar(t, bias, n + "_bias")}, {}, n + "_base");
  auto denom = c.im.emit("power", {base, c.im.scalar(t, beta, n + "_beta")}, {}, n + "_denom");
  return c.im.emit("divide", {x, denom}, {}, n);
}

}  // namespace

void registerNNConverters(ConverterTable& t) {
  t["GroupNormalization"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {groupNorm(c)}; };
  t["LRN"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {localResponseNorm(c)}; };
  // MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes`, as its ONNX function.
  t["MeanVarianceNormalization"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    const std::string n = c.outName();
    Moments m = moments(c, x, c.attrInts("axes", {0, 2, 3}), n);
    auto sd = c.im.emit("sqrt", {m.var}, {}, n + "_std");
    auto eps = c.im.scalar(x->type.dtype, 1e-9, n + "_eps");
    return {c.im.emit("divide", {m.centered, c.im.emit("add", {sd, eps}, {}, n + "_std_eps")}, {}, n)};
  };
  t["MatMul"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("matmul", {c.in(0), c.in(1)}, {}, c.outName())};
  };
  t["Gemm"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    std::string name = c.outName();
    double alpha = floatAttr(c.attrFloat("alpha", 1.0f)), beta = floatAttr(c.attrFloat("beta", 1.0f));
    bool ta = c.attrInt("transA", 0) != 0, tb = c.attrInt("transB", 0) != 0;
    bool has_c = c.hasInput(2) && beta != 0.0;
    bool last_is_mm = alpha == 1.0 && !has_c;
    ValuePtr a = c.in(0);
    if (ta) a = c.im.emit("permute_dims", {a}, {{"axes", ir::AttrValue::ints({1, 0})}}, name + "_at");
    ValuePtr y;
    if (tb) {
      y = c.im.emit("dense", {a, c.in(1)}, {}, last_is_mm ? name : name + "_mm");
    } else {
      y = c.im.emit("matmul", {a, c.in(1)}, {}, last_is_mm ? name : name + "_mm");
    }
    if (alpha != 1.0)
      y = c.im.emit("multiply", {y, c.im.scalar(y->type.dtype, alpha, name + "_alpha")}, {},
                    has_c ? name + "_scaled" : name);
    if (has_c) {
      ValuePtr bias = c.in(2);
      if (beta != 1.0)
        bias = c.im.emit("multiply", {bias, c.im.scalar(bias->type.dtype, beta, name + "_beta")}, {},
                         name + "_c");
      y = c.im.emit("add", {y, bias}, {}, name);
    }
    return {y};
  };
  t["Conv"] = [](NodeCtx& c) { return conv(c, false); };
  t["ConvTranspose"] = [](NodeCtx& c) { return conv(c, true); };
  t["MaxPool"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    std::vector<ValuePtr> outs{pool(c, "max_pool2d", c.in(0), c.outName())};
    if (c.outputUsed(1)) outs.push_back(pool(c, "max_pool2d_indices", c.in(0), c.outName(1)));
    return outs;
  };
  t["AveragePool"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {pool(c, "avg_pool2d", c.in(0), c.outName())};
  };
  t["LpPool"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {lpPool(c)}; };
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    std::string o = std::string(op) == "GlobalAveragePool" ? "global_avg_pool2d" : "global_max_pool2d";
    std::string reduce = o == "global_avg_pool2d" ? "mean" : "max";
    t[op] = [o, reduce](NodeCtx& c) -> std::vector<ValuePtr> {
      const ValuePtr& x = c.in(0);
      if (x->type.rank() == 4) return {c.im.emit(o, {x}, {}, c.outName())};
      if (x->type.rank() < 3) c.fail("input rank must be at least 3");
      std::vector<int64_t> axes;
      for (size_t i = 2; i < x->type.rank(); ++i) axes.push_back(static_cast<int64_t>(i));
      return {c.im.emit(reduce, {x}, {{"axes", ir::AttrValue::ints(axes)}, {"keepdims", true}}, c.outName())};
    };
  }
  t["Softmax"] = [](NodeCtx& c) { return softmax(c, "softmax"); };
  t["LogSoftmax"] = [](NodeCtx& c) { return softmax(c, "log_softmax"); };
  t["Hardmax"] = [](NodeCtx& c) { return hardmax(c); };
  t["BatchNormalization"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    if (c.opset < 7 && c.attrInt("is_test", 0) == 0)
      c.fail("training mode before opset 7 is not supported (inference only)");
    if (c.opset < 9 && c.attrInt("spatial", 1) == 0) c.fail("spatial = 0 is not supported");
    const ir::Attrs bn{{"axis", int64_t{1}}, {"epsilon", floatAttr(c.attrFloat("epsilon", 1e-5f))}};
    if (c.attrInt("training_mode", 0) == 0) {
      c.ignoreAttrs({"momentum", "consumed_inputs"});  // running-statistics update and a legacy hint
      return {c.im.emit("batch_norm", {c.in(0), c.in(1), c.in(2), c.in(3), c.in(4)}, bn, c.outName())};
    }
    // training_mode (opset >= 14): normalized by the batch's own statistics
    // over every axis but the channels; outputs 1 and 2 are the running
    // statistics updated with momentum (the population variance, as ONNX).
    const ValuePtr& x = c.in(0);
    const std::string n = c.outName();
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < x->type.rank(); ++i) axes.push_back(static_cast<int64_t>(i));
    Moments m = moments(c, x, axes, n + "_batch");
    const std::vector<PrimExpr> channels{x->type.shape[1]};
    ValuePtr mean = reshapeTo(c, m.mean, channels, n + "_batch_mean"),
             var = reshapeTo(c, m.var, channels, n + "_batch_var");
    std::vector<ValuePtr> outs{c.im.emit("batch_norm", {x, c.in(1), c.in(2), mean, var}, bn, n)};
    const ir::DType t = x->type.dtype;
    const double momentum = floatAttr(c.attrFloat("momentum", 0.9f));
    auto running = [&](size_t input, const ValuePtr& current, size_t output) {
      auto kept =
          c.im.emit("multiply", {c.in(input), c.im.scalar(t, momentum, c.outName(output) + "_momentum")}, {},
                    c.outName(output) + "_kept");
      auto fresh =
          c.im.emit("multiply", {current, c.im.scalar(t, 1.0 - momentum, c.outName(output) + "_rest")}, {},
                    c.outName(output) + "_fresh");
      return c.im.emit("add", {kept, fresh}, {}, c.outName(output));
    };
    if (c.outputUsed(1)) outs.push_back(running(3, mean, 1));
    if (c.outputUsed(2)) outs.resize(2), outs.push_back(running(4, var, 2));
    return outs;
  };
  t["LayerNormalization"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr &x = c.in(0), &scale = c.in(1);
    ValuePtr bias;
    if (c.hasInput(2)) {
      bias = c.in(2);
    } else {
      bias = filled(c, scale->type.dtype, 0.0, scale->type.shape, c.outName() + "_zero_bias");
    }
    if (c.attrInt("stash_type", 1) != 1 && x->type.dtype != ir::DType::f32)
      c.fail("stash_type other than float is not supported");
    const int64_t axis = c.attrInt("axis", -1);
    const double epsilon = floatAttr(c.attrFloat("epsilon", 1e-5f));
    std::vector<ValuePtr> outs = {
        c.im.emit("layer_norm", {x, scale, bias}, {{"axis", axis}, {"epsilon", epsilon}}, c.outName())};
    if (c.outputUsed(1) || c.outputUsed(2)) {
      // Mean and InvStdDev over the normalized axes, kept as size 1.
      const int64_t rank = static_cast<int64_t>(x->type.rank());
      const int64_t first = axis < 0 ? axis + rank : axis;
      if (first < 0 || first >= rank) c.fail("axis " + std::to_string(axis) + " is out of range");
      std::vector<int64_t> axes;
      for (int64_t d = first; d < rank; ++d) axes.push_back(d);
      Moments m = moments(c, x, axes, c.outName(1));
      outs.push_back(m.mean);
      outs.push_back(invStdDev(c, m, epsilon, c.outName(2)));
    }
    return outs;
  };
  t["InstanceNormalization"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    std::string n = c.outName();
    std::vector<int64_t> axes;
    for (size_t i = 2; i < x->type.rank(); ++i) axes.push_back(static_cast<int64_t>(i));
    auto y = normalized(c, x, axes, floatAttr(c.attrFloat("epsilon", 1e-5f)), n);
    std::vector<PrimExpr> cshape(x->type.rank(), ir::makeInt(1));
    cshape[1] = x->type.shape[1];
    y = c.im.emit("multiply", {y, reshapeTo(c, c.in(1), cshape, n + "_scale")}, {}, n + "_scaled");
    return {c.im.emit("add", {y, reshapeTo(c, c.in(2), cshape, n + "_bias")}, {}, n)};
  };
  // Dropout is the identity in inference. In training mode (opset 12+:
  // input training_mode true; before opset 7: is_test = 0) it zeroes random
  // elements, which mlcc cannot reproduce: refused unless the ratio is 0.
  t["Dropout"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    c.ignoreAttrs({"seed"});  // the random seed of training mode
    bool training = false;
    double ratio = 0.5;
    if (c.opset >= 12) {
      if (c.hasInput(2)) {
        const ValuePtr& m = c.in(2);
        if (!m->constant || m->constant->numel() != 1)
          c.fail("training_mode (input 2) must be a constant scalar");
        training = m->constant->at(0) != 0;
      }
      if (c.hasInput(1)) {
        std::vector<double> r = c.constFloats(1, "ratio");
        if (r.size() != 1) c.fail("ratio (input 1) must be a scalar");
        ratio = r[0];
      }
    } else {
      ratio = c.attrFloat("ratio", 0.5f);
      if (c.opset < 7) training = c.attrInt("is_test", 0) == 0;
      c.ignoreAttrs({"consumed_inputs"});  // opset 1's legacy optimization hint
    }
    if (training && ratio != 0.0)
      c.fail("training mode is not supported (inference only: training-mode dropout drops random elements)");
    if (!c.outputUsed(1)) return {c.in(0)};
    // Nothing is dropped: the mask is all true.
    return {c.in(0), filled(c, ir::DType::boolean, 1.0, c.in(0)->type.shape, c.outName(1))};
  };
}

}  // namespace mlcc::frontend::onnx_import
