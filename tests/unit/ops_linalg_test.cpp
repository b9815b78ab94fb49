// The linalg ops (matmul, dense): type inference with symbolic dims, error
// messages, FLOP counts, and reference kernels against numpy.matmul on
// seeded random inputs (all cases in one python run).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

// Floats in [-1, 1), integers in [-5, 5].
const mlcc::test::RandomRange kRange{-1, 1, -5, 5};

TEST(OpsLinalg, Registered) {
  for (const char* name : {"matmul", "dense"}) {
    const auto* def = mlcc::ops::findOp(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->pattern, mlcc::ops::OpPattern::OutEwiseFusable);
    EXPECT_EQ(def->min_inputs, 2);
    EXPECT_EQ(def->max_inputs, 2);
    EXPECT_TRUE(def->attrs.empty());
  }
}

TEST(OpsLinalg, MatmulTypes) {
  auto n = mlcc::ir::makeVar("n");
  EXPECT_EQ(inferred("matmul", {Type::tensor(DType::f32, {n, mlcc::ir::makeInt(784)}),
                                Type::tensor(DType::f32, std::vector<int64_t>{784, 10})}),
            "f32[n, 10]");
  Type out =
      mlcc::ops::inferOpType("matmul",
                             {Type::tensor(DType::f32, {n, mlcc::ir::makeInt(4), mlcc::ir::makeInt(3)}),
                              Type::tensor(DType::f32, std::vector<int64_t>{3, 5})},
                             {});
  EXPECT_EQ(out.shape[0], n);  // the same symbolic variable
  auto t = [](std::vector<int64_t> s, DType d = DType::f32) { return Type::tensor(d, s); };
  EXPECT_EQ(inferred("matmul", {t({3}), t({3})}), "f32[]");
  EXPECT_EQ(inferred("matmul", {t({3}), t({2, 3, 4})}), "f32[2, 4]");
  EXPECT_EQ(inferred("matmul", {t({2, 5, 3}), t({3})}), "f32[2, 5]");
  EXPECT_EQ(inferred("matmul", {t({2, 1, 5, 3}), t({4, 3, 6})}), "f32[2, 4, 5, 6]");
  EXPECT_EQ(inferred("matmul", {t({4, 3}, DType::i32), t({3, 2}, DType::i32)}), "i32[4, 2]");
}

TEST(OpsLinalg, DenseTypes) {
  auto n = mlcc::ir::makeVar("n");
  EXPECT_EQ(inferred("dense", {Type::tensor(DType::f32, {n, mlcc::ir::makeInt(512)}),
                               Type::tensor(DType::f32, std::vector<int64_t>{1000, 512})}),
            "f32[n, 1000]");
  EXPECT_EQ(inferred("dense", {Type::tensor(DType::f16, std::vector<int64_t>{2, 3, 8}),
                               Type::tensor(DType::f16, std::vector<int64_t>{4, 8})}),
            "f16[2, 3, 4]");
}

TEST(OpsLinalg, Errors) {
  auto t = [](std::vector<int64_t> s, DType d = DType::f32) { return Type::tensor(d, s); };
  EXPECT_EQ(inferError("matmul", {t({2, 3}), t({4, 5})}),
            "op 'matmul': a has 3 columns but b has 4 rows (f32[2, 3] x f32[4, 5])");
  EXPECT_EQ(inferError("matmul", {t({2, 3}), t({3, 5}, DType::f16)}),
            "op 'matmul': operands must have the same dtype, not f32 and f16");
  EXPECT_EQ(inferError("matmul", {t({}), t({3})}), "op 'matmul': operands must have rank >= 1, not a scalar");
  EXPECT_NE(inferError("matmul", {t({2, 2, 3}), t({3, 3, 5})}).find("cannot be broadcast"),
            std::string::npos);
  EXPECT_EQ(inferError("matmul", {t({2, 3}, DType::boolean), t({3, 5}, DType::boolean)}),
            "op 'matmul': a must be a numeric tensor, not bool");
  EXPECT_EQ(inferError("dense", {t({2, 3}), t({4, 5})}),
            "op 'dense': x has 3 features but the weight expects 5 (f32[2, 3] x f32[4, 5] transposed)");
  EXPECT_EQ(inferError("dense", {t({2, 3}), t({5})}), "op 'dense': the weight must have rank 2, not f32[5]");
  EXPECT_EQ(inferError("matmul", {t({2, 3})}), "op 'matmul' takes 2 operand(s), not 1");
}

TEST(OpsLinalg, Flops) {
  const auto* mm = mlcc::ops::findOp("matmul");
  auto t = [](std::vector<int64_t> s) { return Type::tensor(DType::f32, s); };
  EXPECT_EQ(mm->flops({t({2, 8, 3}), t({3, 5})}, t({2, 8, 5}), {}), 2 * 2 * 8 * 5 * 3);
  const auto* dense = mlcc::ops::findOp("dense");
  EXPECT_EQ(dense->flops({t({4, 512}), t({1000, 512})}, t({4, 1000}), {}), 2 * 4 * 1000 * 512);
}

TEST(OpsLinalg, IntegerMatmul) {
  Tensor a = Tensor::fromValues(DType::i64, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::fromValues(DType::i64, {3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor c = mlcc::ops::computeOp("matmul", {a, b}, {}).at(0);
  ASSERT_EQ(c.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.data<int64_t>()[0], 58);
  EXPECT_EQ(c.data<int64_t>()[1], 64);
  EXPECT_EQ(c.data<int64_t>()[2], 139);
  EXPECT_EQ(c.data<int64_t>()[3], 154);
}

TEST(OpsLinalg, AgainstNumpy) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(1234);
  auto r = [&](std::vector<int64_t> s, DType d = DType::f32) { return randomTensor(rng, d, s, kRange); };
  std::vector<RefCase> cases;
  auto mm = [&](std::string name, Tensor a, Tensor b) {
    cases.push_back({"matmul", {a, b}, {}, operandExpr("np.matmul(n0, n1)"), 1e-4, 1e-4, name});
  };
  mm("mm_2d", r({7, 13}), r({13, 5}));
  mm("mm_big", r({67, 300}), r({300, 129}));
  mm("mm_vec_vec", r({9}), r({9}));
  mm("mm_vec_mat", r({9}), r({9, 4}));
  mm("mm_mat_vec", r({6, 9}), r({9}));
  mm("mm_vec_batched", r({9}), r({3, 9, 4}));
  mm("mm_batched_vec", r({3, 2, 6, 9}), r({9}));
  mm("mm_batched", r({4, 5, 6}), r({4, 6, 3}));
  mm("mm_bcast", r({2, 1, 5, 6}), r({3, 6, 7}));
  mm("mm_bcast_2d", r({5, 6}), r({3, 6, 7}));
  mm("mm_i32", r({5, 7}, DType::i32), r({7, 3}, DType::i32));
  mm("mm_i64_batched", r({2, 5, 7}, DType::i64), r({7, 3}, DType::i64));
  mm("mm_f16", r({5, 7}, DType::f16), r({7, 3}, DType::f16));
  cases.back().rtol = cases.back().atol = 1e-2;
  auto dense = [&](std::string name, Tensor x, Tensor w) {
    cases.push_back({"dense", {x, w}, {}, operandExpr("np.matmul(n0, n1.T)"), 1e-4, 1e-4, name});
  };
  dense("dense_2d", r({4, 512}), r({100, 512}));
  dense("dense_1d", r({33}), r({17, 33}));
  dense("dense_3d", r({2, 3, 20}), r({9, 20}));
  dense("dense_i32", r({3, 20}, DType::i32), r({9, 20}, DType::i32));
  EXPECT_EQ(mlcc::test::runRefCases(cases, {.same_dtype = true}), static_cast<int>(cases.size()));
}

TEST(OpsLinalg, GemmSpeedInfo) {
  std::mt19937 rng(7);
  Tensor a = randomTensor(rng, DType::f32, {256, 512}, kRange);
  Tensor b = randomTensor(rng, DType::f32, {512, 256}, kRange);
  auto start = std::chrono::steady_clock::now();
  mlcc::ops::computeOp("matmul", {a, b}, {});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[info] matmul 256x512x256 f32: " << ms << " ms (" << 2.0 * 256 * 512 * 256 / (ms * 1e6)
            << " GFLOP/s)\n";
}

}  // namespace
