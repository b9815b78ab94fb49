// Converters of the ONNX ops whose output shape depends on the input values
// (README: Data-dependent output shapes). mlcc compiles static shapes, so
// each is imported only where the values that decide the shape are known at
// import (constants, or inputs bound with --bind); otherwise it is refused,
// naming the input:
// - NonZero of a known tensor: its indices, a constant.
// - Compress with a known condition: a take of the selected indices (the
//   data itself may be computed at run time).
// - Unique of a known tensor: its four outputs (values or slices along an
//   axis, first indices, inverse indices, counts), constants, sorted or in
//   order of first occurrence.
// NonMaxSuppression stays refused.
#include <algorithm>
#include <numeric>

#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

const char* kWhy = "its output shape depends on the input values, and mlcc compiles static shapes";

const ir::Tensor& known(NodeCtx& c, size_t i, const std::string& what) {
  if (!c.in(i)->constant) c.failNotConstant(i, what + " must be known at import: " + kWhy);
  return *c.in(i)->constant;
}

ir::Tensor int64s(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return ir::Tensor::fromValues(ir::DType::i64, std::move(shape),
                                std::vector<double>(values.begin(), values.end()));
}

std::vector<ValuePtr> nonZero(NodeCtx& c) {
  const ir::Tensor& x = known(c, 0, "the input");
  const auto& shape = x.shape();
  if (shape.empty()) c.fail("a scalar input is not supported");
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.at(i) != 0) hits.push_back(i);
  const auto rank = static_cast<int64_t>(shape.size()), n = static_cast<int64_t>(hits.size());
  std::vector<int64_t> out(static_cast<size_t>(rank * n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (int64_t d = rank; d-- > 0;) {
      out[static_cast<size_t>(d * n + k)] = rest % shape[static_cast<size_t>(d)];
      rest /= shape[static_cast<size_t>(d)];
    }
  }
  return {c.im.constant(int64s({rank, n}, out), c.outName())};
}

std::vector<ValuePtr> compress(NodeCtx& c) {
  const ValuePtr& x = c.in(0);
  const ir::Tensor& cond = known(c, 1, "the condition");
  if (cond.rank() != 1) c.fail("the condition must be 1-D");
  const std::string n = c.outName();
  ValuePtr data = x;
  int64_t axis = 0;
  if (c.hasAttr("axis")) {
    axis = normalizedAxis(c, c.attrInt("axis", 0), static_cast<int64_t>(x->type.rank()));
  } else {
    data = reshapeTo(c, x, {dimProduct(x->type.shape, 0, x->type.rank())}, n + "_flat");
  }
  const int64_t len = staticDim(c, data->type.shape[static_cast<size_t>(axis)], "the compressed axis");
  if (cond.numel() > len) c.fail("the condition is longer than the compressed axis");
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < cond.numel(); ++i)
    if (cond.at(i) != 0) picks.push_back(i);
  auto idx = c.im.constant(int64s({static_cast<int64_t>(picks.size())}, picks), n + "_picks");
  return {c.im.emit("take", {data, idx}, {{"axis", axis}}, n)};
}

std::vector<ValuePtr> unique(NodeCtx& c) {
  const ir::Tensor& x = known(c, 0, "the input");
  const std::string n = c.outName();
  const auto& shape = x.shape();
  const auto rank = static_cast<int64_t>(shape.size());
  const bool flat = !c.hasAttr("axis");
  const int64_t axis = flat ? 0 : normalizedAxis(c, c.attrInt("axis", 0), rank);
  const bool sorted = c.attrInt("sorted", 1) != 0;
  // The items compared: elements (flat) or slices along the axis, each the
  // list of its elements in row-major order of the other axes.
  int64_t outer = 1, items = x.numel(), inner = 1;
  if (!flat) {
    items = shape[static_cast<size_t>(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<size_t>(d)];
  }
  auto element = [&](int64_t item, int64_t k) {  // element k of item
    return x.at(((k / inner) * items + item) * inner + k % inner);
  };
  const int64_t width = outer * inner;
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < width; ++k) {
      const double u = element(a, k), v = element(b, k);
      if (u != v) return u < v;
    }
    return false;
  };
  auto same = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
  std::vector<int64_t> order(static_cast<size_t>(items));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  // Groups of equal items in sorted order; each group's first index.
  std::vector<int64_t> first, counts, group_of(static_cast<size_t>(items));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !same(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
  }
  std::vector<int64_t> rank_of(first.size());  // output position of each group
  std::vector<int64_t> groups(first.size());
  std::iota(groups.begin(), groups.end(), 0);
  if (!sorted)
    std::stable_sort(groups.begin(), groups.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
  for (size_t p = 0; p < groups.size(); ++p)
    rank_of[static_cast<size_t>(groups[p])] = static_cast<int64_t>(p);
  const auto u = static_cast<int64_t>(groups.size());
  std::vector<int64_t> indices, out_counts, inverse;
  for (int64_t g : groups) {
    indices.push_back(first[static_cast<size_t>(g)]);
    out_counts.push_back(counts[static_cast<size_t>(g)]);
  }
  for (int64_t i = 0; i < items; ++i)
    inverse.push_back(rank_of[static_cast<size_t>(group_of[static_cast<size_t>(i)])]);
  std::vector<int64_t> y_shape = flat ? std::vector<int64_t>{u} : shape;
  if (!flat) y_shape[static_cast<size_t>(axis)] = u;
  std::vector<double> y(static_cast<size_t>(u * width));
  for (int64_t p = 0; p < u; ++p)
    for (int64_t k = 0; k < width; ++k)
      y[static_cast<size_t>(((k / inner) * u + p) * inner + k % inner)] =
          element(indices[static_cast<size_t>(p)], k);
  std::vector<ValuePtr> outs{c.im.constant(ir::Tensor::fromValues(x.dtype(), y_shape, y), n)};
  if (c.numOutputs() > 1) outs.push_back(c.im.constant(int64s({u}, indices), c.outName(1)));
  if (c.numOutputs() > 2) outs.push_back(c.im.constant(int64s({items}, inverse), c.outName(2)));
  if (c.numOutputs() > 3) outs.push_back(c.im.constant(int64s({u}, out_counts), c.outName(3)));
  return outs;
}

}  // namespace

void registerSelectionConverters(ConverterTable& t) {
  t["NonZero"] = [](NodeCtx& c) { return nonZero(c); };
  t["Compress"] = [](NodeCtx& c) { return compress(c); };
  t["Unique"] = [](NodeCtx& c) { return unique(c); };
}

}  // namespace mlcc::frontend::onnx_import
