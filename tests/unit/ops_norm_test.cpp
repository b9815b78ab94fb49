// Normalization ops of the registry: softmax, log_softmax, layer_norm and
// batch_norm against numpy/torch, type inference with symbolic dims, FLOP
// counts and errors.
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

const char* kSoftmaxPy =
    "lambda axis, log: (lambda a: (lambda d: d - np.log(np.exp(d).sum(axis=axis, keepdims=True)) if log "
    "else np.exp(d) / np.exp(d).sum(axis=axis, keepdims=True))(a.astype(np.float64) - "
    "a.astype(np.float64).max(axis=axis, keepdims=True)))";

TEST(OpsNorm, MatchesNumpy) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(4242);
  std::vector<RefCase> cases;
  for (const char* op : {"softmax", "log_softmax"}) {
    std::string log = std::string(op) == "log_softmax" ? "True" : "False";
    for (int64_t axis : {-1, 0, 1, 2}) {
      cases.push_back(RefCase{op,
                              {randomTensor(rng, DType::f32, {3, 5, 7}, -10, 10)},
                              {{"axis", AttrValue(axis)}},
                              "(" + std::string(kSoftmaxPy) + ")(" + std::to_string(axis) + ", " + log + ")",
                              1e-5,
                              1e-6,
                              "axis " + std::to_string(axis)});
    }
    // Large values: the stable form must not overflow.
    cases.push_back(RefCase{op,
                            {randomTensor(rng, DType::f32, {4, 33}, 500, 1000)},
                            {},
                            "(" + std::string(kSoftmaxPy) + ")(-1, " + log + ")",
                            1e-5,
                            1e-6,
                            "large"});
    cases.push_back(
        RefCase{op,
                {randomTensor(rng, DType::f16, {4, 9})},
                {},
                "lambda a: (" + std::string(kSoftmaxPy) + ")(-1, " + log + ")(a).astype(np.float16)",
                2e-3,
                2e-3,
                "f16"});
  }
  cases.push_back(RefCase{"softmax",
                          {randomTensor(rng, DType::f32, {2, 6})},
                          {},
                          "lambda a: torch.softmax(torch.from_numpy(a), -1).numpy()",
                          1e-5,
                          1e-6,
                          "torch"});
  cases.push_back(RefCase{"log_softmax",
                          {randomTensor(rng, DType::f32, {6, 2})},
                          {{"axis", AttrValue(int64_t{0})}},
                          "lambda a: torch.log_softmax(torch.from_numpy(a), 0).numpy()",
                          1e-5,
                          1e-5,
                          "torch"});

  // layer_norm over axis..end.
  const char* ln =
      "lambda axis, eps: (lambda a, g, b: ((a.astype(np.float64) - a.astype(np.float64).mean("
      "axis=tuple(range(axis % a.ndim, a.ndim)), keepdims=True)) / np.sqrt(a.astype(np.float64).var("
      "axis=tuple(range(axis % a.ndim, a.ndim)), keepdims=True) + eps)) * g + b)";
  for (auto [axis, eps] :
       std::vector<std::pair<int64_t, double>>{{-1, 1e-5}, {1, 1e-5}, {2, 1e-3}, {-2, 0.1}}) {
    std::vector<int64_t> shape = {2, 3, 8};
    std::vector<int64_t> gshape(shape.begin() + (axis < 0 ? axis + 3 : axis), shape.end());
    mlcc::ir::Attrs attrs = {{"axis", AttrValue(axis)}};
    if (eps != 1e-5) attrs["epsilon"] = AttrValue(eps);
    cases.push_back(
        RefCase{"layer_norm",
                {randomTensor(rng, DType::f32, shape, -2, 4), randomTensor(rng, DType::f32, gshape),
                 randomTensor(rng, DType::f32, gshape)},
                attrs,
                "(" + std::string(ln) + ")(" + std::to_string(axis) + ", " + std::to_string(eps) + ")",
                1e-4,
                1e-5,
                "axis " + std::to_string(axis)});
  }
  cases.push_back(RefCase{"layer_norm",
                          {randomTensor(rng, DType::f32, {4, 16}), randomTensor(rng, DType::f32, {16}),
                           randomTensor(rng, DType::f32, {16})},
                          {},
                          "lambda a, g, b: torch.nn.functional.layer_norm(torch.from_numpy(a), (16,), "
                          "torch.from_numpy(g), torch.from_numpy(b)).numpy()",
                          1e-4,
                          1e-5,
                          "torch"});

  // batch_norm, inference mode.
  const char* bn =
      "lambda axis, eps: (lambda x, g, b, m, v: (lambda sh: (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) "
      "+ eps) * g.reshape(sh) + b.reshape(sh))([-1 if i == axis % x.ndim else 1 for i in "
      "range(x.ndim)]))";
  for (auto [shape, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{2, 3, 4, 5}, 1}, {{2, 6}, 1}, {{4, 3, 5}, -1}, {{3, 2, 2}, 0}}) {
    int64_t c = shape[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis)];
    mlcc::ir::Attrs attrs;
    if (axis != 1) attrs["axis"] = AttrValue(axis);
    cases.push_back(RefCase{"batch_norm",
                            {randomTensor(rng, DType::f32, shape), randomTensor(rng, DType::f32, {c}),
                             randomTensor(rng, DType::f32, {c}), randomTensor(rng, DType::f32, {c}),
                             randomTensor(rng, DType::f32, {c}, 0.1, 2)},
                            attrs,
                            "(" + std::string(bn) + ")(" + std::to_string(axis) + ", 1e-5)",
                            1e-5,
                            1e-5,
                            "axis " + std::to_string(axis)});
  }
  cases.push_back(
      RefCase{"batch_norm",
              {randomTensor(rng, DType::f32, {2, 3, 4, 4}), randomTensor(rng, DType::f32, {3}),
               randomTensor(rng, DType::f32, {3}), randomTensor(rng, DType::f32, {3}),
               randomTensor(rng, DType::f32, {3}, 0.1, 2)},
              {{"epsilon", AttrValue(1e-3)}},
              "lambda x, g, b, m, v: torch.nn.functional.batch_norm(torch.from_numpy(x), "
              "torch.from_numpy(m), torch.from_numpy(v), torch.from_numpy(g), torch.from_numpy(b), "
              "False, 0.1, 1e-3).numpy()",
              1e-5,
              1e-5,
              "torch"});

  int compared = mlcc::test::runRefCases(cases);
  EXPECT_GT(compared, 15);
}

TEST(OpsNorm, InferSymbolic) {
  auto n = mlcc::ir::makeVar("n");
  using mlcc::ops::dimConst;
  Type x = Type::tensor(DType::f32, {n, dimConst(10)});
  EXPECT_EQ(inferred("softmax", {x}), "f32[n, 10]");
  EXPECT_EQ(inferred("log_softmax", {x}, {{"axis", AttrValue(int64_t{0})}}), "f32[n, 10]");
  Type v = Type::tensor(DType::f32, std::vector<int64_t>{10});
  EXPECT_EQ(inferred("layer_norm", {x, v, v}), "f32[n, 10]");
  Type xn = Type::tensor(DType::f32, {dimConst(2), n});
  Type vn = Type::tensor(DType::f32, {n});
  EXPECT_EQ(inferred("layer_norm", {xn, vn, vn}), "f32[2, n]");
  Type img = Type::tensor(DType::f16, {n, dimConst(3), dimConst(8), dimConst(8)});
  Type c3 = Type::tensor(DType::f16, std::vector<int64_t>{3});
  EXPECT_EQ(inferred("batch_norm", {img, c3, c3, c3, c3}), "f16[n, 3, 8, 8]");

  for (const char* op : {"softmax", "log_softmax"})
    EXPECT_EQ(mlcc::ops::findOp(op)->pattern, mlcc::ops::OpPattern::Reduction) << op;
  for (const char* op : {"layer_norm", "batch_norm"})
    EXPECT_EQ(mlcc::ops::findOp(op)->pattern, mlcc::ops::OpPattern::Opaque) << op;
  const auto* sm = mlcc::ops::findOp("softmax");
  Type s = Type::tensor(DType::f32, std::vector<int64_t>{4, 10});
  EXPECT_EQ(sm->flops({s}, s, {}), 200);
  auto full = mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("batch_norm"), {});
  EXPECT_EQ(full.at("axis").asInt(), 1);
  EXPECT_EQ(full.at("epsilon").asFloat(), 1e-05);
  EXPECT_EQ(mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("layer_norm"), {}).at("axis").asInt(), -1);
}

TEST(OpsNorm, Errors) {
  using mlcc::test::expectOpError;
  Type f = Type::tensor(DType::f32, std::vector<int64_t>{2, 3});
  Type i = Type::tensor(DType::i32, std::vector<int64_t>{2, 3});
  Type v3 = Type::tensor(DType::f32, std::vector<int64_t>{3});
  Type v2 = Type::tensor(DType::f32, std::vector<int64_t>{2});
  expectOpError([&] { inferred("softmax", {i}); }, "op 'softmax' needs a float operand, not i32");
  expectOpError(
      [&] {
        inferred("softmax", {f}, {{"axis", AttrValue(int64_t{2})}});
      },
      "op 'softmax': axis 2 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("log_softmax", {f}, {{"axis", AttrValue(int64_t{-3})}});
      },
      "op 'log_softmax': axis -3 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("softmax", {f}, {{"axis", AttrValue(1.0)}});
      },
      "op 'softmax': attribute 'axis' must be an int");
  expectOpError(
      [&] {
        inferred("layer_norm", {f, v2, v2});
      },
      "op 'layer_norm': gamma has type f32[2], but must have the shape of x.shape[1:]");
  expectOpError([&] { inferred("layer_norm", {f, v3, v2}); }, "op 'layer_norm': beta has type f32[2]");
  EXPECT_EQ(inferred("layer_norm", {f, f, f}, {{"axis", AttrValue(int64_t{0})}}), "f32[2, 3]");
  expectOpError(
      [&] {
        inferred("layer_norm", {f, Type::tensor(DType::f16, std::vector<int64_t>{3}), v3});
      },
      "op 'layer_norm' needs operands of the same dtype, not f32 and f16");
  expectOpError([&] { inferred("layer_norm", {f, v3}); }, "op 'layer_norm' takes 3 operand(s), not 2");
  expectOpError(
      [&] {
        inferred("batch_norm", {f, v2, v3, v3, v3});
      },
      "op 'batch_norm': gamma has type f32[2], but must be a vector of x.shape[1]");
  expectOpError(
      [&] {
        inferred("batch_norm", {f, v3, v3, v3, v3}, {{"momentum", AttrValue(0.1)}});
      },
      "op 'batch_norm' has no attribute 'momentum' (it takes: axis, epsilon)");
}

}  // namespace
