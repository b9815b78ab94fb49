// Expressions of a kernel, with the interpreter's semantics
// (libs/interp/src/tir_expr.cpp): wrapping integer arithmetic, floor
// division/modulo (computed in i64, then wrapped), float arithmetic in f32
// rounded to f16/bf16 after each operation, f64 in double, saturating
// float-to-int casts
// (NaN -> 0), ordered float comparisons (!= is unordered), fmin/fmax.
//
// f32 `a * b + c` and `a * b - c` (one expression, as C's -ffp-contract=on)
// become llvm.fmuladd: an FMA where the CPU has one, so results may differ
// from the interpreter's separately rounded product in the last bits. f16
// and bf16 products are rounded first, as in the interpreter.
//
// Integer division or modulo by zero, an error in the interpreter, gives 0
// in compiled code (generated code cannot report it; it does not trap).
#include "llvm/emitter.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/printer.h"

namespace mlcc::codegen {

using ir::BinaryOp;
using ir::DType;

llvm::Type* KernelEmitter::regType(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return b.getFloatTy();
    case DType::f64: return b.getDoubleTy();
    case DType::i8:
    case DType::u8: return b.getInt8Ty();
    case DType::i16:
    case DType::u16: return b.getInt16Ty();
    case DType::i32:
    case DType::u32: return b.getInt32Ty();
    case DType::i64: return b.getInt64Ty();
    case DType::boolean: return b.getInt1Ty();
  }
  return nullptr;
}

llvm::Value* floorDivMod(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, bool mod) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(y); c && c->getSExtValue() > 0) {
    llvm::Value* r = b.CreateSRem(x, y);
    llvm::Value* neg = b.CreateICmpSLT(r, b.getInt64(0));
    if (mod) return b.CreateSelect(neg, b.CreateAdd(r, y), r);
    return b.CreateSub(b.CreateSDiv(x, y), b.CreateZExt(neg, b.getInt64Ty()));
  }
  llvm::Value* zero = b.getInt64(0);
  llvm::Value* is0 = b.CreateICmpEQ(y, zero);
  llvm::Value* ism1 = b.CreateICmpEQ(y, b.getInt64(-1));
  llvm::Value* safe = b.CreateSelect(b.CreateOr(is0, ism1), b.getInt64(1), y);
  llvm::Value* q = b.CreateSDiv(x, safe);
  llvm::Value* r = b.CreateSRem(x, safe);
  // Adjust when the remainder is nonzero and its sign differs from y's.
  llvm::Value* adjust = b.CreateAnd(b.CreateICmpNE(r, zero),
                                    b.CreateICmpNE(b.CreateICmpSLT(r, zero), b.CreateICmpSLT(y, zero)));
  if (mod) {
    llvm::Value* m = b.CreateSelect(adjust, b.CreateAdd(r, y), r);
    return b.CreateSelect(b.CreateOr(is0, ism1), zero, m);
  }
  llvm::Value* d = b.CreateSub(q, b.CreateZExt(adjust, b.getInt64Ty()));
  return b.CreateSelect(is0, zero, b.CreateSelect(ism1, b.CreateNeg(x), d));
}

llvm::Value* KernelEmitter::cast(llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  const bool ff = ir::isFloat(from), tf = ir::isFloat(to);
  if (ff && tf) {
    if (to == DType::f64) return b.CreateFPExt(v, b.getDoubleTy());  // exact
    if (from != DType::f64) return roundFloat(v, to);
    // From f64: one rounding, as the interpreter.
    if (to == DType::f32) return b.CreateFPTrunc(v, b.getFloatTy());
    if (to == DType::bf16) return doubleToBF16(v);
    return f16BitsToFloat(floatToF16Bits(v));  // fptrunc double -> half rounds once
  }
  if (ff) {  // float -> int: saturating, NaN -> 0; bool: != 0
    if (to == DType::boolean) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b.CreateIntrinsic(
        regType(to), ir::isUnsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat, {v});
  }
  if (tf) {  // int -> float
    if (to == DType::f64)
      return from == DType::boolean || ir::isUnsigned(from) ? b.CreateUIToFP(v, b.getDoubleTy())
                                                            : b.CreateSIToFP(v, b.getDoubleTy());
    if (from == DType::boolean || ir::isUnsigned(from))
      return roundFloat(b.CreateUIToFP(v, b.getFloatTy()), to);
    if (to == DType::bf16) return doubleToBF16(b.CreateSIToFP(v, b.getDoubleTy()));
    // f16: every integer that f16 does not overflow on is exact in float.
    return roundFloat(b.CreateSIToFP(v, b.getFloatTy()), to);
  }
  // int -> int
  if (to == DType::boolean) return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  if (from == DType::boolean || ir::isUnsigned(from)) return b.CreateZExtOrTrunc(v, regType(to));
  return b.CreateSExtOrTrunc(v, regType(to));
}

namespace {

const ir::BinaryNode* f32Multiply(const ir::PrimExpr& e) {
  auto* m = e->as<ir::BinaryNode>();
  return m && m->op == BinaryOp::Mul && m->dtype == DType::f32 ? m : nullptr;
}

}  // namespace

llvm::Value* KernelEmitter::multiplyAdd(const ir::BinaryNode& bn) {
  if (bn.dtype != DType::f32 || (bn.op != BinaryOp::Add && bn.op != BinaryOp::Sub)) return nullptr;
  const ir::BinaryNode* m = f32Multiply(bn.a);
  const bool mul_first = m != nullptr;
  if (!m) m = f32Multiply(bn.b);
  if (!m) return nullptr;
  llvm::Value* x = expr(m->a);
  llvm::Value* y = expr(m->b);
  llvm::Value* c = expr(mul_first ? bn.b : bn.a);
  if (bn.op == BinaryOp::Sub) {
    if (mul_first)
      c = b.CreateFNeg(c);  // x*y - c
    else
      x = b.CreateFNeg(x);  // c - x*y
  }
  return b.CreateIntrinsic(b.getFloatTy(), llvm::Intrinsic::fmuladd, {x, y, c});
}

llvm::Value* KernelEmitter::expr(const ir::PrimExpr& e) {
  using K = ir::ExprKind;
  const DType t = e->dtype;
  switch (e->kind) {
    case K::IntImm: return llvm::ConstantInt::get(regType(t), e->as<ir::IntImmNode>()->value, true);
    case K::FloatImm:
      return llvm::ConstantFP::get(regType(t), ir::detail::roundToDType(e->as<ir::FloatImmNode>()->value, t));
    case K::Var: {
      auto it = vars.find(static_cast<const ir::VarNode*>(e.get()));
      if (it == vars.end()) fail("variable '" + e->as<ir::VarNode>()->name + "' is not bound here");
      return it->second;
    }
    case K::Binary: {
      auto* bn = e->as<ir::BinaryNode>();
      const DType at = bn->a->dtype;
      if (llvm::Value* fused = multiplyAdd(*bn)) return fused;
      llvm::Value* x = expr(bn->a);
      llvm::Value* y = expr(bn->b);
      if (ir::isFloat(at)) {
        llvm::Value* r = nullptr;
        switch (bn->op) {
          case BinaryOp::Add: r = b.CreateFAdd(x, y); break;
          case BinaryOp::Sub: r = b.CreateFSub(x, y); break;
          case BinaryOp::Mul: r = b.CreateFMul(x, y); break;
          case BinaryOp::Div: r = b.CreateFDiv(x, y); break;
          case BinaryOp::Mod: r = b.CreateFRem(x, y); break;
          case BinaryOp::Min: r = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y); break;
          case BinaryOp::Max: r = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y); break;
          case BinaryOp::EQ: return b.CreateFCmpOEQ(x, y);
          case BinaryOp::NE: return b.CreateFCmpUNE(x, y);
          case BinaryOp::LT: return b.CreateFCmpOLT(x, y);
          case BinaryOp::LE: return b.CreateFCmpOLE(x, y);
          case BinaryOp::GT: return b.CreateFCmpOGT(x, y);
          case BinaryOp::GE: return b.CreateFCmpOGE(x, y);
          default: fail("operator '" + std::string(ir::binaryOpName(bn->op)) + "' on floats");
        }
        return roundFloat(r, t);
      }
      const bool u = at == DType::boolean || ir::isUnsigned(at);  // bool compares as 0/1
      switch (bn->op) {
        case BinaryOp::Add: return b.CreateAdd(x, y);
        case BinaryOp::Sub: return b.CreateSub(x, y);
        case BinaryOp::Mul: return b.CreateMul(x, y);
        case BinaryOp::Div:
        case BinaryOp::Mod: {
          llvm::Value* x64 = cast(x, at, DType::i64);
          llvm::Value* y64 = cast(y, at, DType::i64);
          return cast(floorDivMod(b, x64, y64, bn->op == BinaryOp::Mod), DType::i64, at);
        }
        case BinaryOp::Min: return b.CreateSelect(u ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y), x, y);
        case BinaryOp::Max: return b.CreateSelect(u ? b.CreateICmpUGT(x, y) : b.CreateICmpSGT(x, y), x, y);
        case BinaryOp::EQ: return b.CreateICmpEQ(x, y);
        case BinaryOp::NE: return b.CreateICmpNE(x, y);
        case BinaryOp::LT: return u ? b.CreateICmpULT(x, y) : b.CreateICmpSLT(x, y);
        case BinaryOp::LE: return u ? b.CreateICmpULE(x, y) : b.CreateICmpSLE(x, y);
        case BinaryOp::GT: return u ? b.CreateICmpUGT(x, y) : b.CreateICmpSGT(x, y);
        case BinaryOp::GE: return u ? b.CreateICmpUGE(x, y) : b.CreateICmpSGE(x, y);
        case BinaryOp::And: return b.CreateAnd(x, y);
        case BinaryOp::Or: return b.CreateOr(x, y);
      }
      break;
    }
    case K::Unary: {
      auto* un = e->as<ir::UnaryNode>();
      llvm::Value* x = expr(un->a);
      if (un->op == ir::UnaryOp::Not) return b.CreateNot(x);
      return ir::isFloat(t) ? b.CreateFNeg(x) : b.CreateNeg(x);
    }
    case K::Select: {
      auto* s = e->as<ir::SelectNode>();
      llvm::Value* c = expr(s->cond);
      llvm::Value* x = expr(s->true_value);
      llvm::Value* y = expr(s->false_value);
      return b.CreateSelect(c, x, y);
    }
    case K::Cast: {
      auto* c = e->as<ir::CastNode>();
      return cast(expr(c->value), c->value->dtype, t);
    }
    case K::Load: {
      auto* l = e->as<ir::LoadNode>();
      return load(l->buffer, l->indices);
    }
    case K::Call: return call(*e->as<ir::CallNode>());
  }
  fail("unsupported expression " + ir::printExpr(e));
}

}  // namespace mlcc::codegen
