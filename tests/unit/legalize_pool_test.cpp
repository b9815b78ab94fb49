// Legalization of the pooling ops: the prim funcs compute what the
// reference kernels compute, for padding, strides, dilation, ceil_mode
// (PyTorch's windows), count_include_pad, global and adaptive pooling,
// f16/bf16 and the max of u8/i8, also with a symbolic batch dimension.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "legalize_check.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

struct Pool {
  std::vector<int64_t> x;
  std::vector<int64_t> k;
  std::vector<int64_t> strides{};  // empty: pool_size
  std::vector<int64_t> padding{0, 0, 0, 0}, dilation{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = false;
  DType dtype = DType::f32;
};

LegalizeCheckOptions tol(DType dt) {
  return {.rtol = dt == DType::f32 ? 1e-5 : 4e-3, .atol = dt == DType::f32 ? 1e-6 : 4e-3};
}

void check(const Pool& p) {
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    std::mt19937 rng(static_cast<unsigned>(p.x[2] * 7 + p.k[0] + p.padding[0] * 3));
    Attrs attrs{{"pool_size", AttrValue::ints(p.k)},
                {"padding", AttrValue::ints(p.padding)},
                {"dilation", AttrValue::ints(p.dilation)},
                {"ceil_mode", AttrValue(p.ceil_mode)}};
    if (!p.strides.empty()) attrs["strides"] = AttrValue::ints(p.strides);
    if (std::string(op) == "avg_pool2d") attrs["count_include_pad"] = AttrValue(p.count_include_pad);
    SCOPED_TRACE(std::string(op) + " " + mlcc::test::shapeText(p.x) + " k " + mlcc::test::shapeText(p.k) +
                 (p.ceil_mode ? " ceil" : "") + (p.count_include_pad ? " count_include_pad" : ""));
    expectLegalizeMatchesKernel(op, {randomTensor(rng, p.dtype, p.x)}, attrs, tol(p.dtype));
  }
  // max_pool2d's indices (ONNX MaxPool's second output), row- and column-major,
  // on integer-valued inputs: ties in most windows.
  for (int64_t order : {0, 1}) {
    std::mt19937 rng(static_cast<unsigned>(p.x[3] * 5 + order));
    Attrs attrs{{"pool_size", AttrValue::ints(p.k)},
                {"padding", AttrValue::ints(p.padding)},
                {"dilation", AttrValue::ints(p.dilation)},
                {"ceil_mode", AttrValue(p.ceil_mode)},
                {"storage_order", order}};
    if (!p.strides.empty()) attrs["strides"] = AttrValue::ints(p.strides);
    SCOPED_TRACE("max_pool2d_indices " + mlcc::test::shapeText(p.x) + " storage_order " +
                 std::to_string(order));
    Tensor x = randomTensor(rng, p.dtype, p.x);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::round(x.at(i)));
    expectLegalizeMatchesKernel("max_pool2d_indices", {x}, attrs, tol(p.dtype));
  }
}

}  // namespace

TEST(LegalizePool, EveryOpHasALegalization) {
  expectEveryOpHasALegalization({"max_pool2d", "avg_pool2d", "max_pool2d_indices", "global_avg_pool2d",
                                 "global_max_pool2d", "adaptive_avg_pool2d"});
}

// ONNX's MaxPool Indices example: the flat index of each window's max, row-
// and column-major; ties go to the first tap in window order; NaN wins.
TEST(LegalizePool, IndicesKernel) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::fromValues(DType::f32, {1, 1, 2, 4}, {1, 5, 5, 2, 3, 0, nan, 9});
  Attrs attrs{{"pool_size", AttrValue::ints({2, 2})}, {"strides", AttrValue::ints({2, 2})}};
  auto rows = mlcc::ops::computeOp("max_pool2d_indices", {x}, attrs)[0];
  EXPECT_EQ(rows.at(0), 1);  // 5 at (0, 1)
  EXPECT_EQ(rows.at(1), 6);  // NaN at (1, 2)
  attrs["storage_order"] = int64_t{1};
  auto cols = mlcc::ops::computeOp("max_pool2d_indices", {x}, attrs)[0];
  EXPECT_EQ(cols.at(0), 2);  // (0, 1) column-major: 1 * 2 + 0
  EXPECT_EQ(cols.at(1), 5);  // (1, 2): 2 * 2 + 1
  // The tie 5, 5 across windows of a stride-1 pool: each window's first.
  Tensor t = Tensor::fromValues(DType::f32, {1, 1, 1, 3}, {5, 5, 1});
  auto tie =
      mlcc::ops::computeOp("max_pool2d_indices", {t},
                           {{"pool_size", AttrValue::ints({1, 2})}, {"strides", AttrValue::ints({1, 1})}})[0];
  EXPECT_EQ(tie.at(0), 0);
  EXPECT_EQ(tie.at(1), 1);
  // (The legalized max reduction drops NaN where the kernel propagates it,
  // as max_pool2d's does: compared on finite values.)
  x.set(6, 5.0);
  expectLegalizeMatchesKernel("max_pool2d_indices", {x}, attrs);
}

// max_pool2d and global_max_pool2d of u8 and i8 (quantized models), with
// padding (whose taps never win: the lowest value of the dtype).
TEST(LegalizePool, MaxOfEightBitIntegers) {
  for (DType t : {DType::u8, DType::i8}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    std::mt19937 rng(7);
    Tensor x = randomTensor(rng, t, {2, 3, 7, 6});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, static_cast<double>(rng() % 256) - (t == DType::i8 ? 128 : 0));
    expectLegalizeMatchesKernel("max_pool2d", {x},
                                {{"pool_size", AttrValue::ints({3, 3})},
                                 {"strides", AttrValue::ints({2, 2})},
                                 {"padding", AttrValue::ints({1, 1, 2, 0})},
                                 {"ceil_mode", AttrValue(true)}});
    expectLegalizeMatchesKernel("global_max_pool2d", {x}, {});
  }
  EXPECT_THROW(
      mlcc::ops::inferOpType("avg_pool2d", {Type::tensor(DType::u8, std::vector<int64_t>{1, 1, 4, 4})},
                             {{"pool_size", AttrValue::ints({2, 2})}}),
      mlcc::Error);
}

TEST(LegalizePool, Basic) {
  check({.x = {2, 3, 6, 6}, .k = {2, 2}});
  check({.x = {1, 2, 7, 5}, .k = {3, 2}, .strides = {1, 1}});
  check({.x = {2, 2, 9, 8}, .k = {3, 3}, .strides = {2, 3}});
}

TEST(LegalizePool, Padding) {
  for (bool cip : {false, true}) {
    check({.x = {2, 2, 6, 6},
           .k = {3, 3},
           .strides = {2, 2},
           .padding = {1, 1, 1, 1},
           .count_include_pad = cip});
    check({.x = {1, 2, 7, 6},
           .k = {3, 2},
           .strides = {2, 1},
           .padding = {1, 0, 0, 1},
           .count_include_pad = cip});
  }
}

TEST(LegalizePool, Dilation) {
  for (bool cip : {false, true})
    check({.x = {1, 2, 9, 9},
           .k = {3, 2},
           .strides = {2, 2},
           .padding = {2, 1, 2, 1},
           .dilation = {2, 3},
           .count_include_pad = cip});
}

TEST(LegalizePool, CeilMode) {
  for (bool cip : {false, true}) {
    check({.x = {2, 2, 7, 7}, .k = {2, 2}, .ceil_mode = true, .count_include_pad = cip});
    check({.x = {1, 2, 8, 7},
           .k = {3, 3},
           .strides = {2, 2},
           .padding = {1, 1, 1, 1},
           .ceil_mode = true,
           .count_include_pad = cip});
    check({.x = {1, 1, 10, 9},
           .k = {3, 2},
           .strides = {3, 2},
           .padding = {1, 0, 1, 1},
           .dilation = {2, 1},
           .ceil_mode = true,
           .count_include_pad = cip});
  }
}

TEST(LegalizePool, ReducedPrecision) {
  check({.x = {1, 2, 6, 6}, .k = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}, .dtype = DType::f16});
  check({.x = {1, 2, 7, 7}, .k = {2, 2}, .ceil_mode = true, .count_include_pad = true, .dtype = DType::bf16});
}

TEST(LegalizePool, GlobalPools) {
  std::mt19937 rng(3);
  for (const char* op : {"global_avg_pool2d", "global_max_pool2d"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {2, 3, 5, 7})}, {}, tol(DType::f32));
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {1, 2, 1, 1})}, {}, tol(DType::f32));
    expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {2, 2, 4, 4})}, {}, tol(DType::f16));
  }
}

TEST(LegalizePool, AdaptiveAvgPool) {
  std::mt19937 rng(4);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 2, 6, 6}, {3, 3}},                          // even bins
      {{1, 2, 7, 5}, {3, 2}},                          // overlapping variable bins
      {{2, 1, 5, 7}, {5, 4}}, {{1, 2, 3, 2}, {5, 4}},  // output larger than the input
      {{1, 3, 8, 8}, {1}},                             // one item: square, global
  };
  for (const auto& [xs, size] : cases) {
    SCOPED_TRACE(mlcc::test::shapeText(xs) + " -> " + mlcc::test::shapeText(size));
    expectLegalizeMatchesKernel("adaptive_avg_pool2d", {randomTensor(rng, DType::f32, xs)},
                                {{"output_size", AttrValue::ints(size)}}, tol(DType::f32));
  }
  expectLegalizeMatchesKernel("adaptive_avg_pool2d", {randomTensor(rng, DType::bf16, {1, 2, 7, 5})},
                              {{"output_size", AttrValue::ints({3, 2})}}, tol(DType::bf16));
}

TEST(LegalizePool, MainBlocksAreNamedAfterTheOps) {
  Type x = Type::tensor(DType::f32, std::vector<int64_t>{1, 2, 6, 6});
  Attrs pool{{"pool_size", AttrValue::ints({2, 2})}};
  for (const char* op : {"max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d"}) {
    auto f = mlcc::ops::legalizeOp(op, {x}, std::string(op).find("global") == 0 ? Attrs{} : pool, "f");
    std::string text = mlcc::ir::printFunction(f);
    EXPECT_NE(text.find(std::string("block \"") + op + "\""), std::string::npos) << text;
  }
}

TEST(LegalizePool, SymbolicSpatialDims) {
  std::mt19937 rng(9);
  Attrs padded{{"pool_size", AttrValue::ints({3, 3})},
               {"strides", AttrValue::ints({2, 2})},
               {"padding", AttrValue::ints({1, 1, 1, 1})}};
  Attrs ceil{{"pool_size", AttrValue::ints({2, 2})}, {"ceil_mode", AttrValue(true)}};
  for (int64_t h : {7, 8}) {
    Tensor x = randomTensor(rng, DType::f32, {1, 3, h, h + 1});
    expectSymbolicSpatialMatchesKernel("max_pool2d", {x}, padded);
    for (bool cip : {false, true}) {
      Attrs a = padded;
      a["count_include_pad"] = AttrValue(cip);
      expectSymbolicSpatialMatchesKernel("avg_pool2d", {x}, a);
      a = ceil;
      a["count_include_pad"] = AttrValue(cip);
      expectSymbolicSpatialMatchesKernel("avg_pool2d", {x}, a);
    }
    expectSymbolicSpatialMatchesKernel("global_avg_pool2d", {x}, {});
    expectSymbolicSpatialMatchesKernel("global_max_pool2d", {x}, {});
    expectSymbolicSpatialMatchesKernel("adaptive_avg_pool2d", {x},
                                       {{"output_size", AttrValue::ints({3, 2})}});
  }
}
