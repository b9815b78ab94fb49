// The index ops of libs/ops/src/scatter.cpp: the reference kernels on
// hand-computed cases (ONNX's own examples), and each TensorIR compute
// definition, run through the interpreter, against the kernel: every
// reduction, duplicate and negative indices, indices smaller than the data,
// several dtypes, no updates at all, and a symbolic batch.
#include <gtest/gtest.h>

#include <random>

#include "legalize_check.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using mlcc::test::expectLegalizeMatchesKernel;

Tensor values(DType t, std::vector<int64_t> shape, std::vector<double> v) {
  return Tensor::fromValues(t, std::move(shape), v);
}

std::vector<double> all(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
  return v;
}

const char* kReductions[] = {"none", "add", "mul", "max", "min"};

struct LegalizeScatter : ::testing::Test {
  std::mt19937 rng{7};
  Tensor rand(DType t, std::vector<int64_t> shape) { return mlcc::test::randomTensor(rng, t, shape, -3, 3); }
  // Indices uniform in [-dim, dim) (both ends of the axis, negative ones too).
  Tensor indices(DType t, std::vector<int64_t> shape, int64_t dim) {
    return mlcc::test::randomTensor(rng, t, std::move(shape), {0, 0, -dim, dim - 1});
  }
};

TEST_F(LegalizeScatter, AreLegalized) {
  mlcc::test::expectEveryOpHasALegalization({"gather_nd", "scatter_elements", "scatter_nd"});
}

// ONNX's ScatterElements example with axis 1, and a duplicate index under each reduction.
TEST_F(LegalizeScatter, ScatterElementsKernel) {
  Tensor x = values(DType::f32, {1, 5}, {1, 2, 3, 4, 5});
  Tensor idx = values(DType::i64, {1, 2}, {1, 3});
  Tensor upd = values(DType::f32, {1, 2}, {1.1, 2.1});
  auto out = mlcc::ops::computeOp("scatter_elements", {x, idx, upd}, {{"axis", int64_t{1}}});
  EXPECT_EQ(all(out[0]), (std::vector<double>{1, all(upd)[0], 3, all(upd)[1], 5}));
  Tensor dup = values(DType::i64, {1, 2}, {-4, 1});  // both name element 1
  const std::vector<std::pair<const char*, double>> want = {
      {"none", 2.1f}, {"add", 2 + 1.1f + 2.1f}, {"mul", 2 * 1.1f * 2.1f}, {"max", 2.1f}, {"min", 1.1f}};
  for (const auto& [reduction, v] : want) {
    out = mlcc::ops::computeOp("scatter_elements", {x, dup, upd},
                               {{"axis", int64_t{1}}, {"reduction", reduction}});
    EXPECT_NEAR(out[0].at(1), v, 1e-5) << reduction;
    EXPECT_EQ(out[0].at(0), 1) << reduction;
  }
}

// ONNX's ScatterND example: whole slices replaced.
TEST_F(LegalizeScatter, ScatterNdKernel) {
  std::vector<double> xv(4 * 2 * 2);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<double>(i);
  Tensor x = values(DType::f32, {4, 2, 2}, xv);
  Tensor idx = values(DType::i64, {2, 1}, {0, 2});
  Tensor upd = values(DType::f32, {2, 2, 2}, {-1, -2, -3, -4, -5, -6, -7, -8});
  auto out = mlcc::ops::computeOp("scatter_nd", {x, idx, upd}, {});
  EXPECT_EQ(all(out[0]), (std::vector<double>{-1, -2, -3, -4, 4, 5, 6, 7, -5, -6, -7, -8, 12, 13, 14, 15}));
}

// ONNX's GatherND examples, with batch_dims 0 and 1.
TEST_F(LegalizeScatter, GatherNdKernel) {
  Tensor x = values(DType::i32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto out = mlcc::ops::computeOp("gather_nd", {x, values(DType::i64, {2, 1, 2}, {0, 1, 1, 0})}, {});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(all(out[0]), (std::vector<double>{2, 3, 4, 5}));
  out = mlcc::ops::computeOp("gather_nd", {x, values(DType::i64, {2, 1}, {1, 0})},
                             {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(all(out[0]), (std::vector<double>{2, 3, 4, 5}));
}

TEST_F(LegalizeScatter, KernelsRejectIndicesOutOfRange) {
  Tensor x = rand(DType::f32, {2, 3});
  EXPECT_THROW(
      mlcc::ops::computeOp("scatter_elements", {x, values(DType::i64, {1, 1}, {3}), rand(DType::f32, {1, 1})},
                           {{"axis", int64_t{1}}}),
      mlcc::Error);
  EXPECT_THROW(
      mlcc::ops::computeOp("scatter_nd", {x, values(DType::i64, {1, 1}, {-3}), rand(DType::f32, {1, 3})}, {}),
      mlcc::Error);
  EXPECT_THROW(mlcc::ops::computeOp("gather_nd", {x, values(DType::i64, {1, 2}, {0, 3})}, {}), mlcc::Error);
}

TEST_F(LegalizeScatter, TypeErrors) {
  auto t = [](DType d, std::vector<int64_t> s) { return Type::tensor(d, s); };
  EXPECT_THROW(
      mlcc::ops::inferOpType("scatter_elements",
                             {t(DType::f32, {2, 3}), t(DType::f32, {2, 3}), t(DType::f32, {2, 3})}, {}),
      mlcc::Error);  // float indices
  EXPECT_THROW(mlcc::ops::inferOpType("scatter_elements",
                                      {t(DType::f32, {2, 3}), t(DType::i64, {3, 3}), t(DType::f32, {3, 3})},
                                      {{"axis", int64_t{1}}}),
               mlcc::Error);  // indices beyond the data off the axis
  EXPECT_THROW(mlcc::ops::inferOpType(
                   "scatter_nd", {t(DType::f32, {2, 3}), t(DType::i64, {4, 1}), t(DType::f32, {4, 2})}, {}),
               mlcc::Error);  // updates of the wrong shape
  EXPECT_THROW(mlcc::ops::inferOpType("scatter_nd",
                                      {t(DType::f32, {2, 3}), t(DType::i64, {4, 3}), t(DType::f32, {4})}, {}),
               mlcc::Error);  // depth beyond the rank
  EXPECT_THROW(mlcc::ops::inferOpType("scatter_nd",
                                      {t(DType::boolean, {2}), t(DType::i64, {1, 1}), t(DType::boolean, {1})},
                                      {{"reduction", "add"}}),
               mlcc::Error);  // arithmetic on bool
  EXPECT_THROW(
      mlcc::ops::inferOpType("scatter_nd", {t(DType::f32, {2}), t(DType::i64, {1, 1}), t(DType::f32, {1})},
                             {{"reduction", "sub"}}),
      mlcc::Error);
  EXPECT_THROW(mlcc::ops::inferOpType("gather_nd", {t(DType::f32, {2, 3}), t(DType::i64, {3, 1})},
                                      {{"batch_dims", int64_t{1}}}),
               mlcc::Error);  // batch dimensions differ
}

TEST_F(LegalizeScatter, ScatterElementsEveryReductionAndAxis) {
  for (const char* reduction : kReductions)
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(reduction) + " axis " + std::to_string(axis));
      const int64_t dim = axis == 0 ? 4 : 5;
      // Indices smaller than the data off the axis, 6 updates along it (duplicates certain).
      std::vector<int64_t> ishape = axis == 0 ? std::vector<int64_t>{6, 3} : std::vector<int64_t>{3, 6};
      expectLegalizeMatchesKernel(
          "scatter_elements",
          {rand(DType::f32, {4, 5}), indices(DType::i64, ishape, dim), rand(DType::f32, ishape)},
          {{"axis", axis}, {"reduction", reduction}});
    }
}

TEST_F(LegalizeScatter, ScatterElementsDtypes) {
  for (DType t : {DType::i32, DType::i64, DType::f16, DType::i8})
    for (const char* reduction : {"none", "add", "max"}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + reduction);
      expectLegalizeMatchesKernel(
          "scatter_elements", {rand(t, {3, 4, 2}), indices(DType::i32, {3, 2, 2}, 4), rand(t, {3, 2, 2})},
          {{"axis", int64_t{1}}, {"reduction", reduction}}, mlcc::test::kHalfAccumulationOptions);
    }
  Tensor b = mlcc::test::randomTensor(rng, DType::boolean, {2, 3}, 0, 1);
  Tensor bu = mlcc::test::randomTensor(rng, DType::boolean, {2, 2}, 0, 1);
  expectLegalizeMatchesKernel("scatter_elements", {b, indices(DType::i64, {2, 2}, 3), bu},
                              {{"axis", int64_t{1}}});
}

TEST_F(LegalizeScatter, ScatterNdEveryReductionAndDepth) {
  for (const char* reduction : kReductions)
    for (int64_t q : {1, 2, 3}) {
      SCOPED_TRACE(std::string(reduction) + " depth " + std::to_string(q));
      std::vector<int64_t> xshape{3, 4, 5};
      // Index tuples [2, 3, q]: 6 updates of the data's dimensions past q.
      std::vector<double> iv;
      std::uniform_int_distribution<int64_t> pick(0, 1 << 20);
      for (int k = 0; k < 6; ++k)
        for (int64_t j = 0; j < q; ++j) {
          int64_t d = xshape[static_cast<size_t>(j)];
          iv.push_back(static_cast<double>(pick(rng) % (2 * d) - d));
        }
      std::vector<int64_t> ushape{2, 3};
      ushape.insert(ushape.end(), xshape.begin() + q, xshape.end());
      expectLegalizeMatchesKernel(
          "scatter_nd",
          {rand(DType::f32, xshape), values(DType::i64, {2, 3, q}, iv), rand(DType::f32, ushape)},
          {{"reduction", reduction}});
    }
}

TEST_F(LegalizeScatter, NothingToScatterIsACopy) {
  expectLegalizeMatchesKernel(
      "scatter_nd",
      {rand(DType::f32, {3, 2}), Tensor::zeros(DType::i64, {0, 1}), Tensor::zeros(DType::f32, {0, 2})},
      {{"reduction", "add"}});
  expectLegalizeMatchesKernel(
      "scatter_elements",
      {rand(DType::f32, {3, 2}), Tensor::zeros(DType::i64, {3, 0}), Tensor::zeros(DType::f32, {3, 0})},
      {{"axis", int64_t{1}}});
}

TEST_F(LegalizeScatter, SymbolicBatch) {
  // Every operand shares the first dimension: checked with it symbolic too.
  expectLegalizeMatchesKernel(
      "scatter_elements",
      {rand(DType::f32, {3, 6}), indices(DType::i64, {3, 2}, 6), rand(DType::f32, {3, 2})},
      {{"axis", int64_t{1}}, {"reduction", "add"}});
  expectLegalizeMatchesKernel("gather_nd", {rand(DType::f32, {3, 4, 5}), indices(DType::i64, {3, 2, 1}, 4)},
                              {{"batch_dims", int64_t{1}}});
}

TEST_F(LegalizeScatter, GatherNdDepthsAndBatches) {
  for (int64_t b : {0, 1, 2})
    for (int64_t q = 1; b + q <= 4; ++q) {
      SCOPED_TRACE("batch_dims " + std::to_string(b) + " depth " + std::to_string(q));
      std::vector<int64_t> xshape{2, 3, 4, 5};
      std::vector<int64_t> ishape(xshape.begin(), xshape.begin() + b);
      ishape.push_back(2);
      ishape.push_back(q);
      // One index range for every coordinate: the smallest extent indexed.
      int64_t dim = 5;
      for (int64_t j = 0; j < q; ++j) dim = std::min(dim, xshape[static_cast<size_t>(b + j)]);
      for (DType t : {DType::f32, DType::i64})
        expectLegalizeMatchesKernel("gather_nd", {rand(t, xshape), indices(DType::i32, ishape, dim)},
                                    {{"batch_dims", b}});
    }
}

}  // namespace
