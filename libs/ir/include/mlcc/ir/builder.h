// Conveniences for building IR in passes and tests:
//   using namespace mlcc::ir::build;
//   Var i = makeVar("i");
//   PrimExpr e = load(A, {i, j}) * 2.0f + load(B, {j});
// Arithmetic on PrimExprs follows the factories' dtype rules (expr.h); a
// C++ integer operand becomes an i64 literal, a float an f32 literal.
#pragma once

#include <initializer_list>

#include "mlcc/ir/expr.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::ir::build {

inline PrimExpr lit(int64_t v) { return makeInt(v); }
inline PrimExpr lit(int v) { return makeInt(v); }
inline PrimExpr lit(double v) { return makeFloat(v); }
inline PrimExpr lit(float v) { return makeFloat(v); }
inline const PrimExpr& lit(const PrimExpr& e) { return e; }
inline PrimExpr lit(const Var& v) { return v; }

#define MLCC_BUILD_BINARY(OPERATOR, OP)                                                             \
  template <class A, class B>                                                                       \
  PrimExpr operator OPERATOR(const A& a, const B& b) requires(std::is_convertible_v<A, PrimExpr> || \
                                                              std::is_convertible_v<B, PrimExpr>) { \
    return makeBinary(BinaryOp::OP, lit(a), lit(b));                                                \
  }
MLCC_BUILD_BINARY(+, Add)
MLCC_BUILD_BINARY(-, Sub)
MLCC_BUILD_BINARY(*, Mul)
MLCC_BUILD_BINARY(/, Div)
MLCC_BUILD_BINARY(%, Mod)
MLCC_BUILD_BINARY(<, LT)
MLCC_BUILD_BINARY(<=, LE)
MLCC_BUILD_BINARY(>, GT)
MLCC_BUILD_BINARY(>=, GE)
MLCC_BUILD_BINARY(&&, And)
MLCC_BUILD_BINARY(||, Or)
#undef MLCC_BUILD_BINARY

// Named comparisons and logic. Prefer them to the operators when both
// operands are PrimExprs: then std::shared_ptr's own comparison operators
// win overload resolution and compare pointers (a bool, not an expression).
template <class A, class B>
PrimExpr lt(const A& a, const B& b) {
  return makeBinary(BinaryOp::LT, lit(a), lit(b));
}
template <class A, class B>
PrimExpr le(const A& a, const B& b) {
  return makeBinary(BinaryOp::LE, lit(a), lit(b));
}
template <class A, class B>
PrimExpr gt(const A& a, const B& b) {
  return makeBinary(BinaryOp::GT, lit(a), lit(b));
}
template <class A, class B>
PrimExpr ge(const A& a, const B& b) {
  return makeBinary(BinaryOp::GE, lit(a), lit(b));
}
template <class A, class B>
PrimExpr land(const A& a, const B& b) {
  return makeBinary(BinaryOp::And, lit(a), lit(b));
}
template <class A, class B>
PrimExpr lor(const A& a, const B& b) {
  return makeBinary(BinaryOp::Or, lit(a), lit(b));
}
template <class A, class B>
PrimExpr eq(const A& a, const B& b) {
  return makeBinary(BinaryOp::EQ, lit(a), lit(b));
}
template <class A, class B>
PrimExpr ne(const A& a, const B& b) {
  return makeBinary(BinaryOp::NE, lit(a), lit(b));
}
// Named minimum/maximum, not min/max: with PrimExpr (std::shared_ptr)
// arguments, argument-dependent lookup would pick std::min/std::max, which
// compare pointers.
template <class A, class B>
PrimExpr minimum(const A& a, const B& b) {
  return makeBinary(BinaryOp::Min, lit(a), lit(b));
}
template <class A, class B>
PrimExpr maximum(const A& a, const B& b) {
  return makeBinary(BinaryOp::Max, lit(a), lit(b));
}

inline PrimExpr load(const Buffer& b, std::vector<PrimExpr> idx) { return makeLoad(b, std::move(idx)); }
inline Stmt store(const Buffer& b, std::vector<PrimExpr> idx, PrimExpr v) {
  return makeStore(b, std::move(idx), std::move(v));
}

// A region covering a single element at `idx`.
BufferRegion point(const Buffer& b, const std::vector<PrimExpr>& idx);
// A region covering the whole buffer.
BufferRegion whole(const Buffer& b);

}  // namespace mlcc::ir::build
