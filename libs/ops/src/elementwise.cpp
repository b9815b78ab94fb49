// Elementwise ops (artifacts_schema/ops.md): unary math and activations,
// broadcasting binary/ternary ops (arithmetic, comparisons, logical, where),
// clip and cast. f32 runs in tight typed loops; f16/bf16 are staged through
// f32 (computed in f32, rounded once to the dtype); integer and bool dtypes
// run on their own storage types.
#include <cmath>
#include <limits>
#include <type_traits>

#include "elementwise_util.h"
#include "legalize_util_ew.h"
#include "mlcc/ir/float_bits.h"
#include "op_families.h"

namespace mlcc::ops {

namespace {

using ew::DClass, ir::DType, ir::Tensor, ir::Type;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------
// Integer arithmetic with wrap-around (no undefined behaviour on overflow).

template <class T>
T wrapAdd(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a + b;
  else
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <class T>
T wrapSub(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a - b;
  else
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <class T>
T wrapMul(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a * b;
  else
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <class T>
T wrapNeg(T a) {
  if constexpr (std::is_floating_point_v<T>)
    return -a;
  else
    return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a));
}

template <class T>
T divOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a / b;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return wrapNeg(a);  // INT_MIN / -1 overflows
    return static_cast<T>(a / b);      // truncates toward zero (ONNX)
  }
}

template <class T>
T modOp(T a, T b, bool fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (fmod) return r;
    if (r != 0) {
      if ((b < 0) != (r < 0)) r += b;
    } else {
      r = std::copysign(T(0), b);
    }
    return r;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
}

template <class T>
T powOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(a, b);
  } else {
    if constexpr (std::is_signed_v<T>)
      if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
    uint64_t base = static_cast<uint64_t>(a), r = 1;
    for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1) {
      if (e & 1) r *= base;
      base *= base;
    }
    return static_cast<T>(r);
  }
}

template <class T>
T maxOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a != a ? a : b;  // NaN propagates (numpy)
  return a < b ? b : a;
}
template <class T>
T minOp(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a || b != b) return a != a ? a : b;
  return b < a ? b : a;
}

// ---------------------------------------------------------------------------
// Type inference helpers.

Type inferUnary(const std::string& op, const std::vector<Type>& in, DClass cls, bool bool_result) {
  const Type& x = tensorOperand(in, 0, op.c_str());
  ew::checkClass(op, x.dtype, cls);
  return Type::tensor(bool_result ? DType::boolean : x.dtype, x.shape);
}

Shape broadcastAll(const std::string& op, const std::vector<Type>& in) {
  Shape s = tensorOperand(in, 0, op.c_str()).shape;
  for (size_t i = 1; i < in.size(); ++i)
    s = broadcastShapes(s, tensorOperand(in, i, op.c_str()).shape, op.c_str());
  return s;
}

// ---------------------------------------------------------------------------
// Unary ops.

template <class TI, class TO, class F>
void mapLoop(const TI* x, TO* o, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

// A float unary op: `make(attrs)` returns the f32 function; with F64 a
// generic one (`auto x`), also called on doubles for f64 operands.
template <bool F64 = false, class Make>
void addFloatUnary(std::vector<OpDef>& ops, const std::string& name, std::vector<AttrSpec> attrs, Make make) {
  OpDef d;
  d.name = name;
  d.pattern = OpPattern::Elementwise;
  d.attrs = std::move(attrs);
  d.f64 = F64;
  d.infer = [name, make](const std::vector<Type>& in, const ir::Attrs& a) {
    (void)make(a);  // validates the attributes (gelu's approximate)
    return inferUnary(name, in, DClass::Float, false);
  };
  d.compute = [make](const std::vector<Tensor>& in, const ir::Attrs& a) {
    if constexpr (F64)
      if (in[0].dtype() == DType::f64) {
        Tensor out = Tensor::zeros(DType::f64, in[0].shape());
        mapLoop(in[0].data<double>(), out.mutableData<double>(), out.numel(), make(a));
        return std::vector<Tensor>{out};
      }
    Tensor x = ew::toF32(in[0]);
    Tensor out = Tensor::zeros(DType::f32, x.shape());
    mapLoop(x.data<float>(), out.mutableData<float>(), x.numel(), make(a));
    return std::vector<Tensor>{ew::fromF32(out, in[0].dtype())};
  };
  ops.push_back(std::move(d));
}

// A float -> bool predicate (isnan, isinf): `f` is generic (`auto x`).
template <class F>
void addFloatPredicate(std::vector<OpDef>& ops, const std::string& name, F f) {
  OpDef d;
  d.name = name;
  d.pattern = OpPattern::Elementwise;
  d.f64 = true;
  d.infer = [name](const std::vector<Type>& in, const ir::Attrs&) {
    return inferUnary(name, in, DClass::Float, true);
  };
  d.compute = [f](const std::vector<Tensor>& in, const ir::Attrs&) {
    Tensor out = Tensor::zeros(DType::boolean, in[0].shape());
    auto run = [&](const auto* x) {
      mapLoop(x, out.mutableData<uint8_t>(), out.numel(),
              [f](auto v) { return static_cast<uint8_t>(f(v) ? 1 : 0); });
    };
    if (in[0].dtype() == DType::f64) {
      run(in[0].data<double>());
    } else {
      Tensor x = ew::toF32(in[0]);
      run(x.data<float>());
    }
    return std::vector<Tensor>{out};
  };
  ops.push_back(std::move(d));
}

// A numeric unary op with one generic function for floats and integers
// (f16/bf16 staged in f32).
template <class F>
void addNumUnary(std::vector<OpDef>& ops, const std::string& name, F f) {
  OpDef d;
  d.name = name;
  d.pattern = OpPattern::Elementwise;
  d.f64 = true;
  d.infer = [name](const std::vector<Type>& in, const ir::Attrs&) {
    return inferUnary(name, in, DClass::Num, false);
  };
  d.compute = [f](const std::vector<Tensor>& in, const ir::Attrs&) {
    DType t = in[0].dtype();
    if (t == DType::f16 || t == DType::bf16) {
      Tensor x = ew::toF32(in[0]);
      Tensor out = Tensor::zeros(DType::f32, x.shape());
      mapLoop(x.data<float>(), out.mutableData<float>(), x.numel(), [f](float v) { return f(v); });
      return std::vector<Tensor>{ew::fromF32(out, t)};
    }
    Tensor out = Tensor::zeros(t, in[0].shape());
    ew::dispatchStorage(t, [&](auto tag) {
      using T = decltype(tag);
      mapLoop(in[0].data<T>(), out.mutableData<T>(), out.numel(), [f](T v) { return static_cast<T>(f(v)); });
    });
    return std::vector<Tensor>{out};
  };
  ops.push_back(std::move(d));
}

AttrSpec floatAttr(const char* name, double def) {
  return AttrSpec{name, AttrKind::Float, ir::AttrValue(def)};
}

template <class F>
auto plain(F f) {
  return [f](const ir::Attrs&) { return f; };
}

void registerUnary(std::vector<OpDef>& ops) {
  addNumUnary(ops, "relu", [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
  addNumUnary(ops, "abs", [](auto x) { return x < decltype(x)(0) ? wrapNeg(x) : x; });
  addNumUnary(ops, "negative", [](auto x) { return wrapNeg(x); });
  addNumUnary(ops, "sign", [](auto x) {
    using T = decltype(x);
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;  // keeps 0 and NaN
  });

  addFloatUnary(ops, "leaky_relu", {floatAttr("alpha", 0.01)}, [](const ir::Attrs& a) {
    float alpha = static_cast<float>(attrFloat(a, "alpha"));
    return [alpha](float x) { return x < 0 ? alpha * x : x; };
  });
  addFloatUnary(ops, "elu", {floatAttr("alpha", 1.0)}, [](const ir::Attrs& a) {
    float alpha = static_cast<float>(attrFloat(a, "alpha"));
    return [alpha](float x) { return x < 0 ? alpha * std::expm1(x) : x; };
  });
  addFloatUnary(
      ops, "selu",
      {floatAttr("alpha", 1.67326319217681884765625), floatAttr("gamma", 1.05070102214813232421875)},
      [](const ir::Attrs& a) {
        float alpha = static_cast<float>(attrFloat(a, "alpha"));
        float gamma = static_cast<float>(attrFloat(a, "gamma"));
        return [alpha, gamma](float x) { return gamma * (x <= 0 ? alpha * std::expm1(x) : x); };
      });
  addFloatUnary(ops, "gelu", {AttrSpec{"approximate", AttrKind::Str, ir::AttrValue("none")}},
                [](const ir::Attrs& a) {
                  const std::string& mode = attrStr(a, "approximate");
                  bool tanh_form = mode == "tanh";
                  if (!tanh_form && mode != "none")
                    throw Error("op 'gelu': attribute 'approximate' must be \"none\" or \"tanh\", not \"" +
                                mode + "\"");
                  const float k = static_cast<float>(std::sqrt(2.0 / kPi));
                  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
                  return [tanh_form, k, inv_sqrt2](float x) {
                    if (tanh_form) return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
                    return 0.5f * x * (1.0f + std::erf(x * inv_sqrt2));
                  };
                });
  addFloatUnary<true>(ops, "sigmoid", {},
                      plain([](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); }));
  addFloatUnary(ops, "hard_sigmoid", {floatAttr("alpha", 0.2), floatAttr("beta", 0.5)},
                [](const ir::Attrs& a) {
                  float alpha = static_cast<float>(attrFloat(a, "alpha"));
                  float beta = static_cast<float>(attrFloat(a, "beta"));
                  return [alpha, beta](float x) { return std::max(0.0f, std::min(1.0f, alpha * x + beta)); };
                });
  addFloatUnary(ops, "hard_swish", {},
                plain([](float x) { return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f)); }));
  addFloatUnary<true>(ops, "silu", {}, plain([](auto x) { return x / (decltype(x)(1) + std::exp(-x)); }));
  addFloatUnary<true>(ops, "softplus", {}, plain([](auto x) {
                        return std::max(x, decltype(x)(0)) + std::log1p(std::exp(-std::fabs(x)));
                      }));
  addFloatUnary<true>(ops, "softsign", {}, plain([](auto x) { return x / (decltype(x)(1) + std::fabs(x)); }));
  addFloatUnary<true>(ops, "tanh", {}, plain([](auto x) { return std::tanh(x); }));
  addFloatUnary<true>(ops, "exp", {}, plain([](auto x) { return std::exp(x); }));
  addFloatUnary<true>(ops, "log", {}, plain([](auto x) { return std::log(x); }));
  addFloatUnary<true>(ops, "sqrt", {}, plain([](auto x) { return std::sqrt(x); }));
  addFloatUnary<true>(ops, "rsqrt", {}, plain([](auto x) { return decltype(x)(1) / std::sqrt(x); }));
  addFloatUnary<true>(ops, "erf", {}, plain([](auto x) { return std::erf(x); }));
  addFloatUnary<true>(ops, "sin", {}, plain([](auto x) { return std::sin(x); }));
  addFloatUnary<true>(ops, "cos", {}, plain([](auto x) { return std::cos(x); }));
  addFloatUnary<true>(ops, "tan", {}, plain([](auto x) { return std::tan(x); }));
  addFloatUnary<true>(ops, "asin", {}, plain([](auto x) { return std::asin(x); }));
  addFloatUnary<true>(ops, "acos", {}, plain([](auto x) { return std::acos(x); }));
  addFloatUnary<true>(ops, "atan", {}, plain([](auto x) { return std::atan(x); }));
  addFloatUnary<true>(ops, "sinh", {}, plain([](auto x) { return std::sinh(x); }));
  addFloatUnary<true>(ops, "cosh", {}, plain([](auto x) { return std::cosh(x); }));
  addFloatUnary<true>(ops, "asinh", {}, plain([](auto x) { return std::asinh(x); }));
  addFloatUnary<true>(ops, "acosh", {}, plain([](auto x) { return std::acosh(x); }));
  addFloatUnary<true>(ops, "atanh", {}, plain([](auto x) { return std::atanh(x); }));
  addFloatUnary<true>(ops, "floor", {}, plain([](auto x) { return std::floor(x); }));
  addFloatUnary<true>(ops, "ceil", {}, plain([](auto x) { return std::ceil(x); }));
  // Half to even: nearbyint in the default rounding mode (FE_TONEAREST).
  addFloatUnary<true>(ops, "round", {}, plain([](auto x) { return std::nearbyint(x); }));
  addFloatUnary<true>(ops, "reciprocal", {}, plain([](auto x) { return decltype(x)(1) / x; }));
  addFloatPredicate(ops, "isnan", [](auto x) { return std::isnan(x); });
  addFloatPredicate(ops, "isinf", [](auto x) { return std::isinf(x); });

  OpDef lnot;
  lnot.name = "logical_not";
  lnot.pattern = OpPattern::Elementwise;
  lnot.infer = [](const std::vector<Type>& in, const ir::Attrs&) {
    return inferUnary("logical_not", in, DClass::Bool, false);
  };
  lnot.compute = [](const std::vector<Tensor>& in, const ir::Attrs&) {
    Tensor out = Tensor::zeros(DType::boolean, in[0].shape());
    mapLoop(in[0].data<uint8_t>(), out.mutableData<uint8_t>(), out.numel(),
            [](uint8_t v) { return static_cast<uint8_t>(v ? 0 : 1); });
    return std::vector<Tensor>{out};
  };
  ops.push_back(std::move(lnot));

  OpDef bnot;
  bnot.name = "bitwise_not";
  bnot.pattern = OpPattern::Elementwise;
  bnot.infer = [](const std::vector<Type>& in, const ir::Attrs&) {
    return inferUnary("bitwise_not", in, DClass::Int, false);
  };
  bnot.compute = [](const std::vector<Tensor>& in, const ir::Attrs&) {
    Tensor out = Tensor::zeros(in[0].dtype(), in[0].shape());
    ew::dispatchStorage(in[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        mapLoop(in[0].data<T>(), out.mutableData<T>(), out.numel(), [](T v) { return static_cast<T>(~v); });
    });
    return std::vector<Tensor>{out};
  };
  ops.push_back(std::move(bnot));
}

// ---------------------------------------------------------------------------
// Broadcasting binary ops.

template <class TI, class TO, class F>
void binaryLoop(const TI* a, const TI* b, TO* o, const ew::BcastPlan& plan, F f) {
  plan.run([&](int64_t oo, const int64_t* offs, int64_t n, const int64_t* st) {
    const TI* pa = a + offs[0];
    const TI* pb = b + offs[1];
    TO* po = o + oo;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (st[0] == 1 && st[1] == 0) {
      const TI bv = *pb;
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
    } else if (st[0] == 0 && st[1] == 1) {
      const TI av = *pa;
      for (int64_t i = 0; i < n; ++i) po[i] = f(av, pb[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i * st[0]], pb[i * st[1]]);
    }
  });
}

enum class BinKind : uint8_t { Arith, Compare, Logical, Bitwise };

// The integer intrinsics' semantics (ir/intrinsics.h): shifts by an amount
// outside [0, bits) give 0, or -1 for a right shift of a negative value.
template <class T>
T shiftLeft(T x, T n) {
  if constexpr (std::is_signed_v<T>)
    if (n < 0) return 0;
  if (n >= static_cast<T>(sizeof(T) * 8)) return 0;
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(x) << n);
}

template <class T>
T shiftRight(T x, T n) {
  if constexpr (std::is_signed_v<T>) {
    if (n < 0) return 0;
    if (n >= static_cast<T>(sizeof(T) * 8)) return x < 0 ? T(-1) : T(0);
  } else if (n >= static_cast<T>(sizeof(T) * 8)) {
    return 0;
  }
  return static_cast<T>(x >> n);
}

// `make(attrs)` returns a generic function (a, b) -> result.
// `kind` is a template argument so that an arithmetic op's function is never
// instantiated for bool (which has no arithmetic: infer rejects it).
template <BinKind kind, class Make>
void addBinary(std::vector<OpDef>& ops, const std::string& name, std::vector<AttrSpec> attrs, Make make) {
  OpDef d;
  d.name = name;
  d.min_inputs = d.max_inputs = 2;
  d.pattern = OpPattern::Broadcast;
  d.attrs = std::move(attrs);
  d.f64 = true;  // computed in the operands' storage type
  constexpr bool same_type = kind == BinKind::Arith || kind == BinKind::Bitwise;  // else bool results
  DClass cls = kind == BinKind::Arith     ? DClass::Num
               : kind == BinKind::Bitwise ? DClass::Int
               : kind == BinKind::Compare ? DClass::Any
                                          : DClass::Bool;
  d.infer = [name, cls](const std::vector<Type>& in, const ir::Attrs&) {
    const Type& a = tensorOperand(in, 0, name.c_str());
    tensorOperand(in, 1, name.c_str());
    ew::checkClass(name, a.dtype, cls);
    ew::checkSameDType(name, in);
    Shape s = broadcastAll(name, in);
    return Type::tensor(same_type ? a.dtype : DType::boolean, s);
  };
  d.compute = [make](const std::vector<Tensor>& in, const ir::Attrs& attrs) {
    DType t = in[0].dtype();
    std::vector<int64_t> shape = ew::broadcastConcrete({in[0].shape(), in[1].shape()});
    ew::BcastPlan plan(shape, {in[0].shape(), in[1].shape()});
    auto f = make(attrs);
    bool stage = t == DType::f16 || t == DType::bf16;
    Tensor a = stage ? ew::toF32(in[0]) : in[0];
    Tensor b = stage ? ew::toF32(in[1]) : in[1];
    DType st = stage ? DType::f32 : t;
    DType rt = same_type ? st : DType::boolean;
    Tensor out = Tensor::zeros(rt, shape);
    ew::dispatchStorage(st, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!same_type) {
        binaryLoop(a.data<T>(), b.data<T>(), out.mutableData<uint8_t>(), plan,
                   [&f](T x, T y) { return static_cast<uint8_t>(f(x, y) ? 1 : 0); });
      } else if constexpr (kind == BinKind::Bitwise && (!std::is_integral_v<T> || std::is_same_v<T, bool>)) {
        // floats and bool: rejected by infer
      } else if constexpr (!std::is_same_v<T, bool>) {  // bool has no arithmetic (rejected by infer)
        binaryLoop(a.data<T>(), b.data<T>(), out.mutableData<T>(), plan,
                   [&f](T x, T y) { return static_cast<T>(f(x, y)); });
      }
    });
    if (stage && same_type) out = ew::fromF32(out, t);
    return std::vector<Tensor>{out};
  };
  ops.push_back(std::move(d));
}

void registerBinary(std::vector<OpDef>& ops) {
  auto arith = [&](const char* name, auto f) { addBinary<BinKind::Arith>(ops, name, {}, plain(f)); };
  arith("add", [](auto a, auto b) { return wrapAdd(a, b); });
  arith("subtract", [](auto a, auto b) { return wrapSub(a, b); });
  arith("multiply", [](auto a, auto b) { return wrapMul(a, b); });
  arith("divide", [](auto a, auto b) { return divOp(a, b); });
  arith("maximum", [](auto a, auto b) { return maxOp(a, b); });
  arith("minimum", [](auto a, auto b) { return minOp(a, b); });
  arith("power", [](auto a, auto b) { return powOp(a, b); });
  addBinary<BinKind::Arith>(ops, "mod", {AttrSpec{"fmod", AttrKind::Bool, ir::AttrValue(false)}},
                            [](const ir::Attrs& a) {
                              bool fm = attrBool(a, "fmod");
                              return [fm](auto x, auto y) { return modOp(x, y, fm); };
                            });
  auto cmp = [&](const char* name, auto f) { addBinary<BinKind::Compare>(ops, name, {}, plain(f)); };
  cmp("equal", [](auto a, auto b) { return a == b; });
  cmp("not_equal", [](auto a, auto b) { return a != b; });
  cmp("less", [](auto a, auto b) { return a < b; });
  cmp("less_equal", [](auto a, auto b) { return a <= b; });
  cmp("greater", [](auto a, auto b) { return a > b; });
  cmp("greater_equal", [](auto a, auto b) { return a >= b; });
  auto logical = [&](const char* name, auto f) { addBinary<BinKind::Logical>(ops, name, {}, plain(f)); };
  logical("logical_and", [](auto a, auto b) { return (a != 0) && (b != 0); });
  logical("logical_or", [](auto a, auto b) { return (a != 0) || (b != 0); });
  logical("logical_xor", [](auto a, auto b) { return (a != 0) != (b != 0); });
  auto bitwise = [&](const char* name, auto f) { addBinary<BinKind::Bitwise>(ops, name, {}, plain(f)); };
  bitwise("bitwise_and", [](auto a, auto b) { return a & b; });
  bitwise("bitwise_or", [](auto a, auto b) { return a | b; });
  bitwise("bitwise_xor", [](auto a, auto b) { return a ^ b; });
  bitwise("left_shift", [](auto a, auto b) { return shiftLeft(a, b); });
  bitwise("right_shift", [](auto a, auto b) { return shiftRight(a, b); });
}

// ---------------------------------------------------------------------------
// where(cond, x, y): moves raw elements, so any dtype works by element size.

template <class E>
void whereLoop(const uint8_t* c, const E* x, const E* y, E* o, const ew::BcastPlan& plan) {
  plan.run([&](int64_t oo, const int64_t* offs, int64_t n, const int64_t* st) {
    const uint8_t* pc = c + offs[0];
    const E* px = x + offs[1];
    const E* py = y + offs[2];
    E* po = o + oo;
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i * st[0]] ? px[i * st[1]] : py[i * st[2]];
    }
  });
}

OpDef whereOp() {
  OpDef d;
  d.name = "where";
  d.f64 = true;
  d.min_inputs = d.max_inputs = 3;
  d.pattern = OpPattern::Broadcast;
  d.infer = [](const std::vector<Type>& in, const ir::Attrs&) {
    const Type& c = tensorOperand(in, 0, "where");
    const Type& x = tensorOperand(in, 1, "where");
    tensorOperand(in, 2, "where");
    ew::checkClass("where", c.dtype, DClass::Bool, "condition");
    ew::checkSameDType("where", in, 1);
    return Type::tensor(x.dtype, broadcastAll("where", in));
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs&) {
    std::vector<std::vector<int64_t>> shapes = {in[0].shape(), in[1].shape(), in[2].shape()};
    std::vector<int64_t> shape = ew::broadcastConcrete(shapes);
    ew::BcastPlan plan(shape, shapes);
    Tensor out = Tensor::zeros(in[1].dtype(), shape);
    const uint8_t* c = in[0].data<uint8_t>();
    switch (ir::dtypeBytes(in[1].dtype())) {
      case 1:
        whereLoop(c, in[1].data<uint8_t>(), in[2].data<uint8_t>(), out.mutableData<uint8_t>(), plan);
        break;
      case 2:
        whereLoop(c, in[1].data<uint16_t>(), in[2].data<uint16_t>(), out.mutableData<uint16_t>(), plan);
        break;
      case 4:
        whereLoop(c, in[1].data<uint32_t>(), in[2].data<uint32_t>(), out.mutableData<uint32_t>(), plan);
        break;
      default:
        whereLoop(c, in[1].data<uint64_t>(), in[2].data<uint64_t>(), out.mutableData<uint64_t>(), plan);
        break;
    }
    return std::vector<Tensor>{out};
  };
  return d;
}

// ---------------------------------------------------------------------------
// ewise_fma(x, y, z) = x * y + z, broadcast (MLC's ewise_fma, the target of
// the shipped multiply-add rewrite): f32 only. The kernel is multiply then
// add (the product rounded first); compiled code may contract the two into
// one fused multiply-add, as it does for any multiply feeding an add.

OpDef fmaOp(const OpDef& multiply, const OpDef& add) {
  OpDef d;
  d.name = "ewise_fma";
  d.min_inputs = d.max_inputs = 3;
  d.pattern = OpPattern::Broadcast;
  d.infer = [mul = multiply.infer, add = add.infer](const std::vector<Type>& in, const ir::Attrs& a) {
    for (size_t k = 0; k < 3; ++k)
      if (tensorOperand(in, k, "ewise_fma").dtype != DType::f32)
        throw Error("op 'ewise_fma': operand " + std::to_string(k) + " is " +
                    std::string(ir::dtypeName(in[k].dtype)) + "; only f32 is supported yet");
    return add({mul({in[0], in[1]}, a), in[2]}, a);
  };
  d.compute = [mul = multiply.compute, add = add.compute](const std::vector<Tensor>& in, const ir::Attrs& a) {
    return add({mul({in[0], in[1]}, a)[0], in[2]}, a);
  };
  d.flops = [](const std::vector<Type>&, const Type& out, const ir::Attrs&) {
    return flopsProduct(2, staticCount(out.shape));
  };
  return d;
}

// ---------------------------------------------------------------------------
// clip and cast.

OpDef clipOp() {
  OpDef d;
  d.name = "clip";
  d.f64 = true;
  d.pattern = OpPattern::Elementwise;
  d.attrs = {AttrSpec{"min", AttrKind::Float, std::nullopt, true},
             AttrSpec{"max", AttrKind::Float, std::nullopt, true}};
  d.infer = [](const std::vector<Type>& in, const ir::Attrs&) {
    return inferUnary("clip", in, DClass::Num, false);
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs& a) {
    double lo = hasAttr(a, "min") ? attrFloat(a, "min") : -std::numeric_limits<double>::infinity();
    double hi = hasAttr(a, "max") ? attrFloat(a, "max") : std::numeric_limits<double>::infinity();
    DType t = in[0].dtype();
    bool stage = t == DType::f16 || t == DType::bf16;
    Tensor x = stage ? ew::toF32(in[0]) : in[0];
    Tensor out = Tensor::zeros(x.dtype(), x.shape());
    ew::dispatchStorage(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) {
        T l = static_cast<T>(lo), h = static_cast<T>(hi);
        mapLoop(x.data<T>(), out.mutableData<T>(), x.numel(), [l, h](T v) {
          return v < l ? l : v > h ? h : v;
        });
      } else {
        // Integer bounds: the integers within [lo, hi], saturated to T.
        auto bound = [](double v) {
          constexpr double tmin = static_cast<double>(std::numeric_limits<T>::min());
          constexpr double tmax = static_cast<double>(std::numeric_limits<T>::max());
          return v <= tmin   ? std::numeric_limits<T>::min()
                 : v >= tmax ? std::numeric_limits<T>::max()
                             : static_cast<T>(v);
        };
        T l = bound(std::ceil(lo)), h = bound(std::floor(hi));
        mapLoop(x.data<T>(), out.mutableData<T>(), x.numel(), [l, h](T v) {
          return v < l ? l : v > h ? h : v;
        });
      }
    });
    return std::vector<Tensor>{stage ? ew::fromF32(out, t) : out};
  };
  return d;
}

template <class S, class D>
D convertValue(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);  // NaN is true, as numpy
  } else if constexpr (std::is_floating_point_v<S> && !std::is_floating_point_v<D>) {
    if (!(v == v)) return 0;
    if (v >= static_cast<S>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    if (v <= static_cast<S>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    return static_cast<D>(v);  // truncates toward zero (ONNX)
  } else {
    return static_cast<D>(v);  // integers wrap, as numpy astype
  }
}

OpDef castOp() {
  OpDef d;
  d.name = "cast";
  d.f64 = true;
  d.pattern = OpPattern::Elementwise;
  d.attrs = {AttrSpec{"dtype", AttrKind::Str, std::nullopt}};
  d.infer = [](const std::vector<Type>& in, const ir::Attrs& a) {
    const Type& x = tensorOperand(in, 0, "cast");
    const std::string& name = attrStr(a, "dtype");
    auto t = ir::parseDType(name);
    if (!t) throw Error("op 'cast': unknown dtype \"" + name + "\"");
    return Type::tensor(*t, x.shape);
  };
  d.compute = [](const std::vector<Tensor>& in, const ir::Attrs& a) {
    DType to = *ir::parseDType(attrStr(a, "dtype"));
    const Tensor& x = in[0];
    Tensor out = Tensor::zeros(to, x.shape());
    int64_t n = x.numel();
    auto half = [](DType t) { return t == DType::f16 || t == DType::bf16; };
    if (half(x.dtype()) || half(to)) {
      for (int64_t i = 0; i < n; ++i) out.set(i, x.at(i));  // exact through double
    } else {
      ew::dispatchStorage(x.dtype(), [&](auto stag) {
        using S = decltype(stag);
        ew::dispatchStorage(to, [&](auto dtag) {
          using D = decltype(dtag);
          mapLoop(x.data<S>(), out.mutableData<D>(), n, [](S v) { return convertValue<S, D>(v); });
        });
      });
    }
    return std::vector<Tensor>{out};
  };
  return d;
}

// ---------------------------------------------------------------------------
// Legalization (TensorIR compute definitions). Each op is one compute stage
// named after the op; f16/bf16 values are staged through f32 exactly where
// the kernels above stage them, so the results round the same way.

using ir::PrimExpr;
using namespace ir::build;

PrimExpr call(const char* name, const PrimExpr& x) { return ir::makeCall(name, {x}); }
PrimExpr neg(const PrimExpr& x) { return ir::makeUnary(ir::UnaryOp::Neg, x); }
PrimExpr sel(const PrimExpr& c, const PrimExpr& t, const PrimExpr& f) { return ir::makeSelect(c, t, f); }
PrimExpr f32(double v) { return ir::makeFloat(v, DType::f32); }

// x -> f(x) on the f32 (float) or own-dtype (integer) value of each element.
using ScalarFn = ScalarExprFn;

LegalizeFn legalizeUnary(const std::string& name, ScalarFn f) {
  return [name, f](const std::vector<Type>& in, const Type& out, const ir::Attrs& attrs) {
    ir::te::FuncBuilder fb(name);
    ir::Buffer x = fb.input("x", in[0]);
    DType t = in[0].dtype;
    ir::Buffer y = fb.compute(name, out.shape, out.dtype, [&](const ir::te::Indices& i) {
      PrimExpr v = load(x, {i.begin(), i.end()});
      if (!ir::isFloat(t)) return f(attrs, v);
      PrimExpr r = f(attrs, lew::staged(v));
      return r->dtype == DType::boolean ? r : lew::fromF32(r, out.dtype);
    });
    return fb.build({y});
  };
}

// Broadcasting op over all operands: f(values), where float operands of a
// `stage` op are given as f32 and an f32 result is cast back to the output dtype.
using NaryFn = std::function<PrimExpr(const ir::Attrs&, const std::vector<PrimExpr>& v)>;

LegalizeFn legalizeBroadcast(const std::string& name, std::vector<std::string> names, bool stage, NaryFn f) {
  return [name, names, stage, f](const std::vector<Type>& in, const Type& out, const ir::Attrs& attrs) {
    ir::te::FuncBuilder fb(name);
    std::vector<ir::Buffer> bufs;
    for (size_t k = 0; k < in.size(); ++k) bufs.push_back(fb.input(names[k], in[k]));
    ir::Buffer y = fb.compute(name, out.shape, out.dtype, [&](const ir::te::Indices& i) {
      std::vector<PrimExpr> v;
      for (const auto& b : bufs) {
        PrimExpr e = lew::loadBroadcast(b, out.shape, i);
        v.push_back(stage && lew::isHalf(e->dtype) ? lew::staged(e) : e);
      }
      PrimExpr r = f(attrs, v);
      return ir::isFloat(r->dtype) ? lew::fromF32(r, out.dtype) : r;
    });
    return fb.build({y});
  };
}

OpDef& opNamed(std::vector<OpDef>& ops, const std::string& name) {
  for (auto& d : ops)
    if (d.name == name) return d;
  throw Error("internal: op '" + name + "' is not registered");
}

ScalarFn intrinsic(const char* fn) {
  return [fn](const ir::Attrs&, const PrimExpr& x) { return call(fn, x); };
}

float attrF32(const ir::Attrs& a, const char* name) { return static_cast<float>(attrFloat(a, name)); }

void legalizeUnaryOps(std::vector<OpDef>& ops) {
  auto set = [&](const char* name, ScalarFn f) {
    OpDef& d = opNamed(ops, name);
    d.legalize = legalizeUnary(name, f);
    d.scalar = f;
  };
  set("relu", [](const ir::Attrs&, const PrimExpr& x) {
    PrimExpr zero = lew::lit(x, 0);
    return sel(lew::lt(x, zero), zero, x);  // keeps NaN
  });
  set("abs", [](const ir::Attrs&, const PrimExpr& x) { return sel(lew::lt(x, lew::lit(x, 0)), neg(x), x); });
  set("negative", [](const ir::Attrs&, const PrimExpr& x) { return neg(x); });
  set("sign", [](const ir::Attrs&, const PrimExpr& x) {
    PrimExpr zero = lew::lit(x, 0);
    return sel(lew::gt(x, zero), lew::lit(x, 1),
               sel(lew::lt(x, zero), lew::lit(x, -1), x));  // keeps 0 and NaN
  });
  set("leaky_relu", [](const ir::Attrs& a, const PrimExpr& x) {
    return sel(lew::lt(x, f32(0)), f32(attrF32(a, "alpha")) * x, x);
  });
  set("elu", [](const ir::Attrs& a, const PrimExpr& x) {
    return sel(lew::lt(x, f32(0)), f32(attrF32(a, "alpha")) * call("expm1", x), x);
  });
  set("selu", [](const ir::Attrs& a, const PrimExpr& x) {
    return f32(attrF32(a, "gamma")) * sel(lew::le(x, f32(0)), f32(attrF32(a, "alpha")) * call("expm1", x), x);
  });
  set("gelu", [](const ir::Attrs& a, const PrimExpr& x) {
    if (attrStr(a, "approximate") == "tanh") {
      PrimExpr k = f32(static_cast<float>(std::sqrt(2.0 / kPi)));
      return f32(0.5) * x * (f32(1) + call("tanh", k * (x + f32(0.044715f) * x * x * x)));
    }
    PrimExpr inv_sqrt2 = f32(static_cast<float>(1.0 / std::sqrt(2.0)));
    return f32(0.5) * x * (f32(1) + call("erf", x * inv_sqrt2));
  });
  set("sigmoid", [](const ir::Attrs&, const PrimExpr& x) {
    return lew::lit(x, 1) / (lew::lit(x, 1) + call("exp", neg(x)));
  });
  set("hard_sigmoid", [](const ir::Attrs& a, const PrimExpr& x) {
    PrimExpr v = f32(attrF32(a, "alpha")) * x + f32(attrF32(a, "beta"));
    return lew::stdMax(f32(0), lew::stdMin(f32(1), v));
  });
  set("hard_swish", [](const ir::Attrs&, const PrimExpr& x) {
    return x * lew::stdMax(f32(0), lew::stdMin(f32(1), x / f32(6) + f32(0.5)));
  });
  set("silu", [](const ir::Attrs&, const PrimExpr& x) { return x / (lew::lit(x, 1) + call("exp", neg(x))); });
  set("softplus", [](const ir::Attrs&, const PrimExpr& x) {
    return lew::stdMax(x, lew::lit(x, 0)) + call("log1p", call("exp", neg(call("abs", x))));
  });
  set("softsign", [](const ir::Attrs&, const PrimExpr& x) { return x / (lew::lit(x, 1) + call("abs", x)); });
  for (const char* fn :
       {"tanh", "exp",  "log",  "sqrt",  "rsqrt", "erf",   "sin",   "cos",  "tan",   "asin",  "acos",
        "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil", "round", "isnan", "isinf"})
    set(fn, intrinsic(fn));  // round: nearbyint, half to even, as the kernel
  set("reciprocal", [](const ir::Attrs&, const PrimExpr& x) { return lew::lit(x, 1) / x; });
  set("logical_not", [](const ir::Attrs&, const PrimExpr& x) { return ir::makeUnary(ir::UnaryOp::Not, x); });
  set("bitwise_not", intrinsic("bitwise_not"));
}

void legalizeBinaryOps(std::vector<OpDef>& ops) {
  auto set = [&](const char* name, bool stage,
                 std::function<PrimExpr(const ir::Attrs&, PrimExpr, PrimExpr)> f) {
    opNamed(ops, name).legalize = legalizeBroadcast(
        name, {"a", "b"}, stage,
        [f](const ir::Attrs& at, const std::vector<PrimExpr>& v) { return f(at, v[0], v[1]); });
  };
  set("add", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return a + b; });
  set("subtract", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return a - b; });
  set("multiply", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return a * b; });
  set("divide", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) {
    return ir::isFloat(a->dtype) ? a / b : lew::truncDiv(a, b);  // integers truncate toward zero
  });
  set("maximum", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::nanMaximum(a, b); });
  set("minimum", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::nanMinimum(a, b); });
  set("power", true, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return ir::makeCall("pow", {a, b}); });
  set("mod", true, [](const ir::Attrs& at, PrimExpr a, PrimExpr b) {
    bool fm = attrBool(at, "fmod");
    if (!ir::isFloat(a->dtype)) return fm ? lew::truncMod(a, b) : lew::floorMod(a, b);
    PrimExpr r = ir::makeCall("fmod", {a, b});
    if (fm) return r;
    PrimExpr zero = lew::lit(r, 0);  // python %: the sign of the divisor
    return sel(lew::land(ne(r, zero), ne(lew::lt(b, zero), lew::lt(r, zero))), r + b, r);
  });
  // Comparisons are exact on f16/bf16 values: no staging.
  set("equal", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return eq(a, b); });
  set("not_equal", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return ne(a, b); });
  set("less", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::lt(a, b); });
  set("less_equal", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::le(a, b); });
  set("greater", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::gt(a, b); });
  set("greater_equal", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::ge(a, b); });
  set("logical_and", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::land(a, b); });
  set("logical_or", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return lew::lor(a, b); });
  set("logical_xor", false, [](const ir::Attrs&, PrimExpr a, PrimExpr b) { return ne(a, b); });
  for (auto [op, fn] : {std::pair{"bitwise_and", "bitwise_and"}, std::pair{"bitwise_or", "bitwise_or"},
                        std::pair{"bitwise_xor", "bitwise_xor"}, std::pair{"left_shift", "shift_left"},
                        std::pair{"right_shift", "shift_right"}})
    set(op, false, [fn](const ir::Attrs&, PrimExpr a, PrimExpr b) { return ir::makeCall(fn, {a, b}); });
  opNamed(ops, "where").legalize = legalizeBroadcast(
      "where", {"cond", "x", "y"}, false,
      [](const ir::Attrs&, const std::vector<PrimExpr>& v) { return sel(v[0], v[1], v[2]); });
  opNamed(ops, "ewise_fma").legalize =
      legalizeBroadcast("ewise_fma", {"x", "y", "z"}, false,
                        [](const ir::Attrs&, const std::vector<PrimExpr>& v) { return v[0] * v[1] + v[2]; });
}

// clip's integer bounds, as the kernel: the integers within [lo, hi],
// saturated to the dtype.
int64_t clipIntBound(double v, DType t) {
  const int64_t imin = ir::intMin(t), imax = ir::intMax(t);
  // 2^63 - 1 is not a double: compare i64 against the doubles -2^63 and 2^63.
  const double tmin = static_cast<double>(imin),
               tmax = t == DType::i64 ? 9223372036854775808.0 : static_cast<double>(imax);
  return v <= tmin ? imin : v >= tmax ? imax : static_cast<int64_t>(v);
}

PrimExpr clipValue(const ir::Attrs& a, const PrimExpr& x) {
  bool has_lo = hasAttr(a, "min"), has_hi = hasAttr(a, "max");
  PrimExpr lo, hi;
  if (ir::isFloat(x->dtype)) {  // f32 or f64 here (f16/bf16 staged)
    if (has_lo) lo = lew::lit(x, attrFloat(a, "min"));
    if (has_hi) hi = lew::lit(x, attrFloat(a, "max"));
  } else {
    if (has_lo) lo = ir::makeInt(clipIntBound(std::ceil(attrFloat(a, "min")), x->dtype), x->dtype);
    if (has_hi) hi = ir::makeInt(clipIntBound(std::floor(attrFloat(a, "max")), x->dtype), x->dtype);
  }
  // The kernel's v < l ? l : v > h ? h : v.
  PrimExpr r = has_hi ? sel(lew::gt(x, hi), hi, x) : x;
  return has_lo ? sel(lew::lt(x, lo), lo, r) : r;
}

PrimExpr castValue(const PrimExpr& x, DType to) {
  if (x->dtype == to) return x;
  if (to == DType::boolean) return ne(x, lew::lit(x, 0));  // NaN is true, as numpy
  // float -> int saturates (NaN -> 0) and truncates toward zero in TIR as in
  // the kernel; int -> int wraps; everything else rounds to nearest even.
  return ir::makeCast(to, x);
}

void legalizeOtherOps(std::vector<OpDef>& ops) {
  opNamed(ops, "clip").legalize = legalizeUnary("clip", clipValue);
  opNamed(ops, "cast").legalize = [](const std::vector<Type>& in, const Type& out, const ir::Attrs&) {
    ir::te::FuncBuilder fb("cast");
    ir::Buffer x = fb.input("x", in[0]);
    ir::Buffer y = fb.compute("cast", out.shape, out.dtype, [&](const ir::te::Indices& i) {
      return castValue(load(x, {i.begin(), i.end()}), out.dtype);
    });
    return fb.build({y});
  };
}

}  // namespace

void registerElementwiseOps(std::vector<OpDef>& ops) {
  std::vector<OpDef> mine;
  registerUnary(mine);
  registerBinary(mine);
  mine.push_back(whereOp());
  mine.push_back(fmaOp(opNamed(mine, "multiply"), opNamed(mine, "add")));
  mine.push_back(clipOp());
  mine.push_back(castOp());
  legalizeUnaryOps(mine);
  legalizeBinaryOps(mine);
  legalizeOtherOps(mine);
  for (auto& d : mine) ops.push_back(std::move(d));
}

}  // namespace mlcc::ops
