// Converters of the ONNX loss ops, as compositions of graph ops:
// NegativeLogLikelihoodLoss (gather_elements of the target classes, class
// weights through take, ignore_index as a mask) and SoftmaxCrossEntropyLoss
// (log_softmax over the class axis, then the same negative log-likelihood).
#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

// ONNX NegativeLogLikelihoodLoss of log-probabilities `logp` [N, C, d...]
// and class indices `target` [N, d...], with optional class weights [C].
ValuePtr negativeLogLikelihood(NodeCtx& c, const ValuePtr& logp, const ValuePtr& target,
                               const ValuePtr& weight, const std::string& n) {
  const std::string reduction = c.attrStr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    c.fail("reduction '" + reduction + "' is not one of none, sum, mean");
  if (logp->type.rank() < 2) c.fail("the input must have a batch and a class axis (rank >= 2)");
  if (target->type.rank() + 1 != logp->type.rank())
    c.fail("the target must have one axis fewer than the input (no class axis)");
  const ir::DType ft = logp->type.dtype, it = target->type.dtype;
  // Ignored positions read class 0 (any index in range) and weigh 0.
  ValuePtr index = target, keep;
  if (c.hasAttr("ignore_index")) {
    auto ignored = c.im.scalar(it, static_cast<double>(c.attrInt("ignore_index", 0)), n + "_ignore_index");
    auto kept = c.im.emit("not_equal", {target, ignored}, {}, n + "_kept");
    index = c.im.emit("where", {kept, target, c.im.scalar(it, 0.0, n + "_class0")}, {}, n + "_index");
    keep = c.im.emit("cast", {kept}, {{"dtype", std::string(ir::dtypeName(ft))}}, n + "_keep");
  }
  auto axis1 = ir::AttrValue::ints({1});
  auto picked =
      c.im.emit("gather_elements", {logp, c.im.emit("expand_dims", {index}, {{"axes", axis1}}, n + "_idx")},
                {{"axis", int64_t{1}}}, n + "_picked");
  ValuePtr loss =
      c.im.emit("negative", {c.im.emit("squeeze", {picked}, {{"axes", axis1}}, n + "_logp")}, {}, n + "_nll");
  ValuePtr w = keep;
  if (weight) {
    w = c.im.emit("take", {weight, index}, {{"axis", int64_t{0}}}, n + "_w");
    if (keep) w = c.im.emit("multiply", {w, keep}, {}, n + "_wkept");
  }
  if (w) loss = c.im.emit("multiply", {loss, w}, {}, n + "_weighted");
  if (reduction == "none") return loss;
  auto total = c.im.emit("sum", {loss}, {}, reduction == "sum" ? n : n + "_total");
  if (reduction == "sum") return total;
  // mean: the sum over the sum of the applied weights (the count when none).
  if (!w) return c.im.emit("mean", {loss}, {}, n);
  return c.im.emit("divide", {total, c.im.emit("sum", {w}, {}, n + "_wsum")}, {}, n);
}

}  // namespace

void registerLossConverters(ConverterTable& t) {
  t["NegativeLogLikelihoodLoss"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {negativeLogLikelihood(c, c.in(0), c.in(1), c.hasInput(2) ? c.in(2) : nullptr, c.outName())};
  };
  t["SoftmaxCrossEntropyLoss"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const std::string n = c.outName();
    auto logp = c.im.emit("log_softmax", {c.in(0)}, {{"axis", int64_t{1}}}, c.outName(1));
    return {negativeLogLikelihood(c, logp, c.in(1), c.hasInput(2) ? c.in(2) : nullptr, n), logp};
  };
}

}  // namespace mlcc::frontend::onnx_import
