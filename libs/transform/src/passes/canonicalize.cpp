// canonicalize: removes no-ops and folds batch_norm into a preceding
// conv2d/dense, per graph function, until nothing changes:
//   - aliases `%b = %a` (uses of %b become %a);
//   - reshape, cast and broadcast_to whose result type equals the operand's;
//   - permute_dims with identity axes; permute_dims of permute_dims is
//     composed into one (and removed when the composition is the identity);
//   - add/subtract of a constant zero, multiply/divide by a constant one,
//     when the result type equals the other operand's (no broadcasting);
//   - expand_dims(squeeze(x, [a]), [a]) is x; a squeeze that an elementwise
//     or broadcast op reads at the op's own shape moves after the op (its
//     other operands gain the unit axis): a conv1d's bias and activation
//     stay 4-D with the convolution (sinkSqueezes), and squeezes left
//     without a use are dropped; a reduction (sum, mean, max, min) of such
//     a squeeze reduces the unsqueezed value, the squeeze after it;
//   - power(x, 2) with a constant exponent 2 becomes multiply(x, x) (the
//     same value, rounded once; a layer norm's variance exported from
//     PyTorch is Pow(x - mean, 2): powf per element ran at 0.16 GFLOPS);
//   - batch_norm(y, gamma, beta, mean, var) where y = conv2d(x, w) (channels
//     on axis 1) or y = dense(x, w) (channels last) is used only by the
//     batch_norm, and w and the four statistics are constants, becomes
//     add(conv2d(x, w'), b') with w' = w * s (per output channel),
//     s = gamma / sqrt(var + eps), b' = beta - mean * s;
//   - then any other batch_norm(x, ...) with constant statistics (one per
//     channel of x's static axis) becomes add(multiply(x, s), b'), s and b'
//     per channel ([C, 1, ..., 1]): ops that convert-layout keeps in the
//     blocked layout and fuse-ops fuses. DenseNet's pre-activation
//     BN-ReLU-conv layers had converted each concatenation to NCHW and
//     back around a batch_norm (DenseNet-121 at 224^2, 1 thread: 165 -> 75 ms);
//   - last, a conv2d's kernel rows and columns that read only padding for
//     every output (a dilated convolution over a smaller map: DeepLabV3's
//     ASPP, 3 x 3 taps 24 and 36 apart on a 14 x 14 map) are dropped:
//     the weight's taps sliced (folded later), the padding reduced by what
//     they skipped, a single remaining tap without dilation (a 1 x 1
//     convolution instead of 9 taps over a padded 86 x 86 copy).
// Constants are inline ones and tensors of the module's weights files (or of
// PassContext::new_weights); new large constants go to ctx.new_weights as
// "<weight>.bn_folded" / "<weight>.bn_bias" (made unique). Bindings left
// unused (the old weight, an inner permute_dims) stay for
// dead-code-elimination. Assumes the module verifies.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "../dominator.h"
#include "../pass_registry.h"
#include "constants.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

struct Stats {
  int removed = 0, composed = 0, bn_folded = 0, bn_scaled = 0, squared = 0, taps = 0, sunk = 0;
  bool any() const { return removed || composed || bn_folded || bn_scaled || squared || taps || sunk; }
};

// The permutation of a permute_dims binding (absent axes: reverse).
std::vector<int64_t> permutationOf(const ir::GraphValue& v, size_t rank) {
  std::vector<int64_t> perm;
  if (!ops::hasAttr(v.attrs, "axes")) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    return perm;
  }
  for (int64_t a : ops::attrInts(v.attrs, "axes")) perm.push_back(a < 0 ? a + static_cast<int64_t>(rank) : a);
  return perm;
}

bool isIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

class Canonicalizer {
 public:
  Canonicalizer(Constants& consts, Stats& stats) : consts_(consts), stats_(stats) {}

  // One sweep of the no-op rules over `f`; returns whether anything changed.
  bool removeNoOps(ir::GraphFunc& f) {
    bool changed = false;
    std::map<const ir::GraphVarNode*, ir::GraphValue> defs;  // op bindings seen so far
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> kept;
      for (auto& b : block.bindings) {
        for (auto& a : b.value.args) a = resolve(a);
        if (auto same = noOpOperand(b, defs)) {
          subst_[b.var.get()] = same;
          retired_.push_back(b.var);  // its address stays its own while subst_ has it
          ++stats_.removed;
          changed = true;
          continue;
        }
        if (composePermutes(b, defs)) changed = true;
        if (squareByMultiply(b)) changed = true;
        if (b.value.kind == ir::ValueKind::Op) defs[b.var.get()] = b.value;
        kept.push_back(std::move(b));
      }
      block.bindings = std::move(kept);
    }
    for (auto& r : f.ret) r = resolve(r);
    std::erase_if(f.blocks, [](const ir::BindingBlock& b) { return b.bindings.empty(); });
    return changed;
  }

  // Folds each batch_norm of `f` whose producer qualifies; returns whether
  // anything changed.
  bool foldBatchNorms(ir::GraphFunc& f) {
    std::map<const ir::GraphVarNode*, int> uses;
    std::map<const ir::GraphVarNode*, const ir::Binding*> producer;
    for (const auto& block : f.blocks)
      for (const auto& b : block.bindings) {
        producer[b.var.get()] = &b;
        for (const auto& a : b.value.args) ++uses[a.get()];
      }
    for (const auto& r : f.ret) ++uses[r.get()];

    std::map<const ir::GraphVarNode*, std::vector<ir::Binding>> replace;  // bn var -> new bindings
    std::map<const ir::GraphVarNode*, bool> drop;                         // folded producers
    for (const auto& block : f.blocks)
      for (const auto& b : block.bindings) {
        if (b.value.kind != ir::ValueKind::Op || b.value.callee != "batch_norm" || b.value.args.size() != 5)
          continue;
        const ir::GraphVar& y = b.value.args[0];
        auto p = producer.find(y.get());
        if (p == producer.end() || uses[y.get()] != 1 || drop.count(y.get())) continue;
        auto folded = foldOne(b, *p->second);
        if (folded.empty()) continue;
        replace[b.var.get()] = std::move(folded);
        drop[y.get()] = true;
      }
    if (replace.empty()) return false;
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> out;
      for (auto& b : block.bindings) {
        if (drop.count(b.var.get())) continue;
        auto r = replace.find(b.var.get());
        if (r == replace.end()) {
          out.push_back(std::move(b));
          continue;
        }
        for (auto& nb : r->second) out.push_back(std::move(nb));
      }
      block.bindings = std::move(out);
    }
    stats_.bn_folded += static_cast<int>(replace.size());
    return true;
  }

  // Drops the kernel taps of each conv2d (NCHW, static shapes) that read
  // only padding (see the header).
  void dropPaddingTaps(ir::GraphFunc& f) {
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> out;
      for (auto& b : block.bindings) {
        if (auto slice = paddingTapsDropped(b)) out.push_back(std::move(*slice));
        out.push_back(std::move(b));
      }
      block.bindings = std::move(out);
    }
  }

  // z = op(squeeze(x, [a]), c, ...) of an elementwise or broadcast op,
  // the squeezed operand of z's own shape, becomes z = squeeze(op(x,
  // expand_dims(c, ..), ...), [a]): the squeeze moves after the op (a
  // conv1d's bias, ReLU and the next conv1d's input then stay 4-D, where
  // convert-layout keeps them blocked and fuse-ops fuses them into the
  // convolution; PointNet's went back to NCHW after every convolution).
  bool sinkSqueezes(ir::GraphFunc& f) {
    bool changed = false;
    std::map<const ir::GraphVarNode*, ir::GraphValue> squeezes;
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> out;
      for (auto& b : block.bindings) {
        std::vector<ir::Binding> sunk = sinkSqueeze(b, squeezes);
        if (sunk.empty()) {
          if (b.value.kind == ir::ValueKind::Op && b.value.callee == "squeeze")
            squeezes[b.var.get()] = b.value;
          out.push_back(std::move(b));
          continue;
        }
        squeezes[sunk.back().var.get()] = sunk.back().value;
        for (auto& nb : sunk) out.push_back(std::move(nb));
        ++stats_.sunk;
        changed = true;
      }
      block.bindings = std::move(out);
    }
    return changed;
  }

  // Squeezes (and expand_dims) that sinkSqueezes left without a use are
  // dropped here, not left for dead-code-elimination: fuse-ops runs before
  // it, and a dead use of a convolution's output kept its bias and
  // activation out of its fused function.
  static void dropUnusedSqueezes(ir::GraphFunc& f) {
    eliminateDeadBindings(f, [](const ir::Binding& b) {
      return b.value.kind == ir::ValueKind::Op &&
             (b.value.callee == "squeeze" || b.value.callee == "expand_dims");
    });
  }

  // Every batch_norm of `f` with constant statistics becomes
  // add(multiply(x, s), b') with per-channel constants; returns whether
  // anything changed.
  bool scaleBatchNorms(ir::GraphFunc& f) {
    bool changed = false;
    for (auto& block : f.blocks) {
      std::vector<ir::Binding> out;
      for (auto& b : block.bindings) {
        std::vector<ir::Binding> scaled = scaleOne(b);
        if (scaled.empty()) {
          out.push_back(std::move(b));
          continue;
        }
        for (auto& nb : scaled) out.push_back(std::move(nb));
        ++stats_.bn_scaled;
        changed = true;
      }
      block.bindings = std::move(out);
    }
    return changed;
  }

 private:
  // A batch_norm's channel axis (attribute `axis`, default 1; negative:
  // from the end).
  static int64_t batchNormAxis(const ir::GraphValue& bn, int64_t rank) {
    int64_t axis = ops::hasAttr(bn.attrs, "axis") ? ops::attrInt(bn.attrs, "axis") : 1;
    return axis < 0 ? axis + rank : axis;
  }

  // Per channel, s = gamma / sqrt(var + eps) and b' = beta - mean * s of
  // batch_norm `bn` (y = x * s + b'), when its four statistics are
  // constants of `channels` elements; else nullopt.
  struct ScaleShift {
    std::vector<double> scale, shift;
  };
  std::optional<ScaleShift> scaleShift(const ir::GraphValue& bn, int64_t channels) {
    const double eps = ops::hasAttr(bn.attrs, "epsilon") ? ops::attrFloat(bn.attrs, "epsilon") : 1e-5;
    const ir::Tensor* stats[4];
    for (int i = 0; i < 4; ++i) {
      const ir::GraphVar& s = bn.args[i + 1];
      stats[i] = consts_.isConstant(s.get()) ? consts_.value(s.get()) : nullptr;
      if (!stats[i] || stats[i]->numel() != channels) return std::nullopt;
    }
    const ir::Tensor &gamma = *stats[0], &beta = *stats[1], &mean = *stats[2], &var = *stats[3];
    ScaleShift out;
    for (int64_t c = 0; c < channels; ++c) {
      const double s = gamma.at(c) / std::sqrt(var.at(c) + eps);
      out.scale.push_back(s);
      out.shift.push_back(beta.at(c) - mean.at(c) * s);
    }
    return out;
  }

  // The bindings s, b', m = multiply(x, s), bn = add(m, b') for batch_norm
  // binding `bn`, or {} when it does not qualify.
  std::vector<ir::Binding> scaleOne(const ir::Binding& bn) {
    const ir::GraphValue& v = bn.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "batch_norm" || v.args.size() != 5) return {};
    const ir::Type& xt = v.args[0]->type;
    if (!xt.isTensor() || !ir::isFloat(xt.dtype) || !sameTensorType(bn.var->type, xt)) return {};
    const int64_t rank = static_cast<int64_t>(xt.rank());
    const int64_t axis = batchNormAxis(v, rank);
    int64_t channels;
    if (axis < 0 || axis >= rank || !ir::asConstInt(xt.shape[axis], &channels)) return {};
    const std::optional<ScaleShift> ss = scaleShift(v, channels);
    if (!ss) return {};
    std::vector<int64_t> shape{channels};
    for (int64_t d = axis + 1; d < rank; ++d) shape.push_back(1);
    ir::Tensor scale = ir::Tensor::zeros(xt.dtype, shape), shift = ir::Tensor::zeros(xt.dtype, shape);
    for (int64_t c = 0; c < channels; ++c) {
      scale.set(c, ss->scale[c]);
      shift.set(c, ss->shift[c]);
    }
    const std::string& name = bn.var->name;
    auto sconst = consts_.makeConstant(scale, name + ".bn_scale");
    auto bconst = sconst ? consts_.makeConstant(shift, name + ".bn_shift") : std::nullopt;
    if (!sconst || !bconst) return {};
    const ir::Type ct = ir::Type::tensor(xt.dtype, shape);
    std::vector<ir::Binding> out(4);
    out[0].var = ir::makeGraphVar(name + "_scale", ct);
    out[0].value = *sconst;
    out[1].var = ir::makeGraphVar(name + "_shift", ct);
    out[1].value = *bconst;
    out[2].var = ir::makeGraphVar(name + "_scaled", xt);
    out[2].value.kind = ir::ValueKind::Op;
    out[2].value.callee = "multiply";
    out[2].value.args = {v.args[0], out[0].var};
    out[3].var = bn.var;
    out[3].value.kind = ir::ValueKind::Op;
    out[3].value.callee = "add";
    out[3].value.args = {out[2].var, out[1].var};
    return out;
  }

  // The one axis of a squeeze/expand_dims `axes` attribute, normalized for
  // a tensor of `rank` dimensions (the larger side); -1 for any other.
  static int64_t singleAxis(const ir::Attrs& attrs, int64_t rank) {
    if (!ops::hasAttr(attrs, "axes")) return -1;
    const std::vector<int64_t> axes = ops::attrInts(attrs, "axes");
    if (axes.size() != 1) return -1;
    const int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
    return a >= 0 && a < rank ? a : -1;
  }

  // `var` = callee(args, attrs).
  static ir::Binding opBinding(ir::GraphVar var, const std::string& callee, std::vector<ir::GraphVar> args,
                               ir::Attrs attrs) {
    ir::Binding b;
    b.var = std::move(var);
    b.value.kind = ir::ValueKind::Op;
    b.value.callee = callee;
    b.value.args = std::move(args);
    b.value.attrs = std::move(attrs);
    return b;
  }

  // The operand and axis of `v` when it is squeeze(x, [a]) of one unit
  // axis with a result of rank `rank`; nullopt otherwise.
  static std::optional<std::pair<ir::GraphVar, int64_t>> unitSqueeze(
      const ir::GraphVar& v, const std::map<const ir::GraphVarNode*, ir::GraphValue>& squeezes,
      int64_t rank) {
    auto d = squeezes.find(v.get());
    if (d == squeezes.end() || d->second.args.size() != 1) return std::nullopt;
    const ir::Type& xt = d->second.args[0]->type;
    const int64_t a = singleAxis(d->second.attrs, rank + 1);
    int64_t unit = 0;
    if (a < 0 || !xt.isTensor() || static_cast<int64_t>(xt.rank()) != rank + 1 ||
        !ir::asConstInt(xt.shape[a], &unit) || unit != 1)
      return std::nullopt;
    return std::pair{d->second.args[0], a};
  }

  static ir::Type withUnitAxis(const ir::Type& t, int64_t axis) {
    std::vector<ir::PrimExpr> shape = t.shape;
    shape.insert(shape.begin() + axis, ir::makeInt(1));
    return ir::Type::tensor(t.dtype, shape);
  }

  // The bindings that replace `z` when a squeeze sinks below it (see
  // sinkSqueezes), the new squeeze last; {} when it does not apply.
  std::vector<ir::Binding> sinkSqueeze(const ir::Binding& z,
                                       const std::map<const ir::GraphVarNode*, ir::GraphValue>& squeezes) {
    const ir::GraphValue& v = z.value;
    if (v.kind != ir::ValueKind::Op || !z.var->type.isTensor()) return {};
    if (auto sunk = sinkSqueezeBelowReduction(z, squeezes); !sunk.empty()) return sunk;
    const ops::OpDef* def = ops::findOp(v.callee);
    if (!def || (def->pattern != ops::OpPattern::Elementwise && def->pattern != ops::OpPattern::Broadcast) ||
        ops::hasAttr(v.attrs, "axis") || ops::hasAttr(v.attrs, "axes"))
      return {};
    const int64_t r = static_cast<int64_t>(z.var->type.rank());
    int64_t axis = -1;
    size_t squeezed = v.args.size();
    ir::GraphVar unsqueezed;
    for (size_t i = 0; i < v.args.size() && squeezed == v.args.size(); ++i) {
      auto sq = unitSqueeze(v.args[i], squeezes, r);
      if (!sq || !sameShape(v.args[i]->type, z.var->type)) continue;
      squeezed = i;
      std::tie(unsqueezed, axis) = *sq;
    }
    if (squeezed == v.args.size()) return {};
    std::vector<ir::Binding> out;
    ir::Binding op4;
    op4.value = v;
    for (size_t i = 0; i < v.args.size(); ++i) {
      const ir::GraphVar& arg = v.args[i];
      if (i == squeezed) {
        op4.value.args[i] = unsqueezed;
        continue;
      }
      if (!arg->type.isTensor()) return {};
      const int64_t k = static_cast<int64_t>(arg->type.rank()), pos = axis - (r - k);
      if (k > r) return {};
      if (pos < 0) continue;  // it broadcasts from after the axis: unchanged
      ir::Binding e = opBinding(ir::makeGraphVar(arg->name + "_unsqueezed", withUnitAxis(arg->type, pos)),
                                "expand_dims", {arg}, {{"axes", ir::AttrValue::ints({pos})}});
      op4.value.args[i] = e.var;
      out.push_back(std::move(e));
    }
    op4.var = ir::makeGraphVar(z.var->name + "_unsqueezed", withUnitAxis(z.var->type, axis));
    ir::GraphVar op4_var = op4.var;
    out.push_back(std::move(op4));
    out.push_back(opBinding(z.var, "squeeze", {op4_var}, {{"axes", ir::AttrValue::ints({axis})}}));
    return out;
  }

  // z = reduce(squeeze(x, [a]), axes) (sum, mean, max, min) becomes
  // squeeze(reduce(x, axes', keepdims), [a] and, without keepdims, axes'):
  // the reduction reads x, whose layout convert-layout may have blocked (a
  // conv1d's output reduced over its length, PointNet's max over the
  // points); {} when it does not apply.
  std::vector<ir::Binding> sinkSqueezeBelowReduction(
      const ir::Binding& z, const std::map<const ir::GraphVarNode*, ir::GraphValue>& squeezes) {
    const ir::GraphValue& v = z.value;
    if (!isAxesReduction(v.callee) || v.args.size() != 1 || !ops::hasAttr(v.attrs, "axes")) return {};
    const int64_t r = static_cast<int64_t>(v.args[0]->type.rank());
    const auto sq = unitSqueeze(v.args[0], squeezes, r);
    if (!sq) return {};
    const auto& [x, a] = *sq;
    std::vector<int64_t> axes;
    for (int64_t i : ops::attrInts(v.attrs, "axes")) {
      if (i < 0) i += r;
      if (i < 0 || i >= r) return {};
      axes.push_back(i < a ? i : i + 1);
    }
    const bool keepdims = ops::hasAttr(v.attrs, "keepdims") && ops::attrBool(v.attrs, "keepdims");
    std::vector<ir::PrimExpr> kept = x->type.shape;
    for (int64_t i : axes) kept[static_cast<size_t>(i)] = ir::makeInt(1);
    ir::Binding red =
        opBinding(ir::makeGraphVar(z.var->name + "_unsqueezed", ir::Type::tensor(z.var->type.dtype, kept)),
                  v.callee, {x}, {{"axes", ir::AttrValue::ints(axes)}, {"keepdims", ir::AttrValue(true)}});
    std::vector<int64_t> drop = {a};
    if (!keepdims) drop.insert(drop.end(), axes.begin(), axes.end());
    std::sort(drop.begin(), drop.end());
    ir::Binding squeeze = opBinding(z.var, "squeeze", {red.var}, {{"axes", ir::AttrValue::ints(drop)}});
    return {std::move(red), std::move(squeeze)};
  }

  ir::GraphVar resolve(ir::GraphVar v) const {
    for (auto it = subst_.find(v.get()); it != subst_.end(); it = subst_.find(v.get())) v = it->second;
    return v;
  }

  // Whether `v` is a constant whose every element equals `value`.
  bool isSplat(const ir::GraphVar& v, double value) {
    if (!consts_.isConstant(v.get())) return false;
    const ir::Tensor* t = consts_.value(v.get());
    if (!t) return false;
    for (int64_t i = 0; i < t->numel(); ++i)
      if (t->at(i) != value) return false;
    return true;
  }

  // The operand a no-op binding passes through, or null.
  ir::GraphVar noOpOperand(const ir::Binding& b,
                           const std::map<const ir::GraphVarNode*, ir::GraphValue>& defs) {
    const ir::GraphValue& v = b.value;
    if (v.kind == ir::ValueKind::Alias) return v.args.size() == 1 ? v.args[0] : nullptr;
    if (v.kind != ir::ValueKind::Op) return nullptr;
    const std::string& op = v.callee;
    auto same = [&](size_t i) { return i < v.args.size() && sameTensorType(b.var->type, v.args[i]->type); };
    // expand_dims(squeeze(x, [a]), [a]) is x (a conv1d's squeeze and the
    // next conv1d's expand_dims, the ops between them moved after it).
    if (op == "expand_dims" && v.args.size() == 1) {
      auto d = defs.find(v.args[0].get());
      const int64_t rank = static_cast<int64_t>(b.var->type.rank());
      if (d != defs.end() && d->second.callee == "squeeze" && d->second.args.size() == 1 &&
          sameTensorType(b.var->type, d->second.args[0]->type) && singleAxis(v.attrs, rank) >= 0 &&
          singleAxis(v.attrs, rank) == singleAxis(d->second.attrs, rank))
        return d->second.args[0];
    }
    if (op == "reshape" || op == "cast" || op == "broadcast_to") return same(0) ? v.args[0] : nullptr;
    if (op == "permute_dims" && same(0) && isIdentity(permutationOf(v, v.args[0]->type.rank())))
      return v.args[0];
    if (v.args.size() != 2) return nullptr;
    if (op == "add" || op == "subtract" || op == "multiply" || op == "divide") {
      double neutral = (op == "add" || op == "subtract") ? 0.0 : 1.0;
      bool commutative = op == "add" || op == "multiply";
      if (same(0) && isSplat(v.args[1], neutral)) return v.args[0];
      if (commutative && same(1) && isSplat(v.args[0], neutral)) return v.args[1];
    }
    return nullptr;
  }

  // For conv2d binding `b` with taps that read only padding: rewrites `b`
  // (sliced weight, padding, dilation) and returns the weight's slice,
  // to go before it.
  std::optional<ir::Binding> paddingTapsDropped(ir::Binding& b) {
    ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "conv2d" || v.args.size() != 2) return std::nullopt;
    std::vector<int64_t> xs, ws, ys;
    if (!ops::staticShape(v.args[0]->type.shape, &xs) || !ops::staticShape(v.args[1]->type.shape, &ws) ||
        !ops::staticShape(b.var->type.shape, &ys) || xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
      return std::nullopt;
    const ir::Attrs attrs = ops::normalizeAttrs(*ops::findOp("conv2d"), v.attrs);
    std::vector<int64_t> strides = ops::attrInts(attrs, "strides"), pads = ops::attrInts(attrs, "padding"),
                         dilation = ops::attrInts(attrs, "dilation");
    std::vector<int64_t> begin(2), end(2);
    bool fewer = false;
    for (size_t a = 0; a < 2; ++a) {
      const int64_t n = xs[2 + a], o = ys[2 + a], k = ws[2 + a], s = strides[a], d = dilation[a],
                    pb = pads[a];
      // Tap t reads input h * s - pb + t * d for outputs h in [0, o).
      auto live = [&](int64_t t) {
        const int64_t lo = std::max<int64_t>(0, -floorDiv(t * d - pb, s));  // ceil((pb - t d) / s)
        const int64_t hi = std::min(o - 1, floorDiv(n - 1 + pb - t * d, s));
        return lo <= hi;
      };
      int64_t t0 = 0, t1 = k - 1;
      while (t0 <= t1 && !live(t0)) ++t0;
      while (t1 >= t0 && !live(t1)) --t1;
      if (t0 > t1) return std::nullopt;  // every tap reads padding only: leave it
      const int64_t pb2 = pb - t0 * d, k2 = t1 - t0 + 1;
      const int64_t pe2 = (o - 1) * s + d * (k2 - 1) + 1 - n - pb2;
      if (pb2 < 0 || pe2 < 0) return std::nullopt;
      begin[a] = t0, end[a] = t1 + 1;
      fewer = fewer || k2 < k;
      pads[a] = pb2, pads[a + 2] = pe2;
      if (k2 == 1) dilation[a] = 1;
    }
    if (!fewer) return std::nullopt;
    ir::Binding slice;
    slice.value.kind = ir::ValueKind::Op;
    slice.value.callee = "strided_slice";
    slice.value.args = {v.args[1]};
    slice.value.attrs =
        ops::normalizeAttrs(*ops::findOp("strided_slice"), {{"axes", ir::AttrValue::ints({2, 3})},
                                                            {"begin", ir::AttrValue::ints(begin)},
                                                            {"end", ir::AttrValue::ints(end)}});
    slice.var = ir::makeGraphVar(v.args[1]->name + "_live_taps",
                                 ops::inferOpType("strided_slice", {v.args[1]->type}, slice.value.attrs));
    v.args[1] = slice.var;
    v.attrs["padding"] = ir::AttrValue::ints(pads);
    v.attrs["dilation"] = ir::AttrValue::ints(dilation);
    ++stats_.taps;
    return slice;
  }

  // power(x, 2) -> multiply(x, x) when the result has x's type.
  bool squareByMultiply(ir::Binding& b) {
    ir::GraphValue& v = b.value;
    if (v.kind != ir::ValueKind::Op || v.callee != "power" || v.args.size() != 2 ||
        !sameTensorType(b.var->type, v.args[0]->type) || !isSplat(v.args[1], 2.0))
      return false;
    v.callee = "multiply";
    v.args[1] = v.args[0];
    ++stats_.squared;
    return true;
  }

  // permute_dims(permute_dims(x, p1), p2) -> permute_dims(x, p1∘p2) (the
  // identity case is then removed by the next sweep).
  bool composePermutes(ir::Binding& b, const std::map<const ir::GraphVarNode*, ir::GraphValue>& defs) {
    if (b.value.kind != ir::ValueKind::Op || b.value.callee != "permute_dims" || b.value.args.size() != 1)
      return false;
    auto inner = defs.find(b.value.args[0].get());
    if (inner == defs.end() || inner->second.callee != "permute_dims" || inner->second.args.size() != 1)
      return false;
    size_t rank = b.var->type.rank();
    std::vector<int64_t> p1 = permutationOf(inner->second, rank), p2 = permutationOf(b.value, rank);
    if (p1.size() != rank || p2.size() != rank) return false;
    std::vector<int64_t> composed;
    for (int64_t a : p2) composed.push_back(p1[a]);
    b.value.args = inner->second.args;
    b.value.attrs["axes"] = ir::AttrValue::ints(composed);
    ++stats_.composed;
    return true;
  }

  // The bindings that replace batch_norm binding `bn` whose operand is made
  // by `prod`, or {} when it does not qualify.
  std::vector<ir::Binding> foldOne(const ir::Binding& bn, const ir::Binding& prod) {
    const ir::GraphValue& pv = prod.value;
    if (pv.kind != ir::ValueKind::Op || (pv.callee != "conv2d" && pv.callee != "dense") ||
        pv.args.size() != 2)
      return {};
    const ir::Type& yt = prod.var->type;
    if (!yt.isTensor() || !ir::isFloat(yt.dtype)) return {};
    int64_t rank = static_cast<int64_t>(yt.rank());
    const int64_t axis = batchNormAxis(bn.value, rank);
    bool conv = pv.callee == "conv2d";
    if (conv ? (rank != 4 || axis != 1) : axis != rank - 1) return {};

    const ir::GraphVar& wvar = pv.args[1];
    const ir::Tensor* w = consts_.isConstant(wvar.get()) ? consts_.value(wvar.get()) : nullptr;
    if (!w || w->rank() < 1) return {};
    int64_t channels = w->shape()[0];
    const std::optional<ScaleShift> ss = scaleShift(bn.value, channels);
    if (!ss) return {};

    ir::Tensor nw = ir::Tensor::zeros(w->dtype(), w->shape());
    int64_t per = channels ? w->numel() / channels : 0;
    std::vector<int64_t> bias_shape =
        conv ? std::vector<int64_t>{channels, 1, 1} : std::vector<int64_t>{channels};
    ir::Tensor bias = ir::Tensor::zeros(yt.dtype, bias_shape);
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t k = 0; k < per; ++k) nw.set(c * per + k, w->at(c * per + k) * ss->scale[c]);
      bias.set(c, ss->shift[c]);
    }

    std::string base = weightName(wvar);
    auto wconst = consts_.makeConstant(nw, base + ".bn_folded");
    auto bconst = wconst ? consts_.makeConstant(bias, base + ".bn_bias") : std::nullopt;
    if (!wconst || !bconst) return {};

    std::vector<ir::Binding> out(4);
    out[0].var = ir::makeGraphVar(wvar->name + "_bn", wvar->type);
    out[0].value = *wconst;
    out[1].var = ir::makeGraphVar(prod.var->name + "_bn", yt);
    out[1].value = pv;
    out[1].value.args[1] = out[0].var;
    out[2].var = ir::makeGraphVar(bn.var->name + "_bias", ir::Type::tensor(yt.dtype, bias_shape));
    out[2].value = *bconst;
    out[3].var = bn.var;
    out[3].value.kind = ir::ValueKind::Op;
    out[3].value.callee = "add";
    out[3].value.args = {out[1].var, out[2].var};
    return out;
  }

  std::string weightName(const ir::GraphVar& v) const {
    auto it = weight_names_.find(v.get());
    return it != weight_names_.end() ? it->second : v->name;
  }

 public:
  std::map<const ir::GraphVarNode*, std::string> weight_names_;  // const var -> its weights tensor

 private:
  Constants& consts_;
  Stats& stats_;
  std::map<const ir::GraphVarNode*, ir::GraphVar> subst_;
  std::vector<ir::GraphVar> retired_;  // the vars subst_ maps, kept alive (their addresses are its keys)
};

}  // namespace

PassInfo makeCanonicalizePass() {
  PassInfo p;
  p.name = "canonicalize";
  p.summary =
      "Remove no-ops (aliases, identity reshape/cast/permute_dims, x+0, x*1, expand_dims of a squeeze), move "
      "squeezes after elementwise ops and reductions, fold batch_norm into "
      "conv2d/dense, make the other batch_norms a per-channel multiply and add, and drop conv2d taps that "
      "read only padding";
  p.run = [](ir::Module& m, const PassOptions&, PassContext& ctx) -> std::string {
    Stats stats;
    Constants consts(m, ctx);
    for (auto& fn : m.functions) {
      auto* g = std::get_if<ir::GraphFunc>(&fn);
      if (!g) continue;
      consts.scan(*g);
      Canonicalizer c(consts, stats);
      for (const auto& block : g->blocks)
        for (const auto& b : block.bindings)
          if (b.value.kind == ir::ValueKind::Const && !b.value.is_inline)
            c.weight_names_[b.var.get()] = b.value.weight;
      bool sunk = false;
      for (int round = 0; round < 16; ++round) {
        bool changed = c.removeNoOps(*g);
        changed = c.foldBatchNorms(*g) || changed;
        if (c.sinkSqueezes(*g)) changed = sunk = true;
        if (!changed) break;
      }
      if (sunk) Canonicalizer::dropUnusedSqueezes(*g);
      c.scaleBatchNorms(*g);
      c.dropPaddingTaps(*g);
    }
    if (!stats.any()) return "";
    return "removed " + std::to_string(stats.removed) + " no-op(s), composed " +
           std::to_string(stats.composed) + " permute_dims pair(s), folded " +
           std::to_string(stats.bn_folded) + " batch_norm(s) into a conv2d/dense, scaled " +
           std::to_string(stats.bn_scaled) + " other(s), squared " + std::to_string(stats.squared) +
           " power(x, 2) as x * x, dropped the taps that read only padding of " + std::to_string(stats.taps) +
           " conv2d(s), moved " + std::to_string(stats.sunk) +
           " squeeze(s) after an elementwise op or a reduction";
  };
  return p;
}

}  // namespace mlcc::transform
