// recurrence (artifacts_schema/ops.md): one direction of an ONNX RNN, GRU or
// LSTM over its whole sequence, from the input projection on:
//   rnn   (xw, rt, h0, lens)          -> (y, h)
//   gru   (xw, rt, h0, rbh, lens)     -> (y, h)
//   lstm  (xw, rt, h0, c0, p, lens)   -> (y, h, c)
// xw [T, B, G*H] is x W^T plus the biases that add outside the recurrence
// (a dense over all steps, computed before), rt [H, G*H] the recurrent
// weights R transposed (so that a step's products H R^T read rows of rt),
// gates in ONNX's order (GRU z, r, h; LSTM i, o, f, c), h0 and c0
// [B, H] the initial states, p [3H] LSTM's peepholes (i, o, f), rbh [H]
// GRU's recurrent bias of the h gate, lens [B] i64 the sequence lengths.
// Step t works on time s = t (reverse: T - 1 - t); with a = clip(.):
//   rnn   H' = f(xw + H R^T)
//   gru   z = f(xw_z + H R_z^T), r = f(xw_r + H R_r^T),
//         h = g(xw_h + (r * H) R_h^T + rbh)           (linear_before_reset: g(xw_h + r * (H R_h^T + rbh)))
//         H' = h + z * (H - h)
//   lstm  i = f(xw_i + H R_i^T + p_i * C), f = f(xw_f + H R_f^T + p_f * C) (input_forget: 1 - i),
//         C' = f * C + i * g(xw_c + H R_c^T), o = f(xw_o + H R_o^T + p_o * C'), H' = o * h(C')
// Entries whose sequence ends before s keep their state, and y[s] is 0 there.
// y [T, B, H] holds H' at each time; h (and c) the final states.
//
// Legalized to one prim func whose steps are a serial loop (a te scan): per
// step the blocks "recurrence_gates" (H R^T, a plain reduction), the cell's
// elementwise blocks, then the state updates; step t + 1 reads the state
// step t wrote, so the steps are never reordered or run in parallel.
#include <algorithm>
#include <cmath>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/te.h"
#include "mlcc/support/diagnostic.h"
#include "op_families.h"
#include "op_util.h"

namespace mlcc::ops {

namespace {

using ir::DType;
using ir::PrimExpr;
using ir::Tensor;
using ir::Type;

constexpr const char* kOp = "recurrence";

Error opError(const std::string& msg) { return Error(std::string("op '") + kOp + "': " + msg); }

enum class Cell { Rnn, Gru, Lstm };

Cell cellOf(const ir::Attrs& attrs) {
  const std::string& c = attrStr(attrs, "cell");
  if (c == "rnn") return Cell::Rnn;
  if (c == "gru") return Cell::Gru;
  if (c == "lstm") return Cell::Lstm;
  throw opError("cell must be \"rnn\", \"gru\" or \"lstm\", not \"" + c + "\"");
}

int64_t gatesOf(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }
size_t operandsOf(Cell c) { return c == Cell::Rnn ? 4 : c == Cell::Gru ? 5 : 6; }

// The activations f, g, h: elementwise unary ops of the registry, or one of
// ONNX's affine, scaled_tanh and thresholded_relu, with alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

const char* const kComposed[] = {"affine", "scaled_tanh", "thresholded_relu"};

bool composed(const std::string& n) {
  return std::find(std::begin(kComposed), std::end(kComposed), n) != std::end(kComposed);
}

// The attributes of registry op `name` that the activation's alpha/beta give.
ir::Attrs unaryAttrs(const Activation& a) {
  if (a.name == "leaky_relu" || a.name == "elu") return {{"alpha", ir::AttrValue(a.alpha)}};
  if (a.name == "hard_sigmoid") return {{"alpha", ir::AttrValue(a.alpha)}, {"beta", ir::AttrValue(a.beta)}};
  return {};
}

std::vector<Activation> activationsOf(const ir::Attrs& attrs) {
  std::vector<double> alphas = attrFloats(attrs, "alphas"), betas = attrFloats(attrs, "betas");
  if (alphas.size() != 3 || betas.size() != 3) throw opError("alphas and betas must have 3 values (f, g, h)");
  // ONNX's defaults: rnn f = tanh; gru and lstm f = sigmoid, g = h = tanh.
  const Cell cell = cellOf(attrs);
  const char* const defaults[3] = {cell == Cell::Rnn ? "tanh" : "sigmoid", "tanh", "tanh"};
  std::vector<Activation> out;
  for (size_t k = 0; k < 3; ++k) {
    std::string n = attrStr(attrs, std::string(1, "fgh"[k]));
    if (n.empty()) n = defaults[k];
    if (!composed(n)) {
      const OpDef* d = findOp(n);
      if (!d || !d->scalar || d->pattern != OpPattern::Elementwise || !d->compute)
        throw opError("activation '" + n + "' is not an elementwise unary op");
    }
    out.push_back({n, alphas[k], betas[k]});
  }
  return out;
}

Type inferRecurrence(const std::vector<Type>& inputs, const ir::Attrs& attrs) {
  const Cell cell = cellOf(attrs);
  (void)activationsOf(attrs);
  if (inputs.size() != operandsOf(cell))
    throw opError("a " + attrStr(attrs, "cell") + " takes " + std::to_string(operandsOf(cell)) +
                  " operands, not " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Type& t = tensorOperand(inputs, i, kOp);
    const DType want = i + 1 == inputs.size() ? DType::i64 : DType::f32;
    if (t.dtype != want)
      throw opError("operand " + std::to_string(i) + " must be " + std::string(ir::dtypeName(want)) +
                    ", not " + std::string(ir::dtypeName(t.dtype)) +
                    (want == DType::f32 ? " (only f32 is supported yet)" : ""));
  }
  const Type &xw = inputs[0], &r = inputs[1], &h0 = inputs[2], &lens = inputs.back();
  if (xw.rank() != 3 || r.rank() != 2 || h0.rank() != 2 || lens.rank() != 1)
    throw opError("xw must be [T, B, G*H], rt [H, G*H], h0 [B, H] and lens [B]");
  const PrimExpr T = xw.shape[0], B = xw.shape[1], H = r.shape[0];
  const PrimExpr GH = dimMul(dimConst(gatesOf(cell)), H);
  if (!dimEqual(xw.shape[2], GH) || !dimEqual(r.shape[1], GH))
    throw opError("xw's last dimension and rt's columns must be " + std::to_string(gatesOf(cell)) +
                  " x the hidden size (rt's rows)");
  auto isState = [&](const Type& t) {
    return t.rank() == 2 && dimEqual(t.shape[0], B) && dimEqual(t.shape[1], H);
  };
  auto isVector = [&](const Type& t, const PrimExpr& n) { return t.rank() == 1 && dimEqual(t.shape[0], n); };
  if (!isState(h0)) throw opError("h0 must be [B, H]");
  if (!isVector(lens, B)) throw opError("lens must be [B]");
  if (cell == Cell::Gru && !isVector(inputs[3], H)) throw opError("rbh must be [H]");
  if (cell == Cell::Lstm && (!isState(inputs[3]) || !isVector(inputs[4], dimMul(dimConst(3), H))))
    throw opError("c0 must be [B, H] and p [3H]");
  std::vector<Type> outs = {Type::tensor(DType::f32, {T, B, H}), Type::tensor(DType::f32, {B, H})};
  if (cell == Cell::Lstm) outs.push_back(Type::tensor(DType::f32, {B, H}));
  return Type::tuple(outs);
}

// ---- reference kernel

float clipped(float v, double clip) {
  if (clip <= 0) return v;
  const float c = static_cast<float>(clip);
  return std::max(-c, std::min(c, v));
}

// The activation of every element of `v` (one state's [B, H]).
std::vector<float> activate(const Activation& a, std::vector<float> v, int64_t B, int64_t H) {
  const float alpha = static_cast<float>(a.alpha), beta = static_cast<float>(a.beta);
  if (a.name == "affine") {
    for (float& x : v) x = alpha * x + beta;
  } else if (a.name == "scaled_tanh") {
    for (float& x : v) x = alpha * std::tanh(beta * x);
  } else if (a.name == "thresholded_relu") {
    for (float& x : v) x = x > alpha ? x : 0.0f;
  } else {
    Tensor t = Tensor::zeros(DType::f32, {B, H});
    std::copy(v.begin(), v.end(), t.mutableData<float>());
    Tensor out = computeOp(a.name, {t}, unaryAttrs(a))[0];
    std::copy(out.data<float>(), out.data<float>() + v.size(), v.begin());
  }
  return v;
}

std::vector<Tensor> computeRecurrence(const std::vector<Tensor>& in, const ir::Attrs& attrs) {
  const Cell cell = cellOf(attrs);
  const std::vector<Activation> act = activationsOf(attrs);
  const double clip = attrFloat(attrs, "clip");
  const bool reverse = attrBool(attrs, "reverse");
  const bool lbr = attrBool(attrs, "linear_before_reset"), input_forget = attrBool(attrs, "input_forget");
  const int64_t T = in[0].shape()[0], B = in[0].shape()[1], H = in[1].shape()[0], G = gatesOf(cell);
  const float *xw = in[0].data<float>(), *r = in[1].data<float>();
  const int64_t* lens = in.back().data<int64_t>();
  const size_t n = static_cast<size_t>(B * H);
  std::vector<float> h(in[2].data<float>(), in[2].data<float>() + n), c(n, 0.0f);
  if (cell == Cell::Lstm) c.assign(in[3].data<float>(), in[3].data<float>() + n);
  Tensor y = Tensor::zeros(DType::f32, {T, B, H});
  float* yp = y.mutableData<float>();
  // (v R^T)[b, j] over rows [row0, row0 + H) of R (columns of rt).
  auto times = [&](const std::vector<float>& v, int64_t row0) {
    std::vector<float> out(n, 0.0f);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        float s = 0;
        for (int64_t k = 0; k < H; ++k) s += v[static_cast<size_t>(b * H + k)] * r[k * G * H + row0 + j];
        out[static_cast<size_t>(b * H + j)] = s;
      }
    return out;
  };
  // Each element of a state: f(b, j, index into [B, H]).
  auto map = [&](auto f) {
    std::vector<float> out(n);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j)
        out[static_cast<size_t>(b * H + j)] = f(b, j, static_cast<size_t>(b * H + j));
    return out;
  };
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = reverse ? T - 1 - t : t;
    auto x = [&](int64_t b, int64_t gate, int64_t j) { return xw[(s * B + b) * G * H + gate * H + j]; };
    std::vector<float> hn, cn;
    if (cell == Cell::Rnn) {
      auto hr = times(h, 0);
      hn = activate(act[0],
                    map([&](int64_t b, int64_t j, size_t i) { return clipped(x(b, 0, j) + hr[i], clip); }), B,
                    H);
    } else if (cell == Cell::Gru) {
      auto hz = times(h, 0), hr = times(h, H);
      auto z = activate(
          act[0], map([&](int64_t b, int64_t j, size_t i) { return clipped(x(b, 0, j) + hz[i], clip); }), B,
          H);
      auto rg = activate(
          act[0], map([&](int64_t b, int64_t j, size_t i) { return clipped(x(b, 1, j) + hr[i], clip); }), B,
          H);
      const float* rbh = in[3].data<float>();
      std::vector<float> pre;
      if (lbr) {
        auto hh = times(h, 2 * H);
        pre = map([&](int64_t b, int64_t j, size_t i) { return x(b, 2, j) + rg[i] * (hh[i] + rbh[j]); });
      } else {
        auto rh = times(map([&](int64_t, int64_t, size_t i) { return rg[i] * h[i]; }), 2 * H);
        pre = map([&](int64_t b, int64_t j, size_t i) { return x(b, 2, j) + rh[i] + rbh[j]; });
      }
      for (float& v : pre) v = clipped(v, clip);
      auto cand = activate(act[1], pre, B, H);
      hn = map([&](int64_t, int64_t, size_t i) { return cand[i] + z[i] * (h[i] - cand[i]); });
    } else {
      const float* p = in[4].data<float>();
      auto hr = times(h, 0), ho = times(h, H), hf = times(h, 2 * H), hc = times(h, 3 * H);
      auto ig = activate(act[0], map([&](int64_t b, int64_t j, size_t i) {
                           return clipped(x(b, 0, j) + hr[i] + p[j] * c[i], clip);
                         }),
                         B, H);
      std::vector<float> fg;
      if (input_forget)
        fg = map([&](int64_t, int64_t, size_t i) { return 1.0f - ig[i]; });
      else
        fg = activate(act[0], map([&](int64_t b, int64_t j, size_t i) {
                        return clipped(x(b, 2, j) + hf[i] + p[2 * H + j] * c[i], clip);
                      }),
                      B, H);
      auto cand = activate(
          act[1], map([&](int64_t b, int64_t j, size_t i) { return clipped(x(b, 3, j) + hc[i], clip); }), B,
          H);
      cn = map([&](int64_t, int64_t, size_t i) { return fg[i] * c[i] + ig[i] * cand[i]; });
      auto og = activate(act[0], map([&](int64_t b, int64_t j, size_t i) {
                           return clipped(x(b, 1, j) + ho[i] + p[H + j] * cn[i], clip);
                         }),
                         B, H);
      auto hc_act = activate(act[2], cn, B, H);
      hn = map([&](int64_t, int64_t, size_t i) { return og[i] * hc_act[i]; });
    }
    for (int64_t b = 0; b < B; ++b) {
      const bool live = s < lens[b];
      for (int64_t j = 0; j < H; ++j) {
        const size_t i = static_cast<size_t>(b * H + j);
        yp[(s * B + b) * H + j] = live ? hn[i] : 0.0f;
        if (live) {
          h[i] = hn[i];
          if (cell == Cell::Lstm) c[i] = cn[i];
        }
      }
    }
  }
  auto state = [&](const std::vector<float>& v) {
    Tensor t = Tensor::zeros(DType::f32, {B, H});
    std::copy(v.begin(), v.end(), t.mutableData<float>());
    return t;
  };
  std::vector<Tensor> out = {y, state(h)};
  if (cell == Cell::Lstm) out.push_back(state(c));
  return out;
}

// ---- legalization

PrimExpr activateExpr(const Activation& a, const PrimExpr& x) {
  using namespace ir::build;
  const PrimExpr alpha = ir::makeFloat(a.alpha, DType::f32), beta = ir::makeFloat(a.beta, DType::f32);
  if (a.name == "affine") return alpha * x + beta;
  if (a.name == "scaled_tanh") return alpha * ir::makeCall("tanh", {beta * x});
  if (a.name == "thresholded_relu") return ir::makeSelect(gt(x, alpha), x, ir::makeFloat(0.0, DType::f32));
  return findOp(a.name)->scalar(normalizeAttrs(*findOp(a.name), unaryAttrs(a)), x);
}

ir::PrimFunc legalizeRecurrence(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  using namespace ir::build;
  using ir::te::Indices;
  const Cell cell = cellOf(attrs);
  const std::vector<Activation> act = activationsOf(attrs);
  const double clip = attrFloat(attrs, "clip");
  const bool reverse = attrBool(attrs, "reverse");
  const bool lbr = attrBool(attrs, "linear_before_reset"), input_forget = attrBool(attrs, "input_forget");
  const PrimExpr T = inputs[0].shape[0], B = inputs[0].shape[1], H = inputs[1].shape[0];
  const DType f = DType::f32;

  ir::te::FuncBuilder fb(kOp);
  const ir::Buffer xw = fb.input("xw", inputs[0]), r = fb.input("rt", inputs[1]),
                   h0 = fb.input("h0", inputs[2]);
  ir::Buffer c0, p, rbh;
  if (cell == Cell::Lstm) c0 = fb.input("c0", inputs[3]), p = fb.input("p", inputs[4]);
  if (cell == Cell::Gru) rbh = fb.input("rbh", inputs[3]);
  const ir::Buffer lens = fb.input("lens", inputs.back());
  const ir::Buffer y = fb.buffer("y", output.fields[0].shape, f), h = fb.buffer("h", {B, H}, f);
  const ir::Buffer c = cell == Cell::Lstm ? fb.buffer("c", {B, H}, f) : ir::Buffer();
  std::vector<ir::Buffer> outs = {y, h};
  if (c) outs.push_back(c);
  auto isZero = [](const PrimExpr& d) {
    int64_t v;
    return ir::asConstInt(d, &v) && v == 0;
  };
  if (isZero(B) || isZero(H)) return fb.build(outs);  // no element anywhere (and no loop of extent 0)
  auto at = [](const Indices& i) { return std::vector<PrimExpr>{i[0], i[1]}; };
  fb.update("recurrence_h0", h, {B, H}, at, [&](const Indices& i) { return load(h0, {i[0], i[1]}); });
  if (c) fb.update("recurrence_c0", c, {B, H}, at, [&](const Indices& i) { return load(c0, {i[0], i[1]}); });
  if (isZero(T)) return fb.build(outs);  // no step: the final states are the initial ones

  const ir::Var t = fb.beginScan("step", T);
  const PrimExpr s = reverse ? T - 1 - t : PrimExpr(t);
  auto clipTo = [&](const PrimExpr& v) {
    if (clip <= 0) return v;
    return maximum(minimum(v, ir::makeFloat(clip, f)), ir::makeFloat(-clip, f));
  };
  // Column j of gate g: j + g * H, folded.
  auto column = [&](const PrimExpr& j, int64_t g) { return g == 0 ? j : j + dimMul(dimConst(g), H); };
  auto x = [&](const Indices& i, int64_t gate) { return load(xw, {s, i[0], column(i[1], gate)}); };
  // (v R^T)[b, j] for rows [row0, row0 + gates * H) of R (columns of rt).
  auto times = [&](const char* name, const ir::Buffer& v, int64_t row0, int64_t gates) {
    return fb.reduce(name, {B, dimMul(dimConst(gates), H)}, f, {H}, ir::te::ReduceOp::Sum,
                     [&](const Indices& i, const Indices& k) {
                       return load(v, {i[0], k[0]}) * load(r, {k[0], column(i[1], row0)});
                     });
  };
  auto state = [&](const ir::Buffer& b, const Indices& i) { return load(b, {i[0], i[1]}); };
  ir::Buffer hn, cn;
  if (cell == Cell::Rnn) {
    ir::Buffer pre = times("recurrence_gates", h, 0, 1);
    hn = fb.compute("recurrence_hidden", {B, H}, f,
                    [&](const Indices& i) { return activateExpr(act[0], clipTo(x(i, 0) + state(pre, i))); });
  } else if (cell == Cell::Gru) {
    ir::Buffer pre = times("recurrence_gates", h, 0, lbr ? 3 : 2);
    auto gateOf = [&](const Indices& i, int64_t g) {
      return activateExpr(act[0], clipTo(x(i, g) + load(pre, {i[0], column(i[1], g)})));
    };
    ir::Buffer hh;
    if (!lbr) {
      ir::Buffer rh = fb.compute("recurrence_reset", {B, H}, f,
                                 [&](const Indices& i) { return gateOf(i, 1) * state(h, i); });
      hh = times("recurrence_gates_h", rh, 2, 1);
    }
    hn = fb.compute("recurrence_hidden", {B, H}, f, [&](const Indices& i) {
      PrimExpr rec = lbr ? gateOf(i, 1) * (load(pre, {i[0], column(i[1], 2)}) + load(rbh, {i[1]}))
                         : state(hh, i) + load(rbh, {i[1]});
      PrimExpr cand = activateExpr(act[1], clipTo(x(i, 2) + rec));
      return cand + gateOf(i, 0) * (state(h, i) - cand);
    });
  } else {
    ir::Buffer pre = times("recurrence_gates", h, 0, 4);
    auto gate = [&](const Indices& i, int64_t g) { return x(i, g) + load(pre, {i[0], column(i[1], g)}); };
    auto peep = [&](const Indices& i, int64_t part, const ir::Buffer& st) {
      return load(p, {column(i[1], part)}) * state(st, i);
    };
    cn = fb.compute("recurrence_cell", {B, H}, f, [&](const Indices& i) {
      PrimExpr ig = activateExpr(act[0], clipTo(gate(i, 0) + peep(i, 0, c)));
      PrimExpr fg = input_forget ? ir::makeFloat(1.0, f) - ig
                                 : activateExpr(act[0], clipTo(gate(i, 2) + peep(i, 2, c)));
      return fg * state(c, i) + ig * activateExpr(act[1], clipTo(gate(i, 3)));
    });
    hn = fb.compute("recurrence_hidden", {B, H}, f, [&](const Indices& i) {
      PrimExpr og = activateExpr(act[0], clipTo(gate(i, 1) + peep(i, 1, cn)));
      return og * activateExpr(act[2], state(cn, i));
    });
  }
  auto live = [&](const Indices& i) { return lt(s, load(lens, {i[0]})); };
  fb.update(
      "recurrence_y", y, {B, H},
      [&](const Indices& i) {
        return std::vector<PrimExpr>{s, i[0], i[1]};
      },
      [&](const Indices& i) { return ir::makeSelect(live(i), state(hn, i), ir::makeFloat(0.0, f)); });
  if (c)
    fb.update("recurrence_state_c", c, {B, H}, at,
              [&](const Indices& i) { return ir::makeSelect(live(i), state(cn, i), state(c, i)); });
  fb.update("recurrence_state_h", h, {B, H}, at,
            [&](const Indices& i) { return ir::makeSelect(live(i), state(hn, i), state(h, i)); });
  fb.endScan();
  return fb.build(outs);
}

int64_t recurrenceFlops(const std::vector<Type>& inputs, const Type& output, const ir::Attrs& attrs) {
  const int64_t G = gatesOf(cellOf(attrs));
  int64_t H = 1;
  (void)ir::asConstInt(inputs[1].shape[0], &H);
  // The recurrent products (2 per multiply-add) and about ten operations per state element.
  return flopsProduct(staticCount(output.fields[1].shape), staticCount({inputs[0].shape[0]}),
                      saturatingMul(2 * G, H) + 10 * G);
}

}  // namespace

void registerRecurrenceOps(std::vector<OpDef>& ops) {
  using K = AttrKind;
  OpDef def;
  def.name = kOp;
  def.min_inputs = 4;
  def.max_inputs = 6;
  def.pattern = OpPattern::Opaque;
  const ir::AttrValue zeros =
      ir::AttrValue(ir::AttrValue::List{ir::AttrValue(0.0), ir::AttrValue(0.0), ir::AttrValue(0.0)});
  def.attrs = {{"cell", K::Str, std::nullopt},
               {"f", K::Str, ir::AttrValue("")},  // "": the cell's default
               {"g", K::Str, ir::AttrValue("")},
               {"h", K::Str, ir::AttrValue("")},
               {"alphas", K::Floats, zeros},
               {"betas", K::Floats, zeros},
               {"clip", K::Float, ir::AttrValue(0.0)},
               {"reverse", K::Bool, ir::AttrValue(false)},
               {"linear_before_reset", K::Bool, ir::AttrValue(false)},
               {"input_forget", K::Bool, ir::AttrValue(false)}};
  def.infer = inferRecurrence;
  def.compute = computeRecurrence;
  def.flops = recurrenceFlops;
  def.legalize = legalizeRecurrence;
  ops.push_back(std::move(def));
}

}  // namespace mlcc::ops
