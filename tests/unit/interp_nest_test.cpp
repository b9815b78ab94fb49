// The interpreter's strength-reduced loop nests (tir_nest.cpp): results equal
// those computed in C++ with the interpreter's semantics, and out-of-bounds
// accesses are still reported, also when only the last iteration of the
// innermost loop (or of the whole nest) is out of bounds, with non-affine
// indices, f16 accumulation, reversed (negative-stride) indices, zero-extent
// loops and accesses guarded by a condition.
#include <gtest/gtest.h>

#include <cmath>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "testlib.h"

namespace {

using mlcc::interp::Interpreter;
using mlcc::ir::DType;
using mlcc::ir::Tensor;

using mlcc::test::iota;
mlcc::ir::Module parse(const std::string& body) { return mlcc::test::parseVerified(body); }

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlcc::Error& e) {
    return e.message();
  }
  return "(no error)";
}

float r16(float v) {
  return static_cast<float>(mlcc::ir::detail::halfBitsToDouble(mlcc::ir::detail::doubleToHalfBits(v)));
}

TEST(InterpNest, OutOfBoundsOnlyAtTheLastInnermostIteration) {
  // Provably out of bounds: the verifier refuses it; the interpreter, which
  // may run unverified modules, reports it at run time.
  auto m = mlcc::test::parseUnverified(R"(
prim @f(%x: f32[4, 4], %y: f32[4, 5]) {
  for %i in 0..4 {
    for %j in 0..5 {
      %y[%i, %j] = %x[%i, %j]
    }
  }
}
prim @g(%x: f32[16], %y: f32[4, 4]) {
  for %i in 0..4 {
    for %j in 0..4 {
      block "b" (%vi = spatial(4, %i), %vj = spatial(4, %j)) {
        reads(%x[%vi * 4 + %vj + 1])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %x[%vi * 4 + %vj + 1]
      }
    }
  }
}
)");
  EXPECT_THROW(mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo()), mlcc::Error);
  Interpreter interp(m);
  Tensor x = iota(DType::f32, {4, 4}), y = Tensor::zeros(DType::f32, {4, 5});
  std::string e = errorOf([&] { interp.runPrim("f", {&x, &y}); });
  EXPECT_NE(e.find("out-of-bounds access %x[0, 4] of buffer %x: f32[4, 4]"), std::string::npos) << e;
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y.at(j), x.at(j)) << j;  // written before the error
  Tensor x16 = iota(DType::f32, {16}), y2 = Tensor::zeros(DType::f32, {4, 4});
  e = errorOf([&] { interp.runPrim("g", {&x16, &y2}); });
  EXPECT_NE(e.find("%x[16]"), std::string::npos) << e;
  EXPECT_EQ(y2.at(14), x16.at(15));
}

TEST(InterpNest, NonAffineAndGatheredIndices) {
  auto m = parse(R"(
prim @f(%x: f32[4, 8], %idx: i64[6], %y: f32[6, 8]) {
  for %i in 0..6 {
    for %j in 0..8 {
      %y[%i, %j] = %x[%idx[%i], (%j * 3) % 8] + %x[%i % 4, %j]
    }
  }
}
)");
  Tensor x = iota(DType::f32, {4, 8}, 0.5), idx = Tensor::fromValues(DType::i64, {6}, {3, 0, 2, 1, 3, 0});
  Tensor y = Tensor::zeros(DType::f32, {6, 8});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &idx, &y});
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = static_cast<float>(x.at(static_cast<int64_t>(idx.at(i)) * 8 + (j * 3) % 8)) +
                   static_cast<float>(x.at((i % 4) * 8 + j));
      EXPECT_EQ(y.at(i * 8 + j), want) << i << "," << j;
    }
  idx.set(4, 4.0);  // a gathered index out of bounds
  std::string e = errorOf([&] { interp.runPrim("f", {&x, &idx, &y}); });
  EXPECT_NE(e.find("%x[4, 0]"), std::string::npos) << e;
}

TEST(InterpNest, F16AccumulationRoundsAfterEveryOperation) {
  auto m = parse(R"(
prim @mm(%A: f16[3, 37], %B: f16[37, 5], %C: f16[3, 5]) {
  for %i in 0..3 {
    for %j in 0..5 {
      for %k in 0..37 {
        block "C" (%vi = spatial(3, %i), %vj = spatial(5, %j), %vk = reduce(37, %k)) {
          reads(%A[%vi, %vk], %B[%vk, %vj])
          writes(%C[%vi, %vj])
          init {
            %C[%vi, %vj] = 0.0f16
          }
          %C[%vi, %vj] = %C[%vi, %vj] + %A[%vi, %vk] * %B[%vk, %vj]
        }
      }
    }
  }
}
)");
  Tensor a = iota(DType::f16, {3, 37}, 0.3, -2.0), b = iota(DType::f16, {37, 5}, 0.7, -1.0);
  Tensor c = Tensor::zeros(DType::f16, {3, 5});
  Interpreter interp(m);
  interp.runPrim("mm", {&a, &b, &c});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      float acc = 0;
      for (int k = 0; k < 37; ++k) {
        float p = r16(static_cast<float>(a.at(i * 37 + k)) * static_cast<float>(b.at(k * 5 + j)));
        acc = r16(acc + p);
      }
      EXPECT_EQ(c.at(i * 5 + j), acc) << i << "," << j;
    }
}

TEST(InterpNest, ReversedIndicesNegativeStrides) {
  // Provably out of bounds: the verifier refuses it; the interpreter, which
  // may run unverified modules, reports it at run time.
  auto m = mlcc::test::parseUnverified(R"(
prim @f(%x: f32[4, 6], %w: f32[6], %y: f32[4, 6], %s: f32[4]) {
  for %i in 0..4 {
    for %j in 0..6 {
      %y[%i, %j] = %x[3 - %i, 6 - 1 - %j] * 2.0
    }
  }
  for %i in 0..4 {
    for %k in 0..6 {
      block "s" (%vi = spatial(4, 3 - %i), %vk = reduce(6, %k)) {
        reads(%x[%vi, 5 - %vk], %w[%vk])
        writes(%s[%vi])
        init {
          %s[%vi] = 0.0
        }
        %s[%vi] = %s[%vi] + %x[%vi, 5 - %vk] * %w[%vk]
      }
    }
  }
}
prim @g(%x: f32[4], %y: f32[5]) {
  for %i in 0..5 {
    %y[%i] = %x[3 - %i]
  }
}
)");
  EXPECT_THROW(mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo()), mlcc::Error);
  Tensor x = iota(DType::f32, {4, 6}, 0.25, -1.0), w = iota(DType::f32, {6}, 1.5, -3.0);
  Tensor y = Tensor::zeros(DType::f32, {4, 6}), s = Tensor::zeros(DType::f32, {4});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &w, &y, &s});
  for (int i = 0; i < 4; ++i) {
    float acc = 0;
    for (int k = 0; k < 6; ++k)
      acc = acc + static_cast<float>(x.at(i * 6 + 5 - k)) * static_cast<float>(w.at(k));
    EXPECT_EQ(s.at(i), acc) << i;
    for (int j = 0; j < 6; ++j) EXPECT_EQ(y.at(i * 6 + j), x.at((3 - i) * 6 + 5 - j) * 2.0) << i << "," << j;
  }
  Tensor x4 = iota(DType::f32, {4}), y5 = Tensor::zeros(DType::f32, {5});
  std::string e = errorOf([&] { interp.runPrim("g", {&x4, &y5}); });
  EXPECT_NE(e.find("%x[-1]"), std::string::npos) << e;  // only the last iteration
  EXPECT_EQ(y5.at(3), x4.at(0));
}

TEST(InterpNest, ZeroExtentLoopsRunNothing) {
  auto m = parse(R"(
prim @f(%x: f32[n], %y: f32[4]) {
  for %i in 0..4 {
    for %j in 0..n {
      %y[%i + 100] = %x[%j - 7]
    }
  }
  for %i in 0..n {
    for %j in 0..4 {
      %y[%j] = %x[%i] + 1.0
    }
  }
}
)");
  Tensor x = Tensor::zeros(DType::f32, {0}), y = iota(DType::f32, {4});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &y});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.at(i), i);
}

TEST(InterpNest, GuardedAccessOutsideTheBoxIsNoError) {
  auto m = parse(R"(
prim @f(%x: f32[4], %y: f32[6]) {
  for %i in 0..6 {
    if %i < 4 {
      %y[%i] = %x[%i]
    } else {
      %y[%i] = -1.0
    }
  }
}
)");
  Tensor x = iota(DType::f32, {4}, 1.0, 1.0), y = Tensor::zeros(DType::f32, {6});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &y});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.at(i), i < 4 ? i + 1.0 : -1.0) << i;
}

}  // namespace
