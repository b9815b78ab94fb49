// The reference interpreter: TensorIR semantics (reductions, symbolic shapes,
// predicates, control flow, intrinsics, integer floor division, casts, thread
// loops, allocations) checked against values computed in C++, graph-level
// execution (call_tir, tuples, symbolic batch), and its error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "testlib.h"

namespace {

using mlcc::interp::Interpreter;
using mlcc::interp::NamedTensor;
using namespace mlcc::ir;

using namespace mlcc::test;
mlcc::ir::Module parse(const std::string& body) { return mlcc::test::parseVerified(body); }

// Runs `entry` and returns the output named `name`.
Tensor runOne(const mlcc::ir::Module& m, const std::string& entry, std::vector<NamedTensor> in,
              const std::string& name) {
  Interpreter interp(m);
  for (auto& o : interp.run(entry, in))
    if (o.name == name) return o.tensor;
  ADD_FAILURE() << "no output " << name;
  return {};
}

const std::string kMatmul = fixture("interp/matmul.ir");

TEST(InterpTir, MatmulWithInitAndSymbolicN) {
  auto m = parse(kMatmul);
  Tensor a = iota(DType::f32, {3, 8}, 0.5, -2.0), b = iota(DType::f32, {8, 5}, 0.25, -1.0);
  Tensor c = Tensor::zeros(DType::f32, {3, 5});
  c.set(0, 100.0);  // init must overwrite
  Interpreter interp(m);
  interp.runPrim("mm", {&a, &b, &c});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      float want = 0;
      for (int k = 0; k < 8; ++k)
        want += static_cast<float>(a.at(i * 8 + k)) * static_cast<float>(b.at(k * 5 + j));
      EXPECT_FLOAT_EQ(c.at(i * 5 + j), want) << i << "," << j;
    }
  // As an entry: C is an output (written; read but optional, zero-filled when
  // not given), n binds from A.
  Tensor out = runOne(m, "mm", {{"A", a}, {"B", b}}, "C");
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{3, 5}));
  EXPECT_FLOAT_EQ(out.at(7), c.at(7));
}

TEST(InterpTir, NestedBlocksPredicateIfElseAllocThreadLoops) {
  auto m = parse(fixture("interp/tir_nested_blocks_predicate_if_else_alloc_thread_loops.ir"));
  Tensor x = iota(DType::f32, {10}, 1.0, 0.0);
  Tensor y = runOne(m, "f", {{"x", x}}, "y");
  for (int i = 0; i < 10; ++i) EXPECT_FLOAT_EQ(y.at(i), (i % 2 == 0 ? 2.0 * i : -2.0 * i) + 1.0) << i;
}

TEST(InterpTir, EveryIntrinsicMatchesLibm) {
  auto m = parse(fixture("interp/tir_every_intrinsic_matches_libm.ir"));
  Tensor x = Tensor::zeros(DType::f32, {8});
  for (int i = 0; i < 8; ++i) x.set(i, 0.125 + 0.375 * i);
  Interpreter interp(m);
  auto outs = interp.run("f", {{"x", x}});
  const Tensor& y = outs[0].tensor;
  const Tensor& p = outs[1].tensor;
  for (int i = 0; i < 8; ++i) {
    float v = static_cast<float>(x.at(i));
    float want[] = {std::exp(v),
                    std::exp2(v),
                    std::expm1(v),
                    std::log(v),
                    std::log2(v),
                    std::log1p(v),
                    std::sqrt(v),
                    1.0f / std::sqrt(v),
                    std::tanh(v),
                    1.0f / (1.0f + std::exp(-v)),
                    std::erf(v),
                    std::sin(v),
                    std::cos(v),
                    std::tan(v),
                    std::asin(v / 4),
                    std::acos(v / 4),
                    std::atan(v),
                    std::sinh(v),
                    std::cosh(v),
                    std::asinh(v),
                    std::acosh(v + 1),
                    std::atanh(v / 4),
                    std::floor(v - 1.5f),
                    std::ceil(v - 1.5f),
                    std::nearbyint(v - 1.5f),
                    std::trunc(v - 1.5f),
                    std::fabs(v - 1.5f),
                    std::pow(v, 1.5f),
                    std::atan2(v, -1.0f),
                    std::fmod(v, 0.75f),
                    static_cast<float>(std::abs(i - 4))};
    for (int r = 0; r < 31; ++r) EXPECT_FLOAT_EQ(y.at(r * 8 + i), want[r]) << "row " << r << " x=" << v;
    EXPECT_EQ(p.at(i), std::isnan(std::log(v - 2.0f)) ? 1.0 : 0.0) << i;
    EXPECT_EQ(p.at(8 + i), std::isinf(std::log(v - 0.125f)) ? 1.0 : 0.0) << i;
  }
}

TEST(InterpTir, IntegerFloorDivModCastsSelect) {
  auto m = parse(fixture("interp/tir_integer_floor_div_mod_casts_select.ir"));
  Tensor a = Tensor::fromValues(DType::i64, {6}, {7, -7, 7, -7, 0, -1});
  Tensor b = Tensor::fromValues(DType::i64, {6}, {2, 2, -2, -2, 3, 4});
  Tensor f = Tensor::fromValues(DType::f32, {6}, {1.0, -1.0, 0.5, std::nan(""), 1e-12, 3.0});
  Interpreter interp(m);
  std::map<std::string, Tensor> o;
  for (auto& nt : interp.run("f", {{"a", a}, {"b", b}, {"f", f}})) o[nt.name] = nt.tensor;
  std::vector<double> q = {3, -4, -4, 3, 0, -1}, r = {1, 1, -1, -1, 0, 3};
  std::vector<double> c = {2147483647, -2147483648.0, 2147483647, 0, 0, 2147483647};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(o["q"].at(i), q[i]) << i;
    EXPECT_EQ(o["r"].at(i), r[i]) << i;
    EXPECT_EQ(o["c"].at(i), c[i]) << i;  // saturating, NaN -> 0
    EXPECT_EQ(o["s"].at(i), static_cast<double>(static_cast<int8_t>(a.at(i) * 40))) << i;  // wraps
    double ai = a.at(i), bi = b.at(i);
    EXPECT_EQ(o["t"].at(i), ai < 0 && bi > 0 ? ai : (bi != 0) * 0.5) << i;
  }
  EXPECT_EQ(o["h"].at(0), 1.099609375);  // f16(1.0) + f16(0.1), rounded to f16
}

TEST(InterpTir, ScalarBuffersAndValidSamples) {
  Interpreter* unused = nullptr;
  (void)unused;
  auto m = parse(fixture("interp/tir_scalar_buffers_and_valid_samples.ir"));
  Interpreter interp(m);
  auto outs =
      interp.run("scalar", {{"s", Tensor::scalar(DType::f32, 0.25)}, {"t", Tensor::scalar(DType::i64, 2)}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].name, "s");
  EXPECT_FLOAT_EQ(outs[0].tensor.at(0), 0.75);
  EXPECT_EQ(outs[1].tensor.at(0), 1.0);
}

TEST(InterpTir, OutOfBoundsIsAClearError) {
  // Provably out of bounds: the verifier refuses it; the interpreter, which
  // may run unverified modules, reports it at run time.
  auto m = mlcc::test::parseUnverified(fixture("interp/tir_out_of_bounds_is_a_clear_error.ir"));
  EXPECT_THROW(mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo()), mlcc::Error);
  Interpreter interp(m);
  Tensor x = iota(DType::f32, {4});
  std::string e = errorOf([&] { interp.run("f", {{"x", x}}); });
  EXPECT_NE(e.find("prim func @f"), std::string::npos) << e;
  EXPECT_NE(e.find("%x[-1]"), std::string::npos) << e;
  EXPECT_NE(e.find("f32[4]"), std::string::npos) << e;
  e = errorOf([&] { interp.run("g", {{"x", iota(DType::i64, {4})}}); });
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
}

TEST(InterpTir, Matmul256Timing) {
  std::string text = kMatmul;
  for (const char* from : {"8", "5"})
    for (size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, 1, "N");
  for (size_t p; (p = text.find('N')) != std::string::npos;) text.replace(p, 1, "256");
  auto m = parse(text);
  Tensor a = iota(DType::f32, {256, 256}), b = iota(DType::f32, {256, 256});
  Tensor c = Tensor::zeros(DType::f32, {256, 256});
  Interpreter interp(m);
  auto t0 = std::chrono::steady_clock::now();
  interp.runPrim("mm", {&a, &b, &c});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "256^3 matmul interpreted in " << ms << " ms\n";
  double want = 0;
  for (int k = 0; k < 256; ++k) want += a.at(3 * 256 + k) * b.at(k * 256 + 9);
  EXPECT_FLOAT_EQ(c.at(3 * 256 + 9), want);
}

const std::string kGraph = fixture("interp/graph.ir");

TEST(InterpGraph, CallTirTupleReturnSymbolicBatch) {
  auto m = parse(std::string(kGraph) + kMatmul);
  Interpreter interp(m);
  EXPECT_EQ(interp.defaultEntry(), "main");
  Tensor x = iota(DType::f32, {4, 8}, 0.5, -3.0), w = iota(DType::f32, {8, 5}, 0.25, -1.0);
  auto outs = interp.run("main", {{"x", x}, {"w", w}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].name, "y");
  EXPECT_EQ(outs[1].name, "u");
  EXPECT_EQ(outs[1].tensor.shape(), (std::vector<int64_t>{4, 5}));
  bool some_negative = false;
  for (int i = 0; i < 20; ++i) {
    double y = outs[0].tensor.at(i);
    some_negative |= y < 0;
    EXPECT_EQ(outs[1].tensor.at(i), std::max(y, 0.0));
  }
  EXPECT_TRUE(some_negative);
}

TEST(InterpGraph, InputErrorsNameTheInput) {
  auto m = parse(std::string(R"(
graph @main(%x: f32[n, 8], %x2: f32[n, 8], %w: f32[8, 5]) -> f32[n, 5] {
  %y: f32[n, 5] = call_tir @mm(%x, %w)
  return %y
}
)") + kMatmul);
  Interpreter interp(m);
  Tensor w = iota(DType::f32, {8, 5});
  std::string e = errorOf([&] {
    interp.run("main", {{"x", iota(DType::f32, {4, 8})}, {"x2", iota(DType::f32, {5, 8})}, {"w", w}});
  });
  EXPECT_NE(e.find("input 'x2'"), std::string::npos) << e;
  EXPECT_NE(e.find("input 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("'n' is 4"), std::string::npos) << e;
  e = errorOf([&] {
    interp.run(
        "main",
        {{"x", iota(DType::f32, {4, 8})}, {"x2", iota(DType::f32, {4, 8})}, {"w", iota(DType::f32, {8, 6})}});
  });
  EXPECT_NE(e.find("input 'w': expected f32[8, 5], got f32[8, 6]"), std::string::npos) << e;
  e = errorOf([&] {
    interp.run("main", {{"x", iota(DType::i64, {4, 8})}, {"x2", iota(DType::f32, {4, 8})}, {"w", w}});
  });
  EXPECT_NE(e.find("input 'x': expected f32[n, 8], got i64[4, 8]"), std::string::npos) << e;
  e = errorOf([&] { interp.run("main", {{"x", w}, {"w", w}}); });
  EXPECT_NE(e.find("missing input 'x2'"), std::string::npos) << e;
  e = errorOf([&] { interp.run("main", {{"nope", w}}); });
  EXPECT_NE(e.find("unknown input 'nope'"), std::string::npos) << e;
  EXPECT_NE(e.find("x, x2, w"), std::string::npos) << e;
}

TEST(InterpGraph, CallExternAndInlineConstAndSubFunction) {
  auto m = parse(fixture("interp/graph_call_extern_and_inline_const_and_sub_function.ir"));
  Interpreter interp(m);
  std::string e = errorOf([&] { interp.run("main", {{"x", iota(DType::f32, {3})}}); });
  EXPECT_NE(e.find("call_extern \"blas.axpy\": no such library kernel (known: blas.dense"), std::string::npos)
      << e;
  auto outs = interp.run("sub", {{"a", iota(DType::f32, {3})}, {"b", iota(DType::f32, {3}, 2.0)}});
  EXPECT_EQ(outs[0].tensor.at(2), 6.0);
}

// Library kernels run as the ops of the pattern they replaced.
TEST(InterpGraph, CallExternBlasKernels) {
  auto m = parse(fixture("interp/graph_call_extern_blas_kernels.ir"));
  Interpreter interp(m);
  auto x = mlcc::ir::Tensor::fromValues(DType::f32, {2, 3}, {1, -2, 3, 0.5, 4, -1});
  auto w = mlcc::ir::Tensor::fromValues(DType::f32, {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  auto b = mlcc::ir::Tensor::fromValues(DType::f32, {4}, {0, 1, -10, 0.5});
  auto a = mlcc::ir::Tensor::fromValues(DType::f32, {3, 4}, {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1});
  auto outs = interp.run("main", {{"x", x}, {"w", w}, {"b", b}, {"a", a}});
  // x w^T = [[1, -2, 3, 2], [0.5, 4, -1, 3.5]]; + b, relu.
  const std::vector<double> dense = {1, -2, 3, 2, 0.5, 4, -1, 3.5};
  const std::vector<double> bias_relu = {1, 0, 0, 2.5, 0.5, 5, 0, 4};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(outs[0].tensor.at(i), bias_relu[i]) << i;
    EXPECT_EQ(outs[1].tensor.at(i), dense[i]) << i;
    EXPECT_EQ(outs[2].tensor.at(i), dense[i]) << i;  // a = w^T
  }
}

}  // namespace
