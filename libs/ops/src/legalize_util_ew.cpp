// Legalization helpers of the elementwise, reduction and normalization
// families (see legalize_util_ew.h).
#include "legalize_util_ew.h"

#include "mlcc/support/diagnostic.h"

namespace mlcc::ops::lew {

using namespace ir::build;

std::vector<PrimExpr> broadcastIndices(const Shape& in_shape, const Shape& out_shape,
                                       const std::vector<ir::Var>& out_idx) {
  if (in_shape.size() > out_shape.size() || out_idx.size() != out_shape.size())
    throw Error("internal: broadcast of rank " + std::to_string(in_shape.size()) + " to rank " +
                std::to_string(out_shape.size()));
  size_t lead = out_shape.size() - in_shape.size();
  std::vector<PrimExpr> idx;
  for (size_t j = 0; j < in_shape.size(); ++j) {
    size_t o = lead + j;
    if (isConstDim(in_shape[j], 1) && !isConstDim(out_shape[o], 1))
      idx.push_back(ir::makeInt(0));
    else
      idx.push_back(out_idx[o]);
  }
  return idx;
}

PrimExpr loadBroadcast(const Buffer& b, const Shape& out_shape, const std::vector<ir::Var>& out_idx) {
  return load(b, broadcastIndices(b->shape, out_shape, out_idx));
}

bool isHalf(DType t) { return t == DType::f16 || t == DType::bf16; }

PrimExpr staged(const PrimExpr& e) { return isHalf(e->dtype) ? ir::makeCast(DType::f32, e) : e; }

PrimExpr fromF32(const PrimExpr& e, DType t) { return t == e->dtype ? e : ir::makeCast(t, e); }

PrimExpr lit(const PrimExpr& like, double v) { return ir::te::constant(like->dtype, v); }

PrimExpr stdMin(const PrimExpr& a, const PrimExpr& b) { return ir::makeSelect(lt(b, a), b, a); }
PrimExpr stdMax(const PrimExpr& a, const PrimExpr& b) { return ir::makeSelect(lt(a, b), b, a); }

namespace {
PrimExpr isNaN(const PrimExpr& e) { return ir::makeCall("isnan", {e}); }
}  // namespace

PrimExpr nanMaximum(const PrimExpr& a, const PrimExpr& b) {
  if (!ir::isFloat(a->dtype)) return maximum(a, b);
  // a NaN: a < b is false, so a; b NaN: b.
  return ir::makeSelect(isNaN(b), b, stdMax(a, b));
}

PrimExpr nanMinimum(const PrimExpr& a, const PrimExpr& b) {
  if (!ir::isFloat(a->dtype)) return minimum(a, b);
  return ir::makeSelect(isNaN(b), b, stdMin(a, b));
}

namespace {
// b, or 1 where b is 0 (a divisor TIR accepts; the result is then replaced).
PrimExpr safeDivisor(const PrimExpr& b) { return ir::makeSelect(eq(b, lit(b, 0)), lit(b, 1), b); }
}  // namespace

PrimExpr truncDiv(const PrimExpr& a, const PrimExpr& b) {
  PrimExpr zero = lit(a, 0), d = safeDivisor(b);
  // floor(a / d) rounds down; truncation rounds toward zero: one more where
  // the division is inexact and the signs differ.
  PrimExpr q = a / d, r = a % d;
  PrimExpr adjust = land(ne(r, zero), ne(lt(a, zero), lt(d, zero)));
  PrimExpr t = ir::makeSelect(adjust, q + lit(a, 1), q);
  return ir::makeSelect(eq(b, zero), zero, t);
}

PrimExpr truncMod(const PrimExpr& a, const PrimExpr& b) {
  PrimExpr zero = lit(a, 0), d = safeDivisor(b);
  PrimExpr r = a % d;  // sign of d
  PrimExpr t = ir::makeSelect(land(ne(r, zero), ne(lt(a, zero), lt(d, zero))), r - d, r);
  return ir::makeSelect(eq(b, zero), zero, t);
}

PrimExpr floorMod(const PrimExpr& a, const PrimExpr& b) {
  PrimExpr zero = lit(a, 0);
  return ir::makeSelect(eq(b, zero), zero, a % safeDivisor(b));
}

AxesReduce planAxesReduce(const Shape& in_shape, const std::vector<bool>& reduced, bool keepdims) {
  AxesReduce p;
  p.reduced = reduced;
  p.keepdims = keepdims;
  p.count = dimConst(1);
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (reduced[d]) {
      p.extents.push_back(in_shape[d]);
      p.count = dimMul(p.count, in_shape[d]);
      if (keepdims) p.out_shape.push_back(dimConst(1));
    } else {
      p.out_shape.push_back(in_shape[d]);
    }
  }
  return p;
}

std::vector<PrimExpr> AxesReduce::inputIndices(const std::vector<ir::Var>& i,
                                               const std::vector<ir::Var>& r) const {
  std::vector<PrimExpr> idx;
  size_t oi = 0, ri = 0;
  for (bool red : reduced) {
    if (red) {
      idx.push_back(r[ri++]);
      if (keepdims) ++oi;
    } else {
      idx.push_back(i[oi++]);
    }
  }
  return idx;
}

std::vector<PrimExpr> AxesReduce::statIndices(const std::vector<ir::Var>& in) const {
  std::vector<PrimExpr> idx;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d])
      idx.push_back(in[d]);
    else if (keepdims)
      idx.push_back(ir::makeInt(0));
  }
  return idx;
}

Buffer anyNaN(ir::te::FuncBuilder& fb, const std::string& name, const AxesReduce& plan,
              const std::function<PrimExpr(const std::vector<PrimExpr>& in_idx)>& value) {
  return fb.reduce(name, plan.out_shape, DType::i8, plan.extents, ir::te::ReduceOp::Max,
                   [&](const std::vector<ir::Var>& i, const std::vector<ir::Var>& r) {
                     return ir::makeSelect(isNaN(value(plan.inputIndices(i, r))), ir::makeInt(1, DType::i8),
                                           ir::makeInt(0, DType::i8));
                   });
}

}  // namespace mlcc::ops::lew
