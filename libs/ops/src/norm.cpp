// Normalization ops (artifacts_schema/ops.md): softmax and log_softmax
// (numerically stable: the maximum is subtracted first), layer_norm and
// inference-mode batch_norm. Computed in f32 with double accumulators;
// f16/bf16 are staged through f32.
#include <cmath>
#include <limits>

#include "elementwise_util.h"
#include "legalize_util_ew.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

using ew::DClass, ir::DType, ir::Tensor, ir::Type;

// ---------------------------------------------------------------------------
// softmax / log_softmax over one axis: x viewed as [outer, mid, inner].

void softmaxRows(const float* x, float* y, const ew::Split3& s, bool log_form) {
  std::vector<float> mx(static_cast<size_t>(s.inner));
  std::vector<double> sum(static_cast<size_t>(s.inner));
  for (int64_t o = 0; o < s.outer; ++o) {
    const float* xb = x + o * s.mid * s.inner;
    float* yb = y + o * s.mid * s.inner;
    if (s.inner == 1) {  // the common case: a contiguous row
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < s.mid; ++k) m = std::max(m, xb[k]);
      double acc = 0;
      for (int64_t k = 0; k < s.mid; ++k) {
        float e = std::exp(xb[k] - m);
        if (!log_form) yb[k] = e;
        acc += e;
      }
      if (log_form) {
        float ls = static_cast<float>(std::log(acc));  // (x - max) - log(sum): no cancellation near max
        for (int64_t k = 0; k < s.mid; ++k) yb[k] = (xb[k] - m) - ls;
      } else {
        float inv = static_cast<float>(1.0 / acc);
        for (int64_t k = 0; k < s.mid; ++k) yb[k] *= inv;
      }
      continue;
    }
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<float>::infinity());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t k = 0; k < s.mid; ++k)
      for (int64_t j = 0; j < s.inner; ++j) mx[j] = std::max(mx[j], xb[k * s.inner + j]);
    for (int64_t k = 0; k < s.mid; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        float e = std::exp(xb[k * s.inner + j] - mx[j]);
        if (!log_form) yb[k * s.inner + j] = e;
        sum[j] += e;
      }
    for (int64_t j = 0; j < s.inner; ++j)  // sum becomes log(sum) or 1/sum
      sum[j] = log_form ? std::log(sum[j]) : 1.0 / sum[j];
    for (int64_t k = 0; k < s.mid; ++k)
      for (int64_t j = 0; j < s.inner; ++j) {
        int64_t i = k * s.inner + j;
        yb[i] = log_form ? (xb[i] - mx[j]) - static_cast<float>(sum[j]) : yb[i] * static_cast<float>(sum[j]);
      }
  }
}

int64_t axisOf(const ir::Attrs& a, int64_t rank, const std::string& op) {
  int64_t axis = normalizeAxis(attrInt(a, "axis"), rank, op.c_str());
  if (axis >= rank)
    throw Error("op '" + op + "': axis " + std::to_string(attrInt(a, "axis")) + " is out of range for rank " +
                std::to_string(rank));
  return axis;
}

// ---------------------------------------------------------------------------
// Legalization. As the kernels: values in f32 (f16/bf16 cast on load and the
// result cast back once); the reductions accumulate in f32 where the kernels
// use double, so results agree to f32 rounding.

using ir::PrimExpr;
using namespace ir::build;
namespace te = ir::te;

PrimExpr f32(double v) { return ir::makeFloat(v, DType::f32); }
std::vector<PrimExpr> idxOf(const te::Indices& i) { return {i.begin(), i.end()}; }

// softmax: a max stage, an exp(x - max) stage, its sum, then exp / sum
// (each exp computed once: the CPU reduction rule keeps the exp stage, a
// row of it at a time); log_softmax: a max stage, an exp-sum stage, then
// (x - max) - log(sum).
ir::PrimFunc legalizeSoftmax(const std::string& name, bool log_form, const Type& x_type, const ir::Attrs& a) {
  te::FuncBuilder fb(name);
  ir::Buffer x = fb.input("x", x_type);
  size_t axis = static_cast<size_t>(axisOf(a, static_cast<int64_t>(x_type.rank()), name));
  std::vector<bool> red(x_type.rank(), false);
  red[axis] = true;
  lew::AxesReduce plan = lew::planAxesReduce(x_type.shape, red, false);
  auto xAt = [&](const te::Indices& i, const te::Indices& r) {
    return lew::staged(load(x, plan.inputIndices(i, r)));
  };
  ir::Buffer mx = fb.reduce(name + "_max", plan.out_shape, DType::f32, plan.extents, te::ReduceOp::Max, xAt);
  if (log_form) {
    ir::Buffer sum = fb.reduce(name + "_expsum", plan.out_shape, DType::f32, plan.extents, te::ReduceOp::Sum,
                               [&](const te::Indices& i, const te::Indices& r) {
                                 return ir::makeCall("exp", {xAt(i, r) - load(mx, idxOf(i))});
                               });
    ir::Buffer y = fb.compute(name, x_type.shape, x_type.dtype, [&](const te::Indices& i) {
      std::vector<PrimExpr> s = plan.statIndices(i);
      PrimExpr d = lew::staged(load(x, idxOf(i))) - load(mx, s);
      return lew::fromF32(d - ir::makeCall("log", {load(sum, s)}), x_type.dtype);
    });
    return fb.build({y});
  }
  ir::Buffer e = fb.compute(name + "_exp", x_type.shape, DType::f32, [&](const te::Indices& i) {
    return ir::makeCall("exp", {lew::staged(load(x, idxOf(i))) - load(mx, plan.statIndices(i))});
  });
  ir::Buffer sum =
      fb.reduce(name + "_expsum", plan.out_shape, DType::f32, plan.extents, te::ReduceOp::Sum,
                [&](const te::Indices& i, const te::Indices& r) { return load(e, plan.inputIndices(i, r)); });
  ir::Buffer y = fb.compute(name, x_type.shape, x_type.dtype, [&](const te::Indices& i) {
    return lew::fromF32(load(e, idxOf(i)) * (f32(1) / load(sum, plan.statIndices(i))), x_type.dtype);
  });
  return fb.build({y});
}

// layer_norm: sum and squared-deviation stages over axes axis.., then
// (x - mean) * rsqrt(var + eps) * gamma + beta.
ir::PrimFunc legalizeLayerNorm(const std::vector<Type>& in, const ir::Attrs& a) {
  const Type& x_type = in[0];
  te::FuncBuilder fb("layer_norm");
  ir::Buffer x = fb.input("x", x_type), g = fb.input("gamma", in[1]), b = fb.input("beta", in[2]);
  size_t axis = static_cast<size_t>(axisOf(a, static_cast<int64_t>(x_type.rank()), "layer_norm"));
  std::vector<bool> red(x_type.rank(), false);
  for (size_t d = axis; d < red.size(); ++d) red[d] = true;
  lew::AxesReduce plan = lew::planAxesReduce(x_type.shape, red, false);
  PrimExpr n = ir::makeCast(DType::f32, plan.count);
  auto xAt = [&](const te::Indices& i, const te::Indices& r) {
    return lew::staged(load(x, plan.inputIndices(i, r)));
  };
  ir::Buffer sum =
      fb.reduce("layer_norm_sum", plan.out_shape, DType::f32, plan.extents, te::ReduceOp::Sum, xAt);
  ir::Buffer sq = fb.reduce("layer_norm_sqdev", plan.out_shape, DType::f32, plan.extents, te::ReduceOp::Sum,
                            [&](const te::Indices& i, const te::Indices& r) {
                              PrimExpr dlt = xAt(i, r) - load(sum, idxOf(i)) / n;
                              return dlt * dlt;
                            });
  float eps = static_cast<float>(attrFloat(a, "epsilon"));
  ir::Buffer y = fb.compute("layer_norm", x_type.shape, x_type.dtype, [&](const te::Indices& i) {
    std::vector<PrimExpr> s = plan.statIndices(i);
    std::vector<PrimExpr> p(i.begin() + static_cast<std::ptrdiff_t>(axis), i.end());
    PrimExpr mean = load(sum, s) / n;
    PrimExpr inv = ir::makeCall("rsqrt", {load(sq, s) / n + f32(eps)});
    PrimExpr v =
        (lew::staged(load(x, idxOf(i))) - mean) * inv * lew::staged(load(g, p)) + lew::staged(load(b, p));
    return lew::fromF32(v, x_type.dtype);
  });
  return fb.build({y});
}

// batch_norm: per-channel scale = gamma * rsqrt(var + eps) and shift =
// beta - mean * scale stages (as the kernel folds them), then x * scale + shift.
ir::PrimFunc legalizeBatchNorm(const std::vector<Type>& in, const ir::Attrs& a) {
  const Type& x_type = in[0];
  te::FuncBuilder fb("batch_norm");
  static const char* kNames[] = {"x", "gamma", "beta", "mean", "var"};
  std::vector<ir::Buffer> p;
  for (size_t k = 0; k < 5; ++k) p.push_back(fb.input(kNames[k], in[k]));
  size_t axis = static_cast<size_t>(axisOf(a, static_cast<int64_t>(x_type.rank()), "batch_norm"));
  float eps = static_cast<float>(attrFloat(a, "epsilon"));
  auto at = [&](size_t k, const PrimExpr& c) { return lew::staged(load(p[k], {c})); };
  const PrimExpr& channels = x_type.shape[axis];
  ir::Buffer scale = fb.compute("batch_norm_scale", {channels}, DType::f32, [&](const te::Indices& c) {
    return at(1, c[0]) * ir::makeCall("rsqrt", {at(4, c[0]) + f32(eps)});
  });
  ir::Buffer shift = fb.compute("batch_norm_shift", {channels}, DType::f32, [&](const te::Indices& c) {
    return at(2, c[0]) - at(3, c[0]) * load(scale, {c[0]});
  });
  ir::Buffer y = fb.compute("batch_norm", x_type.shape, x_type.dtype, [&](const te::Indices& i) {
    PrimExpr v = lew::staged(load(p[0], idxOf(i))) * load(scale, {i[axis]}) + load(shift, {i[axis]});
    return lew::fromF32(v, x_type.dtype);
  });
  return fb.build({y});
}

void addSoftmax(std::vector<OpDef>& ops, const std::string& name, bool log_form) {
  OpDef d;
  d.name = name;
  // A reduction for fusion: elementwise producers (a score's scale, mask or
  // bias) and crops (fuse_ops.cpp) join its group; the reduction rule
  // inlines them into its row reductions.
  d.pattern = OpPattern::Reduction;
  d.attrs = {AttrSpec{"axis", AttrKind::Int, ir::AttrValue(int64_t{-1})}};
  d.infer = [name](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, name.c_str());
    ew::checkClass(name, x.dtype, DClass::Float);
    axisOf(a, static_cast<int64_t>(x.rank()), name);
    return x;
  };
  d.compute = [name, log_form](const std::vector<Tensor>& in, const ir::Attrs& a) {
    Tensor x = ew::toF32(in[0]);
    size_t axis = static_cast<size_t>(axisOf(a, x.rank(), name));
    Tensor y = Tensor::zeros(DType::f32, x.shape());
    softmaxRows(x.data<float>(), y.mutableData<float>(), ew::split3(x.shape(), axis, axis + 1), log_form);
    return std::vector<Tensor>{ew::fromF32(y, in[0].dtype())};
  };
  d.legalize = [name, log_form](const std::vector<Type>& in, const Type&, const ir::Attrs& a) {
    return legalizeSoftmax(name, log_form, in[0], a);
  };
  // max, subtract, exp, sum, divide (or subtract)
  d.flops = [](const std::vector<Type>& in, const Type&, const ir::Attrs&) {
    return flopsProduct(5, staticCount(in[0].shape));
  };
  ops.push_back(std::move(d));
}

// ---------------------------------------------------------------------------
// layer_norm(x, gamma, beta): over axes axis..rank-1.

OpDef layerNormOp() {
  OpDef d;
  d.name = "layer_norm";
  d.min_inputs = d.max_inputs = 3;
  d.pattern = OpPattern::Opaque;
  d.attrs = {AttrSpec{"axis", AttrKind::Int, ir::AttrValue(int64_t{-1})},
             AttrSpec{"epsilon", AttrKind::Float, ir::AttrValue(1e-05)}};
  d.infer = [](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, "layer_norm");
    ew::checkClass("layer_norm", x.dtype, DClass::Float);
    ew::checkSameDType("layer_norm",
                       {x, tensorOperand(in, 1, "layer_norm"), tensorOperand(in, 2, "layer_norm")});
    size_t axis = static_cast<size_t>(axisOf(a, static_cast<int64_t>(x.rank()), "layer_norm"));
    Shape want(x.shape.begin() + static_cast<std::ptrdiff_t>(axis), x.shape.end());
    for (size_t i = 1; i < 3; ++i) {
      const Shape& s = in[i].shape;
      bool ok = s.size() == want.size();
      for (size_t j = 0; ok && j < s.size(); ++j) ok = dimEqual(s[j], want[j]);
      if (!ok)
        throw Error(std::string("op 'layer_norm': ") + (i == 1 ? "gamma" : "beta") + " has type " +
                    ir::printType(in[i]) + ", but must have the shape of x.shape[" + std::to_string(axis) +
                    ":]");
    }
    return x;
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs& a) {
    Tensor x = ew::toF32(in[0]), g = ew::toF32(in[1]), b = ew::toF32(in[2]);
    size_t axis = static_cast<size_t>(axisOf(a, x.rank(), "layer_norm"));
    ew::Split3 s = ew::split3(x.shape(), axis, x.shape().size());
    int64_t rows = s.outer, n = s.mid;
    double eps = attrFloat(a, "epsilon");
    Tensor y = Tensor::zeros(DType::f32, x.shape());
    const float* px = x.data<float>();
    const float* pg = g.data<float>();
    const float* pb = b.data<float>();
    float* py = y.mutableData<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = px + r * n;
      float* yr = py + r * n;
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += xr[i];
      double mean = n ? sum / static_cast<double>(n) : 0.0;
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) {
        double dlt = xr[i] - mean;
        sq += dlt * dlt;
      }
      double var = n ? sq / static_cast<double>(n) : 0.0;
      float m = static_cast<float>(mean), inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) * inv * pg[i] + pb[i];
    }
    return std::vector<Tensor>{ew::fromF32(y, in[0].dtype())};
  };
  d.legalize = [](const std::vector<Type>& in, const Type&, const ir::Attrs& a) {
    return legalizeLayerNorm(in, a);
  };
  // mean, variance (subtract, square, add), normalize, scale, shift
  d.flops = [](const std::vector<Type>& in, const Type&, const ir::Attrs&) {
    return flopsProduct(8, staticCount(in[0].shape));
  };
  return d;
}

// ---------------------------------------------------------------------------
// batch_norm(x, gamma, beta, mean, var), inference mode, channels on `axis`.

OpDef batchNormOp() {
  OpDef d;
  d.name = "batch_norm";
  d.min_inputs = d.max_inputs = 5;
  d.pattern = OpPattern::Opaque;
  d.attrs = {AttrSpec{"axis", AttrKind::Int, ir::AttrValue(int64_t{1})},
             AttrSpec{"epsilon", AttrKind::Float, ir::AttrValue(1e-05)}};
  d.infer = [](const std::vector<Type>& in, const ir::Attrs& a) {
    static const char* kNames[] = {"x", "gamma", "beta", "mean", "var"};
    for (size_t i = 0; i < 5; ++i) tensorOperand(in, i, "batch_norm");
    const Type& x = in[0];
    ew::checkClass("batch_norm", x.dtype, DClass::Float);
    ew::checkSameDType("batch_norm", in);
    size_t axis = static_cast<size_t>(axisOf(a, static_cast<int64_t>(x.rank()), "batch_norm"));
    for (size_t i = 1; i < 5; ++i)
      if (in[i].rank() != 1 || !dimEqual(in[i].shape[0], x.shape[axis]))
        throw Error(std::string("op 'batch_norm': ") + kNames[i] + " has type " + ir::printType(in[i]) +
                    ", but must be a vector of x.shape[" + std::to_string(axis) + "]");
    return x;
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs& a) {
    Tensor x = ew::toF32(in[0]);
    size_t axis = static_cast<size_t>(axisOf(a, x.rank(), "batch_norm"));
    ew::Split3 s = ew::split3(x.shape(), axis, axis + 1);
    double eps = attrFloat(a, "epsilon");
    std::vector<float> scale(static_cast<size_t>(s.mid)), shift(static_cast<size_t>(s.mid));
    for (int64_t c = 0; c < s.mid; ++c) {
      double inv = 1.0 / std::sqrt(in[4].at(c) + eps);
      double sc = in[1].at(c) * inv;
      scale[c] = static_cast<float>(sc);
      shift[c] = static_cast<float>(in[2].at(c) - in[3].at(c) * sc);
    }
    Tensor y = Tensor::zeros(DType::f32, x.shape());
    const float* px = x.data<float>();
    float* py = y.mutableData<float>();
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t c = 0; c < s.mid; ++c) {
        int64_t base = (o * s.mid + c) * s.inner;
        float sc = scale[c], sh = shift[c];
        for (int64_t j = 0; j < s.inner; ++j) py[base + j] = px[base + j] * sc + sh;
      }
    return std::vector<Tensor>{ew::fromF32(y, in[0].dtype())};
  };
  d.legalize = [](const std::vector<Type>& in, const Type&, const ir::Attrs& a) {
    return legalizeBatchNorm(in, a);
  };
  // folded to one multiply-add per element (plus per-channel work)
  d.flops = [](const std::vector<Type>& in, const Type&, const ir::Attrs&) {
    return flopsProduct(2, staticCount(in[0].shape));
  };
  return d;
}

}  // namespace

void registerNormOps(std::vector<OpDef>& ops) {
  addSoftmax(ops, "softmax", false);
  addSoftmax(ops, "log_softmax", true);
  ops.push_back(layerNormOp());
  ops.push_back(batchNormOp());
}

}  // namespace mlcc::ops
