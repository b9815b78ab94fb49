// mlcc::floorDiv / floorMod (checked_math.h), the one definition of the
// IR's integer `/` and `%`: signs of both operands, exact and inexact
// quotients, division by zero (an error), INT64_MIN / -1 (wraps). Then the
// same operands through the interpreter and through a kernel compiled by the
// LLVM backend, which must agree with it on every nonzero divisor.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "mlcc/codegen/llvm.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/module.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "schedule_check.h"

using namespace mlcc;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(FloorDiv, RoundsTowardNegativeInfinity) {
  EXPECT_EQ(floorDiv(7, 2), 3);
  EXPECT_EQ(floorDiv(-7, 2), -4);
  EXPECT_EQ(floorDiv(7, -2), -4);
  EXPECT_EQ(floorDiv(-7, -2), 3);
  EXPECT_EQ(floorDiv(6, 3), 2);
  EXPECT_EQ(floorDiv(-6, 3), -2);
  EXPECT_EQ(floorDiv(0, -5), 0);
  EXPECT_EQ(floorDiv(kMin, 2), kMin / 2);
  EXPECT_EQ(floorDiv(kMax, -1), -kMax);
  EXPECT_EQ(floorDiv(kMin + 1, kMax), -1);
}

TEST(FloorMod, HasTheDivisorsSign) {
  EXPECT_EQ(floorMod(7, 2), 1);
  EXPECT_EQ(floorMod(-7, 2), 1);
  EXPECT_EQ(floorMod(7, -2), -1);
  EXPECT_EQ(floorMod(-7, -2), -1);
  EXPECT_EQ(floorMod(-6, 3), 0);
  EXPECT_EQ(floorMod(kMin, 3), 1);  // -9223372036854775808 = 3 * -3074457345618258603 + 1
  EXPECT_EQ(floorMod(kMax, -1), 0);
  // a == floorDiv(a, b) * b + floorMod(a, b) wherever the product does not wrap.
  for (int64_t a = -20; a <= 20; ++a)
    for (int64_t b : {-7, -3, -1, 1, 2, 5})
      EXPECT_EQ(floorDiv(a, b) * b + floorMod(a, b), a) << a << " / " << b;
}

TEST(FloorDiv, MinByMinusOneWraps) {
  EXPECT_EQ(floorDiv(kMin, -1), kMin);
  EXPECT_EQ(floorMod(kMin, -1), 0);
}

TEST(FloorDiv, DivisionByZeroIsAnError) {
  EXPECT_THROW(floorDiv(1, 0), Error);
  EXPECT_THROW(floorMod(1, 0), Error);
  EXPECT_THROW(floorDiv(0, 0), Error);
  try {
    floorDiv(5, 0);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "integer division by zero");
  }
}

// The operands of the agreement test: every sign, exact and inexact,
// the extremes, INT64_MIN / -1.
struct Operands {
  std::vector<int64_t> a, b;
};
Operands edgeOperands() {
  Operands o;
  const std::vector<int64_t> values{0, 1, -1, 7, -7, 6, -6, 100, -101, kMax, kMin, kMin + 1};
  const std::vector<int64_t> divisors{1, -1, 2, -2, 3, -3, 7, -7, 64, kMax, kMin};
  for (int64_t a : values)
    for (int64_t b : divisors) {
      o.a.push_back(a);
      o.b.push_back(b);
    }
  return o;
}

constexpr const char* kDivModPrim = R"(
prim @divmod(%A: i64[132], %B: i64[132], %Q: i64[132], %R: i64[132]) {
  for %i in 0..132 {
    block "Q" (%vi = spatial(132, %i)) {
      reads(%A[%vi], %B[%vi])
      writes(%Q[%vi], %R[%vi])
      %Q[%vi] = %A[%vi] / %B[%vi]
      %R[%vi] = %A[%vi] % %B[%vi]
    }
  }
}
)";

TEST(FloorDiv, InterpreterAndCompiledCodeAgreeWithTheDefinition) {
  const Operands o = edgeOperands();
  ASSERT_EQ(o.a.size(), 132u);
  const ir::PrimFunc f = test::parsePrim(kDivModPrim);

  std::vector<int64_t> q(o.a.size(), 42), r(o.a.size(), 42);
  std::vector<int64_t> a = o.a, b = o.b;
  codegen::JitKernel::compile(f).run({a.data(), b.data(), q.data(), r.data()});

  ir::Module m;
  m.functions.push_back(f);
  interp::Interpreter in(m);
  ir::Tensor ta = ir::Tensor::zeros(ir::DType::i64, {132}), tb = ir::Tensor::zeros(ir::DType::i64, {132});
  for (size_t i = 0; i < o.a.size(); ++i) {
    ta.mutableData<int64_t>()[i] = o.a[i];
    tb.mutableData<int64_t>()[i] = o.b[i];
  }
  const auto outs = in.run("divmod", {{"A", ta}, {"B", tb}});
  ASSERT_EQ(outs.size(), 2u);

  for (size_t i = 0; i < o.a.size(); ++i) {
    SCOPED_TRACE(std::to_string(o.a[i]) + " / " + std::to_string(o.b[i]));
    EXPECT_EQ(q[i], floorDiv(o.a[i], o.b[i]));
    EXPECT_EQ(r[i], floorMod(o.a[i], o.b[i]));
    EXPECT_EQ(outs[0].tensor.data<int64_t>()[i], floorDiv(o.a[i], o.b[i]));
    EXPECT_EQ(outs[1].tensor.data<int64_t>()[i], floorMod(o.a[i], o.b[i]));
  }
}

}  // namespace
