// Elementwise ops of the registry: reference kernels against numpy/torch
// (unary, broadcasting binary, where, clip, cast; several dtypes and
// attribute variants), type inference with symbolic dims, and errors.
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

struct UnarySpec {
  const char* op;
  const char* fn;
  double lo = -3, hi = 3;
  mlcc::ir::Attrs attrs = {};
};

std::vector<UnarySpec> unarySpecs() {
  return {
      {"relu", "lambda a: np.maximum(a, 0)"},
      {"leaky_relu", "lambda a: np.where(a < 0, np.float32(0.01) * a, a)"},
      {"leaky_relu", "lambda a: np.where(a < 0, np.float32(0.3) * a, a)", -3, 3, {{"alpha", AttrValue(0.3)}}},
      {"elu", "lambda a: torch.nn.functional.elu(torch.from_numpy(a)).numpy()"},
      {"elu",
       "lambda a: torch.nn.functional.elu(torch.from_numpy(a), alpha=0.5).numpy()",
       -3,
       3,
       {{"alpha", AttrValue(0.5)}}},
      {"selu", "lambda a: torch.selu(torch.from_numpy(a)).numpy()"},
      {"selu",
       "lambda a: (2.0 * np.where(a <= 0, 1.5 * np.expm1(a.astype(np.float64)), a)).astype(np.float32)",
       -3,
       3,
       {{"alpha", AttrValue(1.5)}, {"gamma", AttrValue(2.0)}}},
      {"gelu", "lambda a: torch.nn.functional.gelu(torch.from_numpy(a)).numpy()"},
      {"gelu",
       "lambda a: torch.nn.functional.gelu(torch.from_numpy(a), approximate='tanh').numpy()",
       -3,
       3,
       {{"approximate", AttrValue("tanh")}}},
      {"sigmoid", "lambda a: 1 / (1 + np.exp(-a.astype(np.float64)))", -20, 20},
      {"hard_sigmoid", "lambda a: np.clip(0.2 * a.astype(np.float64) + 0.5, 0, 1)", -6, 6},
      {"hard_sigmoid",
       "lambda a: np.clip(0.1 * a.astype(np.float64) + 0.3, 0, 1)",
       -6,
       6,
       {{"alpha", AttrValue(0.1)}, {"beta", AttrValue(0.3)}}},
      {"hard_swish", "lambda a: torch.nn.functional.hardswish(torch.from_numpy(a)).numpy()", -6, 6},
      {"silu", "lambda a: torch.nn.functional.silu(torch.from_numpy(a)).numpy()", -10, 10},
      {"softplus", "lambda a: np.logaddexp(0, a.astype(np.float64))", -30, 30},
      {"softsign", "lambda a: a / (1 + np.abs(a))"},
      {"tanh", "np.tanh"},
      {"exp", "np.exp", -5, 5},
      {"log", "np.log", 0.01, 10},
      {"sqrt", "np.sqrt", 0, 10},
      {"rsqrt", "lambda a: 1 / np.sqrt(a.astype(np.float64))", 0.1, 10},
      {"erf", "lambda a: torch.erf(torch.from_numpy(a)).numpy()"},
      {"sin", "np.sin"},
      {"cos", "np.cos"},
      {"tan", "np.tan", -1.2, 1.2},
      {"asin", "np.arcsin", -0.99, 0.99},
      {"acos", "np.arccos", -0.99, 0.99},
      {"atan", "np.arctan"},
      {"sinh", "np.sinh"},
      {"cosh", "np.cosh"},
      {"asinh", "np.arcsinh"},
      {"acosh", "np.arccosh", 1.01, 5},
      {"atanh", "np.arctanh", -0.99, 0.99},
      {"floor", "np.floor"},
      {"ceil", "np.ceil"},
      {"reciprocal", "lambda a: 1 / a.astype(np.float64)", 0.1, 5},
      {"abs", "np.abs"},
      {"negative", "np.negative"},
      {"sign", "np.sign"},
  };
}

TEST(OpsElementwise, MatchesNumpy) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(1234);
  std::vector<RefCase> cases;
  auto add = [&](std::string op, std::vector<Tensor> in, mlcc::ir::Attrs attrs, std::string fn,
                 double tol = 1e-5, std::string label = "") {
    cases.push_back(RefCase{std::move(op), std::move(in), std::move(attrs), std::move(fn), tol, tol, label});
  };

  // Unary ops on f32, various shapes.
  for (const auto& s : unarySpecs())
    add(s.op, {randomTensor(rng, DType::f32, {3, 17}, s.lo, s.hi)}, s.attrs, s.fn, 1e-5, "f32[3, 17]");
  // Integer variants of the numeric unary ops.
  for (DType t : {DType::i8, DType::i32, DType::i64}) {
    for (const char* op : {"relu", "abs", "negative", "sign"}) {
      std::string fn =
          std::string("lambda a: ") +
          (std::string(op) == "relu" ? "np.maximum(a, 0).astype(a.dtype)" : "np." + std::string(op) + "(a)");
      add(op, {randomTensor(rng, t, {5, 4}, -100, 100)}, {}, fn, 0, std::string(mlcc::ir::dtypeName(t)));
    }
  }
  // round: half to even on exact halves.
  {
    Tensor x = Tensor::fromValues(DType::f32, {10}, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, -0.51, 7.0});
    add("round", {x}, {}, "np.round", 0, "halves");
    add("round", {randomTensor(rng, DType::f32, {64}, -10, 10)}, {}, "np.round");
  }
  // isnan/isinf and nan/inf passing through.
  {
    Tensor x = Tensor::fromValues(DType::f32, {6}, {1.0, NAN, INFINITY, -INFINITY, 0.0, -2.0});
    add("isnan", {x}, {}, "np.isnan", 0);
    add("isinf", {x}, {}, "np.isinf", 0);
    add("relu", {x}, {}, "lambda a: np.maximum(a, 0)", 0, "nan/inf");
    add("sigmoid", {x}, {}, "lambda a: 1 / (1 + np.exp(-a.astype(np.float64)))", 1e-6, "nan/inf");
    Tensor hx = Tensor::fromValues(DType::f16, {6}, {1.0, NAN, INFINITY, -INFINITY, 0.0, -2.0});
    add("isnan", {hx}, {}, "np.isnan", 0, "f16");
  }
  add("logical_not", {randomTensor(rng, DType::boolean, {7, 3})}, {}, "np.logical_not", 0);
  // f16 and bf16 (computed in f32, rounded once).
  add("sigmoid", {randomTensor(rng, DType::f16, {40}, -6, 6)}, {},
      "lambda a: (1 / (1 + np.exp(-a.astype(np.float32)))).astype(np.float16)", 1e-3, "f16");
  add("exp", {randomTensor(rng, DType::bf16, {40}, -3, 3)}, {}, "np.exp", 1e-2, "bf16");
  add("abs", {randomTensor(rng, DType::f16, {2, 0, 3})}, {}, "np.abs", 0, "empty");
  add("tanh", {randomTensor(rng, DType::f32, {})}, {}, "np.tanh", 1e-6, "rank 0");

  // Broadcasting binary ops over several shape pairs.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{4, 5}, {4, 5}}, {{3, 1, 5}, {4, 1}}, {{2, 3, 4}, {}},
      {{}, {6}},        {{1, 7}, {3, 1}},    {{2, 1, 3, 1}, {1, 4, 1, 5}}};
  const std::vector<std::pair<const char*, const char*>> arith = {{"add", "np.add"},
                                                                  {"subtract", "np.subtract"},
                                                                  {"multiply", "np.multiply"},
                                                                  {"divide", "np.divide"},
                                                                  {"maximum", "np.maximum"},
                                                                  {"minimum", "np.minimum"},
                                                                  {"mod", "np.mod"},
                                                                  {"equal", "np.equal"},
                                                                  {"not_equal", "np.not_equal"},
                                                                  {"less", "np.less"},
                                                                  {"less_equal", "np.less_equal"},
                                                                  {"greater", "np.greater"},
                                                                  {"greater_equal", "np.greater_equal"}};
  for (const auto& [sa, sb] : shapes)
    for (const auto& [op, fn] : arith) {
      // Small integer-valued floats make comparisons hit equality.
      Tensor a = randomTensor(rng, DType::i32, sa, -4, 4), b = randomTensor(rng, DType::i32, sb, 1, 4);
      Tensor fa = Tensor::zeros(DType::f32, sa), fb = Tensor::zeros(DType::f32, sb);
      for (int64_t i = 0; i < fa.numel(); ++i) fa.set(i, a.at(i) + (rng() % 2 ? 0.5 : 0));
      for (int64_t i = 0; i < fb.numel(); ++i) fb.set(i, b.at(i) * (rng() % 2 ? 1 : -1));
      add(op, {fa, fb}, {}, fn, 1e-6, "f32 " + mlcc::test::shapeText(sa) + mlcc::test::shapeText(sb));
    }
  add("power", {randomTensor(rng, DType::f32, {3, 4}, 0.1, 3), randomTensor(rng, DType::f32, {4}, -2, 2)}, {},
      "np.power");
  add("add", {randomTensor(rng, DType::f32, {100, 33}), randomTensor(rng, DType::f32, {100, 1})}, {},
      "np.add", 1e-6, "large");
  add("mod", {randomTensor(rng, DType::f32, {30}, -9, 9), randomTensor(rng, DType::f32, {30}, -4, 4)},
      {{"fmod", AttrValue(true)}}, "np.fmod", 1e-5, "fmod");
  add("mod", {randomTensor(rng, DType::f32, {30}, -9, 9), randomTensor(rng, DType::f32, {30}, -4, 4)},
      {{"fmod", AttrValue(false)}}, "np.mod", 1e-5, "python mod");
  // Integer arithmetic.
  for (DType t : {DType::i8, DType::i32, DType::i64}) {
    std::string dt(mlcc::ir::dtypeName(t));
    auto ints = [&](std::vector<int64_t> s, double lo, double hi) { return randomTensor(rng, t, s, lo, hi); };
    auto nonzero = [&](std::vector<int64_t> s) {
      Tensor x = ints(s, 1, 9);
      for (int64_t i = 0; i < x.numel(); ++i)
        if (rng() % 2) x.set(i, -x.at(i));
      return x;
    };
    add("add", {ints({3, 4}, -50, 50), ints({4}, -50, 50)}, {}, "np.add", 0, dt);
    add("subtract", {ints({3, 4}, -50, 50), ints({3, 1}, -50, 50)}, {}, "np.subtract", 0, dt);
    add("multiply", {ints({3, 4}, -10, 10), ints({3, 4}, -10, 10)}, {}, "np.multiply", 0, dt);
    add("divide", {ints({3, 5}, -60, 60), nonzero({5})}, {}, "lambda a, b: (np.trunc(a / b)).astype(a.dtype)",
        0, dt + " trunc");
    add("mod", {ints({3, 5}, -60, 60), nonzero({5})}, {}, "np.mod", 0, dt);
    add("mod", {ints({3, 5}, -60, 60), nonzero({5})}, {{"fmod", AttrValue(true)}}, "np.fmod", 0,
        dt + " fmod");
    add("maximum", {ints({6}, -50, 50), ints({6}, -50, 50)}, {}, "np.maximum", 0, dt);
    add("minimum", {ints({6}, -50, 50), ints({1}, -50, 50)}, {}, "np.minimum", 0, dt);
    add("power", {ints({6}, -3, 3), ints({6}, 0, 4)}, {}, "np.power", 0, dt);
    add("less", {ints({2, 3}, -2, 2), ints({3}, -2, 2)}, {}, "np.less", 0, dt);
    add("equal", {ints({2, 3}, -2, 2), ints({2, 1}, -2, 2)}, {}, "np.equal", 0, dt);
  }
  // The unsigned integers and i16: wrapping at the dtype's width, division
  // and modulo of values near the top of the range (u32: by 4294967295,
  // which a signed kernel takes for -1).
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::i16}) {
    std::string dt(mlcc::ir::dtypeName(t));
    const double top = static_cast<double>(intMax(t)), bottom = static_cast<double>(intMin(t));
    // [top, 1 or -1, top - 1, random...]; as a divisor, top at [2] (top - 1 by top).
    auto edge = [&](std::vector<int64_t> s, bool divisor = false) {
      Tensor x = randomTensor(rng, t, s, bottom, top);
      x.set(0, top);
      x.set(1, isUnsigned(t) ? 1.0 : -1.0);
      x.set(2, divisor ? top : top - 1);
      for (int64_t i = 3; divisor && i < x.numel(); ++i)
        if (x.at(i) == 0) x.set(i, 3);
      return x;
    };
    add("add", {edge({6}), edge({6})}, {}, "np.add", 0, dt + " wraps");
    add("subtract", {edge({6}), edge({6})}, {}, "np.subtract", 0, dt + " wraps");
    add("multiply", {edge({6}), edge({6})}, {}, "np.multiply", 0, dt + " wraps");
    add("divide", {edge({6}), edge({6}, true)}, {},
        "lambda a, b: (np.trunc(a.astype(np.float64) / b)).astype(a.dtype)", 0, dt + " trunc");
    add("mod", {edge({6}), edge({6}, true)}, {}, "np.mod", 0, dt);
    add("maximum", {edge({6}), edge({6})}, {}, "np.maximum", 0, dt);
    add("less", {edge({6}), edge({6})}, {}, "np.less", 0, dt);
  }
  // f16 binary, bool comparisons, logical ops.
  add("add", {randomTensor(rng, DType::f16, {4, 5}), randomTensor(rng, DType::f16, {5})}, {}, "np.add", 1e-3,
      "f16");
  add("multiply", {randomTensor(rng, DType::bf16, {4, 5}), randomTensor(rng, DType::bf16, {5})}, {},
      "lambda a, b: a * b", 1e-2, "bf16");
  add("equal", {randomTensor(rng, DType::boolean, {4, 5}), randomTensor(rng, DType::boolean, {5})}, {},
      "np.equal", 0, "bool");
  for (const char* op : {"logical_and", "logical_or", "logical_xor"})
    add(op, {randomTensor(rng, DType::boolean, {3, 1, 4}), randomTensor(rng, DType::boolean, {5, 1})}, {},
        std::string("np.") + op, 0);

  // where, with all three operands broadcasting.
  for (DType t : {DType::f32, DType::i64, DType::f16, DType::i8, DType::boolean})
    add("where",
        {randomTensor(rng, DType::boolean, {3, 1}), randomTensor(rng, t, {1, 4}, -9, 9),
         randomTensor(rng, t, {2, 3, 4}, -9, 9)},
        {}, "np.where", 0, std::string(mlcc::ir::dtypeName(t)));

  // clip: both bounds, one, none; floats and ints.
  add("clip", {randomTensor(rng, DType::f32, {20})}, {{"min", AttrValue(-1.0)}, {"max", AttrValue(1.5)}},
      "lambda a: np.clip(a, -1.0, 1.5)");
  add("clip", {randomTensor(rng, DType::f32, {20})}, {{"min", AttrValue(0.0)}},
      "lambda a: np.clip(a, 0.0, None)");
  add("clip", {randomTensor(rng, DType::f32, {20})}, {{"max", AttrValue(int64_t{1})}},
      "lambda a: np.clip(a, None, 1)");
  add("clip", {randomTensor(rng, DType::f32, {20})}, {}, "lambda a: a");
  add("clip", {randomTensor(rng, DType::i32, {20}, -20, 20)},
      {{"min", AttrValue(-5.0)}, {"max", AttrValue(7.0)}}, "lambda a: np.clip(a, -5, 7)", 0, "i32");
  add("clip", {randomTensor(rng, DType::f16, {20})}, {{"min", AttrValue(-0.5)}, {"max", AttrValue(0.5)}},
      "lambda a: np.clip(a, np.float16(-0.5), np.float16(0.5))", 0, "f16");

  // cast between every pair we can express in numpy (bf16 through torch).
  Tensor cf = randomTensor(rng, DType::f32, {30}, -100, 100);
  cf.set(0, 0.0);
  cf.set(1, -0.7);
  cf.set(2, 2.9);
  for (const char* to : {"f32", "f16", "i8", "i32", "i64", "bool"}) {
    std::string np_to = std::string(to) == "f32"   ? "np.float32"
                        : std::string(to) == "f16" ? "np.float16"
                        : std::string(to) == "i8"  ? "np.int8"
                        : std::string(to) == "i32" ? "np.int32"
                        : std::string(to) == "i64" ? "np.int64"
                                                   : "np.bool_";
    add("cast", {cf}, {{"dtype", AttrValue(to)}}, "lambda a: a.astype(" + np_to + ")", 0,
        std::string("f32 -> ") + to);
  }
  add("cast", {cf}, {{"dtype", AttrValue("bf16")}},
      "lambda a: torch.from_numpy(a).to(torch.bfloat16).to(torch.float32).numpy()", 0, "f32 -> bf16");
  add("cast", {randomTensor(rng, DType::i64, {20}, -1000, 1000)}, {{"dtype", AttrValue("f32")}},
      "lambda a: a.astype(np.float32)", 0, "i64 -> f32");
  add("cast", {randomTensor(rng, DType::i32, {20}, -1000, 1000)}, {{"dtype", AttrValue("i8")}},
      "lambda a: a.astype(np.int8)", 0, "i32 -> i8 wraps");
  add("cast", {randomTensor(rng, DType::boolean, {20})}, {{"dtype", AttrValue("f32")}},
      "lambda a: a.astype(np.float32)", 0, "bool -> f32");
  add("cast", {randomTensor(rng, DType::boolean, {20})}, {{"dtype", AttrValue("i64")}},
      "lambda a: a.astype(np.int64)", 0, "bool -> i64");
  add("cast", {randomTensor(rng, DType::f16, {20}, -50, 50)}, {{"dtype", AttrValue("i32")}},
      "lambda a: a.astype(np.int32)", 0, "f16 -> i32");
  add("cast", {randomTensor(rng, DType::i8, {20}, -100, 100)}, {{"dtype", AttrValue("f16")}},
      "lambda a: a.astype(np.float16)", 0, "i8 -> f16");
  add("cast", {randomTensor(rng, DType::bf16, {20}, -50, 50)}, {{"dtype", AttrValue("f32")}}, "lambda a: a",
      0, "bf16 -> f32");

  int compared = mlcc::test::runRefCases(cases);
  EXPECT_GT(compared, 200);
  if (!mlcc::test::torchAvailable()) GTEST_SKIP() << "torch is missing: compared only the numpy cases";
}

TEST(OpsElementwise, InferSymbolic) {
  auto n = mlcc::ir::makeVar("n");
  auto m = mlcc::ir::makeVar("m");
  using mlcc::ops::dimConst;
  Type x = Type::tensor(DType::f32, {n, dimConst(1)});
  Type y = Type::tensor(DType::f32, {dimConst(1), dimConst(4)});
  EXPECT_EQ(inferred("add", {x, y}), "f32[n, 4]");
  EXPECT_EQ(inferred("less", {x, y}), "bool[n, 4]");
  Type z = Type::tensor(DType::f32, {dimConst(1), m});
  EXPECT_EQ(inferred("multiply", {x, z}), "f32[n, m]");
  EXPECT_EQ(inferred("multiply", {x, x}), "f32[n, 1]");
  EXPECT_EQ(inferred("sigmoid", {x}), "f32[n, 1]");
  EXPECT_EQ(inferred("isnan", {z}), "bool[1, m]");
  Type c = Type::tensor(DType::boolean, {n, dimConst(1), dimConst(1)});
  EXPECT_EQ(inferred("where", {c, x, y}), "f32[n, n, 4]");
  EXPECT_EQ(inferred("cast", {x}, {{"dtype", AttrValue("i8")}}), "i8[n, 1]");
  EXPECT_EQ(inferred("clip", {Type::tensor(DType::i32, {n})}, {{"min", AttrValue(0.0)}}), "i32[n]");
  EXPECT_EQ(inferred("relu", {Type::tensor(DType::i64, std::vector<int64_t>{})}), "i64[]");
}

TEST(OpsElementwise, Registration) {
  for (const char* op : {"relu", "gelu", "round", "isinf", "logical_not", "cast", "clip"}) {
    const auto* d = mlcc::ops::findOp(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_EQ(d->pattern, mlcc::ops::OpPattern::Elementwise) << op;
  }
  for (const char* op : {"add", "power", "mod", "greater_equal", "logical_xor", "where"}) {
    const auto* d = mlcc::ops::findOp(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_EQ(d->pattern, mlcc::ops::OpPattern::Broadcast) << op;
  }
  EXPECT_EQ(mlcc::ops::findOp("where")->min_inputs, 3);
  auto full = mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("selu"), {});
  EXPECT_EQ(full.at("alpha").asFloat(), 1.67326319217681884765625);
  EXPECT_EQ(full.at("gamma").asFloat(), 1.05070102214813232421875);
  EXPECT_EQ(mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("gelu"), {}).at("approximate").asString(), "none");
  EXPECT_FALSE(mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("mod"), {}).at("fmod").asBool());
  EXPECT_TRUE(mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("clip"), {}).empty());
}

TEST(OpsElementwise, Errors) {
  using mlcc::test::expectOpError;
  Type f = Type::tensor(DType::f32, std::vector<int64_t>{2, 3});
  Type i = Type::tensor(DType::i64, std::vector<int64_t>{2, 3});
  Type b = Type::tensor(DType::boolean, std::vector<int64_t>{2, 3});
  expectOpError([&] { inferred("sigmoid", {i}); }, "op 'sigmoid' needs a float operand, not i64");
  expectOpError([&] { inferred("relu", {b}); }, "op 'relu' needs a numeric operand, not bool");
  expectOpError([&] { inferred("logical_not", {f}); }, "op 'logical_not' needs a bool operand, not f32");
  expectOpError(
      [&] {
        inferred("add", {f, i});
      },
      "op 'add' needs operands of the same dtype, not f32 and i64");
  expectOpError([&] { inferred("add", {b, b}); }, "op 'add' needs a numeric operand, not bool");
  expectOpError([&] { inferred("logical_and", {f, f}); }, "op 'logical_and' needs a bool operand, not f32");
  expectOpError([&] { inferred("where", {f, f, f}); }, "op 'where' needs a bool condition, not f32");
  expectOpError(
      [&] {
        inferred("where", {b, f, i});
      },
      "op 'where' needs operands of the same dtype, not f32 and i64");
  expectOpError(
      [&] {
        inferred("add", {f, Type::tensor(DType::f32, std::vector<int64_t>{4})});
      },
      "op 'add': shapes cannot be broadcast together (dimension 1 differs)");
  auto n = mlcc::ir::makeVar("n"), m = mlcc::ir::makeVar("m");
  expectOpError(
      [&] {
        inferred("add", {Type::tensor(DType::f32, {n}), Type::tensor(DType::f32, {m})});
      },
      "shapes cannot be broadcast together");
  expectOpError([&] { inferred("add", {f}); }, "op 'add' takes 2 operand(s), not 1");
  expectOpError(
      [&] {
        inferred("relu", {f}, {{"alpha", AttrValue(0.1)}});
      },
      "op 'relu' has no attribute 'alpha' (it takes none)");
  expectOpError(
      [&] {
        inferred("leaky_relu", {f}, {{"alpha", AttrValue("big")}});
      },
      "op 'leaky_relu': attribute 'alpha' must be a float");
  expectOpError(
      [&] {
        inferred("mod", {f, f}, {{"fmod", AttrValue(int64_t{1})}});
      },
      "op 'mod': attribute 'fmod' must be a bool");
  expectOpError(
      [&] {
        inferred("gelu", {f}, {{"approximate", AttrValue("fast")}});
      },
      "op 'gelu': attribute 'approximate' must be \"none\" or \"tanh\", not \"fast\"");
  expectOpError([&] { inferred("cast", {f}); }, "op 'cast' needs attribute 'dtype'");
  expectOpError(
      [&] {
        inferred("cast", {f}, {{"dtype", AttrValue("f128")}});
      },
      "op 'cast': unknown dtype \"f128\"");
  // The same checks guard the kernels.
  expectOpError([&] { mlcc::ops::computeOp("exp", {Tensor::zeros(DType::i32, {2})}, {}); },
                "op 'exp' needs a float operand, not i32");
}

}  // namespace
