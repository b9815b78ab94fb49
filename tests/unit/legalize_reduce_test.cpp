// Legalization of the reductions (reduce.cpp): each op's TensorIR compute
// definition, interpreted, against its reference kernel (also with a
// symbolic batch): axis sets incl. negative axes, keepdims, dtypes, NaN,
// argmax/argmin with select_last_index and ties.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

LegalizeCheckOptions f32Sums() {  // f32 accumulation vs the kernel's double
  return {.rtol = 1e-5, .atol = 1e-5};
}

TEST(LegalizeReduce, AxisSetsKeepdimsAndDTypes) {
  std::mt19937 rng(21);
  const std::vector<std::vector<int64_t>> axes_sets = {{},     {0},    {-1},         {1},
                                                       {0, 2}, {1, 3}, {0, 1, 2, 3}, {-3, -2}};
  for (const char* op : {"sum", "mean", "max", "min", "prod"})
    for (bool keep : {false, true})
      for (size_t k = 0; k < axes_sets.size(); ++k) {
        SCOPED_TRACE(std::string(op) + " case " + std::to_string(k) + (keep ? " keepdims" : ""));
        mlcc::ir::Attrs attrs = {{"keepdims", AttrValue(keep)}};
        if (k != 0) attrs["axes"] = AttrValue::ints(axes_sets[k]);
        expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {2, 3, 4, 2}, 0.5, 1.5)}, attrs,
                                    f32Sums());
        for (DType t : {DType::i8, DType::i32, DType::i64})
          expectLegalizeMatchesKernel(op, {randomTensor(rng, t, {2, 3, 4, 2}, -100, 100)}, attrs);
        expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {2, 3, 4, 2}, 0.5, 1.5)}, attrs,
                                    kHalfAccumulationOptions);
        expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::bf16, {2, 3, 4, 2}, 0.5, 1.5)}, attrs,
                                    kHalfAccumulationOptions);
      }
}

TEST(LegalizeReduce, IntegerMeanTruncatesAndSumsWrap) {
  // Sums -7 and 7 over 2: the kernel truncates toward zero (-3, 3).
  Tensor x = Tensor::fromValues(DType::i32, {2, 2}, {-3, -4, 3, 4});
  expectLegalizeMatchesKernel("mean", {x}, {{"axes", AttrValue::ints({1})}});
  // (A zero-length static axis cannot be lowered: the verifier requires
  // positive loop extents, for every op. A symbolic extent that is 0 at run
  // time gives the identities; argmax/argmin's index stage starts at 0.)
  // i8 sums wrap as the kernel's i64 accumulator stored back to i8.
  Tensor big = Tensor::fromValues(DType::i8, {4}, {100, 100, 100, -5});
  expectLegalizeMatchesKernel("sum", {big}, {});
  expectLegalizeMatchesKernel("prod", {big}, {});
}

TEST(LegalizeReduce, MaxMinPropagateNaN) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::fromValues(DType::f32, {3, 4}, {1, nan, 3, -inf, inf, 2, 0, -1, nan, nan, nan, nan});
  for (const char* op : {"max", "min"})
    for (int64_t axis : {0, 1}) {
      expectLegalizeMatchesKernel(op, {x}, {{"axes", AttrValue::ints({axis})}});
      expectLegalizeMatchesKernel(op, {x},
                                  {{"axes", AttrValue::ints({axis})}, {"keepdims", AttrValue(true)}});
    }
}

TEST(LegalizeReduce, ArgMaxArgMin) {
  std::mt19937 rng(22);
  for (const char* op : {"argmax", "argmin"})
    for (int64_t axis : {0, 1, 2, -1, -3})
      for (bool keep : {false, true})
        for (bool last : {false, true}) {
          SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
          mlcc::ir::Attrs attrs = {{"axis", AttrValue(axis)},
                                   {"keepdims", AttrValue(keep)},
                                   {"select_last_index", AttrValue(last)}};
          expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {3, 4, 5})}, attrs);
          // Small integer ranges: many ties.
          for (DType t : {DType::i8, DType::i32, DType::i64})
            expectLegalizeMatchesKernel(op, {randomTensor(rng, t, {3, 4, 5}, -2, 2)}, attrs);
          expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {3, 4, 5}, -2, 2)}, attrs);
        }
}

TEST(LegalizeReduce, ArgMaxNaNAndInfinities) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  // Rows: a NaN after +inf, two NaNs, all -inf, ties of the max, all NaN.
  Tensor x = Tensor::fromValues(DType::f32, {5, 4}, {inf,  nan,  1, inf, 1, nan, 2,   nan, -inf, -inf,
                                                     -inf, -inf, 3, 1,   3, 3,   nan, nan, nan,  nan});
  for (const char* op : {"argmax", "argmin"})
    for (bool last : {false, true})
      expectLegalizeMatchesKernel(op, {x}, {{"axis", AttrValue(1)}, {"select_last_index", AttrValue(last)}});
}

// cumsum adds the same terms in the same order as its kernel: exact, with
// NaN, infinities and wrapping integers too.
TEST(LegalizeReduce, Cumsum) {
  std::mt19937 rng(19);
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const Tensor specials = Tensor::fromValues(DType::f32, {2, 5}, {1, nan, 2, -0.0, 3, inf, -inf, 1, 2, -0.0});
  for (int64_t axis : {0, -1})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        const mlcc::ir::Attrs attrs = {
            {"axis", AttrValue(axis)}, {"exclusive", AttrValue(exclusive)}, {"reverse", AttrValue(reverse)}};
        const LegalizeCheckOptions exact{.rtol = 0, .atol = 0};
        for (DType t : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64})
          expectLegalizeMatchesKernel("cumsum", {randomTensor(rng, t, {4, 6, 3}, -100, 100)}, attrs, exact);
        expectLegalizeMatchesKernel("cumsum", {specials}, attrs, exact);
        expectLegalizeMatchesKernel("cumsum", {Tensor::fromValues(DType::i32, {3}, {2147483647.0, 1, -5})},
                                    attrs, exact);  // wraps
      }
}

TEST(LegalizeReduce, PrintedStagesAreNamedAfterTheOp) {
  Type x = Type::tensor(DType::f32, {mlcc::ir::makeVar("n"), mlcc::ir::makeInt(8)});
  mlcc::ir::Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("argmax", {x}, {{"axis", AttrValue(1)}}, "argmax"));
  mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string text = mlcc::ir::printModule(m);
  for (const char* block : {"block \"argmax_isnan\"", "block \"argmax_max\"", "block \"argmax\""})
    EXPECT_NE(text.find(block), std::string::npos) << text;
}

}  // namespace
