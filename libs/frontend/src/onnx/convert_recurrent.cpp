// Converters of the ONNX recurrent ops RNN, GRU and LSTM. Per direction, the
// input projection of every step is one dense over [T * B, I] (plus the
// biases that add outside the recurrence); the steps themselves are one
// `recurrence` op (ops/recurrence.cpp), which legalizes to a serial loop over
// the time steps. Directions stack into Y [T, dirs, B, H] (layout 1:
// [B, T, dirs, H]), Y_h and Y_c [dirs, B, H] (layout 1: [B, dirs, H]).
// Absent optional inputs become zeros (states, peepholes, biases); absent
// sequence_lens, the full length. With sequence_lens, the steps past a batch
// entry's length keep its state and output zeros (the reverse direction thus
// starts at its last valid step).
#include <algorithm>

#include "convert_util.h"
#include "mlcc/ops/shape.h"

namespace mlcc::frontend::onnx_import {

namespace {

using ir::PrimExpr;

enum class Cell { Rnn, Gru, Lstm };

int64_t gatesOf(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4; }
// f; f, g; f, g, h.
size_t activationsOf(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3; }

// One activation function of the `activations` attribute, with its alpha and beta.
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

// The activations per direction (f; f, g; f, g, h), with alpha and beta
// consumed in order by the functions that take them (as ONNX Runtime does).
std::vector<Activation> activations(NodeCtx& c, Cell cell, int64_t dirs) {
  const size_t per = activationsOf(cell);
  std::vector<std::string> names;
  if (const auto* a = c.attr("activations")) {
    for (const auto& s : a->strings()) names.push_back(s);
    if (names.size() != per * static_cast<size_t>(dirs))
      c.fail(std::to_string(names.size()) + " activations given; " + std::to_string(per * dirs) +
             " expected (" + std::to_string(per) + " per direction)");
  } else {
    const std::vector<std::string> defaults = cell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                              : cell == Cell::Gru
                                                  ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                  : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  std::vector<float> alphas, betas;
  if (const auto* a = c.attr("activation_alpha")) alphas.assign(a->floats().begin(), a->floats().end());
  if (const auto* b = c.attr("activation_beta")) betas.assign(b->floats().begin(), b->floats().end());
  size_t ai = 0, bi = 0;
  auto next = [&](std::vector<float>& v, size_t& i, float def) { return i < v.size() ? v[i++] : def; };
  std::vector<Activation> out;
  for (const std::string& n : names) {
    Activation a{n};
    if (n == "LeakyRelu") a.alpha = next(alphas, ai, 0.01f);
    if (n == "ThresholdedRelu" || n == "Elu") a.alpha = next(alphas, ai, 1.0f);
    if (n == "HardSigmoid") a.alpha = next(alphas, ai, 0.2f), a.beta = next(betas, bi, 0.5f);
    if (n == "Affine") a.alpha = next(alphas, ai, 1.0f), a.beta = next(betas, bi, 0.0f);
    if (n == "ScaledTanh") a.alpha = next(alphas, ai, 1.0f), a.beta = next(betas, bi, 1.0f);
    out.push_back(a);
  }
  return out;
}

// The recurrence op's name of an ONNX activation function.
std::string activationOp(NodeCtx& c, const std::string& onnx) {
  static const std::pair<const char*, const char*> kNames[] = {{"Sigmoid", "sigmoid"},
                                                               {"Tanh", "tanh"},
                                                               {"Relu", "relu"},
                                                               {"Softsign", "softsign"},
                                                               {"Softplus", "softplus"},
                                                               {"LeakyRelu", "leaky_relu"},
                                                               {"Elu", "elu"},
                                                               {"HardSigmoid", "hard_sigmoid"},
                                                               {"Affine", "affine"},
                                                               {"ScaledTanh", "scaled_tanh"},
                                                               {"ThresholdedRelu", "thresholded_relu"}};
  for (const auto& [from, to] : kNames)
    if (onnx == from) return to;
  c.fail("activation '" + onnx + "' is not supported");
}

struct DirectionResult {
  ValuePtr y;  // [T, B, H]
  ValuePtr h, cell;
};

std::vector<ValuePtr> recurrent(NodeCtx& c, Cell cell) {
  const int64_t G = gatesOf(cell);
  const std::string n = c.outName(0);  // the intermediates' prefix
  const ir::DType t = c.in(0)->type.dtype;
  ValuePtr x = c.in(0);
  if (x->type.rank() != 3) c.fail("X must have rank 3, not " + std::to_string(x->type.rank()));
  const int64_t layout = c.attrInt("layout", 0);
  if (layout != 0 && layout != 1) c.fail("layout must be 0 or 1");
  if (layout == 1) x = c.im.emit("permute_dims", {x}, {{"axes", ir::AttrValue::ints({1, 0, 2})}}, n + "_x");
  const PrimExpr T = x->type.shape[0], B = x->type.shape[1], I = x->type.shape[2];
  if (int64_t steps; ir::asConstInt(T, &steps) && steps == 0) c.fail("an empty sequence is not supported");
  if (t != ir::DType::f32) c.fail("X is " + std::string(ir::dtypeName(t)) + "; only f32 is supported yet");
  const ValuePtr &w = c.in(1), &r = c.in(2);
  if (w->type.rank() != 3 || r->type.rank() != 3) c.fail("W and R must have rank 3");
  const int64_t H = staticDim(c, r->type.shape[2], "the hidden size");
  checkComputedSize({G, H}, "the gates' rows");  // also keeps G * H from overflowing
  if (c.attrInt("hidden_size", H) != H)
    c.fail("hidden_size " + std::to_string(c.attrInt("hidden_size", H)) + " differs from R's " +
           std::to_string(H));
  const std::string direction = c.attrStr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail("unknown direction '" + direction + "'");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (staticDim(c, w->type.shape[0], "W's directions") != dirs ||
      staticDim(c, w->type.shape[1], "W's gates") != G * H)
    c.fail("W must be [" + std::to_string(dirs) + ", " + std::to_string(G * H) + ", input_size]");
  const std::vector<Activation> acts = activations(c, cell, dirs);
  const bool has_clip = c.hasAttr("clip");
  const float clip = c.attrFloat("clip", 0.0f);
  if (has_clip && !(clip > 0)) c.fail("clip must be positive");
  const bool linear_before_reset = cell == Cell::Gru && c.attrInt("linear_before_reset", 0) != 0;
  const bool input_forget = cell == Cell::Lstm && c.attrInt("input_forget", 0) != 0;
  const ValuePtr bias = c.hasInput(3) ? c.in(3) : nullptr;
  const ValuePtr h0 = c.hasInput(5) ? c.in(5) : nullptr;
  const ValuePtr c0 = cell == Cell::Lstm && c.hasInput(6) ? c.in(6) : nullptr;
  const ValuePtr peep = cell == Cell::Lstm && c.hasInput(7) ? c.in(7) : nullptr;

  auto zeros = [&](std::vector<PrimExpr> shape, const std::string& name) {
    return filled(c, t, 0.0, shape, name);
  };
  const PrimExpr Hd = ir::makeInt(H);
  // The sequence lengths as i64 [B]; absent: no entry ends early.
  ValuePtr lens;
  if (c.hasInput(4)) {
    lens = c.im.emit("cast", {c.in(4)}, {{"dtype", std::string("i64")}}, n + "_lens");
  } else {
    int64_t steps;
    const double all =
        ir::asConstInt(T, &steps) ? static_cast<double>(steps) : 4611686018427387904.0;  // 2^62
    lens = filled(c, ir::DType::i64, all, {B}, n + "_lens");
  }

  std::vector<DirectionResult> results;
  for (int64_t d = 0; d < dirs; ++d) {
    const std::string dn = n + "_d" + std::to_string(d);
    ValuePtr wd = item(c, w, 0, d, dn + "_w");
    ValuePtr rt =
        c.im.emit("permute_dims", {item(c, r, 0, d, dn + "_r")}, {{"axes", ir::AttrValue::ints({1, 0})}},
                  dn + "_rt");  // [H, G*H]: a step's products read its rows
    // Input projection of every step, with the biases that add outside the recurrence: a dense over
    // [T * B, I] (static lengths: the packed dense kernels), else a matmul over [T, B, I].
    int64_t known;
    const bool static_steps = ir::asConstInt(T, &known) && ir::asConstInt(B, &known);
    ValuePtr xw =
        static_steps
            ? c.im.emit("dense", {reshapeTo(c, x, {ops::dimMul(T, B), I}, dn + "_x2d"), wd}, {}, dn + "_xw2d")
            : c.im.emit(
                  "matmul",
                  {x, c.im.emit("permute_dims", {wd}, {{"axes", ir::AttrValue::ints({1, 0})}}, dn + "_wt")},
                  {}, dn + "_xw3d");
    ValuePtr rb_h;  // GRU's Rb_h, which the recurrence adds itself
    if (bias) {
      ValuePtr bd = item(c, bias, 0, d, dn + "_b");
      ValuePtr wb = slice(c, bd, 0, 0, G * H, dn + "_wb"), rb = slice(c, bd, 0, G * H, 2 * G * H, dn + "_rb");
      ValuePtr outside = rb;
      if (cell == Cell::Gru) {  // Rb_h moves inside the h gate's term
        rb_h = slice(c, rb, 0, 2 * H, 3 * H, dn + "_rbh");
        std::vector<double> zr_only(static_cast<size_t>(G * H), 1.0);
        std::fill(zr_only.begin() + 2 * H, zr_only.end(), 0.0);
        outside = c.im.emit("multiply",
                            {rb, c.im.constant(ir::Tensor::fromValues(t, {G * H}, zr_only), dn + "_zr_mask")},
                            {}, dn + "_rbout");
      }
      xw = c.im.emit("add", {xw, c.im.emit("add", {wb, outside}, {}, dn + "_bias")}, {}, dn + "_xwb");
    }
    if (static_steps) xw = reshapeTo(c, xw, {T, B, ir::makeInt(G * H)}, dn + "_xw");
    std::vector<ValuePtr> operands = {xw, rt,
                                      h0 ? item(c, h0, 0, d, dn + "_h0") : zeros({B, Hd}, dn + "_h0")};
    if (cell == Cell::Lstm) {
      operands.push_back(c0 ? item(c, c0, 0, d, dn + "_c0") : zeros({B, Hd}, dn + "_c0"));
      operands.push_back(peep ? item(c, peep, 0, d, dn + "_p") : zeros({ir::makeInt(3 * H)}, dn + "_p"));
    }
    if (cell == Cell::Gru) operands.push_back(rb_h ? rb_h : zeros({Hd}, dn + "_rbh"));
    operands.push_back(lens);
    const Activation* act = &acts[static_cast<size_t>(d) * activationsOf(cell)];
    ir::Attrs attrs = {{"cell", std::string(cell == Cell::Rnn   ? "rnn"
                                            : cell == Cell::Gru ? "gru"
                                                                : "lstm")},
                       {"reverse", direction == "reverse" || d == 1}};
    ir::AttrValue::List alphas, betas;
    for (size_t k = 0; k < 3; ++k) {
      const bool given = k < activationsOf(cell);
      if (given) attrs[std::string(1, "fgh"[k])] = activationOp(c, act[k].name);
      alphas.emplace_back(given ? static_cast<double>(act[k].alpha) : 0.0);
      betas.emplace_back(given ? static_cast<double>(act[k].beta) : 0.0);
    }
    attrs["alphas"] = alphas;
    attrs["betas"] = betas;
    if (has_clip) attrs["clip"] = static_cast<double>(clip);
    if (linear_before_reset) attrs["linear_before_reset"] = true;
    if (input_forget) attrs["input_forget"] = true;
    ValuePtr rec = c.im.emit("recurrence", operands, attrs, dn + "_rec");
    DirectionResult res;
    res.y = c.im.emitTupleGet(rec, 0, dn + "_y");
    res.h = c.im.emitTupleGet(rec, 1, dn + "_h");
    if (cell == Cell::Lstm) res.cell = c.im.emitTupleGet(rec, 2, dn + "_c");
    results.push_back(std::move(res));
  }

  std::vector<ValuePtr> outs(c.numOutputs());
  auto perDirection = [&](auto pick, const std::string& name) {  // [dirs, B, H] (layout 1: [B, dirs, H])
    std::vector<ValuePtr> parts;
    for (auto& r : results) parts.push_back(pick(r));
    auto v = stack(c, parts, 0, layout == 1 ? name + "_dbh" : name);
    if (layout == 1) v = c.im.emit("permute_dims", {v}, {{"axes", ir::AttrValue::ints({1, 0, 2})}}, name);
    return v;
  };
  if (c.numOutputs() > 0 && c.outputUsed(0)) {
    std::vector<ValuePtr> per_dir;
    for (auto& res : results) per_dir.push_back(res.y);
    auto y = stack(c, per_dir, 1, layout == 1 ? c.outName(0) + "_tdbh" : c.outName(0));  // [T, dirs, B, H]
    if (layout == 1)
      y = c.im.emit("permute_dims", {y}, {{"axes", ir::AttrValue::ints({2, 0, 1, 3})}}, c.outName(0));
    outs[0] = y;
  }
  if (c.numOutputs() > 1 && c.outputUsed(1))
    outs[1] = perDirection([](const DirectionResult& r) { return r.h; }, c.outName(1));
  if (c.numOutputs() > 2 && c.outputUsed(2)) {
    if (cell != Cell::Lstm) c.fail("has a third output; only LSTM has one (Y_c)");
    outs[2] = perDirection([](const DirectionResult& r) { return r.cell; }, c.outName(2));
  }
  return outs;
}

}  // namespace

void registerRecurrentConverters(ConverterTable& t) {
  t["RNN"] = [](NodeCtx& c) { return recurrent(c, Cell::Rnn); };
  t["GRU"] = [](NodeCtx& c) { return recurrent(c, Cell::Gru); };
  t["LSTM"] = [](NodeCtx& c) { return recurrent(c, Cell::Lstm); };
}

}  // namespace mlcc::frontend::onnx_import
