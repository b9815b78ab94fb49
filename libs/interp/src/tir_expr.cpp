// Compilation of TensorIR expressions into typed closures (see tir_nodes.h):
// integer floor division/modulo, wrapping integer arithmetic, saturating
// float-to-int casts, f32/f16/bf16 arithmetic in float (f16/bf16 rounded
// after each operation) and f64 in double, the math intrinsics of
// intrinsics.h through libm (expf for f32, exp for f64), and bounds-checked
// loads.
#include <cmath>
#include <cstring>
#include <limits>

#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "tir_compile.h"

namespace mlcc::interp::tir {

using ir::BinaryOp;
using ir::DType;

void Index::fail(Frame& f) const {
  const BufInfo& info = (*infos)[buf];
  const BufRt& rt = f.bufs[buf];
  std::string where, shape;
  for (size_t d = 0; d < size(); ++d) {
    where += (d ? ", " : "") + std::to_string(at(f, d));
    shape += (d ? ", " : "") + std::to_string(rt.shape[d]);
  }
  throw Error("out-of-bounds access %" + info.name + "[" + where + "] of buffer %" + info.name + ": " +
              std::string(ir::dtypeName(info.dtype)) + "[" + shape + "]");
}

bool Compiler::isInvariant(const ir::PrimExpr& e) const {
  return !ir::anyOf(e, [this](const ir::PrimExpr& x) {
    if (x->kind == ir::ExprKind::Load || x->kind == ir::ExprKind::Call) return true;  // buffers may change
    const auto* v = x->as<ir::VarNode>();
    if (!v) return false;
    auto it = slots.find(v);
    if (it == slots.end()) return true;
    for (int s : invariants->varying)
      if (s == it->second) return true;
    return false;
  });
}

bool Compiler::invariantTerm(const ir::PrimExpr& e, Affine& out, int64_t scale) {
  if (!invariants || e->dtype != DType::i64 || !isInvariant(e)) return false;
  const int slot = newSlot();
  invariants->list.push_back({slot, intExpr(e)});
  out.terms.emplace_back(slot, scale);
  return true;
}

bool Compiler::affine(const ir::PrimExpr& e, Affine& out, int64_t scale) {
  if (e->dtype != DType::i64) return false;
  if (auto* i = e->as<ir::IntImmNode>()) {
    out.c += i->value * scale;
    return true;
  }
  if (auto* v = e->as<ir::VarNode>()) {
    auto it = slots.find(v);
    if (it == slots.end()) return false;
    for (auto& [s, k] : out.terms)
      if (s == it->second) {
        k += scale;
        return true;
      }
    out.terms.emplace_back(it->second, scale);
    return true;
  }
  if (auto* b = e->as<ir::BinaryNode>()) {
    int64_t c;
    switch (b->op) {
      case BinaryOp::Add: {
        Affine saved = out;
        if (affine(b->a, out, scale) && affine(b->b, out, scale)) return true;
        out = std::move(saved);
        return invariantTerm(e, out, scale);
      }
      case BinaryOp::Sub: {
        Affine saved = out;
        if (affine(b->a, out, scale) && affine(b->b, out, -scale)) return true;
        out = std::move(saved);
        return invariantTerm(e, out, scale);
      }
      case BinaryOp::Mul:
        if (ir::asConstInt(b->b, &c)) return affine(b->a, out, scale * c);
        if (ir::asConstInt(b->a, &c)) return affine(b->b, out, scale * c);
        return invariantTerm(e, out, scale);
      default: return invariantTerm(e, out, scale);
    }
  }
  return invariantTerm(e, out, scale);
}

Index Compiler::index(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices) {
  Index ix;
  ix.buf = bufferId(buf);
  ix.infos = &buffers;
  ix.affine = true;
  for (const auto& i : indices) {
    Affine a;
    if (!affine(i, a, 1)) {
      ix.affine = false;
      break;
    }
    ix.aff.push_back(std::move(a));
  }
  if (!ix.affine) {
    ix.aff.clear();
    for (const auto& i : indices) ix.exprs.push_back(intExpr(i));
  }
  return ix;
}

namespace {

// ---- integer expressions ----
struct IConst final : IExpr {
  explicit IConst(int64_t v) : v(v) {}
  int64_t eval(Frame&) const override { return v; }
  int64_t v;
};
struct IVar final : IExpr {
  explicit IVar(int s) : slot(s) {}
  int64_t eval(Frame& f) const override { return f.slots[slot]; }
  int slot;
};

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

template <BinaryOp OP>
struct IBin final : IExpr {
  IBin(IPtr x, IPtr y, DType t) : a(std::move(x)), b(std::move(y)), t(t) {}
  int64_t eval(Frame& f) const override {
    int64_t x = a->eval(f), y = b->eval(f);
    if constexpr (OP == BinaryOp::Add) return wrapInt(static_cast<int64_t>(u(x) + u(y)), t);
    if constexpr (OP == BinaryOp::Sub) return wrapInt(static_cast<int64_t>(u(x) - u(y)), t);
    if constexpr (OP == BinaryOp::Mul) return wrapInt(static_cast<int64_t>(u(x) * u(y)), t);
    if constexpr (OP == BinaryOp::Div) return wrapInt(floorDiv(x, y), t);
    if constexpr (OP == BinaryOp::Mod) return wrapInt(floorMod(x, y), t);
    if constexpr (OP == BinaryOp::Min) return x < y ? x : y;
    if constexpr (OP == BinaryOp::Max) return x > y ? x : y;
    if constexpr (OP == BinaryOp::EQ) return x == y;
    if constexpr (OP == BinaryOp::NE) return x != y;
    if constexpr (OP == BinaryOp::LT) return x < y;
    if constexpr (OP == BinaryOp::LE) return x <= y;
    if constexpr (OP == BinaryOp::GT) return x > y;
    if constexpr (OP == BinaryOp::GE) return x >= y;
    if constexpr (OP == BinaryOp::And) return x && y;
    if constexpr (OP == BinaryOp::Or) return x || y;
  }
  IPtr a, b;
  DType t;
};
// The integer intrinsics (intrinsics.h) on wrapped values: a narrow signed
// value is held sign-extended and an unsigned one zero-extended, so
// and/or/xor need no wrapping and an arithmetic right shift is a logical one
// for u8, u16, u32.
enum class BitOp : uint8_t { And, Or, Xor, Not, Shl, Shr };
struct IBits final : IExpr {
  IBits(BitOp op, IPtr x, IPtr y, DType t)
      : op(op), a(std::move(x)), b(std::move(y)), t(t), bits(ir::dtypeBytes(t) * 8) {}
  int64_t eval(Frame& f) const override {
    const int64_t x = a->eval(f);
    if (op == BitOp::Not) return wrapInt(~x, t);
    const int64_t y = b->eval(f);
    switch (op) {
      case BitOp::And: return x & y;
      case BitOp::Or: return x | y;
      case BitOp::Xor: return x ^ y;
      case BitOp::Shl: return y < 0 || y >= bits ? 0 : wrapInt(static_cast<int64_t>(u(x) << y), t);
      case BitOp::Shr:
        if (y < 0) return 0;
        return y >= bits ? (x < 0 ? -1 : 0) : x >> y;
      case BitOp::Not: break;
    }
    return 0;
  }
  BitOp op;
  IPtr a, b;
  DType t;
  int bits;
};
// pow of integers (intrinsics.h): square-and-multiply modulo 2^64, wrapped.
struct IPow final : IExpr {
  IPow(IPtr x, IPtr y, DType t) : a(std::move(x)), b(std::move(y)), t(t) {}
  int64_t eval(Frame& f) const override {
    const int64_t x = a->eval(f), n = b->eval(f);
    if (n < 0) return x == 1 ? 1 : x == -1 ? ((n & 1) ? -1 : 1) : 0;
    uint64_t r = 1, p = u(x);
    for (uint64_t e = u(n); e; e >>= 1) {
      if (e & 1) r *= p;
      p *= p;
    }
    return wrapInt(static_cast<int64_t>(r), t);
  }
  IPtr a, b;
  DType t;
};
// Fast path: i64 addition/multiplication of index expressions.
struct IAdd64 final : IExpr {
  IAdd64(IPtr x, IPtr y) : a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Frame& f) const override { return static_cast<int64_t>(u(a->eval(f)) + u(b->eval(f))); }
  IPtr a, b;
};
struct IMulConst64 final : IExpr {
  IMulConst64(IPtr x, int64_t c) : a(std::move(x)), c(c) {}
  int64_t eval(Frame& f) const override { return static_cast<int64_t>(u(a->eval(f)) * u(c)); }
  IPtr a;
  int64_t c;
};

template <BinaryOp OP>
struct FCmp final : IExpr {
  FCmp(FPtr x, FPtr y) : a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Frame& f) const override {
    const double x = a->eval(f), y = b->eval(f);
    if constexpr (OP == BinaryOp::EQ) return x == y;
    if constexpr (OP == BinaryOp::NE) return x != y;
    if constexpr (OP == BinaryOp::LT) return x < y;
    if constexpr (OP == BinaryOp::LE) return x <= y;
    if constexpr (OP == BinaryOp::GT) return x > y;
    if constexpr (OP == BinaryOp::GE) return x >= y;
  }
  FPtr a, b;
};
struct INeg final : IExpr {
  INeg(IPtr x, DType t) : a(std::move(x)), t(t) {}
  int64_t eval(Frame& f) const override { return wrapInt(static_cast<int64_t>(0ull - u(a->eval(f))), t); }
  IPtr a;
  DType t;
};
struct INot final : IExpr {
  explicit INot(IPtr x) : a(std::move(x)) {}
  int64_t eval(Frame& f) const override { return !a->eval(f); }
  IPtr a;
};
struct IAbs final : IExpr {
  IAbs(IPtr x, DType t) : a(std::move(x)), t(t) {}
  int64_t eval(Frame& f) const override {
    int64_t v = a->eval(f);
    return v < 0 ? wrapInt(static_cast<int64_t>(0ull - u(v)), t) : v;
  }
  IPtr a;
  DType t;
};
struct ISelect final : IExpr {
  ISelect(IPtr c, IPtr x, IPtr y) : c(std::move(c)), a(std::move(x)), b(std::move(y)) {}
  int64_t eval(Frame& f) const override {
    int64_t x = a->eval(f), y = b->eval(f);  // both arms, as specified
    return c->eval(f) ? x : y;
  }
  IPtr c, a, b;
};
struct IWrap final : IExpr {  // int -> int cast
  IWrap(IPtr x, DType t) : a(std::move(x)), t(t) {}
  int64_t eval(Frame& f) const override { return wrapInt(a->eval(f), t); }
  IPtr a;
  DType t;
};
struct IFromF final : IExpr {  // float -> int: saturating, NaN -> 0; bool: != 0
  IFromF(FPtr x, DType t) : a(std::move(x)), t(t) {}
  int64_t eval(Frame& f) const override {
    double v = a->eval(f);
    if (t == DType::boolean) return v != 0;
    if (std::isnan(v)) return 0;
    if (t == DType::i64) {
      if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
      if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
    const double lo = static_cast<double>(ir::intMin(t)), hi = static_cast<double>(ir::intMax(t));
    return static_cast<int64_t>(v < lo ? lo : v > hi ? hi : v);
  }
  FPtr a;
  DType t;
};
struct IFloatPred final : IExpr {  // isnan / isinf
  IFloatPred(FPtr x, bool nan) : a(std::move(x)), nan(nan) {}
  int64_t eval(Frame& f) const override {
    const double v = a->eval(f);
    return nan ? std::isnan(v) : std::isinf(v);
  }
  FPtr a;
  bool nan;
};
template <class T>
struct ILoad final : IExpr {
  explicit ILoad(Index idx) : idx(std::move(idx)) {}
  int64_t eval(Frame& f) const override {
    int64_t off = idx.offset(f);
    T v;
    std::memcpy(&v, f.bufs[idx.buf].base + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) return v ? 1 : 0;
    return static_cast<int64_t>(v);
  }
  Index idx;
};

// ---- float expressions ----
// Float nodes compute in `T`: float for f32, f16 and bf16 (the 16-bit
// formats then rounded by an FRound node), double for f64. A float value
// converts to double exactly, so f32 results are those of float arithmetic.
struct FConst final : FExpr {
  explicit FConst(double v) : v(v) {}
  double eval(Frame&) const override { return v; }
  double v;
};
template <BinaryOp OP, class T>
struct FBin final : FExpr {
  FBin(FPtr x, FPtr y) : a(std::move(x)), b(std::move(y)) {}
  double eval(Frame& f) const override {
    const T x = static_cast<T>(a->eval(f)), y = static_cast<T>(b->eval(f));
    if constexpr (OP == BinaryOp::Add) return x + y;
    if constexpr (OP == BinaryOp::Sub) return x - y;
    if constexpr (OP == BinaryOp::Mul) return x * y;
    if constexpr (OP == BinaryOp::Div) return x / y;
    if constexpr (OP == BinaryOp::Mod) return std::fmod(x, y);
    if constexpr (OP == BinaryOp::Min) return std::fmin(x, y);
    if constexpr (OP == BinaryOp::Max) return std::fmax(x, y);
  }
  FPtr a, b;
};
struct FRound final : FExpr {  // to the precision of f32 / f16 / bf16
  FRound(FPtr x, DType t) : a(std::move(x)), t(t) {}
  double eval(Frame& f) const override { return ir::detail::roundToDType(a->eval(f), t); }
  FPtr a;
  DType t;
};
struct FNeg final : FExpr {
  explicit FNeg(FPtr x) : a(std::move(x)) {}
  double eval(Frame& f) const override { return -a->eval(f); }
  FPtr a;
};
struct FSelect final : FExpr {
  FSelect(IPtr c, FPtr x, FPtr y) : c(std::move(c)), a(std::move(x)), b(std::move(y)) {}
  double eval(Frame& f) const override {
    const double x = a->eval(f), y = b->eval(f);  // both arms, as specified
    return c->eval(f) ? x : y;
  }
  IPtr c;
  FPtr a, b;
};
struct FFromI final : FExpr {
  FFromI(IPtr x, DType t) : a(std::move(x)), t(t) {}
  double eval(Frame& f) const override {
    int64_t v = a->eval(f);
    if (t == DType::f32) return static_cast<float>(v);
    if (t == DType::f64) return static_cast<double>(v);
    return ir::detail::roundToDType(static_cast<double>(v), t);
  }
  IPtr a;
  DType t;
};
template <class T>
struct FCall1 final : FExpr {
  FCall1(T (*fn)(T), FPtr x) : fn(fn), a(std::move(x)) {}
  double eval(Frame& f) const override { return fn(static_cast<T>(a->eval(f))); }
  T (*fn)(T);
  FPtr a;
};
template <class T>
struct FCall2 final : FExpr {
  FCall2(T (*fn)(T, T), FPtr x, FPtr y) : fn(fn), a(std::move(x)), b(std::move(y)) {}
  double eval(Frame& f) const override { return fn(static_cast<T>(a->eval(f)), static_cast<T>(b->eval(f))); }
  T (*fn)(T, T);
  FPtr a, b;
};
template <DType T>
struct FLoad final : FExpr {
  explicit FLoad(Index idx) : idx(std::move(idx)) {}
  double eval(Frame& f) const override {
    const int64_t off = idx.offset(f);
    return loadFloat<T>(f.bufs[idx.buf].base + off * static_cast<int64_t>(ir::dtypeBytes(T)));
  }
  Index idx;
};

template <class T>
T sigmoidT(T x) {
  return T(1) / (T(1) + std::exp(-x));
}
template <class T>
T rsqrtT(T x) {
  return T(1) / std::sqrt(x);
}

// The libm functions of the unary and binary intrinsics, in float and double.
struct UnaryFns {
  const char* name;
  float (*f)(float);
  double (*d)(double);
};
struct BinaryFns {
  const char* name;
  float (*f)(float, float);
  double (*d)(double, double);
};
// clang-format off
const UnaryFns kUnaryFns[] = {
    {"exp", ::expf, ::exp},       {"exp2", ::exp2f, ::exp2},     {"expm1", ::expm1f, ::expm1},
    {"log", ::logf, ::log},       {"log2", ::log2f, ::log2},     {"log1p", ::log1pf, ::log1p},
    {"sqrt", ::sqrtf, ::sqrt},    {"tanh", ::tanhf, ::tanh},     {"erf", ::erff, ::erf},
    {"sin", ::sinf, ::sin},       {"cos", ::cosf, ::cos},        {"tan", ::tanf, ::tan},
    {"asin", ::asinf, ::asin},    {"acos", ::acosf, ::acos},     {"atan", ::atanf, ::atan},
    {"sinh", ::sinhf, ::sinh},    {"cosh", ::coshf, ::cosh},     {"asinh", ::asinhf, ::asinh},
    {"acosh", ::acoshf, ::acosh}, {"atanh", ::atanhf, ::atanh},  {"floor", ::floorf, ::floor},
    {"ceil", ::ceilf, ::ceil},    {"trunc", ::truncf, ::trunc},  {"abs", ::fabsf, ::fabs},
    {"round", ::nearbyintf, ::nearbyint},
    {"rsqrt", rsqrtT<float>, rsqrtT<double>},
    {"sigmoid", sigmoidT<float>, sigmoidT<double>}};
const BinaryFns kBinaryFns[] = {{"pow", ::powf, ::pow}, {"atan2", ::atan2f, ::atan2}, {"fmod", ::fmodf, ::fmod}};
// clang-format on

// The float (T = float) or double function of the entry of `table` named
// `n`, or null.
template <class T, class Fns, size_t N>
auto libmFn(const Fns (&table)[N], const std::string& n) {
  using Fn = std::conditional_t<std::is_same_v<T, float>, decltype(Fns::f), decltype(Fns::d)>;
  for (const auto& e : table)
    if (n == e.name) {
      if constexpr (std::is_same_v<T, float>)
        return Fn(e.f);
      else
        return Fn(e.d);
    }
  return Fn(nullptr);
}

// clang-format off (the CASE macros confuse it)
IPtr intBinary(BinaryOp op, IPtr a, IPtr b, DType t) {
  switch (op) {
#define CASE(O) \
  case BinaryOp::O: return std::make_unique<IBin<BinaryOp::O>>(std::move(a), std::move(b), t);
    CASE(Add)
    CASE(Sub)
    CASE(Mul)
    CASE(Div)
    CASE(Mod) CASE(Min) CASE(Max) CASE(EQ) CASE(NE) CASE(LT) CASE(LE) CASE(GT) CASE(GE) CASE(And) CASE(Or)
#undef CASE
  }
  throw Error("unknown integer operator");
}
IPtr floatCompare(BinaryOp op, FPtr a, FPtr b) {
  switch (op) {
#define CASE(O) \
  case BinaryOp::O: return std::make_unique<FCmp<BinaryOp::O>>(std::move(a), std::move(b));
    CASE(EQ)
    CASE(NE)
    CASE(LT)
    CASE(LE)
    CASE(GT)
    CASE(GE)
#undef CASE
    default: throw Error(std::string("operator '") + ir::binaryOpName(op) + "' on floats gives no bool");
  }
}
template <class T>
FPtr floatBinary(BinaryOp op, FPtr a, FPtr b) {
  switch (op) {
#define CASE(O) \
  case BinaryOp::O: return std::make_unique<FBin<BinaryOp::O, T>>(std::move(a), std::move(b));
    CASE(Add)
    CASE(Sub)
    CASE(Mul)
    CASE(Div)
    CASE(Mod)
    CASE(Min)
    CASE(Max)
#undef CASE
    default: throw Error(std::string("operator '") + ir::binaryOpName(op) + "' does not give a float");
  }
}
// clang-format on

}  // namespace

int Compiler::varSlot(const ir::Var& v) {
  auto it = slots.find(v.get());
  if (it != slots.end()) return it->second;
  int s = newSlot();
  slots.emplace(v.get(), s);
  return s;
}

int Compiler::bufferId(const ir::Buffer& b) {
  auto it = buffer_ids.find(b.get());
  if (it != buffer_ids.end()) return it->second;
  int id = static_cast<int>(buffers.size());
  buffer_ids.emplace(b.get(), id);
  buffers.push_back(BufInfo{b->name, b->dtype, static_cast<int>(b->shape.size())});
  std::vector<IPtr> shape;
  for (const auto& d : b->shape) shape.push_back(intExpr(d));
  buffer_shapes.push_back(std::move(shape));
  return id;
}

IPtr Compiler::intExpr(const ir::PrimExpr& e) {
  using K = ir::ExprKind;
  if (ir::isFloat(e->dtype))
    throw Error("expected an integer expression, got " + std::string(dtypeName(e->dtype)));
  switch (e->kind) {
    case K::IntImm: return std::make_unique<IConst>(e->as<ir::IntImmNode>()->value);
    case K::Var: {
      auto* v = static_cast<const ir::VarNode*>(e.get());
      auto it = slots.find(v);
      if (it == slots.end()) throw Error("variable '" + v->name + "' is not bound here");
      return std::make_unique<IVar>(it->second);
    }
    case K::Binary: {
      auto* b = e->as<ir::BinaryNode>();
      if (ir::isFloat(b->a->dtype)) return floatCompare(b->op, floatExpr(b->a), floatExpr(b->b));
      int64_t c;
      if (e->dtype == DType::i64 && b->op == BinaryOp::Add)
        return std::make_unique<IAdd64>(intExpr(b->a), intExpr(b->b));
      if (e->dtype == DType::i64 && b->op == BinaryOp::Mul && ir::asConstInt(b->b, &c))
        return std::make_unique<IMulConst64>(intExpr(b->a), c);
      return intBinary(b->op, intExpr(b->a), intExpr(b->b), b->a->dtype);
    }
    case K::Unary: {
      auto* un = e->as<ir::UnaryNode>();
      if (un->op == ir::UnaryOp::Not) return std::make_unique<INot>(intExpr(un->a));
      return std::make_unique<INeg>(intExpr(un->a), e->dtype);
    }
    case K::Select: {
      auto* s = e->as<ir::SelectNode>();
      return std::make_unique<ISelect>(intExpr(s->cond), intExpr(s->true_value), intExpr(s->false_value));
    }
    case K::Cast: {
      auto* c = e->as<ir::CastNode>();
      if (ir::isFloat(c->value->dtype)) return std::make_unique<IFromF>(floatExpr(c->value), e->dtype);
      return std::make_unique<IWrap>(intExpr(c->value), e->dtype);
    }
    case K::Load: {
      auto* l = e->as<ir::LoadNode>();
      if (int cs = cursor(l->buffer, l->indices); cs >= 0)
        return cursorIntLoad(l->buffer->dtype, bufferId(l->buffer), cs);
      Index idx = index(l->buffer, l->indices);
      return withIntStorage(l->buffer->dtype, "load", [&](auto el) -> IPtr {
        return std::make_unique<ILoad<decltype(el)>>(std::move(idx));
      });
    }
    case K::Call: return intCall(e);
    case K::FloatImm: break;
  }
  throw Error("unsupported integer expression");
}

IPtr Compiler::intCall(const ir::PrimExpr& e) {
  auto* c = e->as<ir::CallNode>();
  if (c->name == "isnan" || c->name == "isinf")
    return std::make_unique<IFloatPred>(floatExpr(c->args.at(0)), c->name == "isnan");
  if (c->name == "abs") return std::make_unique<IAbs>(intExpr(c->args.at(0)), e->dtype);
  if (c->name == "pow")
    return std::make_unique<IPow>(intExpr(c->args.at(0)), intExpr(c->args.at(1)), e->dtype);
  static const std::pair<const char*, BitOp> kBitOps[] = {
      {"bitwise_and", BitOp::And}, {"bitwise_or", BitOp::Or},  {"bitwise_xor", BitOp::Xor},
      {"bitwise_not", BitOp::Not}, {"shift_left", BitOp::Shl}, {"shift_right", BitOp::Shr}};
  for (const auto& [name, op] : kBitOps)
    if (c->name == name)
      return std::make_unique<IBits>(op, intExpr(c->args.at(0)),
                                     c->args.size() > 1 ? intExpr(c->args[1]) : nullptr, e->dtype);
  throw Error("intrinsic '" + c->name + "' on integers cannot be interpreted");
}

namespace {

template <class T>
FPtr typedFloatCall(const ir::CallNode& c, std::vector<FPtr> args) {
  if (args.size() == 1)
    if (auto fn = libmFn<T>(kUnaryFns, c.name)) return std::make_unique<FCall1<T>>(fn, std::move(args[0]));
  if (args.size() == 2)
    if (auto fn = libmFn<T>(kBinaryFns, c.name))
      return std::make_unique<FCall2<T>>(fn, std::move(args[0]), std::move(args[1]));
  throw Error("intrinsic '" + c.name + "' cannot be interpreted");
}

}  // namespace

FPtr Compiler::floatCall(const ir::PrimExpr& e) {
  auto* c = e->as<ir::CallNode>();
  std::vector<FPtr> args;
  for (const auto& a : c->args) args.push_back(floatExpr(a));
  return e->dtype == DType::f64 ? typedFloatCall<double>(*c, std::move(args))
                                : typedFloatCall<float>(*c, std::move(args));
}

FPtr Compiler::floatExpr(const ir::PrimExpr& e) {
  using K = ir::ExprKind;
  if (!ir::isFloat(e->dtype))
    throw Error("expected a float expression, got " + std::string(dtypeName(e->dtype)));
  const DType t = e->dtype;
  // f32 and f64 results of float / double arithmetic need no rounding.
  auto rounded = [&](FPtr p) -> FPtr {
    return t == DType::f32 || t == DType::f64 ? std::move(p) : std::make_unique<FRound>(std::move(p), t);
  };
  switch (e->kind) {
    case K::FloatImm:
      return std::make_unique<FConst>(ir::detail::roundToDType(e->as<ir::FloatImmNode>()->value, t));
    case K::Binary: {
      auto* b = e->as<ir::BinaryNode>();
      FPtr x = floatExpr(b->a), y = floatExpr(b->b);
      return rounded(t == DType::f64 ? floatBinary<double>(b->op, std::move(x), std::move(y))
                                     : floatBinary<float>(b->op, std::move(x), std::move(y)));
    }
    case K::Unary: return std::make_unique<FNeg>(floatExpr(e->as<ir::UnaryNode>()->a));
    case K::Select: {
      auto* s = e->as<ir::SelectNode>();
      return std::make_unique<FSelect>(intExpr(s->cond), floatExpr(s->true_value), floatExpr(s->false_value));
    }
    case K::Cast: {
      auto* c = e->as<ir::CastNode>();
      const DType from = c->value->dtype;
      if (!ir::isFloat(from)) return std::make_unique<FFromI>(intExpr(c->value), t);
      // Widening is exact; narrowing from f64 to f32, or to f16/bf16, rounds.
      if (from == t || t == DType::f64 || (t == DType::f32 && from != DType::f64)) return floatExpr(c->value);
      return std::make_unique<FRound>(floatExpr(c->value), t);
    }
    case K::Load: {
      auto* l = e->as<ir::LoadNode>();
      if (int cs = cursor(l->buffer, l->indices); cs >= 0)
        return cursorFloatLoad(l->buffer->dtype, bufferId(l->buffer), cs);
      Index idx = index(l->buffer, l->indices);
      switch (l->buffer->dtype) {
        case DType::f32: return std::make_unique<FLoad<DType::f32>>(std::move(idx));
        case DType::f16: return std::make_unique<FLoad<DType::f16>>(std::move(idx));
        case DType::bf16: return std::make_unique<FLoad<DType::bf16>>(std::move(idx));
        case DType::f64: return std::make_unique<FLoad<DType::f64>>(std::move(idx));
        default: throw Error("float load from an integer buffer");
      }
    }
    case K::Call: return rounded(floatCall(e));
    default: break;
  }
  throw Error("unsupported float expression");
}

}  // namespace mlcc::interp::tir
