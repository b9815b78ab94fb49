// f64 through the op registry: the reference kernels against numpy in
// float64 (with tolerances that only double arithmetic meets: f32 would be
// off by ~1e-7), the legalized loop nests against the kernels, and the ops
// that still refuse f64 with a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "legalize_check.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

constexpr double kTol = 1e-13;

Tensor f64(std::mt19937& rng, std::vector<int64_t> shape, double lo = -3, double hi = 3) {
  return randomTensor(rng, DType::f64, std::move(shape), lo, hi);
}

// Unary ops with the numpy function and the input range.
struct Unary {
  const char* op;
  const char* numpy;
  double lo, hi;
};
const Unary kUnary[] = {
    {"exp", "np.exp(a)", -30, 30},
    {"log", "np.log(a)", 1e-3, 1e3},
    {"sqrt", "np.sqrt(a)", 0, 100},
    {"rsqrt", "1 / np.sqrt(a)", 0.1, 100},
    {"tanh", "np.tanh(a)", -5, 5},
    {"sigmoid", "1 / (1 + np.exp(-a))", -20, 20},
    {"silu", "a / (1 + np.exp(-a))", -20, 20},
    {"softplus", "np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))", -30, 30},
    {"softsign", "a / (1 + np.abs(a))", -5, 5},
    {"sin", "np.sin(a)", -7, 7},
    {"atanh", "np.arctanh(a)", -0.99, 0.99},
    {"erf", "np.array([math.erf(v) for v in a.ravel()]).reshape(a.shape)", -3, 3},
    {"floor", "np.floor(a)", -9, 9},
    {"round", "np.round(a)", -9, 9},
    {"reciprocal", "1 / a", 0.1, 5},
    {"abs", "np.abs(a)", -3, 3},
    {"negative", "-a", -3, 3},
    {"relu", "np.maximum(a, 0)", -3, 3},
    {"sign", "np.sign(a)", -3, 3},
};

TEST(Float64, KernelsMatchNumpy) {
  if (std::string why = pythonNumpyUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(64);
  std::vector<RefCase> cases;
  for (const Unary& u : kUnary)
    cases.push_back(
        RefCase{u.op, {f64(rng, {4, 33}, u.lo, u.hi)}, {}, std::string("lambda a: ") + u.numpy, kTol, kTol});
  const std::pair<const char*, const char*> binary[] = {{"add", "a + b"},
                                                        {"subtract", "a - b"},
                                                        {"multiply", "a * b"},
                                                        {"divide", "a / b"},
                                                        {"maximum", "np.maximum(a, b)"},
                                                        {"minimum", "np.minimum(a, b)"},
                                                        {"power", "np.abs(a) ** b"},
                                                        {"mod", "np.mod(a, b)"}};
  for (const auto& [op, expr] : binary) {
    Tensor a = f64(rng, {4, 33}), b = f64(rng, {33}, 0.5, 3);
    if (std::string(op) == "power") a = f64(rng, {4, 33}, 0.1, 3);
    cases.push_back(RefCase{op, {a, b}, {}, std::string("lambda a, b: ") + expr, kTol, kTol});
  }
  cases.push_back(RefCase{"mod",
                          {f64(rng, {40}), f64(rng, {40}, 0.5, 3)},
                          {{"fmod", AttrValue(true)}},
                          "lambda a, b: np.fmod(a, b)",
                          kTol,
                          kTol,
                          "fmod"});
  cases.push_back(RefCase{"less", {f64(rng, {40}), f64(rng, {40})}, {}, "lambda a, b: a < b"});
  for (const char* red : {"sum", "mean", "max", "min", "prod"})
    cases.push_back(RefCase{red,
                            {f64(rng, {5, 200}, 0.9, 1.1)},
                            {{"axes", AttrValue::ints({1})}, {"keepdims", AttrValue(false)}},
                            std::string("lambda a: np.") + red + "(a, axis=1)",
                            kTol,
                            kTol});
  cases.push_back(RefCase{
      "argmax", {f64(rng, {5, 7})}, {{"axis", AttrValue(int64_t{1})}}, "lambda a: np.argmax(a, axis=1)"});
  cases.push_back(RefCase{"clip",
                          {f64(rng, {40})},
                          {{"min", AttrValue(-0.1)}, {"max", AttrValue(0.3)}},
                          "lambda a: np.clip(a, -0.1, 0.3)",
                          0,
                          0});
  // Casts: f64 <-> f32, f16, i64 (truncating), bool; exact.
  Tensor x = f64(rng, {40}, -1e5, 1e5);
  for (const char* to : {"f32", "f16", "i64", "i32", "bool"}) {
    const std::string np = std::string(to) == "bool"  ? "np.bool_"
                           : std::string(to) == "f16" ? "np.float16"
                           : std::string(to) == "f32" ? "np.float32"
                           : std::string(to) == "i32" ? "np.int32"
                                                      : "np.int64";
    cases.push_back(
        RefCase{"cast", {x}, {{"dtype", AttrValue(to)}}, "lambda a: a.astype(" + np + ")", 0, 0, to});
  }
  cases.push_back(RefCase{"cast",
                          {randomTensor(rng, DType::f32, {40})},
                          {{"dtype", AttrValue("f64")}},
                          "lambda a: a.astype(np.float64)",
                          0,
                          0,
                          "from f32"});
  Tensor big = Tensor::zeros(DType::i64, {3});
  big.mutableData<int64_t>()[0] = (int64_t{1} << 53) + 1;  // rounds to even in double
  big.mutableData<int64_t>()[1] = -3;
  big.mutableData<int64_t>()[2] = INT64_MAX;
  cases.push_back(RefCase{
      "cast", {big}, {{"dtype", AttrValue("f64")}}, "lambda a: a.astype(np.float64)", 0, 0, "from i64"});
  // Data movement.
  cases.push_back(RefCase{"permute_dims",
                          {f64(rng, {2, 3, 4})},
                          {{"axes", AttrValue::ints({2, 0, 1})}},
                          "lambda a: a.transpose(2, 0, 1)",
                          0,
                          0});
  cases.push_back(RefCase{"concat",
                          {f64(rng, {2, 3}), f64(rng, {4, 3})},
                          {{"axis", AttrValue(int64_t{0})}},
                          "lambda a, b: np.concatenate([a, b], axis=0)",
                          0,
                          0});
  // matmul and dense in double (values 1 + tiny: f32 would round them away).
  cases.push_back(RefCase{"matmul",
                          {f64(rng, {2, 3, 40}, 1, 1 + 1e-9), f64(rng, {40, 5}, 1, 1 + 1e-9)},
                          {},
                          "lambda a, b: a @ b",
                          kTol,
                          kTol});
  cases.push_back(
      RefCase{"dense", {f64(rng, {3, 40}), f64(rng, {7, 40})}, {}, "lambda a, b: a @ b.T", kTol, kTol});
  EXPECT_GT(runRefCases(cases, {.same_dtype = true}), 0);
}

TEST(Float64, LegalizationsMatchKernels) {
  std::mt19937 rng(65);
  const LegalizeCheckOptions exact{.rtol = 1e-15, .atol = 1e-300};
  for (const Unary& u : kUnary) {
    SCOPED_TRACE(u.op);
    expectLegalizeMatchesKernel(u.op, {f64(rng, {3, 17}, u.lo, u.hi)}, {}, exact);
  }
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const Tensor specials =
      Tensor::fromValues(DType::f64, {8}, {nan, inf, -inf, 0.0, -0.0, 2.5, -1e300, 1e-310});
  for (const char* op :
       {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod", "equal", "less"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {f64(rng, {3, 8}), f64(rng, {8}, 0.5, 3)}, {}, exact);
    expectLegalizeMatchesKernel(
        op, {specials, Tensor::fromValues(DType::f64, {8}, {1, 2, nan, -3, inf, 0.5, 7, -2})}, {}, exact);
  }
  const Attrs axes = {{"axes", AttrValue::ints({1})}, {"keepdims", AttrValue(true)}};
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) {
    SCOPED_TRACE(op);
    expectLegalizeMatchesKernel(op, {f64(rng, {4, 50}, 0.9, 1.1)}, axes, {.rtol = 1e-14, .atol = 1e-300});
  }
  for (const char* to : {"f32", "f16", "bf16", "i8", "i64", "bool"}) {
    SCOPED_TRACE(to);
    expectLegalizeMatchesKernel("cast", {specials}, {{"dtype", AttrValue(to)}}, exact);
  }
  expectLegalizeMatchesKernel("clip", {specials}, {{"min", AttrValue(-1.0)}, {"max", AttrValue(3.0)}}, exact);
  expectLegalizeMatchesKernel("isnan", {specials}, {}, exact);
  expectLegalizeMatchesKernel("argmin", {f64(rng, {4, 9})}, {{"axis", AttrValue(int64_t{1})}}, exact);
  expectLegalizeMatchesKernel("matmul", {f64(rng, {2, 3, 40}), f64(rng, {40, 5})}, {}, exact);
  expectLegalizeMatchesKernel("dense", {f64(rng, {3, 40}), f64(rng, {7, 40})}, {}, exact);
}

// An op whose kernel or loop nest computes in f32 refuses f64 rather than
// silently losing precision.
TEST(Float64, UnsupportedOpsRefuse) {
  const Type v = Type::tensor(DType::f64, std::vector<int64_t>{2, 4});
  const Type img = Type::tensor(DType::f64, std::vector<int64_t>{1, 2, 4, 4});
  EXPECT_EQ(inferError("gelu", {v}), "op 'gelu' does not support f64 yet");
  EXPECT_EQ(inferError("softmax", {v}, {{"axis", AttrValue(int64_t{-1})}}),
            "op 'softmax' does not support f64 yet");
  EXPECT_EQ(inferError("conv2d", {img, img}), "op 'conv2d' does not support f64 yet");
  expectOpError([&] { mlcc::ops::computeOp("gelu", {Tensor::zeros(DType::f64, {2})}, {}); },
                "op 'gelu' does not support f64 yet");
  expectOpError([&] { mlcc::ops::legalizeOp("gelu", {v}, {}, "f"); }, "op 'gelu' does not support f64 yet");
}

}  // namespace
