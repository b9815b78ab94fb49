// Converters of the elementwise and reduction ONNX ops: unary math and
// activations, broadcasting binary ops and comparisons, variadic Sum/Mean/
// Max/Min, Clip (attributes before opset 11, inputs after), Cast, Where,
// PRelu, and the Reduce* family (axes as attribute before opset 13/18, as an
// input after), ArgMax/ArgMin.
#include "convert_util.h"
#include "mlcc/ir/float_bits.h"

namespace mlcc::frontend::onnx_import {

namespace {

const std::map<std::string, std::string>& unaryOps() {
  static const std::map<std::string, std::string> m = {{"Relu", "relu"},
                                                       {"Sigmoid", "sigmoid"},
                                                       {"Tanh", "tanh"},
                                                       {"Exp", "exp"},
                                                       {"Log", "log"},
                                                       {"Sqrt", "sqrt"},
                                                       {"Erf", "erf"},
                                                       {"Sin", "sin"},
                                                       {"Cos", "cos"},
                                                       {"Tan", "tan"},
                                                       {"Asin", "asin"},
                                                       {"Acos", "acos"},
                                                       {"Atan", "atan"},
                                                       {"Sinh", "sinh"},
                                                       {"Cosh", "cosh"},
                                                       {"Asinh", "asinh"},
                                                       {"Acosh", "acosh"},
                                                       {"Atanh", "atanh"},
                                                       {"Floor", "floor"},
                                                       {"Ceil", "ceil"},
                                                       {"Round", "round"},
                                                       {"Reciprocal", "reciprocal"},
                                                       {"Abs", "abs"},
                                                       {"Neg", "negative"},
                                                       {"Sign", "sign"},
                                                       {"Not", "logical_not"},
                                                       {"IsNaN", "isnan"},
                                                       {"Softplus", "softplus"},
                                                       {"Softsign", "softsign"},
                                                       {"HardSwish", "hard_swish"},
                                                       {"BitwiseNot", "bitwise_not"}};
  return m;
}

const std::map<std::string, std::string>& binaryOps() {
  static const std::map<std::string, std::string> m = {{"Add", "add"},
                                                       {"Sub", "subtract"},
                                                       {"Mul", "multiply"},
                                                       {"Div", "divide"},
                                                       {"Pow", "power"},
                                                       {"Equal", "equal"},
                                                       {"Less", "less"},
                                                       {"LessOrEqual", "less_equal"},
                                                       {"Greater", "greater"},
                                                       {"GreaterOrEqual", "greater_equal"},
                                                       {"And", "logical_and"},
                                                       {"Or", "logical_or"},
                                                       {"Xor", "logical_xor"},
                                                       {"BitwiseAnd", "bitwise_and"},
                                                       {"BitwiseOr", "bitwise_or"},
                                                       {"BitwiseXor", "bitwise_xor"}};
  return m;
}

std::vector<ValuePtr> reduce(NodeCtx& c, const std::string& op, bool axes_input) {
  ir::Attrs a;
  std::vector<int64_t> axes;
  bool has_axes = false;
  if (axes_input) {
    if (c.hasInput(1)) {
      axes = c.constInts(1, "axes");
      has_axes = true;
    }
  } else if (c.hasAttr("axes")) {
    axes = c.attrInts("axes");
    has_axes = true;
  }
  if (has_axes && axes.empty()) has_axes = false;
  if (!has_axes && c.attrInt("noop_with_empty_axes", 0)) {
    c.ignoreAttrs({"keepdims"});  // nothing is reduced
    return {c.in(0)};
  }
  if (has_axes) a["axes"] = ir::AttrValue::ints(axes);
  a["keepdims"] = c.attrInt("keepdims", 1) != 0;
  const ValuePtr& x = c.in(0);
  const std::string& t = c.node.op_type();
  std::string name = c.outName();
  if (t == "ReduceSumSquare" || t == "ReduceL2") {
    auto sq = c.im.emit("multiply", {x, x}, {}, name + "_sq");
    auto s = c.im.emit("sum", {sq}, a, t == "ReduceL2" ? name + "_sum" : name);
    return {t == "ReduceL2" ? c.im.emit("sqrt", {s}, {}, name) : s};
  }
  if (t == "ReduceL1") return {c.im.emit("sum", {c.im.emit("abs", {x}, {}, name + "_abs")}, a, name)};
  if (t == "ReduceLogSum") return {c.im.emit("log", {c.im.emit("sum", {x}, a, name + "_sum")}, {}, name)};
  if (t == "ReduceLogSumExp") {
    // log(sum(exp(x - m))) + m with m the max (0 where it is infinite), so
    // that large inputs do not overflow exp.
    ir::Attrs keep = a;
    keep["keepdims"] = true;
    auto m = c.im.emit("max", {x}, keep, name + "_max");
    auto inf = c.im.emit("isinf", {m}, {}, name + "_inf");
    m = c.im.emit("where", {inf, c.im.scalar(x->type.dtype, 0.0, name + "_zero"), m}, {}, name + "_shift");
    auto e = c.im.emit("exp", {c.im.emit("subtract", {x, m}, {}, name + "_centered")}, {}, name + "_exp");
    auto l = c.im.emit("log", {c.im.emit("sum", {e}, a, name + "_sum")}, {}, name + "_log");
    return {c.im.emit("add", {l, reshapeTo(c, m, l->type.shape, name + "_m")}, {}, name)};
  }
  if (x->type.dtype == ir::DType::boolean && (op == "max" || op == "min")) {  // any / all
    auto i = c.im.emit("cast", {x}, {{"dtype", std::string("i8")}}, name + "_i8");
    return {
        c.im.emit("cast", {c.im.emit(op, {i}, a, name + "_red")}, {{"dtype", std::string("bool")}}, name)};
  }
  return {c.im.emit(op, {x}, a, name)};
}

}  // namespace

int64_t staticDim(NodeCtx& c, const ir::PrimExpr& d, const std::string& what) {
  int64_t v;
  if (!ir::asConstInt(d, &v)) c.fail(what + " needs a static dimension (bind it with --shape)");
  return v;
}

double floatAttr(float f) { return ir::detail::shortestDecimalValue(f, ir::DType::f32); }

ValuePtr castTo(NodeCtx& c, const ValuePtr& v, ir::DType t, const std::string& name) {
  if (v->type.dtype == t) return v;
  return c.im.emit("cast", {v}, {{"dtype", std::string(ir::dtypeName(t))}}, name);
}

void registerElementwiseConverters(ConverterTable& t) {
  for (const auto& [onnx_op, op] : unaryOps()) {
    std::string o = op;
    t[onnx_op] = [o](NodeCtx& c) -> std::vector<ValuePtr> {
      return {c.im.emit(o, {c.in(0)}, {}, c.outName())};
    };
  }
  t["IsInf"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const bool negative = c.attrInt("detect_negative", 1) != 0,
               positive = c.attrInt("detect_positive", 1) != 0;
    const ValuePtr& x = c.in(0);
    if (negative && positive) return {c.im.emit("isinf", {x}, {}, c.outName())};
    // One sign only: an infinity of that sign (neither: nothing matches).
    auto inf = c.im.emit("isinf", {x}, {}, c.outName() + "_inf");
    auto zero = c.im.scalar(x->type.dtype, 0.0, c.outName() + "_zero");
    auto sign = c.im.emit(positive ? "greater" : "less", {x, zero}, {}, c.outName() + "_sign");
    // Neither sign: x != x holds for NaN only, never with isinf, so nothing matches.
    if (!negative && !positive) sign = c.im.emit("not_equal", {x, x}, {}, c.outName() + "_none");
    return {c.im.emit("logical_and", {inf, sign}, {}, c.outName())};
  };
  // CumSum(x, axis): the cumsum op; the axis (a scalar or 1-element tensor)
  // must be known at import.
  t["CumSum"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const std::vector<int64_t> axis = c.constInts(1, "axis");
    if (axis.size() != 1) c.fail("axis must hold one value, not " + std::to_string(axis.size()));
    ir::Attrs a = {{"axis", ir::AttrValue(axis[0])},
                   {"exclusive", ir::AttrValue(c.attrInt("exclusive", 0) != 0)},
                   {"reverse", ir::AttrValue(c.attrInt("reverse", 0) != 0)}};
    return {c.im.emit("cumsum", {c.in(0)}, a, c.outName())};
  };
  // ThresholdedRelu: x > alpha ? x : 0.
  t["ThresholdedRelu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    const std::string n = c.outName();
    auto alpha = c.im.scalar(x->type.dtype, floatAttr(c.attrFloat("alpha", 1.0f)), n + "_alpha");
    auto above = c.im.emit("greater", {x, alpha}, {}, n + "_above");
    return {c.im.emit("where", {above, x, c.im.scalar(x->type.dtype, 0.0, n + "_zero")}, {}, n)};
  };
  // Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
  t["Shrink"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    const std::string n = c.outName();
    const ir::DType t = x->type.dtype;
    const double lambd = floatAttr(c.attrFloat("lambd", 0.5f)), bias = floatAttr(c.attrFloat("bias", 0.0f));
    auto low = c.im.emit("less", {x, c.im.scalar(t, -lambd, n + "_neg_lambd")}, {}, n + "_low");
    auto high = c.im.emit("greater", {x, c.im.scalar(t, lambd, n + "_lambd")}, {}, n + "_high");
    auto b = c.im.scalar(t, bias, n + "_bias");
    auto upper = c.im.emit(
        "where", {high, c.im.emit("subtract", {x, b}, {}, n + "_minus"), c.im.scalar(t, 0.0, n + "_zero")},
        {}, n + "_upper");
    return {c.im.emit("where", {low, c.im.emit("add", {x, b}, {}, n + "_plus"), upper}, {}, n)};
  };
  t["LeakyRelu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {
        c.im.emit("leaky_relu", {c.in(0)}, {{"alpha", floatAttr(c.attrFloat("alpha", 0.01f))}}, c.outName())};
  };
  t["Elu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("elu", {c.in(0)}, {{"alpha", floatAttr(c.attrFloat("alpha", 1.0f))}}, c.outName())};
  };
  t["Celu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    // celu(x, a) = max(0, x) + min(0, a·(exp(x/a) − 1)) = a · elu(x / a, 1).
    double alpha = floatAttr(c.attrFloat("alpha", 1.0f));
    if (alpha == 0.0) c.fail("alpha must not be 0");
    const ValuePtr& x = c.in(0);
    std::string n = c.outName();
    if (alpha == 1.0) return {c.im.emit("elu", {x}, {{"alpha", 1.0}}, n)};
    auto a = c.im.scalar(x->type.dtype, alpha, n + "_alpha");
    auto e = c.im.emit("elu", {c.im.emit("divide", {x, a}, {}, n + "_scaled")}, {{"alpha", 1.0}}, n + "_elu");
    return {c.im.emit("multiply", {e, a}, {}, n)};
  };
  t["Selu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    ir::Attrs a;
    if (c.hasAttr("alpha")) a["alpha"] = static_cast<double>(c.attrFloat("alpha", 0));
    if (c.hasAttr("gamma")) a["gamma"] = static_cast<double>(c.attrFloat("gamma", 0));
    return {c.im.emit("selu", {c.in(0)}, a, c.outName())};
  };
  t["HardSigmoid"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit(
        "hard_sigmoid", {c.in(0)},
        {{"alpha", floatAttr(c.attrFloat("alpha", 0.2f))}, {"beta", floatAttr(c.attrFloat("beta", 0.5f))}},
        c.outName())};
  };
  t["Gelu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("gelu", {c.in(0)}, {{"approximate", c.attrStr("approximate", "none")}}, c.outName())};
  };
  t["Mish"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    auto sp = c.im.emit("softplus", {c.in(0)}, {}, c.outName() + "_softplus");
    auto th = c.im.emit("tanh", {sp}, {}, c.outName() + "_tanh");
    return {c.im.emit("multiply", {c.in(0), th}, {}, c.outName())};
  };
  for (const auto& [onnx_op, op] : binaryOps()) {
    std::string o = op;
    t[onnx_op] = [o](NodeCtx& c) -> std::vector<ValuePtr> {
      ValuePtr a = c.in(0), b = c.in(1);
      if (o == "power") b = castTo(c, b, a->type.dtype, c.outName() + "_exponent");  // Pow allows mixed types
      return {c.im.emit(o, {a, b}, {}, c.outName())};
    };
  }
  t["BitShift"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const std::string dir = c.attrStr("direction", "");
    if (dir != "LEFT" && dir != "RIGHT") c.fail("direction must be 'LEFT' or 'RIGHT', not '" + dir + "'");
    return {c.im.emit(dir == "LEFT" ? "left_shift" : "right_shift", {c.in(0), c.in(1)}, {}, c.outName())};
  };
  t["Mod"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("mod", {c.in(0), c.in(1)}, {{"fmod", c.attrInt("fmod", 0) != 0}}, c.outName())};
  };
  auto variadic = [](const std::string& op, bool mean) {
    return [op, mean](NodeCtx& c) -> std::vector<ValuePtr> {
      ValuePtr acc = c.in(0);
      for (size_t i = 1; i < c.numInputs(); ++i)
        acc =
            c.im.emit(op, {acc, c.in(i)}, {},
                      i + 1 == c.numInputs() && !mean ? c.outName() : c.outName() + "_" + std::to_string(i));
      if (mean && c.numInputs() > 1)
        acc = c.im.emit(
            "divide",
            {acc, c.im.scalar(acc->type.dtype, static_cast<double>(c.numInputs()), c.outName() + "_count")},
            {}, c.outName());
      return {acc};
    };
  };
  t["Sum"] = variadic("add", false);
  t["Mean"] = variadic("add", true);
  t["Max"] = variadic("maximum", false);
  t["Min"] = variadic("minimum", false);
  t["Clip"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    ValuePtr x = c.in(0);
    ir::Attrs a;
    std::vector<std::pair<std::string, ValuePtr>> dynamic;  // non-constant bounds
    if (c.opset < 11) {
      if (c.hasAttr("min")) a["min"] = floatAttr(c.attrFloat("min", 0));
      if (c.hasAttr("max")) a["max"] = floatAttr(c.attrFloat("max", 0));
    } else {
      for (size_t i = 1; i <= 2; ++i) {
        if (!c.hasInput(i)) continue;
        const ValuePtr& b = c.inputs[i];
        const char* key = i == 1 ? "min" : "max";
        if (b->constant && b->constant->numel() == 1)
          a[key] = b->constant->at(0);
        else
          dynamic.emplace_back(i == 1 ? "maximum" : "minimum", b);
      }
    }
    if (dynamic.empty()) return {c.im.emit("clip", {x}, a, c.outName())};
    if (!a.empty()) x = c.im.emit("clip", {x}, a, c.outName() + "_clip");
    for (size_t i = 0; i < dynamic.size(); ++i)
      x = c.im.emit(dynamic[i].first, {x, dynamic[i].second}, {},
                    i + 1 == dynamic.size() ? c.outName() : c.outName() + "_" + dynamic[i].first);
    return {x};
  };
  // saturate (opset 19) applies to float8 targets only, which dtypeFromOnnx refuses.
  t["Cast"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    c.ignoreAttrs({"saturate"});
    ir::DType to = dtypeFromOnnx(static_cast<int>(c.attrInt("to", 0)), "Cast target");
    return {castTo(c, c.in(0), to, c.outName())};
  };
  t["CastLike"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    c.ignoreAttrs({"saturate"});
    return {castTo(c, c.in(0), c.in(1)->type.dtype, c.outName())};
  };
  t["Where"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    return {c.im.emit("where", {c.in(0), c.in(1), c.in(2)}, {}, c.outName())};
  };
  t["PRelu"] = [](NodeCtx& c) -> std::vector<ValuePtr> {
    const ValuePtr& x = c.in(0);
    auto zero = c.im.scalar(x->type.dtype, 0.0, c.outName() + "_zero");
    auto pos = c.im.emit("greater", {x, zero}, {}, c.outName() + "_pos");
    auto neg = c.im.emit("multiply", {x, c.in(1)}, {}, c.outName() + "_neg");
    return {c.im.emit("where", {pos, x, neg}, {}, c.outName())};
  };
  // Reductions: axes became an input in opset 13 (ReduceSum) and 18 (the others).
  const std::map<std::string, std::string> reductions = {
      {"ReduceSum", "sum"},    {"ReduceMean", "mean"},    {"ReduceMax", "max"}, {"ReduceMin", "min"},
      {"ReduceProd", "prod"},  {"ReduceL1", "sum"},       {"ReduceL2", "sum"},  {"ReduceSumSquare", "sum"},
      {"ReduceLogSum", "sum"}, {"ReduceLogSumExp", "sum"}};
  for (const auto& [onnx_op, op] : reductions) {
    std::string o = op, name = onnx_op;
    t[onnx_op] = [o, name](NodeCtx& c) -> std::vector<ValuePtr> {
      bool axes_input = name == "ReduceSum" ? c.opset >= 13 : c.opset >= 18;
      return reduce(c, o, axes_input);
    };
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    std::string o = op[3] == 'M' && op[4] == 'a' ? "argmax" : "argmin";
    t[op] = [o](NodeCtx& c) -> std::vector<ValuePtr> {
      ir::Attrs a{{"axis", c.attrInt("axis", 0)},
                  {"keepdims", c.attrInt("keepdims", 1) != 0},
                  {"select_last_index", c.attrInt("select_last_index", 0) != 0}};
      return {c.im.emit(o, {c.in(0)}, a, c.outName())};
    };
  }
}

}  // namespace mlcc::frontend::onnx_import
