// topk (libs/ops/src/topk.cpp): the reference kernel on hand-computed cases
// (ties keep index order, NaN orders above every number), and the TensorIR
// compute definition, run through the interpreter, against the kernel for
// each axis, largest and smallest, dtypes with many ties, NaN, k = n and a
// symbolic batch.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "legalize_check.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using mlcc::test::expectLegalizeMatchesKernel;

std::vector<double> all(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
  return v;
}

Attrs topkAttrs(int64_t k, int64_t axis, bool largest) {
  return {{"k", k}, {"axis", axis}, {"largest", largest}};
}

TEST(Topk, IsLegalized) { mlcc::test::expectEveryOpHasALegalization({"topk"}); }

TEST(Topk, KernelTiesAndNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::fromValues(DType::f32, {6}, {3, 1, nan, 3, -2, 1});
  auto big = mlcc::ops::computeOp("topk", {x}, topkAttrs(4, 0, true));
  EXPECT_TRUE(std::isnan(big[0].at(0)));
  EXPECT_EQ(all(big[1]), (std::vector<double>{2, 0, 3, 1}));  // NaN, then the tie 3, 3 in index order
  auto small = mlcc::ops::computeOp("topk", {x}, topkAttrs(3, 0, false));
  EXPECT_EQ(all(small[0]), (std::vector<double>{-2, 1, 1}));
  EXPECT_EQ(all(small[1]), (std::vector<double>{4, 1, 5}));
  EXPECT_THROW(mlcc::ops::computeOp("topk", {x}, topkAttrs(7, 0, true)), mlcc::Error);
  EXPECT_THROW(mlcc::ops::inferOpType("topk", {Type::tensor(DType::boolean, std::vector<int64_t>{3})},
                                      topkAttrs(1, 0, true)),
               mlcc::Error);
}

TEST(Topk, LegalizationMatchesKernel) {
  std::mt19937 rng(3);
  for (DType t : {DType::f32, DType::i32, DType::i64, DType::f16})
    for (int64_t axis : {0, 1, -1})
      for (bool largest : {true, false}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " axis " + std::to_string(axis) +
                     (largest ? " largest" : " smallest"));
        // Values in [-3, 3]: ties everywhere along every axis.
        Tensor x = mlcc::test::randomTensor(rng, t, {4, 5, 6}, -3, 3);
        int64_t n = x.shape()[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
        expectLegalizeMatchesKernel("topk", {x}, topkAttrs(3, axis, largest));
        expectLegalizeMatchesKernel("topk", {x}, topkAttrs(n, axis, largest));
      }
}

TEST(Topk, LegalizationOrdersNaN) {
  std::mt19937 rng(4);
  Tensor x = mlcc::test::randomTensor(rng, DType::f32, {3, 7}, -2, 2);
  for (int64_t i : {1, 5, 8, 12, 20}) x.set(i, std::numeric_limits<double>::quiet_NaN());
  for (bool largest : {true, false}) expectLegalizeMatchesKernel("topk", {x}, topkAttrs(4, 1, largest));
}

// A few positions of a long axis (4 k <= n) are selected one by one:
// the same answers, with ties everywhere, NaN and infinities, each dtype,
// along each axis (and over a symbolic batch: expectLegalizeMatchesKernel).
TEST(Topk, SelectionMatchesKernel) {
  std::mt19937 rng(6);
  for (DType t : {DType::f32, DType::i32, DType::i64, DType::f16})
    for (int64_t axis : {0, 1, -1})
      for (bool largest : {true, false}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " axis " + std::to_string(axis) +
                     (largest ? " largest" : " smallest"));
        std::vector<int64_t> shape = {3, 4, 5};
        shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = 24;
        Tensor x = mlcc::test::randomTensor(rng, t, shape, -3, 3);
        if (isFloat(t))
          for (int64_t i : {1, 7, 8, 30, 31, 77}) x.set(i, std::numeric_limits<double>::quiet_NaN());
        if (isFloat(t))
          for (int64_t i : {2, 40, 41}) x.set(i, i == 40 ? -INFINITY : INFINITY);
        for (int64_t k : {1, 3, 6}) expectLegalizeMatchesKernel("topk", {x}, topkAttrs(k, axis, largest));
      }
}

TEST(Topk, NothingSelected) {
  std::mt19937 rng(5);
  expectLegalizeMatchesKernel("topk", {mlcc::test::randomTensor(rng, DType::f32, {2, 3}, -1, 1)},
                              topkAttrs(0, 1, true));
}

}  // namespace
