// Converters of the ONNX recurrent ops RNN, GRU and LSTM, unrolled over the
// time steps into graph ops (the sequence length must be static; at most
// kMaxSteps steps). Per direction, the input projection of every step is one
// dense over [T * B, I] (plus the biases that add outside the recurrence);
// each step then adds dense(H, R) and applies the cell:
//   RNN   H = f(xw + H R^T)
//   GRU   z = f(xw_z + H R_z^T), r = f(xw_r + H R_r^T),
//         h = g(xw_h + (r * H) R_h^T + Rb_h)        (linear_before_reset = 0)
//         h = g(xw_h + r * (H R_h^T + Rb_h))        (linear_before_reset = 1)
//         H = (1 - z) * h + z * H
//   LSTM  i = f(xw_i + H R_i^T + P_i * C), f = f(xw_f + H R_f^T + P_f * C)
//         (input_forget: f = 1 - i), c = g(xw_c + H R_c^T),
//         C = f * C + i * c, o = f(xw_o + H R_o^T + P_o * C), H = o * h(C)
// with `clip` bounding every gate's input. With sequence_lens, the steps
// past a batch entry's length keep its state and output zeros (the reverse
// direction thus starts at its last valid step). Outputs Y [T, dirs, B, H]
// (layout 1: [B, T, dirs, H]), Y_h and Y_c [dirs, B, H] (layout 1: [B, dirs, H]).
#include <algorithm>

#include "convert_util.h"
#include "mlcc/ops/shape.h"

namespace mlcc::frontend::onnx_import {

namespace {

using ir::PrimExpr;

constexpr int64_t kMaxSteps = 1024;

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

ValuePtr activate(NodeCtx& c, const Activation& a, const ValuePtr& x, const std::string& n) {
  const ir::DType t = x->type.dtype;
  auto scalar = [&](float v, const char* what) { return c.im.scalar(t, v, n + "_" + what); };
  if (a.name == "Sigmoid") return c.im.emit("sigmoid", {x}, {}, n);
  if (a.name == "Tanh") return c.im.emit("tanh", {x}, {}, n);
  if (a.name == "Relu") return c.im.emit("relu", {x}, {}, n);
  if (a.name == "Softsign") return c.im.emit("softsign", {x}, {}, n);
  if (a.name == "Softplus") return c.im.emit("softplus", {x}, {}, n);
  if (a.name == "LeakyRelu") return c.im.emit("leaky_relu", {x}, {{"alpha", floatAttr(a.alpha)}}, n);
  if (a.name == "Elu") return c.im.emit("elu", {x}, {{"alpha", floatAttr(a.alpha)}}, n);
  if (a.name == "HardSigmoid")
    return c.im.emit("hard_sigmoid", {x}, {{"alpha", floatAttr(a.alpha)}, {"beta", floatAttr(a.beta)}}, n);
  if (a.name == "Affine")
    return c.im.emit(
        "add", {c.im.emit("multiply", {x, scalar(a.alpha, "alpha")}, {}, n + "_ax"), scalar(a.beta, "beta")},
        {}, n);
  if (a.name == "ScaledTanh") {
    auto inner = c.im.emit("tanh", {c.im.emit("multiply", {x, scalar(a.beta, "beta")}, {}, n + "_bx")}, {},
                           n + "_tanh");
    return c.im.emit("multiply", {inner, scalar(a.alpha, "alpha")}, {}, n);
  }
  if (a.name == "ThresholdedRelu") {
    auto above = c.im.emit("greater", {x, scalar(a.alpha, "alpha")}, {}, n + "_above");
    return c.im.emit("where", {above, x, scalar(0.0f, "zero")}, {}, n);
  }
  c.fail("activation '" + a.name + "' is not supported");
}

// x[:, begin:end] of a [B, width] value.
ValuePtr columns(NodeCtx& c, const ValuePtr& x, int64_t begin, int64_t end, const std::string& n) {
  return slice(c, x, 1, begin, end, n);
}

struct DirectionResult {
  std::vector<ValuePtr> y;  // per time step, [B, H]
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
  const int64_t T = staticDim(c, x->type.shape[0], "the sequence length");
  if (T > kMaxSteps)
    c.fail("a sequence of " + std::to_string(T) + " steps is too long to unroll (at most " +
           std::to_string(kMaxSteps) + ")");
  if (T == 0) c.fail("an empty sequence is not supported");
  const PrimExpr B = x->type.shape[1], I = x->type.shape[2];
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
  const ValuePtr lens = c.hasInput(4) ? c.in(4) : nullptr;
  const ValuePtr h0 = c.hasInput(5) ? c.in(5) : nullptr;
  const ValuePtr c0 = cell == Cell::Lstm && c.hasInput(6) ? c.in(6) : nullptr;
  const ValuePtr peep = cell == Cell::Lstm && c.hasInput(7) ? c.in(7) : nullptr;

  auto zeros = [&](const std::string& name) { return filled(c, t, 0.0, {B, ir::makeInt(H)}, name); };
  // The step masks [B, 1]: step s is inside entry b's sequence.
  ValuePtr len_col;
  if (lens) {
    auto l64 = c.im.emit("cast", {lens}, {{"dtype", std::string("i64")}}, n + "_lens");
    len_col = reshapeTo(c, l64, {B, ir::makeInt(1)}, n + "_lens_col");
  }
  auto gate = [&](const ValuePtr& v, const Activation& a, const std::string& name) {
    ValuePtr in = v;
    if (has_clip)
      in = c.im.emit("clip", {v}, {{"min", floatAttr(-clip)}, {"max", floatAttr(clip)}}, name + "_clipped");
    return activate(c, a, in, name);
  };

  std::vector<DirectionResult> results;
  for (int64_t d = 0; d < dirs; ++d) {
    const std::string dn = n + "_d" + std::to_string(d);
    const Activation* act = &acts[static_cast<size_t>(d) * activationsOf(cell)];
    ValuePtr wd = item(c, w, 0, d, dn + "_w"), rd = item(c, r, 0, d, dn + "_r");
    // Input projection of every step, with the biases that add outside the recurrence.
    ValuePtr xw = c.im.emit("dense", {reshapeTo(c, x, {ops::dimMul(ir::makeInt(T), B), I}, dn + "_x2d"), wd},
                            {}, dn + "_xw2d");
    ValuePtr rb_h;  // GRU's Rb_h with linear_before_reset (else it adds outside)
    if (bias) {
      ValuePtr bd = item(c, bias, 0, d, dn + "_b");
      ValuePtr wb = slice(c, bd, 0, 0, G * H, dn + "_wb"), rb = slice(c, bd, 0, G * H, 2 * G * H, dn + "_rb");
      ValuePtr outside = rb;
      if (linear_before_reset) {  // Rb_h moves inside the reset gate's term
        rb_h = slice(c, rb, 0, 2 * H, 3 * H, dn + "_rbh");
        std::vector<double> zr_only(static_cast<size_t>(G * H), 1.0);
        std::fill(zr_only.begin() + 2 * H, zr_only.end(), 0.0);
        outside = c.im.emit("multiply",
                            {rb, c.im.constant(ir::Tensor::fromValues(t, {G * H}, zr_only), dn + "_zr_mask")},
                            {}, dn + "_rbout");
      }
      xw = c.im.emit("add", {xw, c.im.emit("add", {wb, outside}, {}, dn + "_bias")}, {}, dn + "_xwb");
    }
    xw = reshapeTo(c, xw, {ir::makeInt(T), B, ir::makeInt(G * H)}, dn + "_xw");
    ValuePtr hstate = h0 ? item(c, h0, 0, d, dn + "_h0") : zeros(dn + "_h0");
    ValuePtr cstate = cell != Cell::Lstm ? nullptr : c0 ? item(c, c0, 0, d, dn + "_c0") : zeros(dn + "_c0");
    ValuePtr pi, po, pf;
    if (peep) {
      ValuePtr pd = item(c, peep, 0, d, dn + "_p");  // [3H]; each part broadcasts over the batch
      pi = slice(c, pd, 0, 0, H, dn + "_pi");
      po = slice(c, pd, 0, H, 2 * H, dn + "_po");
      pf = slice(c, pd, 0, 2 * H, 3 * H, dn + "_pf");
    }
    ValuePtr r_zr, r_h;
    if (cell == Cell::Gru) {
      r_zr = slice(c, rd, 0, 0, 2 * H, dn + "_rzr");
      r_h = slice(c, rd, 0, 2 * H, 3 * H, dn + "_rh");
    }
    DirectionResult res;
    res.y.resize(static_cast<size_t>(T));
    const bool reverse = direction == "reverse" || d == 1;
    for (int64_t k = 0; k < T; ++k) {
      const int64_t s = reverse ? T - 1 - k : k;
      const std::string sn = dn + "_t" + std::to_string(s);
      ValuePtr xs = item(c, xw, 0, s, sn + "_xw");
      ValuePtr hnew, cnew;
      if (cell == Cell::Rnn) {
        auto pre = c.im.emit("add", {xs, c.im.emit("dense", {hstate, rd}, {}, sn + "_hr")}, {}, sn + "_pre");
        hnew = gate(pre, act[0], sn + "_h");
      } else if (cell == Cell::Gru) {
        auto zr = c.im.emit(
            "add",
            {columns(c, xs, 0, 2 * H, sn + "_xzr"), c.im.emit("dense", {hstate, r_zr}, {}, sn + "_hzr")}, {},
            sn + "_zr_pre");
        auto z = gate(columns(c, zr, 0, H, sn + "_z_pre"), act[0], sn + "_z");
        auto rg = gate(columns(c, zr, H, 2 * H, sn + "_r_pre"), act[0], sn + "_r");
        ValuePtr hh;
        if (linear_before_reset) {
          hh = c.im.emit("dense", {hstate, r_h}, {}, sn + "_hrh");
          if (rb_h) hh = c.im.emit("add", {hh, rb_h}, {}, sn + "_hrhb");
          hh = c.im.emit("multiply", {rg, hh}, {}, sn + "_reset");
        } else {
          hh = c.im.emit("dense", {c.im.emit("multiply", {rg, hstate}, {}, sn + "_rh_in"), r_h}, {},
                         sn + "_reset");
        }
        auto cand =
            gate(c.im.emit("add", {columns(c, xs, 2 * H, 3 * H, sn + "_xh"), hh}, {}, sn + "_cand_pre"),
                 act[1], sn + "_cand");
        // (1 - z) * cand + z * H = cand + z * (H - cand)
        auto keep = c.im.emit("multiply", {z, c.im.emit("subtract", {hstate, cand}, {}, sn + "_delta")}, {},
                              sn + "_keep");
        hnew = c.im.emit("add", {cand, keep}, {}, sn + "_h");
      } else {
        auto pre = c.im.emit("add", {xs, c.im.emit("dense", {hstate, rd}, {}, sn + "_hr")}, {}, sn + "_pre");
        auto part = [&](int64_t g, const char* what) {
          return columns(c, pre, g * H, (g + 1) * H, sn + "_" + what + "_pre");
        };
        auto peephole = [&](ValuePtr v, const ValuePtr& p, const ValuePtr& state, const char* what) {
          if (!p) return v;
          return c.im.emit("add", {v, c.im.emit("multiply", {p, state}, {}, sn + "_" + what + "_peep")}, {},
                           sn + "_" + what + "_in");
        };
        auto ig = gate(peephole(part(0, "i"), pi, cstate, "i"), act[0], sn + "_i");
        ValuePtr fg = input_forget
                          ? c.im.emit("subtract", {c.im.scalar(t, 1.0, sn + "_one"), ig}, {}, sn + "_f")
                          : gate(peephole(part(2, "f"), pf, cstate, "f"), act[0], sn + "_f");
        auto cand = gate(part(3, "c"), act[1], sn + "_cand");
        cnew = c.im.emit("add",
                         {c.im.emit("multiply", {fg, cstate}, {}, sn + "_fc"),
                          c.im.emit("multiply", {ig, cand}, {}, sn + "_ic")},
                         {}, sn + "_c");
        auto og = gate(peephole(part(1, "o"), po, cnew, "o"), act[0], sn + "_o");
        hnew = c.im.emit("multiply", {og, activate(c, act[2], cnew, sn + "_hc")}, {}, sn + "_h");
      }
      if (len_col) {
        auto mask =
            c.im.emit("less", {c.im.scalar(ir::DType::i64, static_cast<double>(s), sn + "_step"), len_col},
                      {}, sn + "_mask");
        res.y[static_cast<size_t>(s)] =
            c.im.emit("where", {mask, hnew, c.im.scalar(t, 0.0, sn + "_zero")}, {}, sn + "_y");
        hnew = c.im.emit("where", {mask, hnew, hstate}, {}, sn + "_hkept");
        if (cnew) cnew = c.im.emit("where", {mask, cnew, cstate}, {}, sn + "_ckept");
      } else {
        res.y[static_cast<size_t>(s)] = hnew;
      }
      hstate = hnew;
      if (cnew) cstate = cnew;
    }
    res.h = hstate;
    res.cell = cstate;
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
    for (size_t d = 0; d < results.size(); ++d)
      per_dir.push_back(stack(c, results[d].y, 0, n + "_y" + std::to_string(d)));        // [T, B, H]
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
