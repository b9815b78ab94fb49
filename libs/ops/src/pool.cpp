// The pooling op family (NCHW): max_pool2d, avg_pool2d (padding, dilation,
// ceil_mode, count_include_pad as in PyTorch/ONNX), global_avg_pool2d,
// global_max_pool2d and adaptive_avg_pool2d (PyTorch's bins). All but the
// adaptive one also take `layout = "NCHW{b}c"` (the blocked channel layout
// of mlcc/ops/layout.h; absent: NCHW): a rank-5 input [N, C/b, H, W, b]
// pooled over H and W, which the convert-layout pass uses to keep a chain
// of convolutions blocked through its pools.
#include <algorithm>
#include <limits>

#include "legalize_util_mv.h"
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

struct PoolAttrs {
  int64_t kh, kw;          // pool_size
  int64_t sh, sw;          // strides (default: pool_size)
  int64_t pt, pl, pb, pr;  // padding: top, left, bottom, right
  int64_t dh, dw;          // dilation
  bool ceil_mode;
  bool count_include_pad = false;
};

PoolAttrs poolAttrs(const ir::Attrs& attrs, const char* op, bool avg) {
  PoolAttrs a{};
  auto k = nn::intsAttr(attrs, "pool_size", op, 2, 1);
  auto s = hasAttr(attrs, "strides") ? nn::intsAttr(attrs, "strides", op, 2, 1) : k;
  auto p = nn::intsAttr(attrs, "padding", op, 4, 0);
  auto d = nn::intsAttr(attrs, "dilation", op, 2, 1);
  a.kh = k[0], a.kw = k[1];
  a.sh = s[0], a.sw = s[1];
  a.pt = p[0], a.pl = p[1], a.pb = p[2], a.pr = p[3];
  a.dh = d[0], a.dw = d[1];
  a.ceil_mode = attrBool(attrs, "ceil_mode");
  if (avg) a.count_include_pad = attrBool(attrs, "count_include_pad");
  return a;
}

// The output size of one spatial axis, with PyTorch's ceil_mode rule: the
// last window must start inside the input or the leading padding.
int64_t poolOutSize(int64_t in, int64_t k, int64_t s, int64_t pbeg, int64_t pend, int64_t d, bool ceil_mode) {
  int64_t span =
      addOrThrow(addOrThrow(in, pbeg, "the padded input"), pend, "the padded input") - (d * (k - 1) + 1);
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pbeg) --out;  // in + pbeg checked above
  return out;
}

PrimExpr poolOutDim(const PrimExpr& in, int64_t k, int64_t s, int64_t pbeg, int64_t pend, int64_t d,
                    bool ceil_mode, const char* op, const char* axis) {
  int64_t eff = d * (k - 1) + 1;
  int64_t c;
  if (ir::asConstInt(in, &c)) {
    const int64_t padded = addOrThrow(addOrThrow(c, pbeg, "the padded input"), pend, "the padded input");
    if (padded < eff)
      fail(op, std::string("the padded input ") + axis + " " + std::to_string(padded) +
                   " is smaller than the (dilated) window " + std::to_string(eff));
    return dimConst(poolOutSize(c, k, s, pbeg, pend, d, ceil_mode));
  }
  // Symbolic: ceil_mode's last-window rule can only fire when pend + s > eff.
  if (ceil_mode && pend + s > eff)
    fail(op, std::string("ceil_mode with a symbolic input ") + axis + " (" + nn::dimStr(in) +
                 ") is supported only when padding + stride <= the window");
  PrimExpr span = dimAdd(in, dimConst(pbeg + pend - eff + (ceil_mode ? s - 1 : 0) + s));
  return dimFloorDiv(span, dimConst(s));  // floor(span / s) + 1
}

// The channel block of the op's `layout` (0: NCHW, the default).
int64_t poolBlock(const ir::Attrs& attrs, const char* op) {
  if (!hasAttr(attrs, "layout")) return 0;
  const std::string& text = attrStr(attrs, "layout");
  if (text == "NCHW") return 0;
  int64_t b = 0;
  try {
    Layout l = Layout::parse(text);
    if (l.rank() == 5 && l.primal() == "NCHW" && l.position('c') == 4) b = l.factorOf('C');
  } catch (const Error&) {
  }
  if (b < 1) fail(op, "layout '" + text + "' is neither NCHW nor NCHW{b}c (e.g. NCHW16c)");
  return b;
}

// The input, of rank 4 (NCHW) or 5 (NCHW{b}c with b its last dimension): a
// float tensor, or for a max (`int8_ok`) also u8/i8 (exact in the reference
// kernels' f32).
const Type& poolInput(const std::vector<Type>& inputs, const char* op, const ir::Attrs& attrs,
                      bool int8_ok = false) {
  const int64_t block = poolBlock(attrs, op);
  const Type& x = nn::operand(inputs, 0, op, block ? 5 : 4, "the input");
  if (!int8_ok || (x.dtype != DType::u8 && x.dtype != DType::i8)) nn::requireFloat(x, op, "the input");
  if (block && !dimEqual(x.shape[4], dimConst(block)))
    fail(op, "the input " + ir::printType(x) + " does not have the layout's block of " +
                 std::to_string(block) + " channels last");
  return x;
}

// The result shape: `x`'s with H and W replaced (and the block kept).
Shape pooledShape(const Type& x, PrimExpr oh, PrimExpr ow) {
  Shape s{x.shape[0], x.shape[1], std::move(oh), std::move(ow)};
  if (x.rank() == 5) s.push_back(x.shape[4]);
  return s;
}

// The reference kernel of a blocked pool: the NCHW kernel between layout
// transforms.
template <class Kernel>
std::vector<Tensor> unblocked(const std::vector<Tensor>& inputs, const ir::Attrs& attrs, const char* op,
                              Kernel kernel) {
  const int64_t block = poolBlock(attrs, op);
  if (!block) return kernel(inputs, attrs);
  const std::string layout = nchwcLayout(block);
  ir::Attrs plain = attrs;
  plain.erase("layout");
  std::vector<Tensor> out = kernel({relayout(inputs.at(0), layout, "NCHW")}, plain);
  return {relayout(out.at(0), "NCHW", layout)};
}

// An index of the input or result: (n, c, h, w), plus the block's lane
// from the result index `i` when blocked.
std::vector<PrimExpr> poolIndex(const ir::te::Indices& i, PrimExpr h, PrimExpr w, bool blocked) {
  std::vector<PrimExpr> idx{i[0], i[1], std::move(h), std::move(w)};
  if (blocked) idx.push_back(i[4]);
  return idx;
}

template <bool kAvg>
Type inferPool(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = kAvg ? "avg_pool2d" : "max_pool2d";
  const Type& x = poolInput(inputs, op, attrs, !kAvg);
  PoolAttrs a = poolAttrs(attrs, op, kAvg);
  PrimExpr oh = poolOutDim(x.shape[2], a.kh, a.sh, a.pt, a.pb, a.dh, a.ceil_mode, op, "height");
  PrimExpr ow = poolOutDim(x.shape[3], a.kw, a.sw, a.pl, a.pr, a.dw, a.ceil_mode, op, "width");
  return Type::tensor(x.dtype, pooledShape(x, oh, ow));
}

template <bool kAvg>
std::vector<Tensor> computePoolNchw(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& tx = inputs[0];
  PoolAttrs a = poolAttrs(attrs, kAvg ? "avg_pool2d" : "max_pool2d", kAvg);
  const auto& xs = tx.shape();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t OH = poolOutSize(H, a.kh, a.sh, a.pt, a.pb, a.dh, a.ceil_mode);
  int64_t OW = poolOutSize(W, a.kw, a.sw, a.pl, a.pr, a.dw, a.ceil_mode);
  std::vector<int64_t> oshape{N, C, OH, OW};
  std::vector<float> sx;
  const float* x = nn::f32Data(tx, sx);
  Tensor out = Tensor::zeros(DType::f32, oshape);
  float* o = out.mutableData<float>();
  // Per output column: the valid kw taps [lo, hi) and the divisor's width part.
  std::vector<int64_t> wlo(OW), whi(OW), wpad(OW);
  for (int64_t ow = 0; ow < OW; ++ow) {
    int64_t start = ow * a.sw - a.pl;
    nn::validRange(a.kw, a.dw, start, W, &wlo[ow], &whi[ow]);
    int64_t lo, hi;  // taps inside the padded extent [-pl, W + pr)
    nn::validRange(a.kw, a.dw, start + a.pl, W + a.pl + a.pr, &lo, &hi);
    wpad[ow] = hi - lo;
  }
  for (int64_t plane = 0; plane < N * C; ++plane) {
    const float* xp = x + plane * H * W;
    float* op = o + plane * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      int64_t hstart = oh * a.sh - a.pt;
      int64_t hlo, hhi, plo, phi;
      nn::validRange(a.kh, a.dh, hstart, H, &hlo, &hhi);
      nn::validRange(a.kh, a.dh, hstart + a.pt, H + a.pt + a.pb, &plo, &phi);
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t wstart = ow * a.sw - a.pl;
        float acc = kAvg ? 0.0f : -std::numeric_limits<float>::infinity();
        for (int64_t kh = hlo; kh < hhi; ++kh) {
          const float* row = xp + (hstart + kh * a.dh) * W;
          for (int64_t kw = wlo[ow]; kw < whi[ow]; ++kw) {
            float v = row[wstart + kw * a.dw];
            if constexpr (kAvg)
              acc += v;
            else
              acc = (v > acc || v != v) ? v : acc;  // NaN propagates, as in PyTorch
          }
        }
        if constexpr (kAvg) {
          int64_t count = a.count_include_pad ? (phi - plo) * wpad[ow] : (hhi - hlo) * (whi[ow] - wlo[ow]);
          acc = count > 0 ? acc / static_cast<float>(count) : 0.0f;
        }
        op[oh * OW + ow] = acc;
      }
    }
  }
  if (tx.dtype() != DType::f32) out = nn::fromF32(tx.dtype(), oshape, o);
  return {out};
}

template <bool kAvg>
std::vector<Tensor> computePool(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  return unblocked(inputs, attrs, kAvg ? "avg_pool2d" : "max_pool2d", computePoolNchw<kAvg>);
}

// One reduce stage named after the op over the window taps (kh, kw), reading
// the input through guarded loads (padding and ceil_mode's overhanging
// windows read -inf for max, 0 for avg; no guard where every window lies
// inside the input). avg_pool2d then divides by the kernel's count, written
// from the output index: the taps inside the input, or with
// count_include_pad those inside the padded extent [-pad_begin, in + pad_end)
// (PyTorch clips ceil_mode windows to it); 0 where the count is 0. avg
// accumulates f16/bf16 in f32 (as the kernel); max is exact in any dtype.
// The window taps of the legalized pools: tap r of output element i reads
// input (ih, iw); where some window reaches outside the input, `inside`
// says whether the tap lies in it and `value` reads `fill` where it does not.
struct WindowTaps {
  const PoolAttrs& a;
  ir::Buffer x;
  bool blocked, hin, win;  // hin/win: every window inside the input along H/W

  WindowTaps(const PoolAttrs& attrs, ir::Buffer input, const Type& output, bool is_blocked)
      : a(attrs), x(std::move(input)), blocked(is_blocked) {
    hin = nnlegal::windowsInside(x->shape[2], output.shape[2], a.kh, a.sh, a.pt, a.dh);
    win = nnlegal::windowsInside(x->shape[3], output.shape[3], a.kw, a.sw, a.pl, a.dw);
  }
  PrimExpr ih(const ir::te::Indices& i, const ir::te::Indices& r) const {
    using namespace ir::build;
    return nnlegal::addC(nnlegal::mulC(i[2], a.sh), -a.pt) + nnlegal::mulC(r[0], a.dh);
  }
  PrimExpr iw(const ir::te::Indices& i, const ir::te::Indices& r) const {
    using namespace ir::build;
    return nnlegal::addC(nnlegal::mulC(i[3], a.sw), -a.pl) + nnlegal::mulC(r[1], a.dw);
  }
  // Null when every tap is inside.
  PrimExpr inside(const PrimExpr& h, const PrimExpr& w) const {
    using namespace ir::build;
    PrimExpr ok;
    if (!hin) ok = nnlegal::inRange(h, x->shape[2]);
    if (!win) ok = ok ? (ok && nnlegal::inRange(w, x->shape[3])) : nnlegal::inRange(w, x->shape[3]);
    return ok;
  }
  PrimExpr value(const ir::te::Indices& i, const PrimExpr& h, const PrimExpr& w, const PrimExpr& fill) const {
    PrimExpr ok = inside(h, w);
    std::vector<bool> clamp{false, false, !hin, !win};
    if (blocked) clamp.push_back(false);
    return ok ? nnlegal::guardedLoad(x, poolIndex(i, h, w, blocked), clamp, ok, fill)
              : ir::build::load(x, poolIndex(i, h, w, blocked));
  }
};

template <bool kAvg>
ir::PrimFunc legalizePool(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  using namespace ir::build;
  const char* op = kAvg ? "avg_pool2d" : "max_pool2d";
  PoolAttrs a = poolAttrs(attrs, op, kAvg);
  ir::te::FuncBuilder fb(op);
  ir::Buffer x = fb.input("x", inputs[0]);
  const bool blocked = poolBlock(attrs, op) > 0;
  DType acc = kAvg ? nnlegal::accDType(output.dtype) : output.dtype;
  const PrimExpr &H = x->shape[2], &W = x->shape[3], &OH = output.shape[2], &OW = output.shape[3];
  const WindowTaps taps(a, x, output, blocked);
  PrimExpr fill =
      kAvg ? ir::te::constant(x->dtype, 0) : ir::te::reduceIdentity(ir::te::ReduceOp::Max, x->dtype);
  ir::Buffer y = fb.reduce(op, output.shape, acc, {dimConst(a.kh), dimConst(a.kw)},
                           kAvg ? ir::te::ReduceOp::Sum : ir::te::ReduceOp::Max,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             return nnlegal::castTo(acc, taps.value(i, taps.ih(i, r), taps.iw(i, r), fill));
                           });
  if constexpr (!kAvg) {
    return fb.build({y});
  } else {
    // The divisor's factor along one axis.
    auto count = [&](const PrimExpr& o, const PrimExpr& in, const PrimExpr& out, int64_t k, int64_t s,
                     int64_t pbeg, int64_t pend, int64_t d) -> PrimExpr {
      if (a.count_include_pad) {
        PrimExpr limit = dimAdd(in, dimConst(pbeg + pend));
        if (nnlegal::windowsInside(limit, out, k, s, 0, d)) return nullptr;
        return nnlegal::validTaps(nnlegal::mulC(o, s), k, d, limit);
      }
      if (nnlegal::windowsInside(in, out, k, s, pbeg, d)) return nullptr;
      return nnlegal::validTaps(nnlegal::addC(nnlegal::mulC(o, s), -pbeg), k, d, in);
    };
    ir::Buffer z =
        fb.compute(op + std::string("_divide"), output.shape, output.dtype, [&](const ir::te::Indices& i) {
          PrimExpr ch = count(i[2], H, OH, a.kh, a.sh, a.pt, a.pb, a.dh);
          PrimExpr cw = count(i[3], W, OW, a.kw, a.sw, a.pl, a.pr, a.dw);
          PrimExpr sum = load(y, poolIndex(i, i[2], i[3], blocked));
          PrimExpr v;
          if (ch == nullptr && cw == nullptr) {
            v = sum / ir::te::constant(acc, static_cast<double>(a.kh * a.kw));
          } else {
            PrimExpr c = ch != nullptr && cw != nullptr ? ch * cw
                         : ch != nullptr                ? nnlegal::mulC(ch, a.kw)
                                                        : nnlegal::mulC(cw, a.kh);
            v = makeSelect(c > 0, sum / ir::makeCast(acc, c), ir::te::constant(acc, 0));
          }
          return nnlegal::castTo(output.dtype, v);
        });
    return fb.build({z});
  }
}

template <bool kAvg>
int64_t flopsPool(const std::vector<Type>&, const Type& output, const ir::Attrs& attrs) {
  auto k = attrInts(attrs, "pool_size");
  return k.size() == 2 ? flopsProduct(staticCount(output.shape), k[0], k[1]) : staticCount(output.shape);
}

// `layout`: absent for NCHW (so NCHW pools print as they always did).
AttrSpec layoutSpec() { return {"layout", AttrKind::Str, std::nullopt, /*optional=*/true}; }

std::vector<AttrSpec> poolSpecs(bool avg) {
  std::vector<AttrSpec> specs{
      {"pool_size", AttrKind::Ints, std::nullopt},
      {"strides", AttrKind::Ints, std::nullopt, /*optional=*/true},
      {"padding", AttrKind::Ints, ir::AttrValue::ints({0, 0, 0, 0})},
      {"dilation", AttrKind::Ints, ir::AttrValue::ints({1, 1})},
      {"ceil_mode", AttrKind::Bool, ir::AttrValue(false)},
  };
  if (avg) specs.push_back({"count_include_pad", AttrKind::Bool, ir::AttrValue(false)});
  specs.push_back(layoutSpec());
  return specs;
}

// ---- max_pool2d_indices ----------------------------------------------------------

// max_pool2d's argmax as ONNX MaxPool's Indices output: per output element
// the flat index, over the whole NCHW input (padding not counted), of the
// first tap (window order) holding the window's maximum (NaN matching NaN);
// storage_order 1 counts the spatial axes column-major (w * H + h).
constexpr const char* kIndicesOp = "max_pool2d_indices";

Type inferPoolIndices(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  if (poolBlock(attrs, kIndicesOp)) fail(kIndicesOp, "a blocked layout is not supported");
  Type y = inferPool<false>(inputs, attrs);
  const int64_t order = attrInt(attrs, "storage_order");
  if (order != 0 && order != 1) fail(kIndicesOp, "storage_order must be 0 or 1");
  return Type::tensor(DType::i64, y.shape);
}

std::vector<Tensor> computePoolIndices(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& tx = inputs[0];
  PoolAttrs a = poolAttrs(attrs, kIndicesOp, false);
  const bool column_major = attrInt(attrs, "storage_order") == 1;
  const auto& xs = tx.shape();
  const int64_t H = xs[2], W = xs[3];
  const int64_t OH = poolOutSize(H, a.kh, a.sh, a.pt, a.pb, a.dh, a.ceil_mode);
  const int64_t OW = poolOutSize(W, a.kw, a.sw, a.pl, a.pr, a.dw, a.ceil_mode);
  std::vector<float> sx;
  const float* x = nn::f32Data(tx, sx);
  Tensor out = Tensor::zeros(DType::i64, {xs[0], xs[1], OH, OW});
  int64_t* o = out.mutableData<int64_t>();
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t hlo, hhi, wlo, whi;
        const int64_t hs = oh * a.sh - a.pt, ws = ow * a.sw - a.pl;
        nn::validRange(a.kh, a.dh, hs, H, &hlo, &hhi);
        nn::validRange(a.kw, a.dw, ws, W, &wlo, &whi);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t kh = hlo; kh < hhi; ++kh)
          for (int64_t kw = wlo; kw < whi; ++kw) {
            float v = x[(p * H + hs + kh * a.dh) * W + ws + kw * a.dw];
            m = (v > m || v != v) ? v : m;
          }
        int64_t best = std::numeric_limits<int64_t>::max();
        for (int64_t kh = hlo; kh < hhi && best == std::numeric_limits<int64_t>::max(); ++kh)
          for (int64_t kw = wlo; kw < whi; ++kw) {
            const int64_t h = hs + kh * a.dh, w = ws + kw * a.dw;
            float v = x[(p * H + h) * W + w];
            if (v == m || (v != v && m != m)) {
              best = p * H * W + (column_major ? w * H + h : h * W + w);
              break;
            }
          }
        o[(p * OH + oh) * OW + ow] = best;
      }
  return {out};
}

// Three stages: the window's max (as max_pool2d), the first tap in window
// order (kh * KW + kw) equal to it, that tap's flat index.
ir::PrimFunc legalizePoolIndices(const std::vector<Type>& inputs, const Type& output,
                                 const ir::Attrs& attrs) {
  using namespace ir::build;
  namespace lm = ops::legal_mv;
  PoolAttrs a = poolAttrs(attrs, kIndicesOp, false);
  const bool column_major = attrInt(attrs, "storage_order") == 1;
  ir::te::FuncBuilder fb(kIndicesOp);
  ir::Buffer x = fb.input("x", inputs[0]);
  const WindowTaps taps(a, x, output, false);
  const PrimExpr lowest = ir::te::reduceIdentity(ir::te::ReduceOp::Max, x->dtype);
  const std::vector<PrimExpr> window{dimConst(a.kh), dimConst(a.kw)};
  ir::Buffer m = fb.reduce("max_pool2d", output.shape, x->dtype, window, ir::te::ReduceOp::Max,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             return taps.value(i, taps.ih(i, r), taps.iw(i, r), lowest);
                           });
  const PrimExpr none = lm::idx(std::numeric_limits<int64_t>::max());
  ir::Buffer first = fb.reduce(
      "max_pool2d_first", output.shape, DType::i64, window, ir::te::ReduceOp::Min,
      [&](const ir::te::Indices& i, const ir::te::Indices& r) {
        PrimExpr h = taps.ih(i, r), w = taps.iw(i, r);
        PrimExpr v = taps.value(i, h, w, lowest), best = load(m, {i[0], i[1], i[2], i[3]});
        PrimExpr hit = eq(v, best);
        if (ir::isFloat(x->dtype))
          hit = lor(hit, land(ir::makeCall("isnan", {v}), ir::makeCall("isnan", {best})));
        if (PrimExpr ok = taps.inside(h, w)) hit = land(ok, hit);
        return ir::makeSelect(hit, lm::add(lm::mul(r[0], lm::idx(a.kw)), r[1]), none);
      },
      none);
  ir::Buffer idx = fb.compute(kIndicesOp, output.shape, DType::i64, [&](const ir::te::Indices& i) {
    PrimExpr k = load(first, {i[0], i[1], i[2], i[3]});
    PrimExpr kk = lm::minOf(k, lm::idx(a.kh * a.kw - 1));  // keeps `none` rows' arithmetic in range
    const PrimExpr &H = x->shape[2], &W = x->shape[3];
    PrimExpr h = lm::add(lm::add(lm::mul(i[2], lm::idx(a.sh)), lm::idx(-a.pt)),
                         lm::mul(lm::floorDiv(kk, lm::idx(a.kw)), lm::idx(a.dh)));
    PrimExpr w = lm::add(lm::add(lm::mul(i[3], lm::idx(a.sw)), lm::idx(-a.pl)),
                         lm::mul(lm::floorMod(kk, lm::idx(a.kw)), lm::idx(a.dw)));
    PrimExpr plane = lm::mul(lm::add(lm::mul(i[0], x->shape[1]), i[1]), lm::mul(H, W));
    PrimExpr within = column_major ? lm::add(lm::mul(w, H), h) : lm::add(lm::mul(h, W), w);
    return ir::makeSelect(eq(k, none), none, lm::add(plane, within));
  });
  return fb.build({idx});
}

// ---- global pooling -----------------------------------------------------------

template <bool kAvg>
Type inferGlobalPool(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Type& x = poolInput(inputs, kAvg ? "global_avg_pool2d" : "global_max_pool2d", attrs, !kAvg);
  return Type::tensor(x.dtype, pooledShape(x, dimConst(1), dimConst(1)));
}

template <bool kAvg>
std::vector<Tensor> computeGlobalPoolNchw(const std::vector<Tensor>& inputs, const ir::Attrs&) {
  const Tensor& tx = inputs[0];
  const auto& xs = tx.shape();
  int64_t planes = xs[0] * xs[1], HW = xs[2] * xs[3];
  std::vector<float> sx;
  const float* x = nn::f32Data(tx, sx);
  std::vector<int64_t> oshape{xs[0], xs[1], 1, 1};
  Tensor out = Tensor::zeros(DType::f32, oshape);
  float* o = out.mutableData<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * HW;
    if constexpr (kAvg) {
      double sum = 0;
      for (int64_t i = 0; i < HW; ++i) sum += xp[i];
      o[p] = HW > 0 ? static_cast<float>(sum / static_cast<double>(HW)) : 0.0f;
    } else {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < HW; ++i) m = (xp[i] > m || xp[i] != xp[i]) ? xp[i] : m;
      o[p] = m;
    }
  }
  if (tx.dtype() != DType::f32) out = nn::fromF32(tx.dtype(), oshape, o);
  return {out};
}

template <bool kAvg>
std::vector<Tensor> computeGlobalPool(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  return unblocked(inputs, attrs, kAvg ? "global_avg_pool2d" : "global_max_pool2d",
                   computeGlobalPoolNchw<kAvg>);
}

// One reduce stage named after the op over (h, w); the average divides by
// h * w in a second stage (f16/bf16 sum in f32, as the kernel).
template <bool kAvg>
ir::PrimFunc legalizeGlobalPool(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  using namespace ir::build;
  const char* op = kAvg ? "global_avg_pool2d" : "global_max_pool2d";
  ir::te::FuncBuilder fb(op);
  ir::Buffer x = fb.input("x", inputs[0]);
  const bool blocked = poolBlock(attrs, op) > 0;
  DType acc = kAvg ? nnlegal::accDType(output.dtype) : output.dtype;
  ir::Buffer y = fb.reduce(op, output.shape, acc, {x->shape[2], x->shape[3]},
                           kAvg ? ir::te::ReduceOp::Sum : ir::te::ReduceOp::Max,
                           [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             return nnlegal::castTo(acc, load(x, poolIndex(i, r[0], r[1], blocked)));
                           });
  if constexpr (!kAvg) {
    return fb.build({y});
  } else {
    PrimExpr hw = ir::makeCast(acc, dimMul(x->shape[2], x->shape[3]));
    ir::Buffer z =
        fb.compute(op + std::string("_divide"), output.shape, output.dtype, [&](const ir::te::Indices& i) {
          return nnlegal::castTo(output.dtype, load(y, poolIndex(i, i[2], i[3], blocked)) / hw);
        });
    return fb.build({z});
  }
}

int64_t flopsInput(const std::vector<Type>& inputs, const Type&, const ir::Attrs&) {
  return inputs.empty() || !inputs[0].isTensor() ? 0 : staticCount(inputs[0].shape);
}

// ---- adaptive_avg_pool2d --------------------------------------------------------

std::vector<int64_t> adaptiveSize(const ir::Attrs& attrs, const char* op) {
  std::vector<int64_t> v = attrInts(attrs, "output_size");
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) fail(op, "attribute 'output_size' must have 2 items, not " + std::to_string(v.size()));
  for (int64_t x : v)
    if (x < 1) fail(op, "attribute 'output_size' items must be >= 1, not " + std::to_string(x));
  return v;
}

Type inferAdaptiveAvgPool(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const char* op = "adaptive_avg_pool2d";
  const Type& x = poolInput(inputs, op, ir::Attrs{});
  auto size = adaptiveSize(attrs, op);
  for (int i = 2; i < 4; ++i) {
    int64_t c;
    if (ir::asConstInt(x.shape[i], &c) && c < 1)
      fail(op, "the input " + std::string(i == 2 ? "height" : "width") + " must be >= 1, not " +
                   std::to_string(c));
  }
  return Type::tensor(x.dtype, {x.shape[0], x.shape[1], dimConst(size[0]), dimConst(size[1])});
}

std::vector<Tensor> computeAdaptiveAvgPool(const std::vector<Tensor>& inputs, const ir::Attrs& attrs) {
  const Tensor& tx = inputs[0];
  auto size = adaptiveSize(attrs, "adaptive_avg_pool2d");
  const auto& xs = tx.shape();
  int64_t planes = xs[0] * xs[1], H = xs[2], W = xs[3], OH = size[0], OW = size[1];
  std::vector<float> sx;
  const float* x = nn::f32Data(tx, sx);
  std::vector<int64_t> oshape{xs[0], xs[1], OH, OW};
  Tensor out = Tensor::zeros(DType::f32, oshape);
  float* o = out.mutableData<float>();
  // PyTorch's bins: [floor(i * in / out), ceil((i + 1) * in / out)).
  auto bins = [](int64_t in, int64_t outn, std::vector<int64_t>& lo, std::vector<int64_t>& hi) {
    for (int64_t i = 0; i < outn; ++i) {
      lo.push_back(i * in / outn);
      hi.push_back(((i + 1) * in + outn - 1) / outn);
    }
  };
  std::vector<int64_t> hlo, hhi, wlo, whi;
  bins(H, OH, hlo, hhi);
  bins(W, OW, wlo, whi);
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * H * W;
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        float sum = 0.0f;
        for (int64_t ih = hlo[oh]; ih < hhi[oh]; ++ih)
          for (int64_t iw = wlo[ow]; iw < whi[ow]; ++iw) sum += xp[ih * W + iw];
        int64_t count = (hhi[oh] - hlo[oh]) * (whi[ow] - wlo[ow]);
        o[(p * OH + oh) * OW + ow] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
      }
    }
  }
  if (tx.dtype() != DType::f32) out = nn::fromF32(tx.dtype(), oshape, o);
  return {out};
}

// PyTorch's bins [floor(i * in / out), ceil((i + 1) * in / out)) have
// variable extents: one reduce stage "adaptive_avg_pool2d" over the largest
// window of each axis, guarded to the output element's own bin, then a
// stage dividing by the bin's size.
ir::PrimFunc legalizeAdaptiveAvgPool(const std::vector<Type>& inputs, const Type& output,
                                     const ir::Attrs& attrs) {
  using namespace ir::build;
  const char* op = "adaptive_avg_pool2d";
  auto size = adaptiveSize(attrs, op);
  ir::te::FuncBuilder fb(op);
  ir::Buffer x = fb.input("x", inputs[0]);
  DType acc = nnlegal::accDType(output.dtype);
  const PrimExpr &H = x->shape[2], &W = x->shape[3];
  // The largest bin of an axis: exact for a constant input size, else the
  // bound ceil(in / out) + 1.
  auto maxWindow = [](const PrimExpr& in, int64_t out) {
    int64_t n;
    if (!ir::asConstInt(in, &n))
      return dimAdd(dimFloorDiv(dimAdd(in, dimConst(out - 1)), dimConst(out)), dimConst(1));
    int64_t m = 0;
    for (int64_t i = 0; i < out; ++i) m = std::max(m, ((i + 1) * n + out - 1) / out - i * n / out);
    return dimConst(m);
  };
  auto binStart = [](const PrimExpr& o, const PrimExpr& in, int64_t out) { return (o * in) / out; };
  auto binEnd = [](const PrimExpr& o, const PrimExpr& in, int64_t out) {
    return ((o + 1) * in + (out - 1)) / out;
  };
  ir::Buffer y = fb.reduce(op, output.shape, acc, {maxWindow(H, size[0]), maxWindow(W, size[1])},
                           ir::te::ReduceOp::Sum, [&](const ir::te::Indices& i, const ir::te::Indices& r) {
                             PrimExpr ih = binStart(i[2], H, size[0]) + r[0];
                             PrimExpr iw = binStart(i[3], W, size[1]) + r[1];
                             PrimExpr ok = ir::build::lt(ih, binEnd(i[2], H, size[0])) &&
                                           ir::build::lt(iw, binEnd(i[3], W, size[1]));
                             PrimExpr v =
                                 nnlegal::guardedLoad(x, {i[0], i[1], ih, iw}, {false, false, true, true}, ok,
                                                      ir::te::constant(x->dtype, 0));
                             return nnlegal::castTo(acc, v);
                           });
  ir::Buffer z =
      fb.compute(std::string(op) + "_divide", output.shape, output.dtype, [&](const ir::te::Indices& i) {
        PrimExpr count = (binEnd(i[2], H, size[0]) - binStart(i[2], H, size[0])) *
                         (binEnd(i[3], W, size[1]) - binStart(i[3], W, size[1]));
        return nnlegal::castTo(output.dtype, load(y, {i[0], i[1], i[2], i[3]}) / ir::makeCast(acc, count));
      });
  return fb.build({z});
}

}  // namespace

void registerPoolOps(std::vector<OpDef>& ops) {
  ops.push_back({"max_pool2d", 1, 1, OpPattern::Opaque, poolSpecs(false), inferPool<false>,
                 computePool<false>, flopsPool<false>, legalizePool<false>});
  ops.push_back({"avg_pool2d", 1, 1, OpPattern::Opaque, poolSpecs(true), inferPool<true>, computePool<true>,
                 flopsPool<true>, legalizePool<true>});
  std::vector<AttrSpec> indices_specs = poolSpecs(false);
  indices_specs.push_back({"storage_order", AttrKind::Int, ir::AttrValue(int64_t{0})});
  ops.push_back({kIndicesOp, 1, 1, OpPattern::Opaque, indices_specs, inferPoolIndices, computePoolIndices,
                 flopsPool<false>, legalizePoolIndices});
  ops.push_back({"global_avg_pool2d",
                 1,
                 1,
                 OpPattern::Reduction,
                 {layoutSpec()},
                 inferGlobalPool<true>,
                 computeGlobalPool<true>,
                 flopsInput,
                 legalizeGlobalPool<true>});
  ops.push_back({"global_max_pool2d",
                 1,
                 1,
                 OpPattern::Reduction,
                 {layoutSpec()},
                 inferGlobalPool<false>,
                 computeGlobalPool<false>,
                 flopsInput,
                 legalizeGlobalPool<false>});
  ops.push_back({"adaptive_avg_pool2d", 1, 1, OpPattern::Opaque,
                 std::vector<AttrSpec>{{"output_size", AttrKind::Ints, std::nullopt}}, inferAdaptiveAvgPool,
                 computeAdaptiveAvgPool, flopsInput, legalizeAdaptiveAvgPool});
}

}  // namespace mlcc::ops
