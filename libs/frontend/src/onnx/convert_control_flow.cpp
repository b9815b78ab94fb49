// Converters of the ONNX control-flow ops, for the static graphs mlcc
// compiles: everything that decides the control flow must be known at
// import, and the subgraphs are imported in place (their nodes see the
// outer values; their own names are local):
// - If: the branch its condition selects.
// - Loop: the body once per iteration, unrolled; the trip count and the
//   condition (given, and computed by each iteration) must be constants.
// - Scan: the body once per element of the scanned axis, unrolled, each scan
//   input's slice taken (forward or reversed), the scan outputs stacked; the
//   opset-8 form (a batch axis first, optional sequence lengths that must all
//   be the full length) loops over the batch too.
// A loop of more than kMaxUnrolledIterations iterations is refused.
#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

constexpr int64_t kMaxUnrolledIterations = 4096;

const onnx::GraphProto& body(NodeCtx& c, const char* name) {
  const auto* a = c.attr(name);
  if (!a || !a->has_g()) c.fail(std::string("the '") + name + "' attribute must be a graph");
  return a->g();
}

std::vector<ValuePtr> ifBranch(NodeCtx& c) {
  const ValuePtr& cond = c.in(0);
  if (!cond->constant)
    c.failNotConstant(0, "the condition must be known at import (mlcc compiles one branch)");
  if (cond->constant->numel() != 1) c.fail("the condition must hold one value");
  const auto& then_branch = body(c, "then_branch");
  const auto& else_branch = body(c, "else_branch");
  const auto& branch = cond->constant->at(0) != 0 ? then_branch : else_branch;
  std::vector<ValuePtr> outs = c.im.importSubgraph(branch);
  if (outs.size() != c.numOutputs())
    c.fail("the branch has " + std::to_string(outs.size()) + " outputs; the node " +
           std::to_string(c.numOutputs()));
  return outs;
}

bool constantTrue(NodeCtx& c, const ValuePtr& v, const std::string& what) {
  if (!v->constant) c.fail(what + " must be known at import (mlcc unrolls the loop)");
  if (v->constant->numel() != 1) c.fail(what + " must hold one value");
  return v->constant->at(0) != 0;
}

// Loop (opset 1, 11, 13, 16, 19): inputs M, cond, then the loop-carried
// values; body(iteration, cond, carried...) -> (cond, carried..., scan
// outputs...); the node's outputs are the final carried values, then each
// scan output stacked along a new first axis.
std::vector<ValuePtr> loop(NodeCtx& c) {
  const onnx::GraphProto& g = body(c, "body");
  int64_t trips = kMaxUnrolledIterations + 1;  // no trip count: the condition ends it
  if (c.hasInput(0)) {
    if (!c.in(0)->constant)
      c.failNotConstant(0, "the trip count must be known at import (mlcc unrolls the loop)");
    trips = c.constInts(0, "trip count").at(0);
  }
  bool go = true;
  if (c.hasInput(1)) {
    if (!c.in(1)->constant)
      c.failNotConstant(1, "the condition must be known at import (mlcc unrolls the loop)");
    go = constantTrue(c, c.in(1), "the condition");
  }
  std::vector<ValuePtr> carried;
  for (size_t i = 2; i < c.numInputs(); ++i) carried.push_back(c.in(i));
  if (static_cast<size_t>(g.input_size()) != 2 + carried.size() ||
      static_cast<size_t>(g.output_size()) < 1 + carried.size())
    c.fail("the body has " + std::to_string(g.input_size()) + " inputs and " +
           std::to_string(g.output_size()) + " outputs for " + std::to_string(carried.size()) +
           " loop-carried value(s)");
  const size_t n_scan = static_cast<size_t>(g.output_size()) - 1 - carried.size();
  std::vector<std::vector<ValuePtr>> scans(n_scan);
  const std::string n = c.outName(0);
  int64_t t = 0;
  for (; t < trips && go; ++t) {
    if (t >= kMaxUnrolledIterations)
      c.fail("the loop runs more than " + std::to_string(kMaxUnrolledIterations) +
             " iterations (mlcc unrolls it at import)");
    std::vector<ValuePtr> ins{c.im.scalar(ir::DType::i64, static_cast<double>(t), n + "_iter"),
                              c.im.scalar(ir::DType::boolean, 1.0, n + "_cond")};
    ins.insert(ins.end(), carried.begin(), carried.end());
    std::vector<ValuePtr> outs = c.im.importSubgraph(g, ins);
    go = constantTrue(c, outs[0], "the condition the body computes");
    for (size_t i = 0; i < carried.size(); ++i) carried[i] = outs[1 + i];
    for (size_t k = 0; k < n_scan; ++k) scans[k].push_back(outs[1 + carried.size() + k]);
  }
  if (t == 0 && n_scan > 0) c.fail("the loop runs no iteration: its scan outputs would be empty");
  std::vector<ValuePtr> results = carried;
  for (size_t k = 0; k < n_scan; ++k) results.push_back(stack(c, scans[k], 0, c.outName(carried.size() + k)));
  return results;
}

// The scan of opset 9+: `states` and `inputs` (scan inputs) as the body sees
// them, scanned along `in_axes`; returns the final states, then each scan
// output stacked along its output axis.
std::vector<ValuePtr> scanOnce(NodeCtx& c, const onnx::GraphProto& g, std::vector<ValuePtr> states,
                               const std::vector<ValuePtr>& inputs, const std::vector<int64_t>& in_axes,
                               const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                               const std::vector<int64_t>& out_dirs, const std::string& n) {
  int64_t length = -1;
  for (size_t j = 0; j < inputs.size(); ++j) {
    const int64_t len = staticDim(c, inputs[j]->type.shape[in_axes[j]], "the scanned axis");
    if (length >= 0 && len != length)
      c.fail("the scan inputs have different lengths along their scanned axes");
    length = len;
  }
  if (length > kMaxUnrolledIterations)
    c.fail("the scan runs " + std::to_string(length) + " iterations; mlcc unrolls at most " +
           std::to_string(kMaxUnrolledIterations));
  if (length <= 0) c.fail("the scan has no iteration");
  const size_t n_out = static_cast<size_t>(g.output_size()) - states.size();
  std::vector<std::vector<ValuePtr>> scans(n_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<ValuePtr> ins = states;
    for (size_t j = 0; j < inputs.size(); ++j) {
      const int64_t at = in_dirs[j] ? length - 1 - t : t;
      ins.push_back(
          item(c, inputs[j], in_axes[j], at, n + "_in" + std::to_string(j) + "_" + std::to_string(at)));
    }
    std::vector<ValuePtr> outs = c.im.importSubgraph(g, ins);
    for (size_t i = 0; i < states.size(); ++i) states[i] = outs[i];
    for (size_t k = 0; k < n_out; ++k) scans[k].push_back(outs[states.size() + k]);
  }
  std::vector<ValuePtr> results = states;
  for (size_t k = 0; k < n_out; ++k) {
    if (k < out_dirs.size() && out_dirs[k]) std::reverse(scans[k].begin(), scans[k].end());
    const auto rank = static_cast<int64_t>(scans[k][0]->type.shape.size()) + 1;
    const int64_t axis = normalizedAxis(c, k < out_axes.size() ? out_axes[k] : 0, rank);
    results.push_back(stack(c, scans[k], axis, n + "_out" + std::to_string(k)));
  }
  return results;
}

std::vector<ValuePtr> scan(NodeCtx& c) {
  const onnx::GraphProto& g = body(c, "body");
  const int64_t m = c.attrInt("num_scan_inputs", -1);
  const size_t first = c.opset < 9 ? 1 : 0;  // opset 8: sequence_lens first
  if (m <= 0 || static_cast<size_t>(m) > c.numInputs() - first)
    c.fail("num_scan_inputs must be between 1 and the number of inputs");
  const size_t n_states = c.numInputs() - first - static_cast<size_t>(m);
  std::vector<ValuePtr> states, inputs;
  for (size_t i = 0; i < n_states; ++i) states.push_back(c.in(first + i));
  for (size_t j = 0; j < static_cast<size_t>(m); ++j) inputs.push_back(c.in(first + n_states + j));
  if (static_cast<size_t>(g.input_size()) != n_states + inputs.size() ||
      static_cast<size_t>(g.output_size()) < n_states)
    c.fail("the body's inputs and outputs do not fit " + std::to_string(n_states) + " state(s) and " +
           std::to_string(m) + " scan input(s)");
  const size_t n_out = static_cast<size_t>(g.output_size()) - n_states;
  auto perInput = [&](const char* name, size_t count) {
    std::vector<int64_t> v = c.attrInts(name, std::vector<int64_t>(count, 0));
    if (v.size() != count) c.fail(std::string(name) + " must have " + std::to_string(count) + " entries");
    return v;
  };
  const std::string n = c.outName(0);
  if (c.opset >= 9) {
    std::vector<int64_t> in_axes = perInput("scan_input_axes", inputs.size());
    for (size_t j = 0; j < inputs.size(); ++j)
      in_axes[j] = normalizedAxis(c, in_axes[j], static_cast<int64_t>(inputs[j]->type.shape.size()));
    return scanOnce(c, g, states, inputs, in_axes, perInput("scan_input_directions", inputs.size()),
                    perInput("scan_output_axes", n_out), perInput("scan_output_directions", n_out), n);
  }
  // Opset 8: every input has a batch axis first, and the scanned axis next.
  const std::vector<int64_t> dirs = perInput("directions", inputs.size());
  std::vector<ValuePtr> all = states;
  all.insert(all.end(), inputs.begin(), inputs.end());
  int64_t batch = -1;
  for (const auto& v : all) {
    if (v->type.shape.empty()) c.fail("opset-8 Scan inputs have a batch axis first");
    const int64_t b = staticDim(c, v->type.shape[0], "the batch axis");
    if (batch >= 0 && b != batch) c.fail("the inputs have different batch sizes");
    batch = b;
  }
  if (inputs[0]->type.shape.size() < 2) c.fail("the scan inputs have a batch axis and a sequence axis");
  const int64_t length = staticDim(c, inputs[0]->type.shape[1], "the sequence axis");
  if (c.hasInput(0)) {
    if (!c.in(0)->constant)
      c.failNotConstant(0, "the sequence lengths must be known at import (mlcc unrolls the scan)");
    for (int64_t len : c.constInts(0, "sequence_lens"))
      if (len != length)
        c.fail("a sequence length of " + std::to_string(len) + " (not the full " + std::to_string(length) +
               ") is not supported");
  }
  std::vector<std::vector<ValuePtr>> per_batch(n_states + n_out);
  for (int64_t b = 0; b < batch; ++b) {
    const std::string nb = n + "_b" + std::to_string(b);
    std::vector<ValuePtr> bs, bi;
    for (size_t i = 0; i < states.size(); ++i)
      bs.push_back(item(c, states[i], 0, b, nb + "_s" + std::to_string(i)));
    for (size_t j = 0; j < inputs.size(); ++j)
      bi.push_back(item(c, inputs[j], 0, b, nb + "_x" + std::to_string(j)));
    std::vector<ValuePtr> outs = scanOnce(c, g, bs, bi, std::vector<int64_t>(inputs.size(), 0), dirs,
                                          std::vector<int64_t>(n_out, 0), std::vector<int64_t>(n_out, 0), nb);
    for (size_t k = 0; k < outs.size(); ++k) per_batch[k].push_back(outs[k]);
  }
  std::vector<ValuePtr> results;
  for (size_t k = 0; k < per_batch.size(); ++k) results.push_back(stack(c, per_batch[k], 0, c.outName(k)));
  return results;
}

}  // namespace

void registerControlFlowConverters(ConverterTable& t) {
  t["If"] = [](NodeCtx& c) { return ifBranch(c); };
  t["Loop"] = [](NodeCtx& c) { return loop(c); };
  t["Scan"] = [](NodeCtx& c) { return scan(c); };
}

}  // namespace mlcc::frontend::onnx_import
