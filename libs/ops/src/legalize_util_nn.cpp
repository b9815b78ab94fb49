// Helpers of the linalg, conv and pool legalizations (see legalize_util_nn.h).
#include "legalize_util_nn.h"

#include "mlcc/ir/builder.h"
#include "mlcc/ops/shape.h"

namespace mlcc::ops::nnlegal {

using ir::Buffer;
using ir::DType;
using ir::PrimExpr;
using namespace ir::build;

PrimExpr mulC(const PrimExpr& e, int64_t c) {
  if (c == 1) return e;
  return e * c;
}

PrimExpr addC(const PrimExpr& e, int64_t c) {
  if (c == 0) return e;
  if (c < 0) return e - (-c);
  return e + c;
}

DType accDType(DType t) { return t == DType::f16 || t == DType::bf16 ? DType::f32 : t; }

PrimExpr castTo(DType t, const PrimExpr& e) { return e->dtype == t ? e : ir::makeCast(t, e); }

PrimExpr less(const PrimExpr& a, const PrimExpr& b) { return ir::makeBinary(ir::BinaryOp::LT, a, b); }

PrimExpr inRange(const PrimExpr& e, const PrimExpr& limit) { return e >= 0 && less(e, limit); }

PrimExpr guardedLoad(const Buffer& buffer, const std::vector<PrimExpr>& indices,
                     const std::vector<bool>& clamp, const PrimExpr& in_bounds, const PrimExpr& fallback) {
  std::vector<PrimExpr> idx;
  for (size_t d = 0; d < indices.size(); ++d)
    idx.push_back(clamp[d] ? maximum(minimum(indices[d], dimSub(buffer->shape[d], dimConst(1))), int64_t{0})
                           : indices[d]);
  return ir::makeSelect(in_bounds, load(buffer, idx), fallback);
}

Buffer castStage(ir::te::FuncBuilder& fb, const std::string& name, const Buffer& src, DType t) {
  if (src->dtype == t) return src;
  return fb.compute(name, src->shape, t, [&](const ir::te::Indices& i) {
    return ir::makeCast(t, load(src, std::vector<PrimExpr>(i.begin(), i.end())));
  });
}

Buffer padStage(ir::te::FuncBuilder& fb, const std::string& name, const Buffer& x,
                const std::vector<int64_t>& before, const std::vector<int64_t>& after,
                const PrimExpr& value) {
  bool any = false;
  for (size_t d = 0; d < before.size(); ++d) any = any || before[d] != 0 || after[d] != 0;
  if (!any) return x;
  std::vector<PrimExpr> shape;
  for (size_t d = 0; d < x->shape.size(); ++d)
    shape.push_back(dimAdd(x->shape[d], dimConst(before[d] + after[d])));
  return fb.compute(name, shape, x->dtype, [&](const ir::te::Indices& i) {
    std::vector<PrimExpr> idx;
    std::vector<bool> clamp;
    PrimExpr cond;
    for (size_t d = 0; d < i.size(); ++d) {
      PrimExpr src = addC(i[d], -before[d]);
      idx.push_back(src);
      PrimExpr c;
      if (before[d] != 0 && after[d] != 0)
        c = inRange(src, x->shape[d]);
      else if (before[d] != 0)
        c = src >= 0;
      else if (after[d] != 0)
        c = less(src, x->shape[d]);
      clamp.push_back(c != nullptr);
      if (c) cond = cond ? (cond && c) : c;
    }
    return guardedLoad(x, idx, clamp, cond, value);
  });
}

PrimExpr validTaps(const PrimExpr& start, int64_t k, int64_t dilation, const PrimExpr& limit) {
  // lo = max(0, ceil(-start / d)), hi = min(k, floor((limit - 1 - start) / d) + 1)
  PrimExpr lo, hi;
  if (dilation == 1) {
    lo = maximum(lit(int64_t{0}) - start, int64_t{0});
    hi = minimum(limit - start, k);
  } else {
    lo = maximum((lit(int64_t{dilation - 1}) - start) / dilation, int64_t{0});
    hi = minimum((limit - 1 - start) / dilation + 1, k);
  }
  return maximum(hi - lo, int64_t{0});
}

bool windowsInside(const PrimExpr& limit, const PrimExpr& out, int64_t k, int64_t stride, int64_t pad_before,
                   int64_t dilation) {
  int64_t l, o;
  if (!ir::asConstInt(limit, &l) || !ir::asConstInt(out, &o)) return false;
  if (o <= 0) return true;
  return pad_before == 0 && (o - 1) * stride + (k - 1) * dilation < l;
}

}  // namespace mlcc::ops::nnlegal
