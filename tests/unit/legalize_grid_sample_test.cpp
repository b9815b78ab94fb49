// grid_sample (libs/ops/src/grid_sample.cpp): the reference kernel on
// hand-computed cases, and the TensorIR compute definition, run through the
// interpreter, against the kernel for every mode, padding mode and corner
// alignment, over 1, 2 and 3 spatial axes, with grid points inside and
// outside [-1, 1], f16 operands and a symbolic batch.
#include <gtest/gtest.h>

#include <random>

#include "legalize_check.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using mlcc::test::expectLegalizeMatchesKernel;

const char* kModes[] = {"nearest", "linear", "cubic"};
const char* kPaddings[] = {"zeros", "border", "reflection"};

Attrs gridAttrs(const char* mode, const char* padding, bool align) {
  return {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}};
}

std::vector<double> all(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
  return v;
}

struct LegalizeGridSample : ::testing::Test {
  std::mt19937 rng{5};
  Tensor rand(DType t, std::vector<int64_t> shape, double lo, double hi) {
    return mlcc::test::randomTensor(rng, t, std::move(shape), lo, hi);
  }
};

TEST_F(LegalizeGridSample, IsLegalized) { mlcc::test::expectEveryOpHasALegalization({"grid_sample"}); }

// One row [1, 2, 3, 4] sampled at x = -1, -0.5, 0, 1.25 (y = 0): pixel
// centres at -0.75, -0.25, 0.25, 0.75 without align_corners.
TEST_F(LegalizeGridSample, KernelOnARow) {
  Tensor x = Tensor::fromValues(DType::f32, {1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor grid = Tensor::fromValues(DType::f32, {1, 1, 4, 2}, {-1, 0, -0.5, 0, 0, 0, 1.25, 0});
  auto out = [&](const char* mode, const char* padding, bool align) {
    return all(mlcc::ops::computeOp("grid_sample", {x, grid}, gridAttrs(mode, padding, align))[0]);
  };
  // linear, zeros: -1 -> position -0.5, half of pixel 0; -0.5 -> 0.5; 0 -> 1.5; 1.25 -> 4, outside.
  EXPECT_EQ(out("linear", "zeros", false), (std::vector<double>{0.5, 1.5, 2.5, 0}));
  // border clamps the position 4 to 3.
  EXPECT_EQ(out("linear", "border", false), (std::vector<double>{1, 1.5, 2.5, 4}));
  // reflection: -0.5 stays (the bound); 4 reflects at 3.5 to 3.
  EXPECT_EQ(out("linear", "reflection", false), (std::vector<double>{1, 1.5, 2.5, 4}));
  // align_corners: positions 0, 0.75, 1.5, 3.375 (outside [0, 3]: zeros reads half of pixel 4 at 3).
  EXPECT_EQ(out("linear", "zeros", true), (std::vector<double>{1, 1.75, 2.5, 4 * 0.625}));
  // nearest rounds half to even: 0.5 -> 0, 1.5 -> 2.
  EXPECT_EQ(out("nearest", "zeros", false), (std::vector<double>{1, 1, 3, 0}));
}

TEST_F(LegalizeGridSample, EveryModePaddingAndAlignment2d) {
  for (const char* mode : kModes)
    for (const char* padding : kPaddings)
      for (bool align : {false, true}) {
        SCOPED_TRACE(std::string(mode) + " " + padding + (align ? " align_corners" : ""));
        Tensor x = rand(DType::f32, {2, 3, 4, 5}, -3, 3);
        Tensor grid = rand(DType::f32, {2, 3, 6, 2}, -1.7, 1.7);
        mlcc::test::LegalizeCheckOptions exact;
        exact.rtol = exact.atol = 0;  // the same f32 operations in the same order
        expectLegalizeMatchesKernel("grid_sample", {x, grid}, gridAttrs(mode, padding, align), exact);
      }
}

TEST_F(LegalizeGridSample, OneAndThreeSpatialAxes) {
  for (const char* mode : kModes)
    for (const char* padding : kPaddings) {
      SCOPED_TRACE(std::string(mode) + " " + padding);
      expectLegalizeMatchesKernel("grid_sample",
                                  {rand(DType::f32, {1, 2, 7}, -3, 3), rand(DType::f32, {1, 5, 1}, -2, 2)},
                                  gridAttrs(mode, padding, false));
      expectLegalizeMatchesKernel(
          "grid_sample",
          {rand(DType::f32, {2, 2, 3, 4, 5}, -3, 3), rand(DType::f32, {2, 2, 3, 2, 3}, -1.5, 1.5)},
          gridAttrs(mode, padding, true));
    }
}

// A size-1 axis with align_corners has an empty reflection range.
TEST_F(LegalizeGridSample, SizeOneAxes) {
  for (const char* padding : kPaddings)
    expectLegalizeMatchesKernel(
        "grid_sample", {rand(DType::f32, {1, 2, 1, 3}, -3, 3), rand(DType::f32, {1, 2, 2, 2}, -2, 2)},
        gridAttrs("linear", padding, true));
}

TEST_F(LegalizeGridSample, HalfPrecision) {
  for (const char* mode : kModes)
    expectLegalizeMatchesKernel(
        "grid_sample", {rand(DType::f16, {1, 2, 4, 4}, -3, 3), rand(DType::f16, {1, 3, 3, 2}, -1.2, 1.2)},
        gridAttrs(mode, "border", false), mlcc::test::kHalfAccumulationOptions);
}

TEST_F(LegalizeGridSample, TypeErrors) {
  auto t = [](DType d, std::vector<int64_t> s) { return Type::tensor(d, s); };
  using mlcc::ops::inferOpType;
  EXPECT_THROW(inferOpType("grid_sample", {t(DType::f32, {1, 2, 4, 4}), t(DType::f32, {1, 3, 3, 3})}, {}),
               mlcc::Error);
  EXPECT_THROW(inferOpType("grid_sample", {t(DType::f32, {2, 2, 4, 4}), t(DType::f32, {1, 3, 3, 2})}, {}),
               mlcc::Error);
  EXPECT_THROW(inferOpType("grid_sample", {t(DType::i32, {1, 2, 4, 4}), t(DType::f32, {1, 3, 3, 2})}, {}),
               mlcc::Error);
  EXPECT_THROW(inferOpType("grid_sample", {t(DType::f32, {1, 2, 4, 4}), t(DType::f32, {1, 3, 3, 2})},
                           {{"mode", "area"}}),
               mlcc::Error);
  EXPECT_THROW(inferOpType("grid_sample", {t(DType::f32, {1, 2, 4, 4}), t(DType::f32, {1, 3, 3, 2})},
                           {{"padding_mode", "wrap"}}),
               mlcc::Error);
  Type y = inferOpType("grid_sample", {t(DType::f32, {1, 2, 4, 4}), t(DType::f32, {1, 3, 5, 2})}, {});
  EXPECT_EQ(y.shape.size(), 4u);
}

}  // namespace
