// Reduction ops of the registry: kernels against numpy (axes sets, negative
// axes, keepdims, dtypes, argmax/argmin with select_last_index), type
// inference with symbolic dims, FLOP counts and errors.
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

std::string pyAxes(const std::vector<int64_t>& axes) {
  std::string s = "(";
  for (int64_t a : axes) s += std::to_string(a) + ",";
  return s + ")";
}

TEST(OpsReduce, MatchesNumpy) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(777);
  std::vector<RefCase> cases;
  const std::vector<std::pair<const char*, const char*>> reds = {
      {"sum", "np.sum"}, {"mean", "np.mean"}, {"max", "np.max"}, {"min", "np.min"}, {"prod", "np.prod"}};
  const std::vector<std::vector<int64_t>> axes_sets = {{},     {0},    {-1},         {1},
                                                       {0, 2}, {1, 3}, {0, 1, 2, 3}, {-3, -2}};
  for (const auto& [op, fn] : reds)
    for (bool keep : {false, true}) {
      for (size_t k = 0; k < axes_sets.size(); ++k) {
        bool all = k == 0;  // absent: all axes
        mlcc::ir::Attrs attrs = {{"keepdims", AttrValue(keep)}};
        if (!all) attrs["axes"] = AttrValue::ints(axes_sets[k]);
        std::string np_axis = all ? "None" : pyAxes(axes_sets[k]);
        double lo = std::string(op) == "prod" ? 0.5 : -3, hi = std::string(op) == "prod" ? 1.5 : 3;
        cases.push_back(RefCase{op,
                                {randomTensor(rng, DType::f32, {3, 4, 5, 6}, lo, hi)},
                                attrs,
                                "lambda a: " + std::string(fn) + "(a.astype(np.float64), axis=" + np_axis +
                                    ", keepdims=" + (keep ? "True" : "False") + ")",
                                1e-5,
                                1e-5,
                                "axes " + np_axis});
      }
    }
  // Larger sums (double accumulation), integer dtypes, f16, size-1 and rank-0 inputs.
  cases.push_back(RefCase{"sum",
                          {randomTensor(rng, DType::f32, {64, 1000})},
                          {{"axes", AttrValue::ints({1})}},
                          "lambda a: a.astype(np.float64).sum(axis=1)",
                          1e-5,
                          1e-4,
                          "large"});
  cases.push_back(RefCase{"mean",
                          {randomTensor(rng, DType::f32, {1000, 16})},
                          {{"axes", AttrValue::ints({0})}},
                          "lambda a: a.astype(np.float64).mean(axis=0)",
                          1e-5,
                          1e-5,
                          "large"});
  for (DType t : {DType::i8, DType::i32, DType::i64}) {
    std::string dt(mlcc::ir::dtypeName(t));
    cases.push_back(RefCase{"sum",
                            {randomTensor(rng, t, {4, 5}, -10, 10)},
                            {{"axes", AttrValue::ints({1})}},
                            "lambda a: a.sum(axis=1).astype(a.dtype)",
                            0,
                            0,
                            dt});
    cases.push_back(RefCase{"max",
                            {randomTensor(rng, t, {4, 5}, -100, 100)},
                            {{"axes", AttrValue::ints({0})}},
                            "lambda a: a.max(axis=0)",
                            0,
                            0,
                            dt});
    cases.push_back(
        RefCase{"min", {randomTensor(rng, t, {4, 5}, -100, 100)}, {}, "lambda a: a.min()", 0, 0, dt});
    cases.push_back(RefCase{"prod",
                            {randomTensor(rng, t, {4, 3}, -3, 3)},
                            {{"axes", AttrValue::ints({1})}},
                            "lambda a: a.prod(axis=1).astype(a.dtype)",
                            0,
                            0,
                            dt});
    cases.push_back(RefCase{"mean",
                            {randomTensor(rng, t, {4, 3}, -20, 20)},
                            {{"axes", AttrValue::ints({1})}},
                            "lambda a: np.trunc(a.sum(axis=1) / 3).astype(a.dtype)",
                            0,
                            0,
                            dt + " truncates"});
  }
  cases.push_back(RefCase{"sum",
                          {randomTensor(rng, DType::f16, {8, 9})},
                          {{"axes", AttrValue::ints({-1})}},
                          "lambda a: a.astype(np.float64).sum(axis=-1).astype(np.float16)",
                          1e-3,
                          1e-3,
                          "f16"});
  cases.push_back(RefCase{"max",
                          {randomTensor(rng, DType::f32, {3, 1, 4})},
                          {{"axes", AttrValue::ints({1})}},
                          "lambda a: a.max(axis=1)",
                          0,
                          0,
                          "size-1 axis"});
  cases.push_back(
      RefCase{"sum", {randomTensor(rng, DType::f32, {})}, {}, "lambda a: a.sum()", 0, 0, "rank 0"});
  cases.push_back(RefCase{"sum",
                          {randomTensor(rng, DType::f32, {3, 0})},
                          {{"axes", AttrValue::ints({1})}},
                          "lambda a: a.sum(axis=1)",
                          0,
                          0,
                          "empty"});
  {
    Tensor x = Tensor::fromValues(DType::f32, {2, 3}, {1, NAN, 2, 3, 4, 5});
    cases.push_back(
        RefCase{"max", {x}, {{"axes", AttrValue::ints({1})}}, "lambda a: a.max(axis=1)", 0, 0, "nan"});
  }

  // argmax / argmin: ties from a small value range, both tie-breaking rules.
  for (const char* op : {"argmax", "argmin"})
    for (int64_t axis : {0, 1, 2, -1})
      for (bool keep : {false, true})
        for (bool last : {false, true})
          for (DType t : {DType::f32, DType::i32}) {
            Tensor x = randomTensor(rng, t, {3, 4, 5}, -2, 2);
            if (t == DType::f32)
              for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::round(x.at(i)));
            std::string ax = std::to_string(axis);
            std::string np_fn = std::string("np.") + op;
            std::string fn = last ? "lambda a: (a.shape[" + ax + "] - 1 - " + np_fn +
                                        "(np.flip(a, axis=" + ax + "), axis=" + ax +
                                        ", keepdims=" + (keep ? "True" : "False") + "))"
                                  : "lambda a: " + np_fn + "(a, axis=" + ax +
                                        ", keepdims=" + (keep ? "True" : "False") + ")";
            cases.push_back(RefCase{op,
                                    {x},
                                    {{"axis", AttrValue(axis)},
                                     {"keepdims", AttrValue(keep)},
                                     {"select_last_index", AttrValue(last)}},
                                    fn,
                                    0,
                                    0,
                                    std::string(mlcc::ir::dtypeName(t))});
          }
  cases.push_back(RefCase{"argmax",
                          {randomTensor(rng, DType::f16, {6, 7})},
                          {},
                          "lambda a: np.argmax(a, axis=0)",
                          0,
                          0,
                          "f16 default axis"});

  // cumsum: every axis, exclusive and reverse, floats and integers.
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64})
    for (int64_t axis : {0, 1, -1})
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          const std::string np_axis = std::to_string(axis);
          const std::string flip = reverse ? "np.flip(a, " + np_axis + ")" : "a";
          std::string fn = "np.cumsum(" + flip + ", axis=" + np_axis + ", dtype=a.dtype)";
          if (exclusive) fn = "(" + fn + " - " + flip + ")";
          if (reverse) fn = "np.flip(" + fn + ", " + np_axis + ")";
          cases.push_back(RefCase{"cumsum",
                                  {randomTensor(rng, t, {3, 5, 4})},
                                  {{"axis", AttrValue(axis)},
                                   {"exclusive", AttrValue(exclusive)},
                                   {"reverse", AttrValue(reverse)}},
                                  "lambda a: " + fn,
                                  1e-5,
                                  1e-5,
                                  std::string(mlcc::ir::dtypeName(t)) + " axis " + np_axis +
                                      (exclusive ? " exclusive" : "") + (reverse ? " reverse" : "")});
        }

  int compared = mlcc::test::runRefCases(cases);
  EXPECT_GT(compared, 150);
}

TEST(OpsReduce, InferSymbolic) {
  auto n = mlcc::ir::makeVar("n");
  using mlcc::ops::dimConst;
  Type x = Type::tensor(DType::f32, {n, dimConst(8), dimConst(4)});
  EXPECT_EQ(inferred("sum", {x}, {{"axes", AttrValue::ints({1})}}), "f32[n, 4]");
  EXPECT_EQ(inferred("mean", {x}, {{"axes", AttrValue::ints({-1, 1})}, {"keepdims", AttrValue(true)}}),
            "f32[n, 1, 1]");
  EXPECT_EQ(inferred("max", {x}), "f32[]");
  EXPECT_EQ(inferred("min", {x}, {{"keepdims", AttrValue(true)}}), "f32[1, 1, 1]");
  EXPECT_EQ(inferred("prod", {x}, {{"axes", AttrValue::ints({0})}}), "f32[8, 4]");
  EXPECT_EQ(inferred("sum", {x}, {{"axes", AttrValue::ints({})}}), "f32[n, 8, 4]");
  EXPECT_EQ(inferred("argmax", {x}, {{"axis", AttrValue(int64_t{-1})}}), "i64[n, 8]");
  EXPECT_EQ(inferred("argmin", {x}, {{"keepdims", AttrValue(true)}}), "i64[1, 8, 4]");
  EXPECT_EQ(inferred("sum", {Type::tensor(DType::i32, {n})}), "i32[]");

  const auto* sum = mlcc::ops::findOp("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->pattern, mlcc::ops::OpPattern::Reduction);
  EXPECT_EQ(mlcc::ops::findOp("argmax")->pattern, mlcc::ops::OpPattern::Reduction);
  Type s = Type::tensor(DType::f32, std::vector<int64_t>{4, 8});
  EXPECT_EQ(sum->flops({s}, Type::tensor(DType::f32, std::vector<int64_t>{4}), {}), 32);
  EXPECT_EQ(sum->flops({x}, Type::tensor(DType::f32, {n}), {}), 32);  // n counts as 1
}

TEST(OpsReduce, Errors) {
  using mlcc::test::expectOpError;
  Type f = Type::tensor(DType::f32, std::vector<int64_t>{2, 3});
  Type b = Type::tensor(DType::boolean, std::vector<int64_t>{2, 3});
  expectOpError([&] { inferred("sum", {b}); }, "op 'sum' needs a numeric operand, not bool");
  expectOpError([&] { inferred("argmax", {b}); }, "op 'argmax' needs a numeric operand, not bool");
  expectOpError([&] { inferred("cumsum", {b}); }, "op 'cumsum' needs a float, i32 or i64 operand, not bool");
  expectOpError(
      [&] {
        inferred("cumsum", {f}, {{"axis", AttrValue(int64_t{2})}});
      },
      "op 'cumsum': axis 2 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("sum", {f}, {{"axes", AttrValue::ints({2})}});
      },
      "op 'sum': axis 2 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("mean", {f}, {{"axes", AttrValue::ints({-3})}});
      },
      "op 'mean': axis -3 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("max", {f}, {{"axes", AttrValue::ints({1, -1})}});
      },
      "op 'max': axis -1 is repeated");
  expectOpError(
      [&] {
        inferred("argmin", {f}, {{"axis", AttrValue(int64_t{2})}});
      },
      "op 'argmin': axis 2 is out of range for rank 2");
  expectOpError(
      [&] {
        inferred("sum", {Type::tensor(DType::f32, std::vector<int64_t>{})}, {{"axes", AttrValue::ints({0})}});
      },
      "op 'sum': axis 0 is out of range for rank 0");
  expectOpError(
      [&] {
        inferred("sum", {f}, {{"axis", AttrValue(int64_t{0})}});
      },
      "op 'sum' has no attribute 'axis' (it takes: axes, keepdims)");
  expectOpError(
      [&] {
        inferred("sum", {f}, {{"axes", AttrValue(int64_t{0})}});
      },
      "op 'sum': attribute 'axes' must be a list of ints");
  expectOpError(
      [&] {
        inferred("argmax", {f}, {{"keepdims", AttrValue(int64_t{1})}});
      },
      "op 'argmax': attribute 'keepdims' must be a bool");
}

}  // namespace
