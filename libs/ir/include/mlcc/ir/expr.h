// TensorIR expressions (PrimExpr): scalar arithmetic over loop variables,
// symbolic shape variables and buffer elements. The same expressions are the
// dimensions of tensor shapes in graph functions, so a symbolic batch `n`
// is one Var shared by the graph types and the prim func buffers.
//
// Nodes are immutable and shared (std::shared_ptr<const ...>). A Var's
// identity is its node, not its name: two Vars named `i` are different
// variables. Integer index arithmetic is i64. `/` and `%` on integers are
// floor division and floor modulo (as TVM's floordiv/floormod); on floats
// they are true division and fmod.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/dtype.h"

namespace mlcc::ir {

struct ExprNode;
struct VarNode;
struct BufferNode;
using PrimExpr = std::shared_ptr<const ExprNode>;
using Var = std::shared_ptr<const VarNode>;
using Buffer = std::shared_ptr<const BufferNode>;

enum class ExprKind : uint8_t { IntImm, FloatImm, Var, Binary, Unary, Select, Cast, Load, Call };

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  Max,  // arithmetic: result has the operands' dtype
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,  // comparisons: result is bool
  And,
  Or  // logical, on bool operands
};
enum class UnaryOp : uint8_t { Neg, Not };

struct ExprNode {
  const ExprKind kind;
  const DType dtype;

  // Checked downcast: nullptr when the node is not a T.
  template <class T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
};

// Integer or bool constant (bool: value 0 or 1).
struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
  // The value, exactly representable in `dtype` (makeFloat rounds to it).
  const double value;
};

// A scalar variable: loop variable, block iteration variable, or symbolic
// shape dimension. Its name is for printing only.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  VarNode(std::string n, DType t) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinaryNode(DType t, BinaryOp o, PrimExpr x, PrimExpr y)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
  const BinaryOp op;
  const PrimExpr a, b;
};

struct UnaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryNode(DType t, UnaryOp o, PrimExpr x) : ExprNode(kKind, t), op(o), a(std::move(x)) {}
  const UnaryOp op;
  const PrimExpr a;
};

// cond ? t : f (both arms evaluated; no side effects exist in expressions).
struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  SelectNode(DType t, PrimExpr c, PrimExpr x, PrimExpr y)
      : ExprNode(kKind, t), cond(std::move(c)), true_value(std::move(x)), false_value(std::move(y)) {}
  const PrimExpr cond, true_value, false_value;
};

// Conversion of `value` to this node's dtype.
struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  CastNode(DType t, PrimExpr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const PrimExpr value;
};

// buffer[indices...]
struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  LoadNode(DType t, Buffer buf, std::vector<PrimExpr> idx)
      : ExprNode(kKind, t), buffer(std::move(buf)), indices(std::move(idx)) {}
  const Buffer buffer;
  const std::vector<PrimExpr> indices;
};

// A math intrinsic from the table in intrinsics.h (exp, tanh, pow, ...).
struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  CallNode(DType t, std::string n, std::vector<PrimExpr> a)
      : ExprNode(kKind, t), name(std::move(n)), args(std::move(a)) {}
  const std::string name;
  const std::vector<PrimExpr> args;
};

// Factories. They compute the result dtype and throw mlcc::Error when the
// operand dtypes do not fit (e.g. f32 + i64, a comparison of bool with f32,
// an unknown intrinsic or a wrong argument count).
PrimExpr makeInt(int64_t value, DType t = DType::i64);
PrimExpr makeFloat(double value, DType t = DType::f32);
PrimExpr makeBool(bool value);
Var makeVar(std::string name, DType t = DType::i64);
PrimExpr makeBinary(BinaryOp op, PrimExpr a, PrimExpr b);
PrimExpr makeUnary(UnaryOp op, PrimExpr a);
PrimExpr makeSelect(PrimExpr cond, PrimExpr t, PrimExpr f);
PrimExpr makeCast(DType t, PrimExpr value);
PrimExpr makeLoad(Buffer buffer, std::vector<PrimExpr> indices);
PrimExpr makeCall(std::string name, std::vector<PrimExpr> args);

// The operator's text spelling: "+", "-", "*", "/", "%", "min", "max",
// "==", "!=", "<", "<=", ">", ">=", "&&", "||"; and "-", "!".
const char* binaryOpName(BinaryOp op);
const char* unaryOpName(UnaryOp op);
bool isComparison(BinaryOp op);

// Buffers: a named n-d array of `dtype` with `shape`, living in a storage
// scope. Like Vars, buffers are identified by their node.
enum class StorageScope : uint8_t { global, shared, local };
const char* scopeName(StorageScope s);

struct BufferNode {
  BufferNode(std::string n, DType t, std::vector<PrimExpr> s, StorageScope sc)
      : name(std::move(n)), dtype(t), shape(std::move(s)), scope(sc) {}
  const std::string name;
  const DType dtype;
  const std::vector<PrimExpr> shape;  // i64 expressions; constants or symbolic
  const StorageScope scope;
};

Buffer makeBuffer(std::string name, DType t, std::vector<PrimExpr> shape,
                  StorageScope scope = StorageScope::global);

// The constant value of an integer expression, if it is an IntImm.
bool asConstInt(const PrimExpr& e, int64_t* out);

}  // namespace mlcc::ir
