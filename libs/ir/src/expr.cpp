// PrimExpr and Buffer factories with their dtype rules (see expr.h).
#include "mlcc/ir/expr.h"

#include <string>

#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/intrinsics.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

namespace {
void require(const PrimExpr& e, const char* what) {
  if (!e) throw Error(std::string("internal: null expression for ") + what);
}
std::string dt(DType t) { return std::string(dtypeName(t)); }
}  // namespace

PrimExpr makeInt(int64_t value, DType t) {
  if (!isInt(t) && t != DType::boolean) throw Error("integer literal of non-integer dtype " + dt(t));
  // A literal holds a value of its dtype: wrapped into the range (two's
  // complement: 200 as i8 is -56, -1 as u8 is 255), as the dtype's arithmetic
  // wraps, so the printer never writes one the parser refuses.
  if (isInt(t) && t != DType::i64) {
    const uint64_t modulus = uint64_t{1} << (dtypeBytes(t) * 8);
    const uint64_t bits = static_cast<uint64_t>(value) & (modulus - 1);
    value = static_cast<int64_t>(bits) > intMax(t) ? static_cast<int64_t>(bits - modulus)
                                                   : static_cast<int64_t>(bits);
  }
  return std::make_shared<IntImmNode>(t, value);
}

PrimExpr makeFloat(double value, DType t) {
  if (!isFloat(t)) throw Error("float literal of non-float dtype " + dt(t));
  // A literal holds a value of its dtype, so printing and parsing agree.
  return std::make_shared<FloatImmNode>(t, detail::roundToDType(value, t));
}

PrimExpr makeBool(bool value) { return std::make_shared<IntImmNode>(DType::boolean, value ? 1 : 0); }

Var makeVar(std::string name, DType t) { return std::make_shared<VarNode>(std::move(name), t); }

bool isComparison(BinaryOp op) {
  return op == BinaryOp::EQ || op == BinaryOp::NE || op == BinaryOp::LT || op == BinaryOp::LE ||
         op == BinaryOp::GT || op == BinaryOp::GE;
}

PrimExpr makeBinary(BinaryOp op, PrimExpr a, PrimExpr b) {
  require(a, binaryOpName(op));
  require(b, binaryOpName(op));
  if (a->dtype != b->dtype)
    throw Error(std::string("operands of '") + binaryOpName(op) + "' have different dtypes: " + dt(a->dtype) +
                " and " + dt(b->dtype));
  DType t = a->dtype;
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    if (t != DType::boolean)
      throw Error(std::string("operands of '") + binaryOpName(op) + "' must be bool, not " + dt(t));
    return std::make_shared<BinaryNode>(DType::boolean, op, std::move(a), std::move(b));
  }
  if (isComparison(op)) return std::make_shared<BinaryNode>(DType::boolean, op, std::move(a), std::move(b));
  if (t == DType::boolean) throw Error(std::string("arithmetic '") + binaryOpName(op) + "' on bool operands");
  return std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b));
}

PrimExpr makeUnary(UnaryOp op, PrimExpr a) {
  require(a, unaryOpName(op));
  if (op == UnaryOp::Not && a->dtype != DType::boolean)
    throw Error("operand of '!' must be bool, not " + dt(a->dtype));
  if (op == UnaryOp::Neg && a->dtype == DType::boolean) throw Error("operand of '-' is bool");
  DType t = a->dtype;
  return std::make_shared<UnaryNode>(t, op, std::move(a));
}

PrimExpr makeSelect(PrimExpr cond, PrimExpr t, PrimExpr f) {
  require(cond, "select");
  require(t, "select");
  require(f, "select");
  if (cond->dtype != DType::boolean) throw Error("select condition must be bool, not " + dt(cond->dtype));
  if (t->dtype != f->dtype)
    throw Error("select arms have different dtypes: " + dt(t->dtype) + " and " + dt(f->dtype));
  DType r = t->dtype;
  return std::make_shared<SelectNode>(r, std::move(cond), std::move(t), std::move(f));
}

PrimExpr makeCast(DType t, PrimExpr value) {
  require(value, "cast");
  return std::make_shared<CastNode>(t, std::move(value));
}

PrimExpr makeLoad(Buffer buffer, std::vector<PrimExpr> indices) {
  if (!buffer) throw Error("internal: load from a null buffer");
  for (const auto& i : indices) {
    require(i, "load index");
    if (!isInt(i->dtype))
      throw Error("index of buffer '" + buffer->name + "' has dtype " + dt(i->dtype) + ", not an integer");
  }
  DType t = buffer->dtype;
  return std::make_shared<LoadNode>(t, std::move(buffer), std::move(indices));
}

PrimExpr makeCall(std::string name, std::vector<PrimExpr> args) {
  const IntrinsicInfo* info = findIntrinsic(name);
  if (!info) throw Error("unknown intrinsic '" + name + "'");
  if (static_cast<int>(args.size()) != info->arity)
    throw Error("intrinsic '" + name + "' takes " + std::to_string(info->arity) + " argument(s), not " +
                std::to_string(args.size()));
  for (const auto& a : args) {
    require(a, name.c_str());
    if (a->dtype != args[0]->dtype) throw Error("arguments of '" + name + "' have different dtypes");
  }
  if (!intrinsicAccepts(*info, args[0]->dtype))
    throw Error("intrinsic '" + name + "' needs " + intrinsicArgsText(*info) + " argument, not " +
                dt(args[0]->dtype));
  DType r = info->result == IntrinsicResult::Bool ? DType::boolean : args[0]->dtype;
  return std::make_shared<CallNode>(r, std::move(name), std::move(args));
}

const char* binaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Min: return "min";
    case BinaryOp::Max: return "max";
    case BinaryOp::EQ: return "==";
    case BinaryOp::NE: return "!=";
    case BinaryOp::LT: return "<";
    case BinaryOp::LE: return "<=";
    case BinaryOp::GT: return ">";
    case BinaryOp::GE: return ">=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

const char* unaryOpName(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "!"; }

const char* scopeName(StorageScope s) {
  switch (s) {
    case StorageScope::global: return "global";
    case StorageScope::shared: return "shared";
    case StorageScope::local: return "local";
  }
  return "?";
}

Buffer makeBuffer(std::string name, DType t, std::vector<PrimExpr> shape, StorageScope scope) {
  for (const auto& d : shape) {
    require(d, "buffer shape");
    if (d->dtype != DType::i64)
      throw Error("dimension of buffer '" + name + "' has dtype " + dt(d->dtype) + ", not i64");
  }
  return std::make_shared<BufferNode>(std::move(name), t, std::move(shape), scope);
}

bool asConstInt(const PrimExpr& e, int64_t* out) {
  if (!e) return false;
  if (const auto* imm = e->as<IntImmNode>()) {
    if (out) *out = imm->value;
    return true;
  }
  return false;
}

}  // namespace mlcc::ir
