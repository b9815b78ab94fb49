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
using namespace mlcc::ir;

using namespace mlcc::test;
mlcc::ir::Module parse(const std::string& body) { return mlcc::test::parseVerified(body); }

float r16(float v) {
  return static_cast<float>(mlcc::ir::detail::halfBitsToDouble(mlcc::ir::detail::doubleToHalfBits(v)));
}

TEST(InterpNest, OutOfBoundsOnlyAtTheLastInnermostIteration) {
  // Provably out of bounds: the verifier refuses it; the interpreter, which
  // may run unverified modules, reports it at run time.
  auto m = mlcc::test::parseUnverified(
      fixture("interp_nest/out_of_bounds_only_at_the_last_innermost_iteration.ir"));
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
  auto m = parse(fixture("interp_nest/non_affine_and_gathered_indices.ir"));
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
  auto m = parse(fixture("interp_nest/f16_accumulation_rounds_after_every_operation.ir"));
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
  auto m = mlcc::test::parseUnverified(fixture("interp_nest/reversed_indices_negative_strides.ir"));
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
  auto m = parse(fixture("interp_nest/zero_extent_loops_run_nothing.ir"));
  Tensor x = Tensor::zeros(DType::f32, {0}), y = iota(DType::f32, {4});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &y});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.at(i), i);
}

TEST(InterpNest, GuardedAccessOutsideTheBoxIsNoError) {
  auto m = parse(fixture("interp_nest/guarded_access_outside_the_box_is_no_error.ir"));
  Tensor x = iota(DType::f32, {4}, 1.0, 1.0), y = Tensor::zeros(DType::f32, {6});
  Interpreter interp(m);
  interp.runPrim("f", {&x, &y});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.at(i), i < 4 ? i + 1.0 : -1.0) << i;
}

}  // namespace
