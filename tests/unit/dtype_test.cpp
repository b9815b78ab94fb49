// DType names and the PrimExpr factories' dtype rules.
#include <gtest/gtest.h>

#include "mlcc/ir/builder.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) {
    auto parsed = parseDType(dtypeName(t));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(parseDType("f128").has_value());
  EXPECT_EQ(dtypeBytes(DType::bf16), 2);
  EXPECT_EQ(dtypeBytes(DType::f64), 8);
  EXPECT_TRUE(isFloat(DType::f64));
  EXPECT_EQ(dtypeAbiCode(DType::f64), 8);  // MLCC_F64
  // The 16- and 32-bit integers: sizes, ranges, signedness, ABI codes.
  EXPECT_EQ(dtypeBytes(DType::i16), 2);
  EXPECT_EQ(dtypeBytes(DType::u16), 2);
  EXPECT_EQ(dtypeBytes(DType::u32), 4);
  EXPECT_EQ(intMin(DType::i16), -32768);
  EXPECT_EQ(intMax(DType::u16), 65535);
  EXPECT_EQ(intMin(DType::u32), 0);
  EXPECT_EQ(intMax(DType::u32), 4294967295);
  EXPECT_TRUE(isInt(DType::i16) && isInt(DType::u16) && isInt(DType::u32));
  EXPECT_TRUE(isUnsigned(DType::u16) && isUnsigned(DType::u32) && !isUnsigned(DType::i16));
  EXPECT_EQ(dtypeAbiCode(DType::i16), 9);   // MLCC_I16
  EXPECT_EQ(dtypeAbiCode(DType::u16), 10);  // MLCC_U16
  EXPECT_EQ(dtypeAbiCode(DType::u32), 11);  // MLCC_U32
  for (DType t : kAllDTypes) EXPECT_EQ(dtypeAbiCode(t), static_cast<int>(t)) << dtypeName(t);
}

TEST(ExprFactories, DTypeRules) {
  using namespace mlcc::ir::build;
  Var i = makeVar("i");
  PrimExpr e = i * 4 + 1;
  EXPECT_EQ(e->dtype, DType::i64);
  EXPECT_EQ((i < 3)->dtype, DType::boolean);
  EXPECT_THROW(makeBinary(BinaryOp::Add, i, makeFloat(1.0)), mlcc::Error);
  EXPECT_THROW(makeCall("exp", {i}), mlcc::Error);
  EXPECT_THROW(makeCall("nosuch", {makeFloat(1.0)}), mlcc::Error);
  EXPECT_EQ(makeCall("isnan", {makeFloat(1.0)})->dtype, DType::boolean);
  EXPECT_THROW(makeSelect(i, i, i), mlcc::Error);
  Buffer A = makeBuffer("A", DType::f16, {makeInt(4)});
  EXPECT_EQ(load(A, {i})->dtype, DType::f16);
  EXPECT_THROW(makeLoad(A, {makeFloat(0.0)}), mlcc::Error);
}

TEST(AttrValue, IntExprBecomesInt) {
  AttrValue v(makeInt(7));
  EXPECT_TRUE(v.isInt());
  AttrValue s(PrimExpr(makeVar("n")));
  EXPECT_TRUE(s.isExpr());
}
