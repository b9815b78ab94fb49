// Converters of the ai.onnx.ml domain's ops (registered as
// "ai.onnx.ml.<op>"), as compositions of graph ops:
// - Binarizer: 1 where x > threshold, else 0 (an integer x compares with
//   the floored threshold).
// - ArrayFeatureExtractor: x[..., indices] (the indices flattened; a 1-D x
//   gives [1, k]).
// - TreeEnsemble (opset 5): each tree, its structure known at import,
//   becomes nested `where`s over its nodes' comparisons, the leaves constant
//   per-target vectors; trees combine by the aggregate function (SUM and
//   AVERAGE: leaves add their weight to their target; MIN and MAX: the other
//   targets hold the float type's extreme, so that the elementwise min/max
//   over trees leaves a target no tree reaches at it, as the reference does).
//   Only post_transform NONE.
#include <cmath>
#include <limits>

#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

ValuePtr binarizer(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  const ir::DType t = x->type.dtype;
  double threshold = floatAttr(c.attrFloat("threshold", 0.0f));
  if (ir::isInt(t)) threshold = std::floor(threshold);  // x > 1.5 is x > 1 for integers (and -1.5: -2)
  auto above = c.im.emit("greater", {x, c.im.scalar(t, threshold, n + "_threshold")}, {}, n + "_above");
  return c.im.emit("where", {above, c.im.scalar(t, 1.0, n + "_one"), c.im.scalar(t, 0.0, n + "_zero")}, {},
                   n);
}

ValuePtr arrayFeatureExtractor(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const std::string n = c.outName();
  if (x->type.rank() == 0) c.fail("the input must have at least one dimension");
  ValuePtr idx = castTo(c, c.in(1), ir::DType::i64, n + "_indices");
  ir::PrimExpr k = dimProduct(idx->type.shape, 0, idx->type.rank());
  idx = reshapeTo(c, idx, {k}, n + "_flat");
  const auto axis = static_cast<int64_t>(x->type.rank()) - 1;
  ValuePtr y = c.im.emit("take", {x, idx}, {{"axis", axis}}, n + (x->type.rank() == 1 ? "_taken" : ""));
  return x->type.rank() == 1 ? reshapeTo(c, y, {ir::makeInt(1), k}, n) : y;
}

class TreeBuilder {
 public:
  explicit TreeBuilder(NodeCtx& c) : c_(c), n_(c.outName()) {
    const ValuePtr& x = c.in(0);
    if (x->type.rank() != 2) c.fail("the input must be [N, features]");
    if (!ir::isFloat(x->type.dtype)) c.fail("the input must be a float tensor");
    t_ = x->type.dtype;
    features_ = staticDim(c, x->type.shape[1], "the features");
    auto ints = [&](const char* name) { return c.attrInts(name); };
    feature_ = ints("nodes_featureids");
    true_node_ = ints("nodes_truenodeids");
    false_node_ = ints("nodes_falsenodeids");
    true_leaf_ = ints("nodes_trueleafs");
    false_leaf_ = ints("nodes_falseleafs");
    target_ = ints("leaf_targetids");
    tracks_nan_ = c.attrInts("nodes_missing_value_tracks_true", std::vector<int64_t>(feature_.size(), 0));
    splits_ = tensorValues("nodes_splits");
    modes_ = tensorValues("nodes_modes");
    weights_ = tensorValues("leaf_weights");
    if (c.hasAttr("membership_values")) members_ = tensorValues("membership_values");
    c.ignoreAttrs({"nodes_hitrates"});  // statistics for other tools
    const size_t nodes = feature_.size();
    for (const auto* v : {&true_node_, &false_node_, &true_leaf_, &false_leaf_, &tracks_nan_})
      if (v->size() != nodes) c.fail("the node attributes must all have one entry per node");
    if (splits_.size() != nodes || modes_.size() != nodes)
      c.fail("nodes_splits and nodes_modes need one entry per node");
    if (weights_.size() != target_.size())
      c.fail("leaf_weights and leaf_targetids must have one entry per leaf");
    targets_ = c.attrInt("n_targets", 0);
    if (targets_ < 1 || targets_ > 4096) c.fail("n_targets must be between 1 and 4096");
    for (int64_t id : target_)
      if (id < 0 || id >= targets_) c.fail("a leaf's target is out of range");
    // Each MEMBER node's set: the next run of membership_values up to a NaN.
    size_t at = 0;
    member_sets_.resize(nodes);
    for (size_t i = 0; i < nodes; ++i) {
      if (modes_[i] != 6) continue;
      while (at < members_.size() && !std::isnan(members_[at])) member_sets_[i].push_back(members_[at++]);
      if (at++ >= members_.size())
        c.fail("membership_values must hold one NaN-terminated set per MEMBER node");
    }
  }

  // The [N, targets] values of the tree at `root`, its leaves' vectors
  // holding `fill` at the other targets.
  ValuePtr tree(int64_t root, double fill) {
    fill_ = fill;
    const bool leaf = true_leaf_.at(index(root, feature_.size())) && false_leaf_[root] &&
                      true_node_[root] == false_node_[root];
    return leaf ? leafValue(true_node_[root]) : node(root, 0);
  }

  int64_t targets() const { return targets_; }

 private:
  std::vector<double> tensorValues(const char* name) {
    const auto* a = c_.attr(name);
    if (!a || !a->has_t()) c_.fail(std::string(name) + " must be a tensor attribute");
    ir::Tensor v = tensorFromOnnx(a->t(), c_.im.baseDir());
    std::vector<double> out(static_cast<size_t>(v.numel()));
    for (int64_t i = 0; i < v.numel(); ++i) out[static_cast<size_t>(i)] = v.at(i);
    return out;
  }

  size_t index(int64_t i, size_t size) const {
    if (i < 0 || static_cast<size_t>(i) >= size)
      c_.fail("a tree refers to node or leaf " + std::to_string(i) + ", which does not exist");
    return static_cast<size_t>(i);
  }

  ValuePtr leafValue(int64_t leaf) {
    const size_t l = index(leaf, weights_.size());
    std::vector<double> v(static_cast<size_t>(targets_), fill_);
    v[static_cast<size_t>(target_[l])] = weights_[l];
    return c_.im.constant(ir::Tensor::fromValues(t_, {targets_}, v), n_ + "_leaf" + std::to_string(leaf));
  }

  ValuePtr node(int64_t i, int depth) {
    const size_t k = index(i, feature_.size());
    if (depth > 64 || ++visited_ > 100000) c_.fail("a tree is deeper than 64 levels, or has a cycle");
    const std::string nn = n_ + "_node" + std::to_string(i) + "_" + std::to_string(visited_);
    const int64_t f = feature_[k];
    if (f < 0 || f >= features_) c_.fail("a node's feature is out of range");
    auto x = c_.im.emit(
        "take",
        {c_.in(0),
         c_.im.constant(ir::Tensor::fromValues(ir::DType::i64, {1}, {static_cast<double>(f)}), nn + "_f")},
        {{"axis", int64_t{1}}}, nn + "_x");  // [N, 1]
    auto split = [&](double v) { return c_.im.scalar(t_, v, nn + "_split"); };
    ValuePtr cond;
    switch (static_cast<int>(modes_[k])) {
      case 0: cond = c_.im.emit("less_equal", {x, split(splits_[k])}, {}, nn + "_le"); break;
      case 1: cond = c_.im.emit("less", {x, split(splits_[k])}, {}, nn + "_lt"); break;
      case 2: cond = c_.im.emit("greater_equal", {x, split(splits_[k])}, {}, nn + "_ge"); break;
      case 3: cond = c_.im.emit("greater", {x, split(splits_[k])}, {}, nn + "_gt"); break;
      case 4: cond = c_.im.emit("equal", {x, split(splits_[k])}, {}, nn + "_eq"); break;
      case 5: cond = c_.im.emit("not_equal", {x, split(splits_[k])}, {}, nn + "_ne"); break;
      case 6:
        for (size_t m = 0; m < member_sets_[k].size(); ++m) {
          auto eq = c_.im.emit("equal", {x, split(member_sets_[k][m])}, {}, nn + "_in" + std::to_string(m));
          cond = cond ? c_.im.emit("logical_or", {cond, eq}, {}, nn + "_or" + std::to_string(m)) : eq;
        }
        if (!cond)  // an empty set: never true
          cond = c_.im.emit("logical_and",
                            {c_.im.emit("isnan", {x}, {}, nn + "_isnan"),
                             c_.im.scalar(ir::DType::boolean, 0.0, nn + "_no")},
                            {}, nn + "_none");
        break;
      default: c_.fail("node mode " + std::to_string(static_cast<int>(modes_[k])) + " is not one of 0 to 6");
    }
    if (tracks_nan_[k])
      cond = c_.im.emit("logical_or", {cond, c_.im.emit("isnan", {x}, {}, nn + "_nan")}, {}, nn + "_or_nan");
    auto branch = [&](int64_t next, bool leaf) { return leaf ? leafValue(next) : node(next, depth + 1); };
    ValuePtr yes = branch(true_node_[k], true_leaf_[k] != 0);
    ValuePtr no = branch(false_node_[k], false_leaf_[k] != 0);
    return c_.im.emit("where", {cond, yes, no}, {}, nn);
  }

  NodeCtx& c_;
  std::string n_;
  ir::DType t_ = ir::DType::f32;
  int64_t features_ = 0, targets_ = 0;
  std::vector<int64_t> feature_, true_node_, false_node_, true_leaf_, false_leaf_, target_, tracks_nan_;
  std::vector<double> splits_, modes_, weights_, members_;
  std::vector<std::vector<double>> member_sets_;
  double fill_ = 0;
  int visited_ = 0;
};

ValuePtr treeEnsemble(NodeCtx& c) {
  const std::string n = c.outName();
  if (c.attrInt("post_transform", 0) != 0) c.fail("post_transform other than NONE is not supported yet");
  const int64_t aggregate = c.attrInt("aggregate_function", 1);  // 0 AVERAGE, 1 SUM, 2 MIN, 3 MAX
  if (aggregate < 0 || aggregate > 3) c.fail("aggregate_function must be 0 to 3");
  TreeBuilder trees(c);
  const std::vector<int64_t> roots = c.attrInts("tree_roots");
  if (roots.empty()) c.fail("tree_roots is empty");
  const ir::DType t = c.in(0)->type.dtype;
  const bool wide = t == ir::DType::f64;
  const double extreme =
      aggregate == 2 ? (wide ? std::numeric_limits<double>::max() : std::numeric_limits<float>::max())
                     : (wide ? std::numeric_limits<double>::lowest() : std::numeric_limits<float>::lowest());
  const double fill = aggregate <= 1 ? 0.0 : extreme;
  const char* combine = aggregate <= 1 ? "add" : aggregate == 2 ? "minimum" : "maximum";
  ValuePtr y;
  for (size_t r = 0; r < roots.size(); ++r) {
    ValuePtr v = trees.tree(roots[r], fill);
    y = y ? c.im.emit(combine, {y, v}, {}, n + "_trees" + std::to_string(r)) : v;
  }
  if (aggregate == 0)
    y = c.im.emit("divide", {y, c.im.scalar(t, static_cast<double>(roots.size()), n + "_trees")}, {},
                  n + "_average");
  if (y->type.rank() == 2) return c.im.emitAlias(y, n);
  // Every tree is one leaf: the [targets] values, for every row.
  const std::vector<ir::PrimExpr> shape{c.in(0)->type.shape[0], ir::makeInt(trees.targets())};
  return c.im.emit("broadcast_to", {y}, {{"shape", dimsAttr(shape)}}, n);
}

}  // namespace

void registerMlConverters(ConverterTable& t) {
  t["ai.onnx.ml.Binarizer"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {binarizer(c)}; };
  t["ai.onnx.ml.ArrayFeatureExtractor"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {arrayFeatureExtractor(c)};
  };
  t["ai.onnx.ml.TreeEnsemble"] = [](NodeCtx& c) -> std::vector<ValuePtr> { return {treeEnsemble(c)}; };
}

}  // namespace mlcc::frontend::onnx_import
