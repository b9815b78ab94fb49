// Legalization of resize2d (libs/ops/src/resize.cpp): the TensorIR compute
// definition, run through the interpreter, matches the reference kernel for
// every method, coordinate mode and rounding method, upsampling and
// downsampling, several dtypes, with a symbolic batch too.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using namespace mlcc::test;

const mlcc::test::RandomRange kRange{-4, 4, -100, 100};
const char* kModes[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                        "half_pixel_symmetric"};
const char* kRoundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

Attrs resizeAttrs(int64_t oh, int64_t ow, const std::string& method, const std::string& mode,
                  const std::string& rounding = "round_prefer_floor") {
  return {{"size", AttrValue::ints({oh, ow})},
          {"method", method},
          {"coordinate_transformation_mode", mode},
          {"rounding_method", rounding}};
}

struct LegalizeResize : ::testing::Test {
  std::mt19937 rng{99};
  Tensor rand(DType t, std::vector<int64_t> shape) { return mlcc::test::randomTensor(rng, t, shape, kRange); }
};

// (input h, w) -> (output h, w): up, down, odd ratios, 1 -> n, n -> 1, the
// same size, and 3 -> 5 where the kernel's double coordinates miss exact
// integers and ties.
const std::vector<std::array<int64_t, 4>> kSizes = {{4, 4, 8, 8}, {6, 9, 3, 4}, {3, 5, 5, 7},  {1, 3, 4, 1},
                                                    {5, 2, 5, 2}, {3, 3, 5, 5}, {7, 5, 3, 11}, {2, 4, 7, 13}};

TEST_F(LegalizeResize, IsLegalized) { EXPECT_TRUE(mlcc::ops::findOp("resize2d")->legalize); }

TEST_F(LegalizeResize, NearestEveryModeAndRounding) {
  for (const auto& s : kSizes) {
    Tensor x = rand(DType::f32, {2, 3, s[0], s[1]});
    for (const char* mode : kModes)
      for (const char* rounding : kRoundings) {
        SCOPED_TRACE(std::string(mode) + " " + rounding + " " + std::to_string(s[0]) + "x" +
                     std::to_string(s[1]) + " -> " + std::to_string(s[2]) + "x" + std::to_string(s[3]));
        expectLegalizeMatchesKernel("resize2d", {x}, resizeAttrs(s[2], s[3], "nearest", mode, rounding));
      }
  }
}

TEST_F(LegalizeResize, NearestMovesAnyDtype) {
  for (DType t : {DType::f16, DType::bf16, DType::i8, DType::i32, DType::i64, DType::boolean}) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("resize2d", {rand(t, {1, 2, 3, 4})},
                                resizeAttrs(5, 7, "nearest", "asymmetric", "floor"));
    expectLegalizeMatchesKernel("resize2d", {rand(t, {2, 1, 4, 4})},
                                resizeAttrs(3, 6, "nearest", "half_pixel", "round_prefer_ceil"));
  }
}

TEST_F(LegalizeResize, LinearEveryMode) {
  for (const auto& s : kSizes) {
    Tensor x = rand(DType::f32, {2, 2, s[0], s[1]});
    for (const char* mode : kModes) {
      SCOPED_TRACE(std::string(mode) + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + " -> " +
                   std::to_string(s[2]) + "x" + std::to_string(s[3]));
      LegalizeCheckOptions exact;
      exact.rtol = exact.atol = 0;  // the same f32 operations in the same order
      expectLegalizeMatchesKernel("resize2d", {x}, resizeAttrs(s[2], s[3], "linear", mode), exact);
    }
  }
}

TEST_F(LegalizeResize, CubicEveryModeWithAndWithoutExcludeOutside) {
  for (const auto& s : kSizes) {
    Tensor x = rand(DType::f32, {1, 2, s[0], s[1]});
    for (const char* mode : kModes)
      for (bool exclude : {false, true}) {
        SCOPED_TRACE(std::string(mode) + (exclude ? " exclude_outside " : " ") + std::to_string(s[0]) + "x" +
                     std::to_string(s[1]) + " -> " + std::to_string(s[2]) + "x" + std::to_string(s[3]));
        Attrs a = resizeAttrs(s[2], s[3], "cubic", mode);
        a["cubic_coeff_a"] = exclude ? -0.5 : -0.75;
        a["exclude_outside"] = exclude;
        LegalizeCheckOptions exact;
        exact.rtol = exact.atol = 0;  // the same f32 operations in the same order
        expectLegalizeMatchesKernel("resize2d", {x}, a, exact);
      }
  }
}

// Given scales (ONNX's scales input) map coordinates back by themselves:
// 0.6 of 4 is 2 outputs 1 / 0.6 apart, 1.7 of 3 is 5 outputs (not 5 / 3).
TEST_F(LegalizeResize, GivenScalesEveryMethodAndMode) {
  const std::vector<std::array<double, 4>> cases = {{2, 4, 0.6, 0.6}, {3, 3, 1.7, 2.5}, {5, 7, 0.75, 0.3}};
  for (const auto& c : cases) {
    const auto ih = static_cast<int64_t>(c[0]), iw = static_cast<int64_t>(c[1]);
    const auto oh = static_cast<int64_t>(std::floor(c[0] * static_cast<float>(c[2])));
    const auto ow = static_cast<int64_t>(std::floor(c[1] * static_cast<float>(c[3])));
    Tensor x = rand(DType::f32, {1, 2, ih, iw});
    for (const char* method : {"nearest", "linear", "cubic"})
      for (const char* mode : kModes) {
        SCOPED_TRACE(std::string(method) + " " + mode + " scales " + std::to_string(c[2]) + ", " +
                     std::to_string(c[3]));
        Attrs a = resizeAttrs(oh, ow, method, mode);
        a["scales"] = AttrValue(AttrValue::List{AttrValue(c[2]), AttrValue(c[3])});
        expectLegalizeMatchesKernel("resize2d", {x}, a);
      }
  }
}

TEST_F(LegalizeResize, LinearHalfPrecision) {
  LegalizeCheckOptions exact;
  exact.rtol = exact.atol = 0;
  for (DType t : {DType::f16, DType::bf16})
    for (const char* mode : kModes) {
      SCOPED_TRACE(std::string(mlcc::ir::dtypeName(t)) + " " + mode);
      expectLegalizeMatchesKernel("resize2d", {rand(t, {2, 2, 3, 5})}, resizeAttrs(5, 4, "linear", mode),
                                  exact);
    }
}

// Linear upsampling along H legalizes in two stages (W first, on the
// input's rows; then the rows), exactly the one-stage values (every case
// of LinearEveryMode with more output rows than input rows runs it);
// other sizes in one stage.
TEST_F(LegalizeResize, LinearUpsamplingInTwoPasses) {
  auto blocks = [](int64_t ih, int64_t oh) {
    const Type x = Type::tensor(DType::f32, {mlcc::ops::dimConst(1), mlcc::ops::dimConst(2),
                                             mlcc::ops::dimConst(ih), mlcc::ops::dimConst(5)});
    const Type y = Type::tensor(DType::f32, {mlcc::ops::dimConst(1), mlcc::ops::dimConst(2),
                                             mlcc::ops::dimConst(oh), mlcc::ops::dimConst(9)});
    const std::string text = printFunction(
        mlcc::ops::findOp("resize2d")->legalize({x}, y, resizeAttrs(oh, 9, "linear", "half_pixel")));
    return std::make_pair(text.find("block \"resize2d_columns\"") != std::string::npos,
                          text.find("block \"resize2d\"") != std::string::npos);
  };
  EXPECT_EQ(blocks(3, 8), std::make_pair(true, true));
  EXPECT_EQ(blocks(8, 3), std::make_pair(false, true));
  EXPECT_EQ(blocks(4, 4), std::make_pair(false, true));
}

TEST_F(LegalizeResize, EmptyOutputsAndInputs) {
  expectLegalizeMatchesKernel("resize2d", {rand(DType::f32, {2, 1, 3, 3})},
                              resizeAttrs(0, 4, "linear", "asymmetric"));
  expectLegalizeMatchesKernel("resize2d", {rand(DType::f32, {0, 1, 3, 3})},
                              resizeAttrs(2, 4, "nearest", "half_pixel"));
}

}  // namespace

namespace {

// half_pixel 7 -> 9: the exact coordinate of output 4 is 3, the kernel's
// double gives 2.9999999999999996, so `floor` picks 2 (and linear takes
// i0 = 2 with weight 1). The lowering patches that index (and weight) with a
// select on the output index to match the kernel.
TEST_F(LegalizeResize, PatchesTheKernelsDoubleRounding) {
  using namespace mlcc::ir;
  PrimFunc f = mlcc::ops::legalizeOp("resize2d", {Type::tensor(DType::f32, std::vector<int64_t>{1, 1, 7, 2})},
                                     resizeAttrs(9, 2, "nearest", "half_pixel", "floor"), "f");
  std::string text = printFunction(f);
  EXPECT_NE(text.find("select(%v2 == 4, 2,"), std::string::npos) << text;
  LegalizeCheckOptions exact;
  exact.rtol = exact.atol = 0;
  for (const char* rounding : kRoundings)
    expectLegalizeMatchesKernel("resize2d", {rand(DType::f32, {2, 3, 7, 7})},
                                resizeAttrs(9, 9, "nearest", "half_pixel", rounding));
  for (const char* mode : {"half_pixel", "pytorch_half_pixel"})
    expectLegalizeMatchesKernel("resize2d", {rand(DType::f32, {2, 3, 7, 7})},
                                resizeAttrs(9, 9, "linear", mode), exact);
}

}  // namespace
