// Legalization of the elementwise ops (elementwise.cpp): each op's TensorIR
// compute definition, interpreted, against its reference kernel (also with a
// symbolic batch), over dtypes, broadcast shapes and attribute variants; and
// the printed loop nest of one op.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

// f16/bf16 results must match exactly: the lowering stages them through f32
// just where the kernels do, so every value rounds the same way.
LegalizeCheckOptions halfOpts() { return {.rtol = 0, .atol = 0}; }

// Float values with NaN, infinities, signed zeros and halves (rounding ties).
Tensor specialFloats(DType t) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  return Tensor::fromValues(t, {2, 6}, {nan, inf, -inf, 0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 1e3, -7.25});
}

TEST(LegalizeElementwise, FloatUnaryOps) {
  std::mt19937 rng(11);
  const char* ops[] = {"relu",     "abs",     "negative",     "sign",       "leaky_relu", "elu",
                       "selu",     "sigmoid", "hard_sigmoid", "hard_swish", "silu",       "softplus",
                       "softsign", "tanh",    "exp",          "erf",        "sin",        "cos",
                       "tan",      "atan",    "sinh",         "cosh",       "asinh",      "floor",
                       "ceil",     "round",   "reciprocal",   "isnan",      "isinf"};
  for (const char* op : ops) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {3, 4, 5})}, {});
    expectLegalizeMatchesKernel(op, {specialFloats(DType::f32)}, {});
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {2, 7})}, {}, halfOpts());
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::bf16, {2, 7})}, {}, halfOpts());
  }
  // Domain-restricted functions on their domains.
  for (const char* op : {"log", "sqrt", "rsqrt", "acosh"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {3, 5}, 1.0, 9.0)}, {});
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {3, 5}, 1.0, 9.0)}, {}, halfOpts());
  }
  for (const char* op : {"asin", "acos", "atanh"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {3, 5}, -0.99, 0.99)}, {});
  }
}

TEST(LegalizeElementwise, AttributesOfActivations) {
  std::mt19937 rng(12);
  Tensor x = randomTensor(rng, DType::f32, {4, 6});
  expectLegalizeMatchesKernel("gelu", {x}, {});
  expectLegalizeMatchesKernel("gelu", {x}, {{"approximate", AttrValue("none")}});
  expectLegalizeMatchesKernel("gelu", {x}, {{"approximate", AttrValue("tanh")}});
  expectLegalizeMatchesKernel("gelu", {randomTensor(rng, DType::f16, {4, 6})},
                              {{"approximate", AttrValue("tanh")}}, halfOpts());
  expectLegalizeMatchesKernel("leaky_relu", {x}, {{"alpha", AttrValue(0.3)}});
  expectLegalizeMatchesKernel("elu", {x}, {{"alpha", AttrValue(0.5)}});
  expectLegalizeMatchesKernel("selu", {x}, {{"alpha", AttrValue(2.0)}, {"gamma", AttrValue(0.5)}});
  expectLegalizeMatchesKernel("hard_sigmoid", {x}, {{"alpha", AttrValue(0.25)}, {"beta", AttrValue(0.25)}});
}

TEST(LegalizeElementwise, IntegerUnaryOps) {
  std::mt19937 rng(13);
  for (DType t : {DType::i8, DType::i32, DType::i64})
    for (const char* op : {"relu", "abs", "negative", "sign"}) {
      SCOPED_TRACE(op);
      expectLegalizeMatchesKernel(op, {randomTensor(rng, t, {3, 4}, -100, 100)}, {});
    }
  // Wrap-around at the dtype's minimum: abs(-128) and -(-128) are -128 in i8.
  Tensor edge = Tensor::fromValues(DType::i8, {4}, {-128, 127, 0, -1});
  expectLegalizeMatchesKernel("abs", {edge}, {});
  expectLegalizeMatchesKernel("negative", {edge}, {});
  expectLegalizeMatchesKernel("logical_not", {randomTensor(rng, DType::boolean, {3, 4})}, {});
}

TEST(LegalizeElementwise, BinaryArithmeticBroadcasts) {
  std::mt19937 rng(14);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 4}, {2, 3, 4}},  // same
      {{2, 3, 4}, {4}},        // rank-different
      {{3}, {2, 1, 3}},        // rank-different, the other way
      {{2, 1, 4}, {1, 3, 1}},  // 1-dims on both sides
      {{2, 3, 4}, {2, 3, 1}},  // 1-dim on the right
      {{1, 3, 4}, {2, 3, 4}},  // 1-dim on the left
      {{2, 3}, {}},            // scalar
      {{1}, {1, 1}},           // all ones
  };
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod"})
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + mlcc::test::shapeText(sa) + " " + mlcc::test::shapeText(sb));
      expectLegalizeMatchesKernel(
          op, {randomTensor(rng, DType::f32, sa, 0.5, 3), randomTensor(rng, DType::f32, sb, -3, 3)}, {});
    }
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum", "mod"}) {
    SCOPED_TRACE(op);
    for (DType t : {DType::i8, DType::i32, DType::i64})
      expectLegalizeMatchesKernel(
          op, {randomTensor(rng, t, {2, 3, 4}, -100, 100), randomTensor(rng, t, {3, 1}, -9, 9)}, {});
    expectLegalizeMatchesKernel(
        op, {randomTensor(rng, DType::f16, {2, 3}), randomTensor(rng, DType::f16, {3})}, {}, halfOpts());
    expectLegalizeMatchesKernel(
        op, {randomTensor(rng, DType::bf16, {2, 3}), randomTensor(rng, DType::bf16, {1, 3})}, {}, halfOpts());
  }
}

TEST(LegalizeElementwise, IntegerDivisionAndModuloEdges) {
  // Truncation toward zero, x / 0 = 0, x / -1 wraps at the minimum, and
  // both modulo conventions with every sign combination.
  Tensor a = Tensor::fromValues(DType::i8, {8}, {7, -7, 7, -7, 5, -128, -128, 0});
  Tensor b = Tensor::fromValues(DType::i8, {8}, {2, 2, -2, -2, 0, -1, 3, -3});
  expectLegalizeMatchesKernel("divide", {a, b}, {});
  expectLegalizeMatchesKernel("mod", {a, b}, {});
  expectLegalizeMatchesKernel("mod", {a, b}, {{"fmod", AttrValue(true)}});
  Tensor a64 = Tensor::fromValues(DType::i64, {4}, {7, -7, 7, -7});
  Tensor b64 = Tensor::fromValues(DType::i64, {4}, {2, 2, -2, -2});
  expectLegalizeMatchesKernel("divide", {a64, b64}, {});
  Tensor fa = Tensor::fromValues(DType::f32, {6}, {7.5, -7.5, 7.5, -7.5, 4.0, std::nan("")});
  Tensor fb = Tensor::fromValues(DType::f32, {6}, {2, 2, -2, -2, 2, 1});
  expectLegalizeMatchesKernel("mod", {fa, fb}, {});
  expectLegalizeMatchesKernel("mod", {fa, fb}, {{"fmod", AttrValue(true)}});
}

TEST(LegalizeElementwise, MaximumMinimumPropagateNaN) {
  Tensor a = specialFloats(DType::f32);
  Tensor b = Tensor::fromValues(DType::f32, {6}, {1, std::nan(""), 0, -0.0, 3, -9});
  for (const char* op : {"maximum", "minimum"}) {
    expectLegalizeMatchesKernel(op, {a, b}, {});
    expectLegalizeMatchesKernel(op, {b, a}, {});
  }
}

TEST(LegalizeElementwise, ComparisonsAndLogical) {
  std::mt19937 rng(15);
  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    SCOPED_TRACE(op);
    for (DType t : {DType::f32, DType::f16, DType::i8, DType::i64, DType::boolean})
      expectLegalizeMatchesKernel(
          op, {randomTensor(rng, t, {2, 3, 4}, -2, 2), randomTensor(rng, t, {3, 1}, -2, 2)}, {});
    expectLegalizeMatchesKernel(op, {specialFloats(DType::f32), specialFloats(DType::f32)}, {});
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(
        op, {randomTensor(rng, DType::boolean, {4, 1, 3}), randomTensor(rng, DType::boolean, {5, 1})}, {});
  }
}

TEST(LegalizeElementwise, Where) {
  std::mt19937 rng(16);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::boolean}) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("where",
                                {randomTensor(rng, DType::boolean, {2, 3, 4}), randomTensor(rng, t, {3, 4}),
                                 randomTensor(rng, t, {2, 1, 1})},
                                {});
  }
  expectLegalizeMatchesKernel("where",
                              {randomTensor(rng, DType::boolean, {4}), randomTensor(rng, DType::f32, {3, 1}),
                               randomTensor(rng, DType::f32, {})},
                              {});
}

TEST(LegalizeElementwise, Clip) {
  std::mt19937 rng(17);
  const std::vector<mlcc::ir::Attrs> variants = {
      {{"min", AttrValue(-1.5)}, {"max", AttrValue(2.25)}},
      {{"min", AttrValue(-1.5)}},
      {{"max", AttrValue(0.5)}},
      {},
      {{"min", AttrValue(2.0)}, {"max", AttrValue(-1.0)}},    // empty range: the kernel's order decides
      {{"min", AttrValue(-1e30)}, {"max", AttrValue(1e30)}},  // saturating integer bounds
  };
  for (const auto& attrs : variants) {
    expectLegalizeMatchesKernel("clip", {randomTensor(rng, DType::f32, {3, 4})}, attrs);
    expectLegalizeMatchesKernel("clip", {specialFloats(DType::f32)}, attrs);
    expectLegalizeMatchesKernel("clip", {randomTensor(rng, DType::f16, {3, 4})}, attrs, halfOpts());
    for (DType t : {DType::i8, DType::i32, DType::i64})
      expectLegalizeMatchesKernel("clip", {randomTensor(rng, t, {3, 4}, -5, 5)}, attrs);
  }
}

TEST(LegalizeElementwise, CastBetweenAllDTypes) {
  std::mt19937 rng(18);
  const DType all[] = {DType::f32, DType::f16, DType::bf16,   DType::i8,
                       DType::i32, DType::i64, DType::boolean};
  const double big = 3e9;  // past i32, so float -> int saturates
  for (DType from : all)
    for (DType to : all) {
      SCOPED_TRACE(std::string(mlcc::ir::dtypeName(from)) + " -> " + std::string(mlcc::ir::dtypeName(to)));
      mlcc::ir::Attrs attrs = {{"dtype", AttrValue(std::string(mlcc::ir::dtypeName(to)))}};
      expectLegalizeMatchesKernel("cast", {randomTensor(rng, from, {3, 4}, -200, 200)}, attrs);
      if (mlcc::ir::isFloat(from)) {
        expectLegalizeMatchesKernel("cast", {specialFloats(from)}, attrs);
        expectLegalizeMatchesKernel("cast", {Tensor::fromValues(from, {4}, {big, -big, 130.7, -130.7})},
                                    attrs);
      }
    }
  // i64 extremes into floats and narrower integers (wraps).
  Tensor ext = Tensor::fromValues(DType::i64, {3}, {9007199254740993.0, -9007199254740993.0, 65519.0});
  for (DType to : all)
    expectLegalizeMatchesKernel("cast", {ext}, {{"dtype", AttrValue(std::string(mlcc::ir::dtypeName(to)))}});
}

TEST(LegalizeElementwise, SymbolicBroadcastAgainstOne) {
  // x: [n, 3], y: [n, 1] and [1, 3] broadcasts with a symbolic n (the
  // legalize check also reruns with the first dim symbolic).
  std::mt19937 rng(19);
  expectLegalizeMatchesKernel(
      "add", {randomTensor(rng, DType::f32, {4, 3}), randomTensor(rng, DType::f32, {4, 1})}, {});
  // Types only: [n, 3] + [1, 3] with n symbolic keeps the second operand's dim 0 at 0.
  mlcc::ir::Var n = mlcc::ir::makeVar("n");
  Type a = Type::tensor(DType::f32, {n, mlcc::ir::makeInt(3)});
  Type b = Type::tensor(DType::f32, std::vector<int64_t>{1, 3});
  mlcc::ir::Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("add", {a, b}, {}, "add_bcast"));
  mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string text = mlcc::ir::printModule(m);
  EXPECT_NE(text.find("%b[0, "), std::string::npos) << text;
}

TEST(LegalizeElementwise, PrintedLoopNestIsReadable) {
  Type a = Type::tensor(DType::f32, std::vector<int64_t>{2, 3});
  Type b = Type::tensor(DType::f32, std::vector<int64_t>{3});
  mlcc::ir::Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("add", {a, b}, {}, "add"));
  mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string text = mlcc::ir::printModule(m);
  EXPECT_NE(text.find("block \"add\" (%v0 = spatial(2, %i0), %v1 = spatial(3, %i1))"), std::string::npos)
      << text;
  EXPECT_NE(text.find("reads(%a[%v0, %v1], %b[%v1])"), std::string::npos) << text;
  EXPECT_NE(text.find("%add[%v0, %v1] = %a[%v0, %v1] + %b[%v1]"), std::string::npos) << text;
}

TEST(LegalizeElementwise, EveryOpIsLowered) {
  for (const char* op :
       {"relu",       "abs",     "negative",      "sign",        "leaky_relu", "elu",         "selu",
        "gelu",       "sigmoid", "hard_sigmoid",  "hard_swish",  "silu",       "softplus",    "softsign",
        "tanh",       "exp",     "log",           "sqrt",        "rsqrt",      "erf",         "sin",
        "cos",        "tan",     "asin",          "acos",        "atan",       "sinh",        "cosh",
        "asinh",      "acosh",   "atanh",         "floor",       "ceil",       "round",       "reciprocal",
        "isnan",      "isinf",   "logical_not",   "add",         "subtract",   "multiply",    "divide",
        "maximum",    "minimum", "power",         "mod",         "equal",      "not_equal",   "less",
        "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "where",
        "clip",       "cast"})
    EXPECT_TRUE(mlcc::ops::findOp(op) && mlcc::ops::findOp(op)->legalize) << op;
}

// Integer power (wrapping; negative exponents give 1, ±1 or 0 as the
// kernel): bases -3..3 and large ones, exponents -2..40 (overflowing).
TEST(LegalizeElementwise, IntegerPower) {
  for (DType t : {DType::i8, DType::u8, DType::i32, DType::i64}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    std::vector<double> base, exponent;
    for (int64_t i = 0; i < 43; ++i) {
      base.push_back(i % 9 == 8 ? 101 : static_cast<double>(i % 7 - 3) + (t == DType::u8 ? 3 : 0));
      exponent.push_back(static_cast<double>(i - 2) + (t == DType::u8 ? 2 : 0));
    }
    expectLegalizeMatchesKernel(
        "power", {Tensor::fromValues(t, {43}, base), Tensor::fromValues(t, {43}, exponent)}, {});
  }
}

}  // namespace
