// fuse-layer-norm: a layer norm written out op by op, as PyTorch exports
// LayerNorm below opset 17,
//   add(multiply(divide(d, sqrt(add(mean(d * d), eps))), gamma), beta)
// with d = x - mean(x), both means over the same trailing axes keeping them
// (d * d: canonicalize makes it of power(d, 2), so run it first), eps a
// constant scalar and gamma, beta of x's normalized shape (either operand
// order of add and multiply), becomes layer_norm(x, gamma, beta, axis, epsilon): one
// prim func instead of four. The final add keeps its variable; the pieces
// left unused go to dead-code-elimination.
//
// Not in the default pipelines: on the CPU it measured neutral (BERT,
// ViT, the Transformer), and on the GPU the cuda GeneralReduction rule
// reduces each row in one thread, which made BERT's 256-wide rows slower
// than the four kernels (its kernels 0.57 against 0.35 ms on an H200) while
// the Transformer's 64-wide ones got faster (0.125 against 0.22 ms a call).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../pass_registry.h"
#include "constants.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ops/op.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

using Defs = std::map<const ir::GraphVarNode*, const ir::GraphValue*>;

// The op binding value of `v` when it calls `op`, else null.
const ir::GraphValue* defOf(const Defs& defs, const ir::GraphVar& v, const char* op) {
  auto it = defs.find(v.get());
  return it != defs.end() && it->second->callee == op ? it->second : nullptr;
}

// The first reduced axis of a mean over trailing axes that keeps them
// (axes [first, rank)), else -1.
int64_t trailingMeanAxis(const ir::GraphValue& mean, size_t rank) {
  if (mean.args.size() != 1 || !ops::hasAttr(mean.attrs, "keepdims") ||
      !ops::attrBool(mean.attrs, "keepdims"))
    return -1;
  std::vector<int64_t> axes;
  if (ops::hasAttr(mean.attrs, "axes")) {
    for (int64_t a : ops::attrInts(mean.attrs, "axes"))
      axes.push_back(a < 0 ? a + static_cast<int64_t>(rank) : a);
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || axes.back() != static_cast<int64_t>(rank) - 1) return -1;
  for (size_t i = 0; i + 1 < axes.size(); ++i)
    if (axes[i] + 1 != axes[i + 1]) return -1;
  return axes.front();
}

// layer_norm(x, gamma, beta) for the binding `b` when it is the final add
// of a written-out layer norm (see the header).
std::optional<ir::GraphValue> layerNormOf(const ir::Binding& b, const Defs& defs, Constants& consts) {
  const ir::GraphValue& v = b.value;
  if (v.kind != ir::ValueKind::Op || v.callee != "add" || v.args.size() != 2) return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    const ir::GraphValue* scaled = defOf(defs, v.args[k], "multiply");
    if (!scaled || scaled->args.size() != 2) continue;
    for (size_t j = 0; j < 2; ++j) {
      const ir::GraphValue* div = defOf(defs, scaled->args[j], "divide");
      if (!div || div->args.size() != 2) continue;
      const ir::GraphVar &d = div->args[0], &gamma = scaled->args[1 - j], &beta = v.args[1 - k];
      const ir::GraphValue* root = defOf(defs, div->args[1], "sqrt");
      const ir::GraphValue* var_eps =
          root && root->args.size() == 1 ? defOf(defs, root->args[0], "add") : nullptr;
      if (!var_eps || var_eps->args.size() != 2) continue;
      for (size_t e = 0; e < 2; ++e) {
        const ir::GraphVar& eps = var_eps->args[e];
        const ir::GraphValue* var = defOf(defs, var_eps->args[1 - e], "mean");
        const ir::Tensor* eps_value = consts.isConstant(eps.get()) ? consts.value(eps.get()) : nullptr;
        if (!var || var->args.size() != 1 || !eps_value || eps_value->numel() != 1) continue;
        const ir::GraphValue* sq = defOf(defs, var->args[0], "multiply");
        const ir::GraphValue* dev = defOf(defs, d, "subtract");
        if (!sq || sq->args.size() != 2 || sq->args[0] != d || sq->args[1] != d || !dev ||
            dev->args.size() != 2)
          continue;
        const ir::GraphVar& x = dev->args[0];
        const ir::GraphValue* mu = defOf(defs, dev->args[1], "mean");
        if (!mu || mu->args.size() != 1 || mu->args[0] != x) continue;
        const ir::Type& xt = x->type;
        if (!xt.isTensor() || !ir::isFloat(xt.dtype) || !sameTensorType(b.var->type, xt) ||
            !sameTensorType(d->type, xt))
          continue;
        const int64_t first = trailingMeanAxis(*mu, xt.rank());
        if (first < 0 || trailingMeanAxis(*var, xt.rank()) != first) continue;
        // gamma and beta of x's normalized shape.
        std::vector<ir::PrimExpr> norm_shape(xt.shape.begin() + first, xt.shape.end());
        const ir::Type want = ir::Type::tensor(xt.dtype, norm_shape);
        if (!sameTensorType(gamma->type, want) || !sameTensorType(beta->type, want)) continue;
        ir::GraphValue ln;
        ln.kind = ir::ValueKind::Op;
        ln.callee = "layer_norm";
        ln.args = {x, gamma, beta};
        ln.attrs["axis"] = ir::AttrValue(first);
        // 1e-05, not the f32 constant's 9.99999974737875e-06.
        ln.attrs["epsilon"] =
            ir::AttrValue(ir::detail::shortestDecimalValue(eps_value->at(0), eps_value->dtype()));
        return ln;
      }
    }
  }
  return std::nullopt;
}

// Rewrites each written-out layer norm of `f` (see the header); returns how many.
int fuseLayerNorms(ir::GraphFunc& f, Constants& consts) {
  int fused = 0;
  Defs defs;  // op bindings seen so far
  for (auto& block : f.blocks)
    for (auto& b : block.bindings) {
      if (auto ln = layerNormOf(b, defs, consts)) {
        b.value = std::move(*ln);
        ++fused;
      }
      if (b.value.kind == ir::ValueKind::Op) defs[b.var.get()] = &b.value;
    }
  return fused;
}

}  // namespace

PassInfo makeFuseLayerNormPass() {
  PassInfo p;
  p.name = "fuse-layer-norm";
  p.summary =
      "Replace layer norms written out op by op (mean, subtract, square, mean, add, sqrt, divide, "
      "multiply, add) by layer_norm";
  p.run = [](ir::Module& m, const PassOptions&, PassContext& ctx) -> std::string {
    Constants consts(m, ctx);
    int fused = 0;
    for (auto& fn : m.functions)
      if (auto* g = std::get_if<ir::GraphFunc>(&fn)) {
        consts.scan(*g);
        fused += fuseLayerNorms(*g, consts);
      }
    return fused ? "fused " + std::to_string(fused) + " layer norm(s)" : "";
  };
  return p;
}

}  // namespace mlcc::transform
