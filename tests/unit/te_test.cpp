// Tensor expressions: the prim funcs te::FuncBuilder makes verify, print in
// the expected shape, and compute what their formulas say (checked through
// the interpreter against plain C++).
#include "mlcc/ir/te.h"

#include <gtest/gtest.h>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;
using namespace mlcc::ir::build;

namespace {
Module moduleOf(PrimFunc f) {
  Module m;
  m.functions.push_back(std::move(f));
  return m;
}
}  // namespace

TEST(Te, DenseWithBiasAndReluStages) {
  Var n = makeVar("n");
  te::FuncBuilder fb("dense_bias_relu");
  Buffer x = fb.input("x", Type::tensor(DType::f32, {n, makeInt(3)}));
  Buffer w = fb.input("w", Type::tensor(DType::f32, std::vector<int64_t>{2, 3}));
  Buffer b = fb.input("b", Type::tensor(DType::f32, std::vector<int64_t>{2}));
  Buffer acc = fb.reduce("dense", {n, makeInt(2)}, DType::f32, {makeInt(3)}, te::ReduceOp::Sum,
                         [&](const te::Indices& i, const te::Indices& r) {
                           return load(x, {i[0], r[0]}) * load(w, {i[1], r[0]});
                         });
  Buffer y = fb.compute("relu", {n, makeInt(2)}, DType::f32, [&](const te::Indices& i) {
    return maximum(load(acc, {i[0], i[1]}) + load(b, {i[1]}), makeFloat(0.0));
  });
  PrimFunc f = fb.build({y});
  ASSERT_EQ(f.params.size(), 4u);
  ASSERT_EQ(f.allocs.size(), 1u);
  Module m = moduleOf(f);
  verifyModule(m, mlcc::ops::opTypeInfo());
  std::string text = printFunction(m.functions[0]);
  EXPECT_NE(
      text.find("block \"dense\" (%v0 = spatial(n, %i0), %v1 = spatial(2, %i1), %vk0 = reduce(3, %k0))"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("reads(%x[%v0, %vk0], %w[%v1, %vk0])"), std::string::npos) << text;

  mlcc::interp::Interpreter in(m);
  Tensor tx = Tensor::fromValues(DType::f32, {2, 3}, {1, -2, 3, 0.5, 0, -1});
  Tensor tw = Tensor::fromValues(DType::f32, {2, 3}, {1, 1, 1, 2, 0, -1});
  Tensor tb = Tensor::fromValues(DType::f32, {2}, {0.5, -10});
  Tensor ty = Tensor::zeros(DType::f32, {2, 2});
  in.runPrim("dense_bias_relu", {&tx, &tw, &tb, &ty});
  const double expect[4] = {2.5, 0, 0, 0};  // relu(x·wᵀ + b)
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(ty.at(i), expect[i]) << i;
}

TEST(Te, GuardedLoadPadsWithoutOutOfBoundsReads) {
  te::FuncBuilder fb("pad");
  Buffer x = fb.input("x", Type::tensor(DType::f32, std::vector<int64_t>{3}));
  Buffer y = fb.compute("pad", {makeInt(5)}, DType::f32, [&](const te::Indices& i) {
    PrimExpr src = i[0] - 1;
    return te::guardedLoad(x, {src}, src >= 0 && src < 3, makeFloat(-1.0));
  });
  Module m = moduleOf(fb.build({y}));
  verifyModule(m, mlcc::ops::opTypeInfo());
  mlcc::interp::Interpreter in(m);
  Tensor tx = Tensor::fromValues(DType::f32, {3}, {4, 5, 6});
  Tensor ty = Tensor::zeros(DType::f32, {5});
  in.runPrim("pad", {&tx, &ty});
  const double expect[5] = {-1, 4, 5, 6, -1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ty.at(i), expect[i]);
}

TEST(Te, ReductionIdentitiesAndScalarOutputs) {
  te::FuncBuilder fb("amax");
  Buffer x = fb.input("x", Type::tensor(DType::i32, std::vector<int64_t>{4}));
  Buffer y = fb.reduce("amax", {}, DType::i32, {makeInt(4)}, te::ReduceOp::Max,
                       [&](const te::Indices&, const te::Indices& r) { return load(x, {r[0]}); });
  Module m = moduleOf(fb.build({y}));
  verifyModule(m, mlcc::ops::opTypeInfo());
  mlcc::interp::Interpreter in(m);
  Tensor tx = Tensor::fromValues(DType::i32, {4}, {-7, -3, -9, -4});
  Tensor ty = Tensor::zeros(DType::i32, {});
  in.runPrim("amax", {&tx, &ty});
  EXPECT_EQ(ty.at(0), -3);
  EXPECT_EQ(printExpr(te::reduceIdentity(te::ReduceOp::Max, DType::f32)), "-inf");
  EXPECT_THROW(fb.build({x}), mlcc::Error);  // an input is not a computed output
}
