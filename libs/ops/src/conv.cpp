// The convolution op family: conv2d and conv2d_transpose (NCHW, OIHW
// weights; conv2d_transpose weights are [C, O/groups, KH, KW]), and
// conv2d_nchwc (the blocked channel layout, see below). Reference kernels:
// im2col (col2im for the transpose) around the blocked f32 GEMM.
#include <algorithm>

#include "legalize_util_nn.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/te.h"
#include "mlcc/ops/layout.h"
#include "mlcc/support/checked_math.h"
#include "nn_util.h"
#include "op_families.h"

namespace mlcc::ops {

using ir::DType, ir::PrimExpr, ir::Tensor, ir::Type, nn::fail;

namespace {

struct ConvAttrs {
  int64_t sh, sw;            // strides
  int64_t pt, pl, pb, pr;    // padding: top, left, bottom, right
  int64_t dh, dw;            // dilation
  int64_t oph = 0, opw = 0;  // output_padding (transpose)
  int64_t groups;
};

ConvAttrs convAttrs(const ir::Attrs& attrs, const char* op, bool transpose) {
  ConvAttrs a{};
  auto s = nn::intsAttr(attrs, "strides", op, 2, 1);
  auto p = nn::intsAttr(attrs, "padding", op, 4, 0);
  auto d = nn::intsAttr(attrs, "dilation", op, 2, 1);
  a.sh = s[0], a.sw = s[1];
  a.pt = p[0], a.pl = p[1], a.pb = p[2], a.pr = p[3];
  a.dh = d[0], a.dw = d[1];
  a.groups = attrInt(attrs, "groups");
  if (a.groups < 1) fail(op, "attribute 'groups' must be >= 1, not " + std::to_string(a.groups));
  if (transpose) {
    auto o = nn::intsAttr(attrs, "output_padding", op, 2, 0);
    a.oph = o[0], a.opw = o[1];
  }
  return a;
}

// `what` (a channel count) must be a multiple of groups when it is constant.
void checkGroups(const PrimExpr& channels, int64_t groups, const char* op, const char* what) {
  int64_t c;
  if (ir::asConstInt(channels, &c) && c % groups != 0)
    fail(op, "groups = " + std::to_string(groups) + " does not divide the " + std::to_string(c) + " " + what);
}

void checkPositive(const PrimExpr& d, const char* op, const std::string& what) {
  int64_t v;
  if (ir::asConstInt(d, &v) && v <= 0) fail(op, what + " would be " + std::to_string(v) + ", not positive");
}

// ---- conv2d -----------------------------------------------------------------

// floor((in + pad - dilation * (k - 1) - 1) / stride) + 1, written as
// (in + c) / stride so that a symbolic `h` with "same" padding stays `h`.
PrimExpr convOutDim(const PrimExpr& in, const PrimExpr& k, int64_t pad, int64_t stride, int64_t dilation) {
  int64_t kc;
  if (ir::asConstInt(k, &kc)) {
    const int64_t window =
        mulOrThrow(dilation, kc - 1, "the dilated window");  // checked: kc comes from a shape
    return dimFloorDiv(dimAdd(in, dimConst(pad + stride - 1 - window)), dimConst(stride));
  }
  PrimExpr eff = dimAdd(dimMul(dimSub(k, dimConst(1)), dimConst(dilation)), dimConst(1));
  PrimExpr span = dimSub(dimAdd(in, dimConst(pad)), eff);
  return dimAdd(dimFloorDiv(span, dimConst(stride)), dimConst(1));
}

// The input of a convolution after checking both operands (rank 4, a float
// input, or with `i32_ok` an i32 or i64 one, a weight of the same dtype); the
// weight is inputs[1].
const Type& checkedConvOperands(const std::vector<Type>& inputs, const char* op, bool i32_ok = false) {
  const Type& x = nn::operand(inputs, 0, op, 4, "the input");
  const Type& w = nn::operand(inputs, 1, op, 4, "the weight");
  if (!i32_ok)
    nn::requireFloat(x, op, "the input");
  else if (!ir::isFloat(x.dtype) && x.dtype != DType::i32 && x.dtype != DType::i64)
    fail(op, "the input must be a float, i32 or i64 tensor (8-bit integers: widen them to i32 first), not " +
                 ir::printType(x));
  nn::requireSameDType(x, w, op);
  return x;
}

Type inferConv2d(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "conv2d";
  const Type& x = checkedConvOperands(inputs, op, true);
  const Type& w = inputs[1];
  ConvAttrs a = convAttrs(attrs, op, false);
  checkGroups(x.shape[1], a.groups, op, "input channels");
  checkGroups(w.shape[0], a.groups, op, "output channels of the weight");
  PrimExpr expect = dimMul(w.shape[1], dimConst(a.groups));
  if (!dimEqual(x.shape[1], expect))
    fail(op, "input has " + nn::dimStr(x.shape[1]) + " channels but the weight expects " +
                 nn::dimStr(expect) + " (groups = " + std::to_string(a.groups) + ")");
  PrimExpr oh = convOutDim(x.shape[2], w.shape[2], a.pt + a.pb, a.sh, a.dh);
  PrimExpr ow = convOutDim(x.shape[3], w.shape[3], a.pl + a.pr, a.sw, a.dw);
  checkPositive(oh, op, "the output height");
  checkPositive(ow, op, "the output width");
  return Type::tensor(x.dtype, {x.shape[0], w.shape[0], oh, ow});
}

// The integer conv2d: direct loops, the products summed modulo 2^64 and
// wrapped to T, as the legalized reduction accumulating (wrapping) in T.
template <class T>
Tensor conv2dInt(const Tensor& tx, const Tensor& tw, const ConvAttrs& a, const std::vector<int64_t>& oshape) {
  const auto& xs = tx.shape();
  const auto& ws = tw.shape();
  const int64_t C = xs[1], H = xs[2], W = xs[3], KH = ws[2], KW = ws[3];
  const int64_t O = oshape[1], OH = oshape[2], OW = oshape[3], Cg = C / a.groups, Og = O / a.groups;
  const T* x = tx.data<T>();
  const T* w = tw.data<T>();
  Tensor out = Tensor::zeros(tx.dtype(), oshape);
  T* o = out.mutableData<T>();
  for (int64_t n = 0; n < oshape[0]; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          uint64_t acc = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * a.sh - a.pt + kh * a.dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * a.sw - a.pl + kw * a.dw;
                if (iw < 0 || iw >= W) continue;
                const int64_t ic = (oc / Og) * Cg + c;
                acc += static_cast<uint64_t>(static_cast<int64_t>(x[((n * C + ic) * H + ih) * W + iw])) *
                       static_cast<uint64_t>(static_cast<int64_t>(w[((oc * Cg + c) * KH + kh) * KW + kw]));
              }
            }
          o[((n * O + oc) * OH + oh) * OW + ow] = static_cast<T>(acc);
        }
  return out;
}

std::vector<Tensor> computeConv2d(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& tx = inputs[0];
  const Tensor& tw = inputs[1];
  ConvAttrs a = convAttrs(attrs, "conv2d", false);
  const auto& xs = tx.shape();
  const auto& ws = tw.shape();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], KH = ws[2], KW = ws[3];
  int64_t G = a.groups, Cg = C / G, Og = O / G;
  int64_t OH = (H + a.pt + a.pb - a.dh * (KH - 1) - 1) / a.sh + 1;
  int64_t OW = (W + a.pl + a.pr - a.dw * (KW - 1) - 1) / a.sw + 1;
  std::vector<int64_t> oshape{N, O, OH, OW};
  // No output element (an empty batch or channel count): nothing to compute, and no im2col buffer (its
  // size does not depend on the batch or the output channels).
  if (N == 0 || O == 0 || OH == 0 || OW == 0) return {Tensor::zeros(tx.dtype(), oshape)};
  if (tx.dtype() == DType::i32) return {conv2dInt<int32_t>(tx, tw, a, oshape)};
  if (tx.dtype() == DType::i64) return {conv2dInt<int64_t>(tx, tw, a, oshape)};
  std::vector<float> sx, sw;
  const float* x = nn::f32Data(tx, sx);
  const float* w = nn::f32Data(tw, sw);
  Tensor out = Tensor::zeros(DType::f32, oshape);
  float* o = out.mutableData<float>();
  int64_t HW = H * W, OHW = OH * OW, R = Cg * KH * KW;
  bool direct =
      KH == 1 && KW == 1 && a.sh == 1 && a.sw == 1 && a.pt == 0 && a.pl == 0 && a.pb == 0 && a.pr == 0;
  std::vector<float> col(direct ? 0 : static_cast<size_t>(R * OHW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * C + g * Cg) * HW;
      const float* b = xg;
      if (!direct) {
        for (int64_t c = 0; c < Cg; ++c) {
          for (int64_t kh = 0; kh < KH; ++kh) {
            for (int64_t kw = 0; kw < KW; ++kw) {
              float* dst = col.data() + ((c * KH + kh) * KW + kw) * OHW;
              int64_t woff = kw * a.dw - a.pl;
              int64_t lo, hi;
              nn::validRange(OW, a.sw, woff, W, &lo, &hi);
              for (int64_t oh = 0; oh < OH; ++oh) {
                float* d = dst + oh * OW;
                int64_t ih = oh * a.sh - a.pt + kh * a.dh;
                if (ih < 0 || ih >= H) {
                  std::fill(d, d + OW, 0.0f);
                  continue;
                }
                const float* src = xg + (c * H + ih) * W;
                std::fill(d, d + lo, 0.0f);
                if (a.sw == 1) {
                  for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow + woff];
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * a.sw + woff];
                }
                std::fill(d + hi, d + OW, 0.0f);
              }
            }
          }
        }
        b = col.data();
      }
      nn::sgemm(Og, OHW, R, w + g * Og * R, R, 1, b, OHW, 1, o + (n * O + g * Og) * OHW, OHW, false);
    }
  }
  if (tx.dtype() != DType::f32) out = nn::fromF32(tx.dtype(), oshape, o);
  return {out};
}

int64_t flopsConv2d(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  if (inputs.size() < 2 || !inputs[1].isTensor() || inputs[1].rank() != 4) return 0;
  // output N*O*OH*OW, times C/groups*KH*KW (the weight's dims 1..3).
  const auto& ws = inputs[1].shape;
  return flopsProduct(2, staticCount(output.shape), staticCount({ws[1], ws[2], ws[3]}));
}

// As TVM's topi conv2d_nchw: a `pad` stage (only when some padding is
// nonzero), then one reduce stage "conv2d" over (c, kh, kw) of the group:
//   out[n, o, y, x] = sum pad[n, g(o) * Cg + c, y * sh + kh * dh, x * sw + kw * dw]
//                         * w[o, c, kh, kw],   g(o) = o / (O / groups).
// f16/bf16 accumulate in f32, then a cast stage rounds (as the kernel does).
ir::PrimFunc legalizeConv2d(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  using namespace ir::build;
  ConvAttrs a = convAttrs(attrs, "conv2d", false);
  ir::te::FuncBuilder fb("conv2d");
  ir::Buffer x = fb.input("x", inputs[0]), w = fb.input("w", inputs[1]);
  DType acc = nnlegal::accDType(output.dtype);
  ir::Buffer xp =
      nnlegal::padStage(fb, "pad", x, {0, 0, a.pt, a.pl}, {0, 0, a.pb, a.pr}, ir::te::constant(x->dtype, 0));
  PrimExpr cg = w->shape[1];
  PrimExpr og = dimFloorDiv(w->shape[0], dimConst(a.groups));
  ir::Buffer y = fb.reduce("conv2d", output.shape, acc, {cg, w->shape[2], w->shape[3]}, ir::te::ReduceOp::Sum,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             PrimExpr c = a.groups == 1 ? PrimExpr(r[0]) : (i[1] / og) * cg + r[0];
                             PrimExpr ih = nnlegal::mulC(i[2], a.sh) + nnlegal::mulC(r[1], a.dh);
                             PrimExpr iw = nnlegal::mulC(i[3], a.sw) + nnlegal::mulC(r[2], a.dw);
                             return nnlegal::castTo(acc, load(xp, {i[0], c, ih, iw})) *
                                    nnlegal::castTo(acc, load(w, {i[1], r[0], r[1], r[2]}));
                           });
  return fb.build({nnlegal::castStage(fb, "conv2d_cast", y, output.dtype)});
}

// ---- conv2d_nchwc --------------------------------------------------------------
// conv2d in the blocked channel layout (TVM's conv2d_NCHWc): x [N, C/ib, H,
// W, ib] (NCHW{ib}c), w [O/ob, C/ib, KH, KW, ib, ob] (OIHW{ib}i{ob}o), out
// [N, O/ob, OH, OW, ob] (NCHW{ob}c). Depthwise (groups = C = O) takes
// ib = ob and w [O/ob, 1, KH, KW, 1, ob] (OIHW1i{ob}o). Other groups take
// blocks that divide a group's channels (ib | C/groups, ob | O/groups) and
// w [O/ob, C/groups/ib, KH, KW, ib, ob]: output block oc reads the input
// blocks of its group. The convert-layout pass makes these from conv2d.

struct NchwcShapes {
  PrimExpr n, co, h, w, ib;          // x
  PrimExpr oo, wi, kh, kw, wib, ob;  // w
  bool depthwise;
  int64_t out_blocks_per_group = 0;  // grouped (not depthwise): (O/groups)/ob
};

NchwcShapes checkedNchwc(const std::vector<Type>& inputs, int64_t groups) {
  const char* op = "conv2d_nchwc";
  const Type& x = nn::operand(inputs, 0, op, 5, "the input (NCHW[x]c)");
  const Type& w = nn::operand(inputs, 1, op, 6, "the weight (OIHW[x]i[y]o)");
  nn::requireFloat(x, op, "the input");
  nn::requireSameDType(x, w, op);
  NchwcShapes s{x.shape[0], x.shape[1], x.shape[2], x.shape[3], x.shape[4], w.shape[0],
                w.shape[1], w.shape[2], w.shape[3], w.shape[4], w.shape[5], false};
  nn::constDim(s.ib, op, "the input's channel block");
  nn::constDim(s.ob, op, "the weight's output channel block");
  if (groups == 1) {
    if (!dimEqual(s.wi, s.co) || !dimEqual(s.wib, s.ib))
      fail(op, "the input " + ir::printType(x) + " and the weight " + ir::printType(w) +
                   " disagree on the input channels (blocks [" + nn::dimStr(s.co) + ", " + nn::dimStr(s.ib) +
                   "] and [" + nn::dimStr(s.wi) + ", " + nn::dimStr(s.wib) + "])");
    return s;
  }
  const PrimExpr channels = dimMul(s.co, s.ib);
  int64_t c;
  const bool depthwise = ir::asConstInt(channels, &c) && c == groups && dimEqual(s.wi, dimConst(1)) &&
                         dimEqual(s.wib, dimConst(1)) && dimEqual(s.ob, s.ib) && dimEqual(s.oo, s.co);
  s.depthwise = depthwise;
  if (depthwise) return s;
  // Grouped: each group's channels are whole blocks of the input and the output.
  int64_t ib, ob, wi, wib, oo, co;
  const bool grouped = ir::asConstInt(channels, &c) && ir::asConstInt(s.ib, &ib) &&
                       ir::asConstInt(s.ob, &ob) && ir::asConstInt(s.wi, &wi) &&
                       ir::asConstInt(s.wib, &wib) && ir::asConstInt(s.oo, &oo) &&
                       ir::asConstInt(s.co, &co) && c % groups == 0 && (c / groups) % ib == 0 && wib == ib &&
                       wi == c / groups / ib && co % groups == 0 && oo % groups == 0;
  if (!grouped)
    fail(op,
         "groups = " + std::to_string(groups) +
             " needs a depthwise convolution (groups = channels, weight [C/b, 1, KH, KW, 1, b] with the "
             "input's block b) or blocks that divide each group's channels (weight [O/ob, C/groups/ib, KH, "
             "KW, ib, ob]); got " +
             ir::printType(x) + " and " + ir::printType(w));
  s.out_blocks_per_group = oo / groups;
  return s;
}

Type inferConv2dNchwc(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "conv2d_nchwc";
  ConvAttrs a = convAttrs(attrs, op, false);
  NchwcShapes s = checkedNchwc(inputs, a.groups);
  PrimExpr oh = convOutDim(s.h, s.kh, a.pt + a.pb, a.sh, a.dh);
  PrimExpr ow = convOutDim(s.w, s.kw, a.pl + a.pr, a.sw, a.dw);
  checkPositive(oh, op, "the output height");
  checkPositive(ow, op, "the output width");
  return Type::tensor(inputs[0].dtype, {s.n, s.oo, oh, ow, s.ob});
}

// The layouts of the operands and the result as layout_transform strings.
struct NchwcLayouts {
  std::string x, w, out;
};
NchwcLayouts nchwcLayouts(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws) {
  return {nchwcLayout(xs[4]), "OIHW" + std::to_string(ws[4]) + "i" + std::to_string(ws[5]) + "o",
          nchwcLayout(ws[5])};
}

// The reference: back to NCHW/OIHW, conv2d's kernel, and blocked again.
std::vector<Tensor> computeConv2dNchwc(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const NchwcLayouts l = nchwcLayouts(inputs[0].shape(), inputs[1].shape());
  std::vector<Tensor> plain{relayout(inputs[0], l.x, "NCHW"), relayout(inputs[1], l.w, "OIHW")};
  std::vector<Tensor> out = computeConv2d(plain, attrs);
  return {relayout(out.at(0), "NCHW", l.out)};
}

int64_t flopsConv2dNchwc(const std::vector<Type>& inputs, const Type& output, const ir::Attrs&) {
  if (inputs.size() < 2 || !inputs[1].isTensor() || inputs[1].rank() != 6) return 0;
  const auto& ws = inputs[1].shape;  // C/groups = ws[1] * ws[4]
  return flopsProduct(2, staticCount(output.shape), staticCount({ws[1], ws[2], ws[3], ws[4]}));
}

// A `pad` stage on H and W, then one reduce stage "conv2d_nchwc":
//   out[n, oc, y, x, ob] = sum pad[n, ic, y * sh + kh * dh, x * sw + kw * dw, ib]
//                              * w[oc, ic, kh, kw, ib, ob]     over (ic, kh, kw, ib)
// or, depthwise, sum pad[n, oc, y', x', ob] * w[oc, 0, kh, kw, 0, ob] over (kh, kw);
// grouped, ic runs over the group's input blocks only.
ir::PrimFunc legalizeConv2dNchwc(const std::vector<Type>& inputs, const Type& output,
                                 const ir::Attrs& attrs) {
  using namespace ir::build;
  ConvAttrs a = convAttrs(attrs, "conv2d_nchwc", false);
  const NchwcShapes s = checkedNchwc(inputs, a.groups);
  ir::te::FuncBuilder fb("conv2d_nchwc");
  ir::Buffer x = fb.input("x", inputs[0]), w = fb.input("w", inputs[1]);
  DType acc = nnlegal::accDType(output.dtype);
  ir::Buffer xp = nnlegal::padStage(fb, "pad", x, {0, 0, a.pt, a.pl, 0}, {0, 0, a.pb, a.pr, 0},
                                    ir::te::constant(x->dtype, 0));
  auto ih = [&](const ir::te::Indices& i, const PrimExpr& kh) {
    return nnlegal::mulC(i[2], a.sh) + nnlegal::mulC(kh, a.dh);
  };
  auto iw = [&](const ir::te::Indices& i, const PrimExpr& kw) {
    return nnlegal::mulC(i[3], a.sw) + nnlegal::mulC(kw, a.dw);
  };
  ir::Buffer y;
  if (s.depthwise) {
    y = fb.reduce("conv2d_nchwc", output.shape, acc, {s.kh, s.kw}, ir::te::ReduceOp::Sum,
                  [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                    PrimExpr zero = lit(int64_t{0});
                    return nnlegal::castTo(acc, load(xp, {i[0], i[1], ih(i, r[0]), iw(i, r[1]), i[4]})) *
                           nnlegal::castTo(acc, load(w, {i[1], zero, r[0], r[1], zero, i[4]}));
                  });
  } else {
    // Grouped: output block oc reads input blocks (oc / its group's output
    // blocks) * wi + r0; groups = 1 reads them all.
    y = fb.reduce("conv2d_nchwc", output.shape, acc, {s.wi, s.kh, s.kw, s.ib}, ir::te::ReduceOp::Sum,
                  [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                    PrimExpr block =
                        a.groups == 1 ? PrimExpr(r[0]) : (i[1] / lit(s.out_blocks_per_group)) * s.wi + r[0];
                    return nnlegal::castTo(acc, load(xp, {i[0], block, ih(i, r[1]), iw(i, r[2]), r[3]})) *
                           nnlegal::castTo(acc, load(w, {i[1], r[0], r[1], r[2], r[3], i[4]}));
                  });
  }
  return fb.build({nnlegal::castStage(fb, "conv2d_nchwc_cast", y, output.dtype)});
}

// ---- conv2d_transpose ---------------------------------------------------------

Type inferConv2dTranspose(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "conv2d_transpose";
  const Type& x = checkedConvOperands(inputs, op);
  const Type& w = inputs[1];
  ConvAttrs a = convAttrs(attrs, op, true);
  checkGroups(x.shape[1], a.groups, op, "input channels");
  if (!dimEqual(x.shape[1], w.shape[0]))
    fail(op, "input has " + nn::dimStr(x.shape[1]) + " channels but the weight expects " +
                 nn::dimStr(w.shape[0]) + " (its shape is [C, O/groups, KH, KW])");
  // (in - 1) * s - pad + d * (k - 1) + output_padding + 1
  auto outDim = [&](const PrimExpr& in, const PrimExpr& k, int64_t s, int64_t pad, int64_t d, int64_t opad) {
    int64_t kc;
    if (ir::asConstInt(k, &kc))
      return dimAdd(dimMul(in, dimConst(s)), dimConst(d * (kc - 1) + opad + 1 - pad - s));
    PrimExpr base = dimMul(dimSub(in, dimConst(1)), dimConst(s));
    PrimExpr kext = dimMul(dimSub(k, dimConst(1)), dimConst(d));
    return dimAdd(dimAdd(base, kext), dimConst(opad + 1 - pad));
  };
  PrimExpr oh = outDim(x.shape[2], w.shape[2], a.sh, a.pt + a.pb, a.dh, a.oph);
  PrimExpr ow = outDim(x.shape[3], w.shape[3], a.sw, a.pl + a.pr, a.dw, a.opw);
  checkPositive(oh, op, "the output height");
  checkPositive(ow, op, "the output width");
  return Type::tensor(x.dtype, {x.shape[0], dimMul(w.shape[1], dimConst(a.groups)), oh, ow});
}

std::vector<Tensor> computeConv2dTranspose(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& tx = inputs[0];
  const Tensor& tw = inputs[1];
  ConvAttrs a = convAttrs(attrs, "conv2d_transpose", true);
  const auto& xs = tx.shape();
  const auto& ws = tw.shape();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t Og = ws[1], KH = ws[2], KW = ws[3];
  int64_t G = a.groups, Cg = C / G, O = Og * G;
  int64_t OH = (H - 1) * a.sh - a.pt - a.pb + a.dh * (KH - 1) + a.oph + 1;
  int64_t OW = (W - 1) * a.sw - a.pl - a.pr + a.dw * (KW - 1) + a.opw + 1;
  std::vector<int64_t> oshape{N, O, OH, OW};
  if (N == 0 || O == 0 || OH == 0 || OW == 0) return {Tensor::zeros(tx.dtype(), oshape)};  // as conv2d
  std::vector<float> sx, sw;
  const float* x = nn::f32Data(tx, sx);
  const float* w = nn::f32Data(tw, sw);
  Tensor out = Tensor::zeros(DType::f32, oshape);
  float* o = out.mutableData<float>();
  int64_t HW = H * W, OHW = OH * OW, R = Og * KH * KW;
  std::vector<float> col(static_cast<size_t>(R * HW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      // col[r, hw] = sum_c w[g*Cg + c, r] * x[n, g*Cg + c, hw]
      nn::sgemm(R, HW, Cg, w + g * Cg * R, 1, R, x + (n * C + g * Cg) * HW, HW, 1, col.data(), HW, false);
      float* og = o + (n * O + g * Og) * OHW;
      for (int64_t oc = 0; oc < Og; ++oc) {
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t kw = 0; kw < KW; ++kw) {
            const float* src = col.data() + ((oc * KH + kh) * KW + kw) * HW;
            int64_t woff = kw * a.dw - a.pl;
            int64_t lo, hi;
            nn::validRange(W, a.sw, woff, OW, &lo, &hi);
            for (int64_t ih = 0; ih < H; ++ih) {
              int64_t oh = ih * a.sh - a.pt + kh * a.dh;
              if (oh < 0 || oh >= OH) continue;
              float* d = og + (oc * OH + oh) * OW;
              const float* s = src + ih * W;
              if (a.sw == 1) {
                for (int64_t iw = lo; iw < hi; ++iw) d[iw + woff] += s[iw];
              } else {
                for (int64_t iw = lo; iw < hi; ++iw) d[iw * a.sw + woff] += s[iw];
              }
            }
          }
        }
      }
    }
  }
  if (tx.dtype() != DType::f32) out = nn::fromF32(tx.dtype(), oshape, o);
  return {out};
}

int64_t flopsConv2dTranspose(const std::vector<Type>& inputs, const Type&, const ir::Attrs&) {
  if (inputs.size() < 2 || !inputs[0].isTensor() || !inputs[1].isTensor() || inputs[1].rank() != 4) return 0;
  // every input element meets O/groups * KH * KW weights.
  const auto& ws = inputs[1].shape;
  return flopsProduct(2, staticCount(inputs[0].shape), staticCount({ws[1], ws[2], ws[3]}));
}

// One reduce stage "conv2d_transpose" over the input channels of the group
// and the kernel taps, gathering the input element each output element
// receives (the kernel scatters x[ih] to oh = ih * s - pad + kh * d):
//   out[n, o, y, x] = sum x[n, g * Cg + c, ty / sh, tx / sw] * w[g * Cg + c, o % Og, kh, kw]
// with ty = y + pt - kh * dh (and tx likewise), counted only where ty is a
// multiple of sh and ty / sh lies in the input (a guarded load).
ir::PrimFunc legalizeConv2dTranspose(const std::vector<Type>& inputs, const Type& output,
                                     const ir::Attrs& attrs) {
  using namespace ir::build;
  ConvAttrs a = convAttrs(attrs, "conv2d_transpose", true);
  ir::te::FuncBuilder fb("conv2d_transpose");
  ir::Buffer x = fb.input("x", inputs[0]), w = fb.input("w", inputs[1]);
  DType acc = nnlegal::accDType(output.dtype);
  PrimExpr cg = dimFloorDiv(x->shape[1], dimConst(a.groups));
  PrimExpr og = w->shape[1];
  // The input index along one axis and its validity.
  auto source = [&](const PrimExpr& o, const PrimExpr& k, int64_t s, int64_t pad, int64_t d,
                    const PrimExpr& limit, PrimExpr* idx) {
    PrimExpr t = nnlegal::addC(o, pad) - nnlegal::mulC(k, d);
    *idx = s == 1 ? t : t / s;
    PrimExpr ok = nnlegal::inRange(*idx, limit);
    return s == 1 ? ok : (eq(t % s, int64_t{0}) && ok);
  };
  ir::Buffer y =
      fb.reduce("conv2d_transpose", output.shape, acc, {cg, w->shape[2], w->shape[3]}, ir::te::ReduceOp::Sum,
                [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                  PrimExpr c = a.groups == 1 ? PrimExpr(r[0]) : (i[1] / og) * cg + r[0];
                  PrimExpr oc = a.groups == 1 ? PrimExpr(i[1]) : i[1] % og;
                  PrimExpr ih, iw;
                  PrimExpr ok = source(i[2], r[1], a.sh, a.pt, a.dh, x->shape[2], &ih) &&
                                source(i[3], r[2], a.sw, a.pl, a.dw, x->shape[3], &iw);
                  PrimExpr xv = nnlegal::guardedLoad(x, {i[0], c, ih, iw}, {false, false, true, true}, ok,
                                                     ir::te::constant(x->dtype, 0));
                  return nnlegal::castTo(acc, xv) * nnlegal::castTo(acc, load(w, {c, oc, r[1], r[2]}));
                });
  return fb.build({nnlegal::castStage(fb, "conv2d_transpose_cast", y, output.dtype)});
}

std::vector<AttrSpec> convSpecs(bool transpose) {
  std::vector<AttrSpec> specs{
      {"strides", AttrKind::Ints, ir::AttrValue::ints({1, 1})},
      {"padding", AttrKind::Ints, ir::AttrValue::ints({0, 0, 0, 0})},
      {"dilation", AttrKind::Ints, ir::AttrValue::ints({1, 1})},
      {"groups", AttrKind::Int, ir::AttrValue(int64_t{1})},
  };
  if (transpose) specs.push_back({"output_padding", AttrKind::Ints, ir::AttrValue::ints({0, 0})});
  return specs;
}

}  // namespace

void registerConvOps(std::vector<OpDef>& ops) {
  ops.push_back({"conv2d", 2, 2, OpPattern::OutEwiseFusable, convSpecs(false), inferConv2d, computeConv2d,
                 flopsConv2d, legalizeConv2d});
  ops.push_back({"conv2d_nchwc", 2, 2, OpPattern::OutEwiseFusable, convSpecs(false), inferConv2dNchwc,
                 computeConv2dNchwc, flopsConv2dNchwc, legalizeConv2dNchwc});
  ops.push_back({"conv2d_transpose", 2, 2, OpPattern::OutEwiseFusable, convSpecs(true), inferConv2dTranspose,
                 computeConv2dTranspose, flopsConv2dTranspose, legalizeConv2dTranspose});
}

}  // namespace mlcc::ops
