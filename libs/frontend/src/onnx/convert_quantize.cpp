// Converters of the ONNX quantization ops, as compositions of graph ops on
// u8/i8 tensors (u16/i16 for QuantizeLinear and DequantizeLinear) (scales and zero points may be graph
// inputs): QuantizeLinear (x / scale rounded half to even, plus the zero point, saturated to the output
// dtype), DequantizeLinear ((x - zero point) * scale in f32), both per tensor, per axis or blocked;
// DynamicQuantizeLinear (the u8 scale and zero point of x's range, as ONNX computes them); and the integer
// matmuls MatMulInteger (an i32 matmul of the zero-point-shifted operands) and QLinearMatMul (that matmul
// rescaled by a_scale * b_scale / y_scale in f32, rounded, plus y's zero point), and ConvInteger and
// QLinearConv the same way around an i32 conv2d.
#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

using ir::DType;

std::string dt(DType t) { return std::string(ir::dtypeName(t)); }

// The integer matmuls and convolutions take u8 and i8; QuantizeLinear and
// DequantizeLinear (`sixteen_bits`) u16 and i16 as well, whose values are
// exact in f32.
void checkQuantized(NodeCtx& c, DType t, const std::string& what, bool sixteen_bits = false) {
  if (t == DType::u8 || t == DType::i8 || (sixteen_bits && (t == DType::u16 || t == DType::i16))) return;
  c.fail(what + " is " + dt(t) + ": only " + (sixteen_bits ? "u8, i8, u16 and i16" : "u8 and i8") +
         " quantization is supported");
}

// A tensor of one element (a scalar or [1], ...).
bool oneElement(const ValuePtr& v) {
  int64_t n;
  return v->type.rank() <= 1 && ir::asConstInt(dimProduct(v->type.shape, 0, v->type.rank()), &n) && n == 1;
}

ValuePtr emit(NodeCtx& c, const std::string& op, const std::vector<ValuePtr>& args, const std::string& name,
              ir::Attrs attrs = {}) {
  return c.im.emit(op, args, std::move(attrs), name);
}

// A scale or zero point `p` shaped to broadcast against a value of rank
// `rank`: one element as a scalar; a 1-D tensor along `axis` (< 0: per
// tensor only) as [C, 1, ..] ending at that axis's position.
ValuePtr alongAxis(NodeCtx& c, const ValuePtr& p, size_t rank, int64_t axis, const std::string& n) {
  if (oneElement(p)) return reshapeTo(c, p, {}, n);
  if (p->type.rank() != 1 || axis < 0 || static_cast<size_t>(axis) >= rank)
    c.fail(n + " must be a scalar" + std::string(axis < 0 ? "" : " or a 1-D tensor"));
  std::vector<ir::PrimExpr> shape(rank - static_cast<size_t>(axis), ir::makeInt(1));
  shape[0] = p->type.shape[0];
  return reshapeTo(c, p, shape, n);
}

// x and its scale and zero point (null when absent), shaped so that they
// broadcast element by element: per tensor or along `axis` as alongAxis
// shapes them; with `block_size` B, x's axis split
// into [D / B, B] and the parameters' (of x's rank, D / B along the axis)
// into [D / B, 1]. `shape` is x's shape, to restore after a blocked op.
struct QuantOperands {
  ValuePtr x;
  std::vector<ValuePtr> params;
  std::vector<ir::PrimExpr> shape;
  bool blocked = false;
};

QuantOperands quantOperands(NodeCtx& c, const ValuePtr& x, std::vector<ValuePtr> params,
                            const std::string& n) {
  QuantOperands q{x, std::move(params), x->type.shape};
  const int64_t rank = static_cast<int64_t>(x->type.rank());
  const ValuePtr& scale = q.params[0];
  const int64_t block = c.opset >= 21 ? c.attrInt("block_size", 0) : 0;
  int64_t axis = c.opset >= 13 ? c.attrInt("axis", 1) : 1;
  if (block < 0) c.fail("block_size must not be negative");
  const bool per_tensor = block == 0 && oneElement(scale);
  if (!per_tensor && (axis < -rank || axis >= rank))
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  for (size_t k = 0; k < q.params.size(); ++k) {
    ValuePtr& p = q.params[k];
    if (!p) continue;
    const std::string pn = n + (k == 0 ? "_scale" : "_zero_point");
    if (block == 0) {
      p = alongAxis(c, p, static_cast<size_t>(rank), per_tensor ? -1 : axis, pn);
      continue;
    }
    if (static_cast<int64_t>(p->type.rank()) != rank)
      c.fail("blocked quantization needs parameters of x's rank");
    std::vector<ir::PrimExpr> ps = p->type.shape;
    ps.insert(ps.begin() + axis + 1, ir::makeInt(1));
    p = reshapeTo(c, p, ps, pn);
  }
  if (block > 0) {
    const int64_t d = staticDim(c, x->type.shape[static_cast<size_t>(axis)], "the quantized axis");
    if (d % block != 0)
      c.fail("axis length " + std::to_string(d) + " is not a multiple of block_size " +
             std::to_string(block) + " (a partial last block is not supported yet)");
    std::vector<ir::PrimExpr> xs = x->type.shape;
    xs[static_cast<size_t>(axis)] = ir::makeInt(d / block);
    xs.insert(xs.begin() + axis + 1, ir::makeInt(block));
    q.x = reshapeTo(c, x, xs, n + "_blocks");
    q.blocked = true;
  }
  return q;
}

// The op's result `y` in x's shape, named `n`.
ValuePtr restoreShape(NodeCtx& c, const QuantOperands& q, const ValuePtr& y, const std::string& n) {
  return q.blocked ? reshapeTo(c, y, q.shape, n) : y;
}

std::vector<ValuePtr> quantizeLinear(NodeCtx& c) {
  const std::string n = c.outName();
  const ValuePtr& x = c.in(0);
  const ValuePtr& scale = c.in(1);
  ValuePtr zp = c.hasInput(2) ? c.in(2) : nullptr;
  if (!ir::isFloat(x->type.dtype)) c.fail("x is " + dt(x->type.dtype) + ": only float inputs are supported");
  if (scale->type.dtype != x->type.dtype) c.fail("the scale must have x's dtype " + dt(x->type.dtype));
  DType out = zp ? zp->type.dtype : DType::u8;
  if (c.opset >= 21 && c.attrInt("output_dtype", 0) != 0) {
    DType t = dtypeFromOnnx(static_cast<int>(c.attrInt("output_dtype", 0)), "output_dtype");
    if (zp && t != out) c.fail("output_dtype differs from the zero point's dtype");
    out = t;
  }
  checkQuantized(c, out, "the output", true);
  c.ignoreAttrs({"saturate"});  // applies to float 8 outputs only
  QuantOperands q = quantOperands(c, x, {scale, zp}, n);
  const bool last = !q.blocked;
  ValuePtr r = emit(c, "round", {emit(c, "divide", {q.x, q.params[0]}, n + "_scaled")}, n + "_rounded");
  // The zero point, a small integer, is exact in x's float dtype.
  if (q.params[1]) r = emit(c, "add", {r, castTo(c, q.params[1], x->type.dtype, n + "_zp")}, n + "_shifted");
  ValuePtr y = castTo(c, r, out, last ? n : n + "_q");  // saturating (NaN: 0)
  return {restoreShape(c, q, y, n)};
}

std::vector<ValuePtr> dequantizeLinear(NodeCtx& c) {
  const std::string n = c.outName();
  const ValuePtr& x = c.in(0);
  const ValuePtr& scale = c.in(1);
  ValuePtr zp = c.hasInput(2) ? c.in(2) : nullptr;
  const DType xt = x->type.dtype, st = scale->type.dtype;
  if (xt != DType::i32) checkQuantized(c, xt, "x", true);
  if (!ir::isFloat(st)) c.fail("the scale must be a float tensor, not " + dt(st));
  if (zp && zp->type.dtype != xt) c.fail("the zero point must have x's dtype " + dt(xt));
  if (c.opset >= 21 && c.hasAttr("output_dtype") && c.attrInt("output_dtype", 0) != 0 &&
      dtypeFromOnnx(static_cast<int>(c.attrInt("output_dtype", 0)), "output_dtype") != st)
    c.fail("output_dtype must be the scale's dtype");
  QuantOperands q = quantOperands(c, x, {scale, zp}, n);
  // As ONNX: (x - zero point) in f32, times the scale, in the scale's dtype.
  ValuePtr v = castTo(c, q.x, DType::f32, n + "_f32");
  if (q.params[1])
    v = emit(c, "subtract", {v, castTo(c, q.params[1], DType::f32, n + "_zp")}, n + "_shifted");
  const bool last = !q.blocked && st == DType::f32;
  ValuePtr y = emit(c, "multiply", {v, castTo(c, q.params[0], DType::f32, n + "_scale_f32")},
                    last ? n : n + "_scaled");
  if (st != DType::f32) y = castTo(c, y, st, q.blocked ? n + "_cast" : n);
  return {restoreShape(c, q, y, n)};
}

std::vector<ValuePtr> dynamicQuantizeLinear(NodeCtx& c) {
  const std::string n = c.outName(0);
  const ValuePtr& x = c.in(0);
  const DType ft = x->type.dtype;
  if (ft != DType::f32) c.fail("x is " + dt(ft) + ": only f32 is supported");
  auto zero = c.im.scalar(ft, 0.0, n + "_zero");
  auto hi = emit(c, "maximum", {emit(c, "max", {x}, n + "_max"), zero}, n + "_hi");
  auto lo = emit(c, "minimum", {emit(c, "min", {x}, n + "_min"), zero}, n + "_lo");
  // scale = (hi == lo ? 1 : hi - lo) / 255
  auto range = emit(c, "where",
                    {emit(c, "equal", {hi, lo}, n + "_flat"), c.im.scalar(ft, 1.0, n + "_one"),
                     emit(c, "subtract", {hi, lo}, n + "_span")},
                    n + "_range");
  auto scale = emit(c, "divide", {range, c.im.scalar(ft, 255.0, n + "_qrange")}, c.outName(1));
  // zero point = rint(clamp(0 - lo / scale, 0, 255))
  auto zp0 = emit(c, "subtract", {zero, emit(c, "divide", {lo, scale}, n + "_lo_scaled")}, n + "_zp0");
  auto zpf = emit(c, "round", {emit(c, "clip", {zp0}, n + "_zp_clipped", {{"min", 0.0}, {"max", 255.0}})},
                  n + "_zp_f32");
  auto zp = castTo(c, zpf, DType::u8, c.outName(2));
  auto q =
      emit(c, "add", {emit(c, "round", {emit(c, "divide", {x, scale}, n + "_scaled")}, n + "_rounded"), zpf},
           n + "_shifted");
  return {castTo(c, q, DType::u8, n), scale, zp};
}

// An integer operand minus its zero point (scalar, or 1-D along `axis`),
// in i32.
ValuePtr shifted(NodeCtx& c, const ValuePtr& v, const ValuePtr& zp, int64_t axis, const std::string& n) {
  checkQuantized(c, v->type.dtype, n);
  ValuePtr r = castTo(c, v, DType::i32, n + "_i32");
  if (!zp) return r;
  if (zp->type.dtype != v->type.dtype) c.fail("the zero point of " + n + " must have its dtype");
  ValuePtr z =
      alongAxis(c, castTo(c, zp, DType::i32, n + "_zp_i32"), v->type.rank(), axis, n + "_zero_point");
  return emit(c, "subtract", {r, z}, n + "_shifted");
}

// The quantized result of an i32 accumulation `acc`: round(acc · multiplier
// + y's zero point) in f32, saturated to y's dtype (QLinearMatMul,
// QLinearConv).
ValuePtr requantize(NodeCtx& c, const ValuePtr& acc, const ValuePtr& multiplier, const ValuePtr& y_zp,
                    const std::string& n) {
  checkQuantized(c, y_zp->type.dtype, "the output");
  ValuePtr v = emit(
      c, "multiply",
      {castTo(c, acc, DType::f32, n + "_acc_f32"), castTo(c, multiplier, DType::f32, n + "_multiplier_f32")},
      n + "_rescaled");
  ValuePtr z = castTo(c, alongAxis(c, y_zp, 0, -1, n + "_y_zero_point"), DType::f32, n + "_y_zp_f32");
  ValuePtr r = emit(c, "round", {emit(c, "add", {v, z}, n + "_shifted")}, n + "_rounded");
  return castTo(c, r, y_zp->type.dtype, n);
}

// The scales' multiplier a_scale * b_scale / y_scale, in the scales' dtype
// (as ONNX); `a` and `b` already shaped to broadcast.
ValuePtr multiplier(NodeCtx& c, const ValuePtr& a, const ValuePtr& b, const ValuePtr& y,
                    const std::string& n) {
  const DType st = a->type.dtype;
  if (!ir::isFloat(st) || b->type.dtype != st || y->type.dtype != st)
    c.fail("the scales must be float tensors of one dtype");
  return emit(c, "divide",
              {emit(c, "multiply", {a, b}, n + "_ab_scale"), alongAxis(c, y, 0, -1, n + "_y_scale")},
              n + "_multiplier");
}

std::vector<ValuePtr> matMulInteger(NodeCtx& c) {
  const ValuePtr &a = c.in(0), &b = c.in(1);
  ValuePtr as =
      shifted(c, a, c.hasInput(2) ? c.in(2) : nullptr, static_cast<int64_t>(a->type.rank()) - 2, "A");
  ValuePtr bs =
      shifted(c, b, c.hasInput(3) ? c.in(3) : nullptr, static_cast<int64_t>(b->type.rank()) - 1, "B");
  return {emit(c, "matmul", {as, bs}, c.outName())};
}

std::vector<ValuePtr> qlinearMatMul(NodeCtx& c) {
  const std::string n = c.outName();
  const ValuePtr &a = c.in(0), &b = c.in(3);
  const int64_t a_rows = static_cast<int64_t>(a->type.rank()) - 2,
                b_cols = static_cast<int64_t>(b->type.rank()) - 1;
  ValuePtr acc = emit(c, "matmul", {shifted(c, a, c.in(2), a_rows, "a"), shifted(c, b, c.in(5), b_cols, "b")},
                      n + "_acc");
  ValuePtr m = multiplier(c, alongAxis(c, c.in(1), a->type.rank(), a_rows, n + "_a_scale"),
                          alongAxis(c, c.in(4), b->type.rank(), b_cols, n + "_b_scale"), c.in(6), n);
  return {requantize(c, acc, m, c.in(7), n)};
}

// No bias input (ConvInteger).
constexpr size_t kNoBias = 1000;

std::vector<ValuePtr> convInteger(NodeCtx& c) {
  const ValuePtr &x = c.in(0), &w = c.in(1);
  ValuePtr xs = shifted(c, x, c.hasInput(2) ? c.in(2) : nullptr, -1, "x");
  ValuePtr ws = shifted(c, w, c.hasInput(3) ? c.in(3) : nullptr, 0, "w");  // per output channel
  return {convolution(c, xs, ws, false, kNoBias, c.outName())};
}

std::vector<ValuePtr> qlinearConv(NodeCtx& c) {
  const std::string n = c.outName();
  const ValuePtr &x = c.in(0), &w = c.in(3);
  if (c.hasInput(8) && c.in(8)->type.dtype != DType::i32) c.fail("the bias must be i32");
  // The i32 accumulation, the bias (input 8) added per channel.
  ValuePtr acc =
      convolution(c, shifted(c, x, c.in(2), -1, "x"), shifted(c, w, c.in(5), 0, "w"), false, 8, n + "_acc");
  ValuePtr m = multiplier(c, alongAxis(c, c.in(1), 0, -1, n + "_x_scale"),
                          alongAxis(c, c.in(4), x->type.rank(), 1, n + "_w_scale"), c.in(6), n);
  return {requantize(c, acc, m, c.in(7), n)};
}

}  // namespace

void registerQuantizeConverters(ConverterTable& t) {
  t["QuantizeLinear"] = quantizeLinear;
  t["DequantizeLinear"] = dequantizeLinear;
  t["DynamicQuantizeLinear"] = dynamicQuantizeLinear;
  t["MatMulInteger"] = matMulInteger;
  t["QLinearMatMul"] = qlinearMatMul;
  t["ConvInteger"] = convInteger;
  t["QLinearConv"] = qlinearConv;
}

}  // namespace mlcc::frontend::onnx_import
