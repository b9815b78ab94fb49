// Legalization of the linalg ops (matmul, dense): the prim funcs compute
// what the reference kernels compute, for numpy's 1-D promotion, batch
// broadcasting, integer and reduced-precision float dtypes, also with a
// symbolic batch dimension.
#include <gtest/gtest.h>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

LegalizeCheckOptions f32Tol() { return {.rtol = 1e-4, .atol = 1e-5}; }

LegalizeCheckOptions f16Tol() { return {.rtol = 2e-3, .atol = 2e-3}; }

void checkMatmul(std::vector<int64_t> as, std::vector<int64_t> bs, DType dt = DType::f32) {
  std::mt19937 rng(static_cast<unsigned>(as.size() * 31 + bs.size() * 7 + as.back()));
  Tensor a = randomTensor(rng, dt, as), b = randomTensor(rng, dt, bs);
  SCOPED_TRACE(mlcc::test::shapeText(as) + " x " + mlcc::test::shapeText(bs));
  expectLegalizeMatchesKernel("matmul", {a, b}, {}, dt == DType::f32 ? f32Tol() : f16Tol());
}

}  // namespace

TEST(LegalizeLinalg, EveryOpHasALegalization) { expectEveryOpHasALegalization({"matmul", "dense"}); }

TEST(LegalizeLinalg, Matmul2D) {
  checkMatmul({3, 5}, {5, 4});
  checkMatmul({1, 7}, {7, 1});
}

TEST(LegalizeLinalg, MatmulOneDimensionalOperands) {
  checkMatmul({5}, {5, 3});     // vector x matrix -> [3]
  checkMatmul({4, 5}, {5});     // matrix x vector -> [4]
  checkMatmul({6}, {6});        // dot -> scalar
  checkMatmul({2, 3, 5}, {5});  // batched matrix x vector -> [2, 3]
  checkMatmul({5}, {2, 5, 3});  // vector x batched matrix -> [2, 3]
}

TEST(LegalizeLinalg, MatmulBatchedAndBroadcast) {
  checkMatmul({2, 3, 4}, {2, 4, 5});     // same batch (also symbolic)
  checkMatmul({2, 3, 4}, {4, 5});        // b broadcast over the batch
  checkMatmul({3, 4}, {2, 4, 5});        // a broadcast
  checkMatmul({2, 1, 3, 4}, {3, 4, 2});  // [2, 1] vs [3] -> [2, 3]
  checkMatmul({1, 3, 4}, {2, 4, 2});     // batch 1 against 2
}

TEST(LegalizeLinalg, MatmulDTypes) {
  checkMatmul({2, 3, 4}, {2, 4, 3}, DType::f16);
  checkMatmul({3, 8}, {8, 2}, DType::bf16);
  checkMatmul({2, 3, 4}, {4, 5}, DType::i32);
  checkMatmul({3, 6}, {6, 2}, DType::i64);
  // i8 wraps exactly as the kernel's int64 accumulation truncated to i8.
  std::mt19937 rng(5);
  Tensor a = randomTensor(rng, DType::i8, {3, 16}, -100, 100),
         b = randomTensor(rng, DType::i8, {16, 2}, -100, 100);
  expectLegalizeMatchesKernel("matmul", {a, b}, {});
}

TEST(LegalizeLinalg, MatmulBlockIsNamedAfterTheOp) {
  auto f = mlcc::ops::legalizeOp("matmul",
                                 {Type::tensor(DType::f32, std::vector<int64_t>{3, 5}),
                                  Type::tensor(DType::f32, std::vector<int64_t>{5, 4})},
                                 {}, "mm");
  std::string text = mlcc::ir::printFunction(f);
  EXPECT_NE(text.find("block \"matmul\""), std::string::npos) << text;
  EXPECT_NE(text.find("reduce(5"), std::string::npos) << text;
}

TEST(LegalizeLinalg, Dense) {
  std::mt19937 rng(11);
  auto tol = f32Tol();
  expectLegalizeMatchesKernel(
      "dense", {randomTensor(rng, DType::f32, {4, 6}), randomTensor(rng, DType::f32, {3, 6})}, {}, tol);
  expectLegalizeMatchesKernel(
      "dense", {randomTensor(rng, DType::f32, {2, 3, 6}), randomTensor(rng, DType::f32, {5, 6})}, {}, tol);
  expectLegalizeMatchesKernel(
      "dense", {randomTensor(rng, DType::f32, {6}), randomTensor(rng, DType::f32, {5, 6})}, {}, tol);
  expectLegalizeMatchesKernel(
      "dense", {randomTensor(rng, DType::f16, {3, 8}), randomTensor(rng, DType::f16, {2, 8})}, {}, f16Tol());
  expectLegalizeMatchesKernel(
      "dense", {randomTensor(rng, DType::i32, {3, 4}), randomTensor(rng, DType::i32, {5, 4})}, {});
}
