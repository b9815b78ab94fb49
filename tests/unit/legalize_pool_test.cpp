// Legalization of the pooling ops: the prim funcs compute what the
// reference kernels compute, for padding, strides, dilation, ceil_mode
// (PyTorch's windows), count_include_pad, global and adaptive pooling and
// f16/bf16, also with a symbolic batch dimension.
#include <gtest/gtest.h>

#include <cmath>

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
}

}  // namespace

TEST(LegalizePool, EveryOpHasALegalization) {
  expectEveryOpHasALegalization(
      {"max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d", "adaptive_avg_pool2d"});
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
