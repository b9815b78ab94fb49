// Symbolic shape helpers: dimension arithmetic folds constants, equivalence
// of dimension expressions, and the registry's type check in the verifier.
#include <gtest/gtest.h>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc;
using namespace mlcc::ops;

TEST(OpsShape, DimArithmeticFolds) {
  ir::Var n = ir::makeVar("n");
  EXPECT_EQ(ir::printExpr(dimAdd(n, dimConst(0))), "n");
  EXPECT_EQ(ir::printExpr(dimMul(dimConst(1), n)), "n");
  EXPECT_EQ(ir::printExpr(dimSub(dimAdd(n, dimConst(3)), dimConst(1))), "n + 2");
  EXPECT_EQ(ir::printExpr(dimFloorDiv(dimConst(-7), dimConst(2))), "-4");
}

TEST(OpsShape, EquivalentDimensions) {
  ir::Var n = ir::makeVar("n"), m = ir::makeVar("m");
  EXPECT_TRUE(dimsEquivalent(dimAdd(n, n), dimMul(n, dimConst(2))));
  EXPECT_TRUE(
      dimsEquivalent(dimMul(dimAdd(n, m), dimConst(2)), dimAdd(dimMul(m, dimConst(2)), dimAdd(n, n))));
  EXPECT_FALSE(dimsEquivalent(n, m));
  EXPECT_FALSE(dimsEquivalent(dimAdd(n, dimConst(1)), n));
  EXPECT_FALSE(dimsEquivalent(dimMul(n, n), dimMul(n, dimConst(2))));
  ir::Var other_n = ir::makeVar("n");  // same name, another variable
  EXPECT_FALSE(dimsEquivalent(n, other_n));
}

TEST(OpsShape, VerifierChecksOpResultTypes) {
  auto module = [](const std::string& decl) {
    return ir::parseModule("mlcc.ir 1\n\ngraph @main(%x: f32[n, 4]) -> " + decl +
                               " {\n  dataflow {\n    %y: " + decl +
                               " = concat(%x, %x, axis = 0)\n  }\n  return %y\n}\n",
                           "t.ir");
  };
  EXPECT_NO_THROW(ir::verifyModule(module("f32[n * 2, 4]"), mlcc::ops::opTypeInfo()));
  EXPECT_NO_THROW(ir::verifyModule(module("f32[n + n, 4]"), mlcc::ops::opTypeInfo()));
  try {
    ir::verifyModule(module("f32[n, 8]"), mlcc::ops::opTypeInfo());
    FAIL() << "expected a type error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("op 'concat' gives f32[n + n, 4], but %y is declared f32[n, 8]"),
              std::string::npos)
        << e.message();
  }
}
