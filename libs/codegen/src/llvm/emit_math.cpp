// Math intrinsics (mlcc/ir/intrinsics.h) in generated code. Exact
// operations (sqrt, floor, ceil, trunc, round-to-nearest-even, abs) are LLVM
// intrinsics; the transcendental functions are calls to the libm functions
// the interpreter uses (expf, tanhf, erff, ... for f32, f16 and bf16; exp,
// tanh, erf, ... for f64), declared without memory effects so that the loop
// vectorizer maps the f32 ones to glibc's libmvec (optimize.cpp); exp's
// inputs that underflow are answered without the call (expCall).
// sigmoid and rsqrt are composed as in the interpreter.
#include "llvm/emitter.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/intrinsics.h"

namespace mlcc::codegen {

namespace {

// The f32 libm function of a transcendental intrinsic ("" when none); the
// f64 one is its name without the final 'f'.
const char* libmName(const std::string& n) {
  static const std::pair<const char*, const char*> table[] = {
      {"exp", "expf"},     {"exp2", "exp2f"},   {"expm1", "expm1f"}, {"log", "logf"},     {"log2", "log2f"},
      {"log1p", "log1pf"}, {"tanh", "tanhf"},   {"erf", "erff"},     {"sin", "sinf"},     {"cos", "cosf"},
      {"tan", "tanf"},     {"asin", "asinf"},   {"acos", "acosf"},   {"atan", "atanf"},   {"sinh", "sinhf"},
      {"cosh", "coshf"},   {"asinh", "asinhf"}, {"acosh", "acoshf"}, {"atanh", "atanhf"}, {"pow", "powf"},
      {"atan2", "atan2f"}};
  for (const auto& [name, fn] : table)
    if (n == name) return fn;
  return "";
}

// A call of f32 libm function `f32_name`, or of its f64 form when the
// arguments are doubles.
llvm::Value* libmCall(KernelEmitter& e, const std::string& f32_name, std::vector<llvm::Value*> args) {
  llvm::Type* ty = args[0]->getType();
  const std::string name = ty->isDoubleTy() ? f32_name.substr(0, f32_name.size() - 1) : f32_name;
  std::vector<llvm::Type*> types(args.size(), ty);
  llvm::FunctionCallee callee = e.mod.getOrInsertFunction(name, llvm::FunctionType::get(ty, types, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setNoSync();
    f->addFnAttr(llvm::Attribute::Speculatable);  // so that predicated loop bodies vectorize
  }
  auto* c = e.b.CreateCall(callee, args);
  c->setDoesNotAccessMemory();
  return c;
}

// exp(x). In a vectorized loop of 4 lanes or more (libmvec's narrowest;
// LLVM left a loop of 2 scalar around the select) its results 0 are
// answered by a select: x below the last input whose exp rounds to a
// denormal (ln 2^-150 in f32) goes to the call as 0. libmvec's expf takes a
// slow path for a vector with any lane whose result underflows (the -inf of
// a masked softmax: 50 ns a vector instead of 5; a graph attention's masked
// softmax over 4 x 1024 x 1024 ran 29 ms). The same values as the libm
// call, which the interpreter makes. Overflowing inputs (rare: a softmax
// subtracts its maximum) keep the slow path rather than add a select to
// every call; so do scalar calls: libm's expf returns early for them, and
// the select around a scalar call costs more than it saves (rows of 12:
// +40%).
llvm::Value* expCall(KernelEmitter& e, llvm::Value* x) {
  if (e.vector_lanes < 4) return libmCall(e, "expf", {x});
  llvm::Type* ty = x->getType();
  llvm::Value* under = e.b.CreateFCmpOLT(x, llvm::ConstantFP::get(ty, ty->isDoubleTy() ? -746.0 : -104.0));
  llvm::Value* zero = llvm::ConstantFP::get(ty, 0.0);
  return e.b.CreateSelect(under, zero, libmCall(e, "expf", {e.b.CreateSelect(under, zero, x)}));
}

bool callsF64Libm(const ir::PrimExpr& e) {
  return ir::anyOf(e, [](const ir::PrimExpr& x) {
    const auto* c = x->as<ir::CallNode>();
    return c && c->dtype == ir::DType::f64 && (*libmName(c->name) || c->name == "sigmoid");
  });
}

}  // namespace

bool callsScalarMath(const ir::Stmt& s) {
  if (!s) return false;
  if (const auto* st = s->as<ir::StoreNode>()) return callsF64Libm(st->value);
  if (const auto* seq = s->as<ir::SeqNode>()) {
    for (const auto& x : seq->stmts)
      if (callsScalarMath(x)) return true;
    return false;
  }
  if (const auto* i = s->as<ir::IfNode>())
    return callsScalarMath(i->then_case) || callsScalarMath(i->else_case);
  if (const auto* f = s->as<ir::ForNode>()) return callsScalarMath(f->body);
  if (const auto* b = s->as<ir::BlockNode>()) return callsScalarMath(b->init) || callsScalarMath(b->body);
  return false;
}

// Shift amounts outside [0, bits) give 0 (a signed right shift of a negative
// value: -1), as the interpreter: LLVM's shifts by >= bits are poison, so
// the amount is replaced by a safe one first.
llvm::Value* KernelEmitter::bitwise(const std::string& name, const std::vector<llvm::Value*>& args,
                                    ir::DType t) {
  llvm::Value* x = args[0];
  if (name == "bitwise_not") return b.CreateNot(x);
  llvm::Value* n = args[1];
  if (name == "bitwise_and") return b.CreateAnd(x, n);
  if (name == "bitwise_or") return b.CreateOr(x, n);
  if (name == "bitwise_xor") return b.CreateXor(x, n);
  auto* ty = x->getType();
  const unsigned bits = ty->getIntegerBitWidth();
  llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
  llvm::Value* in_range = b.CreateICmpULT(n, llvm::ConstantInt::get(ty, bits));  // 0 <= n < bits
  if (name == "shift_left")
    return b.CreateSelect(in_range, b.CreateShl(x, b.CreateSelect(in_range, n, zero)), zero);
  if (name == "shift_right") {
    if (ir::isUnsigned(t))
      return b.CreateSelect(in_range, b.CreateLShr(x, b.CreateSelect(in_range, n, zero)), zero);
    llvm::Value* r = b.CreateAShr(x, b.CreateSelect(in_range, n, llvm::ConstantInt::get(ty, bits - 1)));
    return b.CreateSelect(b.CreateICmpSLT(n, zero), zero, r);
  }
  fail("unknown integer intrinsic '" + name + "'");
}

// Integer pow as the interpreter: square-and-multiply over the exponent's
// bits, unrolled (one select per bit), wrapping; a negative exponent gives
// 1 for x == 1, ±1 for x == -1 (by its parity), else 0.
llvm::Value* KernelEmitter::intPow(llvm::Value* x, llvm::Value* n, ir::DType t) {
  auto* ty = x->getType();
  const unsigned bits = ty->getIntegerBitWidth();
  llvm::Value* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* r = one;
  llvm::Value* p = x;
  for (unsigned k = 0; k < bits; ++k) {
    llvm::Value* bit = b.CreateTrunc(b.CreateLShr(n, llvm::ConstantInt::get(ty, k)), b.getInt1Ty());
    r = b.CreateSelect(bit, b.CreateMul(r, p), r);
    if (k + 1 < bits) p = b.CreateMul(p, p);
  }
  if (ir::isUnsigned(t)) return r;
  llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
  llvm::Value* minus_one = llvm::ConstantInt::getSigned(ty, -1);
  llvm::Value* odd = b.CreateTrunc(n, b.getInt1Ty());
  llvm::Value* negative =
      b.CreateSelect(b.CreateICmpEQ(x, one), one,
                     b.CreateSelect(b.CreateICmpEQ(x, minus_one), b.CreateSelect(odd, minus_one, one), zero));
  return b.CreateSelect(b.CreateICmpSLT(n, zero), negative, r);
}

llvm::Value* KernelEmitter::call(const ir::CallNode& c) {
  const ir::IntrinsicInfo* info = ir::findIntrinsic(c.name);
  if (!info || static_cast<int>(c.args.size()) != info->arity) fail("unknown intrinsic '" + c.name + "'");
  std::vector<llvm::Value*> args;
  for (const auto& a : c.args) args.push_back(expr(a));
  llvm::Value* x = args[0];
  const ir::DType t = c.dtype;
  if (c.name == "abs" && !ir::isFloat(t)) {
    if (t == ir::DType::boolean || ir::isUnsigned(t)) return x;
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
  }
  if (info->args == ir::IntrinsicArgs::Integer) return bitwise(c.name, args, t);
  if (c.name == "pow" && !ir::isFloat(t)) return intPow(args[0], args[1], t);
  if (c.name == "isnan") return b.CreateFCmpUNO(x, x);
  if (c.name == "isinf")
    return b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                           llvm::ConstantFP::getInfinity(x->getType()));
  llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
  llvm::Value* r = nullptr;
  if (c.name == "sqrt") {
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  } else if (c.name == "rsqrt") {
    r = b.CreateFDiv(one, b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  } else if (c.name == "sigmoid") {
    r = b.CreateFDiv(one, b.CreateFAdd(one, expCall(*this, b.CreateFNeg(x))));
  } else if (c.name == "exp") {
    r = expCall(*this, x);
  } else if (c.name == "floor") {
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  } else if (c.name == "ceil") {
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
  } else if (c.name == "trunc") {
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x);
  } else if (c.name == "round") {  // nearbyint in the default rounding mode
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
  } else if (c.name == "abs") {
    r = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  } else if (c.name == "fmod") {
    r = b.CreateFRem(x, args[1]);
  } else if (const char* fn = libmName(c.name); *fn) {
    r = libmCall(*this, fn, args);
  } else {
    fail("intrinsic '" + c.name + "' is not supported by the LLVM backend");
  }
  return roundFloat(r, t);
}

}  // namespace mlcc::codegen
