// Converters of ONNX ops that are compositions of graph ops with constants
// computed at import: CenterCropPad (strided_slice and pad, centered),
// OneHot (the indices compared with the positions along the new axis) and
// ReverseSequence (gather_elements with the reversed positions of each
// sequence, its lengths known at import), AffineGrid (a constant base
// grid times theta), MaxUnpool (scatter_elements into zeros, by the flat
// indices MaxPool gives) and Col2Im (a grouped conv2d_transpose with one-hot
// kernels: each column entry adds to its pixel of the image), DFT (one
// matmul with the constant DFT matrix), STFT (framed by a gather, then the
// same matmul), TfIdfVectorizer (n-gram counts by windowed comparisons),
// DeformConv (grid_sample per kernel tap, then a matmul), RoiAlign (bilinear
// samples at the rois' positions, pooled per bin) and Det (an
// unrolled LU factorization with partial pivoting).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "convert_util.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"

namespace mlcc::frontend::onnx_import {

int64_t normalizedAxis(NodeCtx& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

namespace {

// CenterCropPad: each named axis cropped (a centered window) or padded with
// zeros (centered: the odd element after) to the given size.
ValuePtr centerCropPad(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const int64_t rank = static_cast<int64_t>(x->type.rank());
  std::vector<int64_t> sizes = c.constInts(1, "shape");
  std::vector<int64_t> axes = c.attrInts("axes");
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  if (sizes.size() != axes.size())
    c.fail("shape has " + std::to_string(sizes.size()) + " values for " + std::to_string(axes.size()) +
           " axes");
  std::vector<int64_t> crop_axes, begin, end, pads(static_cast<size_t>(2 * rank), 0);
  bool pad = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = normalizedAxis(c, axes[k], rank);
    const int64_t d = staticDim(c, x->type.shape[static_cast<size_t>(a)], "CenterCropPad"), s = sizes[k];
    if (s < 0) c.fail("shape " + std::to_string(s) + " is negative");
    if (s < d) {
      crop_axes.push_back(a);
      begin.push_back((d - s) / 2);
      end.push_back((d - s) / 2 + s);
    } else if (s > d) {
      pads[static_cast<size_t>(a)] = (s - d) / 2;
      pads[static_cast<size_t>(a + rank)] = s - d - (s - d) / 2;
      pad = true;
    }
  }
  const std::string n = c.outName();
  ValuePtr y = x;
  if (!crop_axes.empty())
    y = c.im.emit("strided_slice", {y},
                  {{"axes", ir::AttrValue::ints(crop_axes)},
                   {"begin", ir::AttrValue::ints(begin)},
                   {"end", ir::AttrValue::ints(end)}},
                  pad ? n + "_cropped" : n);
  if (pad) y = c.im.emit("pad", {y}, {{"pad_width", ir::AttrValue::ints(pads)}}, n);
  return y;
}

// OneHot: values[1] where the index (negative from the end of depth) equals
// the position along the new axis, values[0] elsewhere.
ValuePtr oneHot(NodeCtx& c) {
  const ValuePtr& indices = c.in(0);
  const std::string n = c.outName();
  std::vector<double> depth_v = c.constFloats(1, "depth");
  if (depth_v.size() != 1) c.fail("depth must have one element");
  const double depth_d = depth_v[0];
  if (!(depth_d >= 1 && depth_d <= static_cast<double>(kMaxComputedElements)))
    c.fail("depth " + std::to_string(depth_d) + " is out of range");
  const auto depth = static_cast<int64_t>(depth_d);  // ONNX: a non-integer depth is truncated
  const ValuePtr& values = c.in(2);
  const int64_t out_rank = static_cast<int64_t>(indices->type.rank()) + 1;
  const int64_t axis = normalizedAxis(c, c.attrInt("axis", -1), out_rank);
  // Indices as i64 (a float index is truncated), negative ones from depth.
  ValuePtr idx =
      indices->type.dtype == ir::DType::i64 ? indices : castTo(c, indices, ir::DType::i64, n + "_i64");
  auto negative =
      c.im.emit("less", {idx, c.im.scalar(ir::DType::i64, 0.0, n + "_zero")}, {}, n + "_negative");
  auto wrapped =
      c.im.emit("add", {idx, c.im.scalar(ir::DType::i64, static_cast<double>(depth), n + "_depth")}, {},
                n + "_wrapped");
  idx = c.im.emit("where", {negative, wrapped, idx}, {}, n + "_index");
  idx = c.im.emit("expand_dims", {idx}, {{"axes", ir::AttrValue::ints({axis})}}, n + "_expanded");
  std::vector<int64_t> pshape(static_cast<size_t>(out_rank), 1);
  pshape[static_cast<size_t>(axis)] = depth;
  std::vector<double> positions(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) positions[static_cast<size_t>(i)] = static_cast<double>(i);
  auto pos = c.im.constant(ir::Tensor::fromValues(ir::DType::i64, pshape, positions), n + "_positions");
  auto hit = c.im.emit("equal", {idx, pos}, {}, n + "_hit");
  if (values->type.rank() != 1 || !ops::isConstDim(values->type.shape[0], 2))
    c.fail("values must be [off, on]");
  auto two = [&](int64_t k, const char* what) {
    return c.im.emit("strided_slice", {values},
                     {{"axes", ir::AttrValue::ints({0})},
                      {"begin", ir::AttrValue::ints({k})},
                      {"end", ir::AttrValue::ints({k + 1})}},
                     n + "_" + what);
  };
  auto on = reshapeTo(c, two(1, "on1"), {}, n + "_on"), off = reshapeTo(c, two(0, "off1"), {}, n + "_off");
  return c.im.emit("where", {hit, on, off}, {}, n);
}

// ReverseSequence: along time_axis, the first sequence_lens[b] elements of
// batch b reversed, the rest kept.
ValuePtr reverseSequence(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const int64_t rank = static_cast<int64_t>(x->type.rank());
  if (rank < 2) c.fail("the input must have rank >= 2");
  const int64_t time_axis = normalizedAxis(c, c.attrInt("time_axis", 0), rank);
  const int64_t batch_axis = normalizedAxis(c, c.attrInt("batch_axis", 1), rank);
  if (time_axis == batch_axis || time_axis > 1 || batch_axis > 1)
    c.fail("time_axis and batch_axis must be 0 and 1");
  std::vector<int64_t> lens = c.constInts(1, "sequence_lens");
  const int64_t steps = staticDim(c, x->type.shape[static_cast<size_t>(time_axis)], "ReverseSequence");
  const int64_t batch = staticDim(c, x->type.shape[static_cast<size_t>(batch_axis)], "ReverseSequence");
  if (static_cast<int64_t>(lens.size()) != batch)
    c.fail("sequence_lens has " + std::to_string(lens.size()) + " values for a batch of " +
           std::to_string(batch));
  // The source position of each (time, batch), shaped [T, B] or [B, T], then
  // broadcast over the other axes for gather_elements.
  std::vector<int64_t> ishape(static_cast<size_t>(rank), 1);
  ishape[static_cast<size_t>(time_axis)] = steps;
  ishape[static_cast<size_t>(batch_axis)] = batch;
  checkComputedSize(ishape, "ReverseSequence's positions");
  std::vector<double> src(static_cast<size_t>(steps * batch));
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      if (len < 0 || len > steps) c.fail("sequence length " + std::to_string(len) + " is out of range");
      const size_t flat = static_cast<size_t>(time_axis == 0 ? t * batch + b : b * steps + t);
      src[flat] = static_cast<double>(t < len ? len - 1 - t : t);
    }
  const std::string n = c.outName();
  auto index = c.im.constant(ir::Tensor::fromValues(ir::DType::i64, ishape, src), n + "_positions");
  auto full = c.im.emit("broadcast_to", {index}, {{"shape", dimsAttr(x->type.shape)}}, n + "_index");
  return c.im.emit("gather_elements", {x, full}, {{"axis", time_axis}}, n);
}

// AffineGrid: the sampling grid of theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D)
// over an output of `size` [N, C, (D,) H, W]: the base grid of normalized
// coordinates (x, y, (z,) 1) as a constant, times theta transposed.
ValuePtr affineGrid(NodeCtx& c) {
  const ValuePtr& theta = c.in(0);
  std::vector<int64_t> size = c.constInts(1, "size");
  const std::string n = c.outName();
  if (size.size() != 4 && size.size() != 5) c.fail("size must have 4 (2-D) or 5 (3-D) values");
  const size_t dims = size.size() - 2;
  const bool align = c.attrInt("align_corners", 0) != 0;
  std::vector<int64_t> spatial(size.begin() + 2, size.end());  // (D,) H, W
  int64_t points = 1;
  for (int64_t s : spatial) {
    if (s <= 0) c.fail("size " + std::to_string(s) + " must be positive");
    points *= s;
    checkComputedSize({points, static_cast<int64_t>(dims + 1)}, "AffineGrid's base grid");
  }
  // The normalized coordinate of index i of an axis of s points.
  auto coord = [&](int64_t i, int64_t s) {
    if (align) return s == 1 ? 0.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(s - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(s) - 1.0;
  };
  std::vector<double> base;
  base.reserve(static_cast<size_t>(points) * (dims + 1));
  for (int64_t p = 0; p < points; ++p) {
    // p runs over (D,) H, W with W fastest; the grid's last axis is (x, y, (z)): W first.
    int64_t rest = p;
    std::vector<int64_t> idx(dims);
    for (size_t a = dims; a-- > 0;) {
      idx[a] = rest % spatial[a];
      rest /= spatial[a];
    }
    for (size_t a = dims; a-- > 0;) base.push_back(coord(idx[a], spatial[a]));
    base.push_back(1.0);
  }
  auto grid = c.im.constant(
      ir::Tensor::fromValues(theta->type.dtype, {1, points, static_cast<int64_t>(dims + 1)}, base),
      n + "_base");
  auto theta_t =
      c.im.emit("permute_dims", {theta}, {{"axes", ir::AttrValue::ints({0, 2, 1})}}, n + "_theta_t");
  auto flat = c.im.emit("matmul", {grid, theta_t}, {}, n + "_flat");
  std::vector<ir::PrimExpr> out_shape = {theta->type.shape[0]};
  for (int64_t s : spatial) out_shape.push_back(ir::makeInt(s));
  out_shape.push_back(ir::makeInt(static_cast<int64_t>(dims)));
  return reshapeTo(c, flat, out_shape, n);
}

// MaxUnpool: x's values at their flat indices (over the whole output, as
// MaxPool's Indices are) in a zero tensor of the unpooled shape
// (in - 1) * stride + kernel - pads per spatial axis; a larger output_shape
// pads it with zeros at the end (as the ONNX reference does).
ValuePtr maxUnpool(NodeCtx& c) {
  const ValuePtr &x = c.in(0), &idx = c.in(1);
  const std::string n = c.outName();
  const size_t rank = x->type.rank();
  if (rank < 3) c.fail("the input needs a batch, a channel and a spatial axis");
  const size_t k = rank - 2;
  std::vector<int64_t> kernel = c.attrInts("kernel_shape");
  std::vector<int64_t> strides = c.attrInts("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = c.attrInts("pads", std::vector<int64_t>(2 * k, 0));
  if (kernel.size() != k || strides.size() != k || pads.size() != 2 * k)
    c.fail("kernel_shape, strides and pads must match the input's " + std::to_string(k) + " spatial axes");
  std::vector<int64_t> unpooled{staticDim(c, x->type.shape[0], "the batch"),
                                staticDim(c, x->type.shape[1], "the channels")};
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = staticDim(c, x->type.shape[2 + i], "the unpooled size");
    const char* what = "the unpooled size";
    unpooled.push_back(
        addOrThrow(mulOrThrow(in - 1, strides[i], what), kernel[i] - pads[i] - pads[k + i], what));
    if (unpooled.back() <= 0) c.fail("the unpooled size is not positive");
  }
  std::vector<ir::PrimExpr> shape;
  int64_t total = 1;
  for (int64_t d : unpooled) {
    shape.push_back(ir::makeInt(d));
    total = mulOrThrow(total, d, "the unpooled size");
  }
  auto zeros = filled(c, x->type.dtype, 0.0, {ir::makeInt(total)}, n + "_zeros");
  auto flat = [&](const ValuePtr& v, const std::string& name) {
    return reshapeTo(c, v, {dimProduct(v->type.shape, 0, v->type.rank())}, name);
  };
  auto placed = c.im.emit("scatter_elements", {zeros, flat(idx, n + "_idx"), flat(x, n + "_values")},
                          {{"axis", int64_t{0}}}, n + "_flat");
  if (!c.hasInput(2)) return reshapeTo(c, placed, shape, n);
  std::vector<int64_t> out = c.constInts(2, "output_shape");
  if (out.size() != rank) c.fail("output_shape must have the input's rank " + std::to_string(rank));
  std::vector<int64_t> widths(2 * rank, 0);
  bool padded = false;
  for (size_t i = 0; i < rank; ++i) {
    if (out[i] < unpooled[i])
      c.fail("output_shape " + std::to_string(out[i]) + " on axis " + std::to_string(i) +
             " is smaller than the unpooled size " + std::to_string(unpooled[i]));
    widths[rank + i] = out[i] - unpooled[i];
    padded = padded || widths[rank + i] > 0;
  }
  if (!padded) return reshapeTo(c, placed, shape, n);
  return c.im.emit("pad", {reshapeTo(c, placed, shape, n + "_unpooled")},
                   {{"pad_width", ir::AttrValue::ints(widths)}}, n);
}

// Col2Im (2-D or 3-D blocks): the columns [N, C * prod(block), L] as an
// image of the block grid [N, C * prod(block), g1, .., gk], then a
// transposed convolution with C groups whose kernel for column entry (c, i)
// is one-hot at block position i: every entry adds to the pixel its block
// position covers (3-D: convTranspose3d).
ValuePtr col2Im(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const std::vector<int64_t> image = c.constInts(1, "image_shape"), block = c.constInts(2, "block_shape");
  const size_t k = image.size();
  if ((k != 2 && k != 3) || block.size() != k)
    c.fail(std::to_string(image.size()) + "-D images are not supported (2-D and 3-D are)");
  std::vector<int64_t> strides = c.attrInts("strides", std::vector<int64_t>(k, 1)),
                       dil = c.attrInts("dilations", std::vector<int64_t>(k, 1)),
                       pads = c.attrInts("pads", std::vector<int64_t>(2 * k, 0));
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k)
    c.fail("strides, dilations and pads must match the image's " + std::to_string(k) + " dimensions");
  if (x->type.rank() != 3) c.fail("the input must be [N, C * prod(block_shape), L]");
  const int64_t cols = staticDim(c, x->type.shape[1], "the column height");
  int64_t per = 1, count_in_grid = 1;
  for (size_t i = 0; i < k; ++i) {
    if (block[i] <= 0) c.fail("block_shape must be positive");
    per = mulOrThrow(per, block[i], "the block size");
  }
  if (cols % per != 0)
    c.fail("the input's " + std::to_string(cols) + " rows are not a multiple of the block size " +
           std::to_string(per));
  std::vector<int64_t> grid(k), out_pad(k);
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0 || image[i] <= 0)
      c.fail("image_shape, strides and dilations must be positive");
    const char* what = "the block grid";
    const int64_t span = addOrThrow(addOrThrow(image[i], pads[i] + pads[k + i], what),
                                    -addOrThrow(mulOrThrow(dil[i], block[i] - 1, what), 1, what), what);
    if (span < 0) c.fail("the block does not fit the padded image");
    grid[i] = span / strides[i] + 1;
    out_pad[i] = span % strides[i];  // rows and columns past the last block
    count_in_grid = mulOrThrow(count_in_grid, grid[i], what);
  }
  const int64_t count = staticDim(c, x->type.shape[2], "the block count");
  if (count != count_in_grid)
    c.fail("the input has " + std::to_string(count) + " blocks; the image holds " +
           std::to_string(count_in_grid));
  const int64_t channels = cols / per;
  checkComputedSize({cols, per}, "Col2Im's one-hot kernel");
  std::vector<double> onehot(static_cast<size_t>(cols * per), 0.0);
  for (int64_t r = 0; r < cols; ++r) onehot[static_cast<size_t>(r * per + r % per)] = 1.0;
  std::vector<int64_t> wshape = {cols, 1};
  std::vector<ir::PrimExpr> gshape = {x->type.shape[0], ir::makeInt(cols)};
  for (size_t i = 0; i < k; ++i) wshape.push_back(block[i]), gshape.push_back(ir::makeInt(grid[i]));
  auto weight = c.im.constant(ir::Tensor::fromValues(x->type.dtype, wshape, onehot), n + "_onehot");
  auto blocks = reshapeTo(c, x, gshape, n + "_grid");
  if (k == 3) return convTranspose3d(c, blocks, weight, {block, strides, dil, pads, out_pad}, channels, n);
  return c.im.emit("conv2d_transpose", {blocks, weight},
                   {{"strides", ir::AttrValue::ints(strides)},
                    {"padding", ir::AttrValue::ints(pads)},
                    {"dilation", ir::AttrValue::ints(dil)},
                    {"groups", channels},
                    {"output_padding", ir::AttrValue::ints(out_pad)}},
                   n);
}

// The constant [len * comps, K * 2] matrix of the length-L DFT of a signal
// of `len` samples with `comps` components (1: real, 2: interleaved
// complex), giving K interleaved complex bins (forward e^{-2 pi i jk / L},
// inverse e^{+2 pi i jk / L} / L; samples past L dropped, missing ones zero).
ValuePtr dftMatrix(NodeCtx& c, int64_t len, int64_t comps, int64_t L, int64_t K, bool inverse,
                   ir::DType dtype, const std::string& name) {
  const int64_t rows = len * comps;
  if (K > kMaxComputedElements / 2 / std::max<int64_t>(rows, 1))
    c.fail("a DFT of " + std::to_string(len) + " to " + std::to_string(L) +
           " points is too large for its matrix form");
  std::vector<double> m(static_cast<size_t>(rows * K * 2), 0.0);
  constexpr double kPi = 3.14159265358979323846;
  const double scale = inverse ? 1.0 / static_cast<double>(L) : 1.0, sign = inverse ? 1.0 : -1.0;
  for (int64_t j = 0; j < std::min(len, L); ++j)
    for (int64_t k = 0; k < K; ++k) {
      const double angle = 2 * kPi * static_cast<double>((j * k) % L) / static_cast<double>(L);
      const double cs = std::cos(angle) * scale, sn = sign * std::sin(angle) * scale;
      // (re + i im)(cs + i sn): re' = re cs - im sn, im' = re sn + im cs.
      auto at = [&](int64_t p, int64_t q) -> double& {
        return m[static_cast<size_t>(((j * comps + p) * K + k) * 2 + q)];
      };
      at(0, 0) = cs;
      at(0, 1) = sn;
      if (comps == 2) at(1, 0) = -sn, at(1, 1) = cs;
    }
  return c.im.constant(ir::Tensor::fromValues(dtype, {rows, K * 2}, m), name);
}

// DFT along one signal axis as one matmul: the signal [..., n, c] (c = 1:
// real, 2: interleaved complex) moved last and flattened to [..., n * c],
// times the constant [n * c, K * 2] matrix of the length-L transform
// (forward e^{-2 pi i jk / L}, inverse e^{+2 pi i jk / L} / L; L =
// dft_length, samples past it dropped and missing ones zero: no padding op;
// K = L, or L / 2 + 1 one-sided), then moved back as [..., K, 2].
ValuePtr dft(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const int64_t r = static_cast<int64_t>(x->type.rank());
  if (r < 2) c.fail("the input needs a signal axis and the real/complex axis");
  int64_t axis;
  if (c.opset >= 20) {
    axis = -2;
    if (c.hasInput(2)) {
      std::vector<int64_t> a = c.constInts(2, "axis");
      if (a.size() != 1) c.fail("axis must hold one value");
      axis = a[0];
    }
  } else {
    axis = c.attrInt("axis", 1);
  }
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2)
    c.fail("axis must name a signal axis (not the last, real/complex one) of the rank-" + std::to_string(r) +
           " input");
  const int64_t comps = staticDim(c, x->type.shape[static_cast<size_t>(r - 1)], "the real/complex axis");
  if (comps != 1 && comps != 2)
    c.fail("the last axis must be 1 (real) or 2 (complex), not " + std::to_string(comps));
  const int64_t len = staticDim(c, x->type.shape[static_cast<size_t>(axis)], "the signal length");
  int64_t L = len;
  if (c.hasInput(1)) {
    std::vector<int64_t> l = c.constInts(1, "dft_length");
    if (l.size() != 1 || l[0] <= 0) c.fail("dft_length must be one positive value");
    L = l[0];
  }
  const bool inverse = c.attrInt("inverse", 0) != 0, onesided = c.attrInt("onesided", 0) != 0;
  if (inverse && onesided) c.fail("inverse with onesided (a real inverse transform) is not supported");
  const int64_t K = onesided ? L / 2 + 1 : L;
  const int64_t rows = len * comps;
  auto matrix = dftMatrix(c, len, comps, L, K, inverse, x->type.dtype, n + "_matrix");
  // [others..., axis, comps] -> [others..., n * comps]
  std::vector<int64_t> perm;
  std::vector<ir::PrimExpr> others;
  for (int64_t i = 0; i < r - 1; ++i)
    if (i != axis) perm.push_back(i), others.push_back(x->type.shape[static_cast<size_t>(i)]);
  perm.push_back(axis);
  perm.push_back(r - 1);
  auto moved = c.im.emit("permute_dims", {x}, {{"axes", ir::AttrValue::ints(perm)}}, n + "_moved");
  std::vector<ir::PrimExpr> flat = others;
  flat.push_back(ir::makeInt(rows));
  auto y = c.im.emit("matmul", {reshapeTo(c, moved, flat, n + "_rows"), matrix}, {}, n + "_freq");
  std::vector<ir::PrimExpr> split = others;
  split.push_back(ir::makeInt(K));
  split.push_back(ir::makeInt(2));
  y = reshapeTo(c, y, split, n + "_pairs");
  // [others..., K, 2] -> the input's order with K on the axis.
  std::vector<int64_t> back;
  for (int64_t i = 0, o = 0; i < r - 1; ++i) back.push_back(i == axis ? r - 2 : o++);
  back.push_back(r - 1);
  return c.im.emit("permute_dims", {y}, {{"axes", ir::AttrValue::ints(back)}}, n);
}

// STFT (opset 17): the frames of the signal [batch, length, c] (frame i
// starts at i * frame_step) gathered with a constant index table, times
// the window, then each frame's DFT as one matmul with the DFT matrix:
// [batch, frames, bins, 2] (bins = frame_length / 2 + 1 when onesided).
ValuePtr stft(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  if (x->type.rank() != 3) c.fail("the signal must be [batch, length, 1 or 2]");
  const int64_t comps = staticDim(c, x->type.shape[2], "the real/complex axis");
  if (comps != 1 && comps != 2)
    c.fail("the last axis must be 1 (real) or 2 (complex), not " + std::to_string(comps));
  const int64_t len = staticDim(c, x->type.shape[1], "the signal length");
  const std::vector<int64_t> step = c.constInts(1, "frame_step");
  if (step.size() != 1 || step[0] <= 0) c.fail("frame_step must be one positive value");
  ValuePtr window = c.hasInput(2) ? c.in(2) : nullptr;
  int64_t fl = -1;
  if (window) {
    if (window->type.rank() != 1) c.fail("the window must be 1-D");
    fl = staticDim(c, window->type.shape[0], "the window length");
  }
  if (c.hasInput(3)) {
    const std::vector<int64_t> f = c.constInts(3, "frame_length");
    if (f.size() != 1) c.fail("frame_length must hold one value");
    if (fl >= 0 && f[0] != fl) c.fail("frame_length differs from the window's length");
    fl = f[0];
  }
  if (fl <= 0) c.fail("needs a window or a positive frame_length");
  if (fl > len)
    c.fail("frame_length " + std::to_string(fl) + " exceeds the signal length " + std::to_string(len));
  const bool onesided = c.attrInt("onesided", 1) != 0;
  if (onesided && comps == 2) c.fail("onesided applies to real signals only");
  const int64_t frames = (len - fl) / step[0] + 1;
  checkComputedSize({frames, fl}, "the frame index table");
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < fl; ++j) idx.push_back(f * step[0] + j);
  ir::Tensor table = intTensor(idx).reshaped({frames, fl});
  ValuePtr framed =
      c.im.emit("take", {x, c.im.constant(std::move(table), n + "_frame_index")}, {{"axis", int64_t{1}}},
                n + "_frames");  // [batch, frames, fl, comps]
  if (window) {
    ValuePtr w = reshapeTo(c, castTo(c, window, x->type.dtype, n + "_window"),
                           {ir::makeInt(fl), ir::makeInt(1)}, n + "_window_column");
    framed = c.im.emit("multiply", {framed, w}, {}, n + "_windowed");
  }
  const int64_t K = onesided ? fl / 2 + 1 : fl;
  auto matrix = dftMatrix(c, fl, comps, fl, K, false, x->type.dtype, n + "_matrix");
  const ir::PrimExpr batch = x->type.shape[0];
  auto rows = reshapeTo(c, framed, {batch, ir::makeInt(frames), ir::makeInt(fl * comps)}, n + "_rows");
  auto y = c.im.emit("matmul", {rows, matrix}, {}, n + "_freq");
  return reshapeTo(c, y, {batch, ir::makeInt(frames), ir::makeInt(K), ir::makeInt(2)}, n);
}

// TfIdfVectorizer on integer tokens: for each n-gram of the pool (n from
// min_gram_length to max_gram_length) the number of its occurrences in each
// row, with gaps of 0 to max_skip_count tokens between its items (unigrams
// counted once), as the ONNX reference counts them. Per n-gram size and gap
// d, the row's windows x[k*d : k*d + L] (k < n) are compared with the k-th
// items of all n-grams of that size at once ([N, L, P]), the matches summed
// over positions; a constant one-hot matrix adds each n-gram's count to its
// output column (ngram_indexes); then the weighting (TF: counts, IDF: the
// weight, or 1, where the count is positive, TFIDF: weight times count).
ValuePtr tfIdfVectorizer(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  if (c.hasAttr("pool_strings") && !c.hasAttr("pool_int64s"))
    c.fail("string pools are not supported (mlcc has no string tensors)");
  if (!ir::isInt(x->type.dtype)) c.fail("the input must be integer tokens");
  const size_t rank = x->type.rank();
  if (rank != 1 && rank != 2) c.fail("the input must be [C] or [N, C]");
  const int64_t len = staticDim(c, x->type.shape[rank - 1], "the sequence length");
  const std::string mode = c.attrStr("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.fail("mode must be TF, IDF or TFIDF");
  const int64_t min_n = c.attrInt("min_gram_length", 0), max_n = c.attrInt("max_gram_length", 0);
  const int64_t max_skip = c.attrInt("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0 || max_skip > len)
    c.fail("min_gram_length, max_gram_length and max_skip_count are out of range");
  const std::vector<int64_t> pool = c.attrInts("pool_int64s");
  const std::vector<int64_t> counts = c.attrInts("ngram_counts");
  const std::vector<int64_t> indexes = c.attrInts("ngram_indexes");
  std::vector<double> weights;
  if (const auto* w = c.attr("weights")) weights.assign(w->floats().begin(), w->floats().end());
  if (indexes.empty()) c.fail("ngram_indexes is empty");
  int64_t out = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= kMaxIntListElements) c.fail("ngram_indexes holds " + std::to_string(i));
    out = std::max(out, i + 1);
  }
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < out)
    c.fail("weights has fewer entries than the output has columns");

  // The pool's n-grams by size: their items and output columns.
  struct Grams {
    std::vector<std::vector<double>> items;  // [k][p]: item k of n-gram p
    std::vector<int64_t> columns;
  };
  std::map<int64_t, Grams> by_size;
  int64_t id = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t size = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i];
    const int64_t end = i + 1 < counts.size() ? counts[i + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % size != 0)
      c.fail("ngram_counts does not split pool_int64s into n-grams");
    for (int64_t at = begin; at < end; at += size, ++id) {
      if (size < min_n || size > max_n) continue;
      if (id >= static_cast<int64_t>(indexes.size())) c.fail("ngram_indexes has fewer entries than the pool");
      Grams& g = by_size[size];
      g.items.resize(static_cast<size_t>(size));
      // An n-gram listed twice counts once, in the column of its last entry
      // (the reference's trie keeps one node per n-gram, its id the last).
      size_t same = g.columns.size();
      for (size_t j = 0; j < g.columns.size() && same == g.columns.size(); ++j) {
        bool equal = true;
        for (int64_t k = 0; k < size; ++k) equal &= g.items[k][j] == static_cast<double>(pool[at + k]);
        if (equal) same = j;
      }
      if (same < g.columns.size()) {
        g.columns[same] = indexes[id];
        continue;
      }
      for (int64_t k = 0; k < size; ++k) g.items[k].push_back(static_cast<double>(pool[at + k]));
      g.columns.push_back(indexes[id]);
    }
  }

  ValuePtr rows = castTo(c, x, ir::DType::i64, n + "_tokens");
  if (rank == 1) rows = reshapeTo(c, rows, {ir::makeInt(1), ir::makeInt(len)}, n + "_row");
  const ir::PrimExpr batch = rows->type.shape[0];
  ValuePtr total;
  for (const auto& [size, g] : by_size) {
    const auto p = static_cast<int64_t>(g.columns.size());
    const std::string ns = n + "_n" + std::to_string(size);
    std::vector<ValuePtr> items;
    for (int64_t k = 0; k < size; ++k)
      items.push_back(c.im.constant(ir::Tensor::fromValues(ir::DType::i64, {p}, g.items[k]),
                                    ns + "_item" + std::to_string(k)));
    ValuePtr found;
    for (int64_t d = 1; d <= (size == 1 ? 1 : max_skip + 1); ++d) {
      const int64_t windows = len - d * (size - 1);
      if (windows <= 0) break;
      const std::string nd = ns + "_gap" + std::to_string(d);
      ValuePtr match;
      for (int64_t k = 0; k < size; ++k) {
        auto window = slice(c, rows, 1, k * d, k * d + windows, nd + "_w" + std::to_string(k));
        auto column = c.im.emit("expand_dims", {window}, {{"axes", ir::AttrValue::ints({2})}},
                                nd + "_c" + std::to_string(k));
        auto eq = c.im.emit("equal", {column, items[k]}, {}, nd + "_eq" + std::to_string(k));
        match = match ? c.im.emit("logical_and", {match, eq}, {}, nd + "_and" + std::to_string(k)) : eq;
      }
      auto hits = c.im.emit("sum", {castTo(c, match, ir::DType::f32, nd + "_f")},
                            {{"axes", ir::AttrValue::ints({1})}, {"keepdims", false}}, nd + "_count");
      found = found ? c.im.emit("add", {found, hits}, {}, nd + "_found") : hits;
    }
    if (!found) continue;  // no window fits the row
    std::vector<double> onehot(static_cast<size_t>(p * out), 0.0);
    for (int64_t j = 0; j < p; ++j) onehot[static_cast<size_t>(j * out + g.columns[j])] = 1.0;
    auto to_columns =
        c.im.constant(ir::Tensor::fromValues(ir::DType::f32, {p, out}, onehot), ns + "_columns");
    auto part = c.im.emit("matmul", {found, to_columns}, {}, ns + "_part");
    total = total ? c.im.emit("add", {total, part}, {}, ns + "_total") : part;
  }
  if (!total) total = filled(c, ir::DType::f32, 0.0, {batch, ir::makeInt(out)}, n + "_none");
  ValuePtr w;
  if (!weights.empty()) {
    weights.resize(static_cast<size_t>(out));
    w = c.im.constant(ir::Tensor::fromValues(ir::DType::f32, {out}, weights), n + "_weights");
  }
  ValuePtr y = total;
  if (mode == "IDF") {
    auto seen = c.im.emit("greater", {total, c.im.scalar(ir::DType::f32, 0.0, n + "_zero")}, {}, n + "_seen");
    y = w ? c.im.emit("where", {seen, w, c.im.scalar(ir::DType::f32, 0.0, n + "_zero_w")}, {}, n + "_idf")
          : castTo(c, seen, ir::DType::f32, n + "_idf");
  } else if (mode == "TFIDF" && w) {
    y = c.im.emit("multiply", {total, w}, {}, n + "_tfidf");
  }
  return rank == 1 ? reshapeTo(c, y, {ir::makeInt(out)}, n) : c.im.emitAlias(y, n);
}

// DeformConv (2-D): each kernel tap of each offset group samples the input
// at its regular position plus the learned offset (bilinear, zero outside,
// as the ONNX reference does it with GridSample and align_corners), times
// the mask where given; the samples, stacked as im2col columns [N, C*kh*kw,
// oh*ow], are multiplied by the weights per group, plus the bias.
ValuePtr deformConv(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const ValuePtr& w = c.in(1);
  const ValuePtr& offset = c.in(2);
  const std::string n = c.outName();
  if (x->type.rank() != 4 || w->type.rank() != 4 || offset->type.rank() != 4)
    c.fail("only 2-D deformable convolutions (NCHW) are supported");
  const int64_t channels = staticDim(c, x->type.shape[1], "the channels");
  const int64_t height = staticDim(c, x->type.shape[2], "the height");
  const int64_t width = staticDim(c, x->type.shape[3], "the width");
  if (height < 2 || width < 2) c.fail("an input of height or width 1 is not supported");
  const int64_t oc = staticDim(c, w->type.shape[0], "the output channels");
  std::vector<int64_t> kernel = c.attrInts("kernel_shape");
  if (kernel.empty())
    kernel = {staticDim(c, w->type.shape[2], "the kernel"), staticDim(c, w->type.shape[3], "the kernel")};
  const std::vector<int64_t> strides = c.attrInts("strides", {1, 1}), dil = c.attrInts("dilations", {1, 1});
  const std::vector<int64_t> pads = c.attrInts("pads", {0, 0, 0, 0});
  const int64_t group = c.attrInt("group", 1), og = c.attrInt("offset_group", 1);
  if (kernel.size() != 2 || strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    c.fail("kernel_shape, strides, dilations and pads must be 2-D");
  if (group < 1 || og < 1 || channels % group || channels % og || oc % group)
    c.fail("group and offset_group must divide the channels");
  for (size_t a = 0; a < 2; ++a) {
    if (kernel[a] < 1 || strides[a] < 1 || dil[a] < 1 || pads[a] < 0 || pads[a + 2] < 0)
      c.fail("kernel_shape, strides and dilations must be positive and pads not negative");
    // The window's extent and its start, (kernel - 1) * dilation - pad, in range.
    addOrThrow(mulOrThrow(kernel[a] - 1, dil[a], "DeformConv's window"), -pads[a], "DeformConv's window");
  }
  const int64_t kh = kernel[0], kw = kernel[1], taps = mulOrThrow(kh, kw, "DeformConv's kernel");
  const int64_t oh = staticDim(c, offset->type.shape[2], "the output height");
  const int64_t ow = staticDim(c, offset->type.shape[3], "the output width");
  if (staticDim(c, offset->type.shape[1], "the offsets") !=
      mulOrThrow(mulOrThrow(og, taps, "DeformConv's offsets"), 2, "DeformConv's offsets"))
    c.fail("offset must have offset_group * kh * kw * 2 channels");
  if (staticDim(c, w->type.shape[1], "the weight's channels") != channels / group ||
      staticDim(c, w->type.shape[2], "the kernel") != kh ||
      staticDim(c, w->type.shape[3], "the kernel") != kw)
    c.fail("the weights must be [M, C / group, kh, kw]");
  const bool masked = c.hasInput(4);
  if (masked && (c.in(4)->type.rank() != 4 || staticDim(c, c.in(4)->type.shape[1], "the mask") != og * taps))
    c.fail("the mask must have offset_group * kh * kw channels");
  // One grid_sample per group and tap: bounded (empty tensors may declare any kernel).
  constexpr int64_t kMaxSampledTaps = 4096;
  if (og * taps > kMaxSampledTaps)
    c.fail(std::to_string(og) + " offset groups of " + std::to_string(taps) +
           " kernel taps are not supported (at most " + std::to_string(kMaxSampledTaps) + " in all)");
  const ir::DType t = x->type.dtype;
  auto row = [&](int64_t count, double first, double step, bool column, const std::string& name) {
    std::vector<double> v(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = first + step * static_cast<double>(k);
    return c.im.constant(
        ir::Tensor::fromValues(t, column ? std::vector<int64_t>{count, 1} : std::vector<int64_t>{count}, v),
        name);
  };
  const int64_t cg = channels / og;
  std::vector<ValuePtr> per_group;
  for (int64_t g = 0; g < og; ++g) {
    const std::string ng = n + "_og" + std::to_string(g);
    auto xg = og == 1 ? x : slice(c, x, 1, g * cg, (g + 1) * cg, ng + "_x");
    std::vector<ValuePtr> samples;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t tap = i * kw + j;
        const std::string nt = ng + "_t" + std::to_string(tap);
        const int64_t ch = (g * taps + tap) * 2;
        // Sample rows and columns in pixels, then normalized for align_corners.
        auto py = c.im.emit(
            "add",
            {item(c, offset, 1, ch, nt + "_dy"), row(oh, static_cast<double>(i * dil[0] - pads[0]),
                                                     static_cast<double>(strides[0]), true, nt + "_y0")},
            {}, nt + "_py");
        auto px = c.im.emit(
            "add",
            {item(c, offset, 1, ch + 1, nt + "_dx"), row(ow, static_cast<double>(j * dil[1] - pads[1]),
                                                         static_cast<double>(strides[1]), false, nt + "_x0")},
            {}, nt + "_px");
        auto norm = [&](const ValuePtr& p, int64_t len, const std::string& name) {
          auto scaled =
              c.im.emit("multiply", {p, c.im.scalar(t, 2.0 / static_cast<double>(len - 1), name + "_s")}, {},
                        name + "_scaled");
          return c.im.emit("subtract", {scaled, c.im.scalar(t, 1.0, name + "_one")}, {}, name);
        };
        auto grid = stack(c, {norm(px, width, nt + "_gx"), norm(py, height, nt + "_gy")}, 3, nt + "_grid");
        ValuePtr s = c.im.emit("grid_sample", {xg, grid},
                               {{"mode", std::string("linear")},
                                {"padding_mode", std::string("zeros")},
                                {"align_corners", true}},
                               nt + "_sample");
        if (masked) {
          auto m = c.im.emit("expand_dims", {item(c, c.in(4), 1, g * taps + tap, nt + "_m")},
                             {{"axes", ir::AttrValue::ints({1})}}, nt + "_mask");
          s = c.im.emit("multiply", {s, m}, {}, nt + "_masked");
        }
        samples.push_back(s);
      }
    per_group.push_back(stack(c, samples, 2, ng + "_taps"));  // [N, cg, taps, oh, ow]
  }
  ValuePtr cols = per_group.size() == 1 ? per_group[0]
                                        : c.im.emit("concat", per_group, {{"axis", int64_t{1}}}, n + "_taps");
  const ir::PrimExpr batch = x->type.shape[0];
  cols = reshapeTo(c, cols, {batch, ir::makeInt(channels * taps), ir::makeInt(oh * ow)}, n + "_cols");
  const int64_t cpg = channels / group, ocg = oc / group;
  std::vector<ValuePtr> outs;
  for (int64_t gr = 0; gr < group; ++gr) {
    const std::string nr = n + "_g" + std::to_string(gr);
    auto wg = reshapeTo(c, group == 1 ? w : slice(c, w, 0, gr * ocg, (gr + 1) * ocg, nr + "_w"),
                        {ir::makeInt(ocg), ir::makeInt(cpg * taps)}, nr + "_wm");
    auto colg = group == 1 ? cols : slice(c, cols, 1, gr * cpg * taps, (gr + 1) * cpg * taps, nr + "_cols");
    outs.push_back(c.im.emit("matmul", {wg, colg}, {}, nr + "_y"));
  }
  ValuePtr y = outs.size() == 1 ? outs[0] : c.im.emit("concat", outs, {{"axis", int64_t{1}}}, n + "_groups");
  y = reshapeTo(c, y, {batch, ir::makeInt(oc), ir::makeInt(oh), ir::makeInt(ow)},
                c.hasInput(3) ? n + "_nobias" : n);
  if (c.hasInput(3))
    y = c.im.emit("add",
                  {y, reshapeTo(c, c.in(3), {ir::makeInt(oc), ir::makeInt(1), ir::makeInt(1)}, n + "_b")}, {},
                  n);
  return y;
}

// RoiAlign: each output bin pools sampling_ratio^2 bilinear samples of its
// roi's image (take of batch_indices), the sample positions computed from
// the rois at run time. Average mode: the samples are one grid_sample with
// border padding (the reference clamps a position in [-1, 0] or
// [size - 1, size] to the edge) times a mask that zeroes those farther out,
// then a mean per bin. Max mode, as the reference: each sample is the
// largest of its four weighted corner values (gathered), then the largest
// per bin. The legacy output_half_pixel mode stretches a roi to at least 1
// pixel.
ValuePtr roiAlign(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const ValuePtr& rois = c.in(1);
  const std::string n = c.outName();
  if (x->type.rank() != 4) c.fail("the input must be NCHW");
  const int64_t height = staticDim(c, x->type.shape[2], "the height");
  const int64_t width = staticDim(c, x->type.shape[3], "the width");
  if (height < 2 || width < 2) c.fail("an input of height or width 1 is not supported");
  if (rois->type.rank() != 2 || !ops::isConstDim(rois->type.shape[1], 4))
    c.fail("rois must be [num_rois, 4]");
  const std::string mode = c.attrStr("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode '" + mode + "' is not one of avg, max");
  const int64_t oh = c.attrInt("output_height", 1), ow = c.attrInt("output_width", 1);
  const int64_t ratio = c.attrInt("sampling_ratio", 0);
  if (oh < 1 || ow < 1 || oh > 4096 || ow > 4096) c.fail("output_height and output_width are out of range");
  if (ratio <= 0 || ratio > 64)
    c.fail("sampling_ratio " + std::to_string(ratio) +
           " is not supported (an adaptive ratio, 0, depends on the roi values; 1 to 64 are)");
  if (oh * ratio * ow * ratio > kMaxComputedElements)
    c.fail("output_height * output_width * sampling_ratio^2 samples per roi is too many");
  const std::string ctm =
      c.opset >= 16 ? c.attrStr("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    c.fail("coordinate_transformation_mode '" + ctm + "' is not supported");
  const bool half = ctm == "half_pixel";
  const ir::DType t = x->type.dtype;
  auto k = [&](double v, const std::string& name) { return c.im.scalar(t, v, name); };
  auto bin = [&](const ValuePtr& v, const std::string& name) {
    return c.im.emit("multiply", {v, k(c.attrFloat("spatial_scale", 1.0f), name + "_scale")}, {},
                     name + "_scaled");
  };
  auto corner = [&](int64_t i, const std::string& name) {
    auto v = bin(item(c, rois, 1, i, name + "_roi"), name);
    return half ? c.im.emit("subtract", {v, k(0.5, name + "_half")}, {}, name) : v;
  };
  // Per axis: the sample positions [R, out * ratio] and their validity.
  auto positions = [&](int64_t first, int64_t out, int64_t size, const std::string& name) {
    auto start = corner(first, name + "_start");
    ValuePtr extent = c.im.emit("subtract", {corner(first + 2, name + "_end"), start}, {}, name + "_extent");
    if (!half) extent = c.im.emit("maximum", {extent, k(1.0, name + "_one")}, {}, name + "_extent1");
    auto step = c.im.emit("divide", {extent, k(static_cast<double>(out), name + "_bins")}, {}, name + "_bin");
    std::vector<double> at;
    for (int64_t p = 0; p < out; ++p)
      for (int64_t s = 0; s < ratio; ++s)
        at.push_back(static_cast<double>(p) + (static_cast<double>(s) + 0.5) / static_cast<double>(ratio));
    auto offsets = c.im.constant(ir::Tensor::fromValues(t, {out * ratio}, at), name + "_at");
    auto col = [&](const ValuePtr& v, const std::string& nm) {
      return c.im.emit("expand_dims", {v}, {{"axes", ir::AttrValue::ints({1})}}, nm);
    };
    auto pos = c.im.emit("add",
                         {col(start, name + "_start_c"),
                          c.im.emit("multiply", {col(step, name + "_bin_c"), offsets}, {}, name + "_rel")},
                         {}, name + "_pos");
    auto valid = c.im.emit(
        "logical_and",
        {c.im.emit("greater_equal", {pos, k(-1.0, name + "_lo")}, {}, name + "_ge"),
         c.im.emit("less_equal", {pos, k(static_cast<double>(size), name + "_hi")}, {}, name + "_le")},
        {}, name + "_inside");
    auto grid =
        c.im.emit("subtract",
                  {c.im.emit("multiply", {pos, k(2.0 / static_cast<double>(size - 1), name + "_norm")}, {},
                             name + "_scaled_pos"),
                   k(1.0, name + "_one_g")},
                  {}, name + "_grid");
    return std::tuple{grid, castTo(c, valid, t, name + "_valid"), pos};
  };
  auto [gy, vy, py] = positions(1, oh, height, n + "_y");
  auto [gx, vx, px] = positions(0, ow, width, n + "_x");
  const ir::PrimExpr r = rois->type.shape[0];
  const ir::PrimExpr channels = x->type.shape[1];
  auto images = c.im.emit("take", {x, castTo(c, c.in(2), ir::DType::i64, n + "_batch")},
                          {{"axis", int64_t{0}}}, n + "_images");
  auto per_bin = [&](const ValuePtr& v, const char* reduce) {
    auto bins = reshapeTo(
        c, v, {r, channels, ir::makeInt(oh), ir::makeInt(ratio), ir::makeInt(ow), ir::makeInt(ratio)},
        n + "_bins");
    return c.im.emit(reduce, {bins}, {{"axes", ir::AttrValue::ints({3, 5})}, {"keepdims", false}}, n);
  };
  if (mode == "max") {
    // The reference's max mode: per sample the largest of the four weighted
    // corner values (not of their sum), then the largest per bin; a sample
    // more than a pixel outside weighs 0 (and so gives 0).
    struct Taps {
      ValuePtr lo, hi, w_lo, w_hi;
    };
    auto taps = [&](const ValuePtr& pos, const ValuePtr& valid, int64_t size, const std::string& name) {
      auto edge = k(static_cast<double>(size - 1), name + "_edge");
      auto p = c.im.emit("maximum", {pos, k(0.0, name + "_zero")}, {}, name + "_clamped");
      auto lo = c.im.emit("floor", {p}, {}, name + "_floor");
      auto top = c.im.emit("greater_equal", {lo, edge}, {}, name + "_top");
      lo = c.im.emit("where", {top, edge, lo}, {}, name + "_lo");
      auto hi =
          c.im.emit("where", {top, edge, c.im.emit("add", {lo, k(1.0, name + "_1")}, {}, name + "_next")}, {},
                    name + "_hi");
      p = c.im.emit("where", {top, edge, p}, {}, name + "_p");
      auto frac = c.im.emit("subtract", {p, lo}, {}, name + "_frac");
      auto w_hi = c.im.emit("multiply", {frac, valid}, {}, name + "_whi");
      auto w_lo = c.im.emit(
          "multiply", {c.im.emit("subtract", {k(1.0, name + "_one_w"), frac}, {}, name + "_1mf"), valid}, {},
          name + "_wlo");
      return Taps{castTo(c, lo, ir::DType::i64, name + "_ilo"), castTo(c, hi, ir::DType::i64, name + "_ihi"),
                  w_lo, w_hi};
    };
    const Taps ty = taps(py, vy, height, n + "_ty"), tx = taps(px, vx, width, n + "_tx");
    const int64_t samples = oh * ratio * ow * ratio;
    auto flat = reshapeTo(c, images, {r, channels, ir::makeInt(height * width)}, n + "_flat");
    auto outer = [&](const ValuePtr& a, const ValuePtr& b, const char* op, const std::string& name) {
      auto ea = c.im.emit("expand_dims", {a}, {{"axes", ir::AttrValue::ints({2})}}, name + "_a");
      auto eb = c.im.emit("expand_dims", {b}, {{"axes", ir::AttrValue::ints({1})}}, name + "_b");
      return reshapeTo(c, c.im.emit(op, {ea, eb}, {}, name + "_outer"),
                       {r, ir::makeInt(1), ir::makeInt(samples)}, name);
    };
    auto width_i = c.im.scalar(ir::DType::i64, static_cast<double>(width), n + "_w");
    ValuePtr best;
    int corner_no = 0;
    for (const auto& [yi, wy] : {std::pair{ty.lo, ty.w_lo}, std::pair{ty.hi, ty.w_hi}})
      for (const auto& [xi, wx] : {std::pair{tx.lo, tx.w_lo}, std::pair{tx.hi, tx.w_hi}}) {
        const std::string nc = n + "_c" + std::to_string(corner_no++);
        auto rows = c.im.emit("multiply", {yi, width_i}, {}, nc + "_rows");
        auto idx = outer(rows, xi, "add", nc + "_idx");
        idx = c.im.emit("broadcast_to", {idx}, {{"shape", dimsAttr({r, channels, ir::makeInt(samples)})}},
                        nc + "_idx_c");
        auto v = c.im.emit("gather_elements", {flat, idx}, {{"axis", int64_t{2}}}, nc + "_v");
        auto weighted =
            c.im.emit("multiply", {v, outer(wy, wx, "multiply", nc + "_wt")}, {}, nc + "_weighted");
        best = best ? c.im.emit("maximum", {best, weighted}, {}, nc + "_best") : weighted;
      }
    return per_bin(best, "max");
  }
  const std::vector<ir::PrimExpr> grid_shape{r, ir::makeInt(oh * ratio), ir::makeInt(ow * ratio)};
  auto spread = [&](const ValuePtr& v, int64_t axis, const std::string& name) {
    auto e = c.im.emit("expand_dims", {v}, {{"axes", ir::AttrValue::ints({axis})}}, name + "_e");
    return c.im.emit("broadcast_to", {e}, {{"shape", dimsAttr(grid_shape)}}, name);
  };
  auto grid = stack(c, {spread(gx, 1, n + "_gx"), spread(gy, 2, n + "_gy")}, 3, n + "_grid");
  auto samples = c.im.emit(
      "grid_sample", {images, grid},
      {{"mode", std::string("linear")}, {"padding_mode", std::string("border")}, {"align_corners", true}},
      n + "_samples");
  auto mask = c.im.emit("multiply",
                        {c.im.emit("expand_dims", {vy}, {{"axes", ir::AttrValue::ints({1, 3})}}, n + "_vy"),
                         c.im.emit("expand_dims", {vx}, {{"axes", ir::AttrValue::ints({1, 2})}}, n + "_vx")},
                        {}, n + "_mask");
  return per_bin(c.im.emit("multiply", {samples, mask}, {}, n + "_kept"), "mean");
}

// Det of [..., m, m] (m static, at most 32): Gaussian elimination with
// partial pivoting, unrolled over the m columns as LAPACK's getrf does it:
// at step k the row (from k down) with the largest |a_ik| (the first on
// ties) is swapped to row k by a matmul with I - d d^T (d = e_k - e_p; a
// swap flips the sign), the rows below are eliminated, and the pivot
// multiplies the determinant. A zero pivot eliminates nothing (the
// determinant is then 0, not NaN).
ValuePtr det(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const size_t rank = x->type.rank();
  if (rank < 2) c.fail("the input must be [..., M, M]");
  const int64_t m = staticDim(c, x->type.shape[rank - 1], "the matrix size");
  if (staticDim(c, x->type.shape[rank - 2], "the matrix size") != m) c.fail("the matrices must be square");
  if (m < 1 || m > 32) c.fail("matrices of size " + std::to_string(m) + " are not supported (1 to 32 are)");
  const ir::DType t = x->type.dtype;
  const std::vector<ir::PrimExpr> batch_dims(x->type.shape.begin(), x->type.shape.end() - 2);
  const ir::PrimExpr batch = dimProduct(x->type.shape, 0, rank - 2);
  ValuePtr a = reshapeTo(c, x, {batch, ir::makeInt(m), ir::makeInt(m)}, n + "_a");
  auto vec = [&](ir::DType dt, const std::function<double(int64_t)>& f, const std::string& name) {
    std::vector<double> v(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) v[static_cast<size_t>(i)] = f(i);
    return c.im.constant(ir::Tensor::fromValues(dt, {m}, v), name);
  };
  auto expand = [&](const ValuePtr& v, int64_t axis, const std::string& name) {
    return c.im.emit("expand_dims", {v}, {{"axes", ir::AttrValue::ints({axis})}}, name);
  };
  std::vector<double> eye(static_cast<size_t>(m * m), 0.0);
  for (int64_t i = 0; i < m; ++i) eye[static_cast<size_t>(i * m + i)] = 1.0;
  auto identity = c.im.constant(ir::Tensor::fromValues(t, {m, m}, eye), n + "_eye");
  auto iota = vec(
      ir::DType::i64, [](int64_t i) { return static_cast<double>(i); }, n + "_iota");
  auto zero = c.im.scalar(t, 0.0, n + "_zero");
  ValuePtr result;
  for (int64_t k = 0; k < m; ++k) {
    const std::string nk = n + "_k" + std::to_string(k);
    ValuePtr factor;  // -1 where rows were swapped, else 1
    if (k + 1 < m) {
      auto candidates =
          c.im.emit("where",
                    {vec(
                         ir::DType::boolean, [&](int64_t i) { return i >= k ? 1.0 : 0.0; }, nk + "_from_k"),
                     c.im.emit("abs", {item(c, a, 2, k, nk + "_col")}, {}, nk + "_abs"),
                     c.im.scalar(t, -1.0, nk + "_none")},
                    {}, nk + "_candidates");
      auto p = c.im.emit("argmax", {candidates}, {{"axis", int64_t{1}}, {"keepdims", true}}, nk + "_p");
      auto at_p = castTo(c, c.im.emit("equal", {p, iota}, {}, nk + "_is_p"), t, nk + "_at_p");
      auto d = c.im.emit("subtract",
                         {vec(
                              t, [&](int64_t i) { return i == k ? 1.0 : 0.0; }, nk + "_ek"),
                          at_p},
                         {}, nk + "_d");
      auto swap = c.im.emit(
          "subtract",
          {identity,
           c.im.emit("multiply", {expand(d, 2, nk + "_dc"), expand(d, 1, nk + "_dr")}, {}, nk + "_ddt")},
          {}, nk + "_swap");
      a = c.im.emit("matmul", {swap, a}, {}, nk + "_swapped");
      auto moved = c.im.emit("sum", {c.im.emit("multiply", {d, d}, {}, nk + "_d2")},
                             {{"axes", ir::AttrValue::ints({1})}, {"keepdims", false}}, nk + "_moved");
      factor = c.im.emit("subtract", {c.im.scalar(t, 1.0, nk + "_one"), moved}, {}, nk + "_sign");
    }
    auto row = item(c, a, 1, k, nk + "_row");  // [B, m]
    auto pivot = item(c, row, 1, k, nk + "_pivot");
    if (k + 1 < m) {
      auto col = item(c, a, 2, k, nk + "_col_now");
      auto pivot_c = expand(pivot, 1, nk + "_pivot_c");
      auto ratio = c.im.emit("where",
                             {c.im.emit("equal", {pivot_c, zero}, {}, nk + "_singular"), zero,
                              c.im.emit("divide", {col, pivot_c}, {}, nk + "_ratio_all")},
                             {}, nk + "_ratio_or_0");
      ratio = c.im.emit("multiply",
                        {ratio, vec(
                                    t, [&](int64_t i) { return i > k ? 1.0 : 0.0; }, nk + "_below")},
                        {}, nk + "_ratio");
      a = c.im.emit("subtract",
                    {a, c.im.emit("multiply", {expand(ratio, 2, nk + "_rc"), expand(row, 1, nk + "_rr")}, {},
                                  nk + "_update")},
                    {}, nk + "_eliminated");
    }
    ValuePtr term = factor ? c.im.emit("multiply", {pivot, factor}, {}, nk + "_term") : pivot;
    result = result ? c.im.emit("multiply", {result, term}, {}, nk + "_det") : term;
  }
  return reshapeTo(c, result, batch_dims, n);
}

}  // namespace

void registerComposedConverters(ConverterTable& t) {
  t["DFT"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {dft(c)}; };
  t["STFT"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {stft(c)}; };
  t["MaxUnpool"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {maxUnpool(c)}; };
  t["Col2Im"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {col2Im(c)}; };
  t["AffineGrid"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {affineGrid(c)}; };
  t["CenterCropPad"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {centerCropPad(c)}; };
  t["OneHot"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {oneHot(c)}; };
  t["ReverseSequence"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {reverseSequence(c)}; };
  t["TfIdfVectorizer"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {tfIdfVectorizer(c)}; };
  t["Det"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {det(c)}; };
  t["RoiAlign"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {roiAlign(c)}; };
  t["DeformConv"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {deformConv(c)}; };
}

}  // namespace mlcc::frontend::onnx_import
