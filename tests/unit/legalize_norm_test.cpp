// Legalization of the normalization ops (norm.cpp): softmax, log_softmax,
// layer_norm and batch_norm prim funcs, interpreted, against their reference
// kernels (also with a symbolic batch), over axes and dtypes.
#include <gtest/gtest.h>

#include <random>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

LegalizeCheckOptions f32Opts() {  // f32 accumulation vs the kernels' double
  return {.rtol = 1e-5, .atol = 2e-6};
}

TEST(LegalizeNorm, SoftmaxAndLogSoftmax) {
  std::mt19937 rng(31);
  for (const char* op : {"softmax", "log_softmax"})
    for (int64_t axis : {-1, 0, 1, 2, -2}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      mlcc::ir::Attrs attrs = {{"axis", AttrValue(axis)}};
      expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f32, {2, 3, 5}, -5, 5)}, attrs, f32Opts());
      expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::f16, {2, 3, 5}, -5, 5)}, attrs,
                                  kHalfAccumulationOptions);
      expectLegalizeMatchesKernel(op, {randomTensor(rng, DType::bf16, {2, 3, 5}, -5, 5)}, attrs,
                                  kHalfAccumulationOptions);
    }
  // Default axis (-1).
  expectLegalizeMatchesKernel("softmax", {randomTensor(rng, DType::f32, {4, 7})}, {}, f32Opts());
}

TEST(LegalizeNorm, LayerNorm) {
  std::mt19937 rng(32);
  const std::vector<int64_t> shape = {2, 3, 4};
  for (int64_t axis : {-1, 1, 2, -2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    std::vector<int64_t> ps(shape.begin() + static_cast<std::ptrdiff_t>(a), shape.end());
    for (DType t : {DType::f32, DType::f16}) {
      mlcc::ir::Attrs attrs = {{"axis", AttrValue(axis)}, {"epsilon", AttrValue(1e-3)}};
      expectLegalizeMatchesKernel(
          "layer_norm", {randomTensor(rng, t, shape), randomTensor(rng, t, ps), randomTensor(rng, t, ps)},
          attrs, t == DType::f32 ? f32Opts() : kHalfAccumulationOptions);
    }
  }
  // Over all axes (axis 0: the reduced extent includes the symbolic batch
  // only in the types, so check the static case).
  LegalizeCheckOptions o = f32Opts();
  o.also_symbolic_batch = false;
  expectLegalizeMatchesKernel("layer_norm",
                              {randomTensor(rng, DType::f32, {2, 3}), randomTensor(rng, DType::f32, {2, 3}),
                               randomTensor(rng, DType::f32, {2, 3})},
                              {{"axis", AttrValue(0)}}, o);
}

TEST(LegalizeNorm, BatchNorm) {
  std::mt19937 rng(33);
  for (int64_t axis : {1, -1, 0, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const std::vector<int64_t> shape = {2, 3, 4};
    int64_t c = shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      std::vector<Tensor> in = {randomTensor(rng, t, shape), randomTensor(rng, t, {c}),
                                randomTensor(rng, t, {c}), randomTensor(rng, t, {c}),
                                randomTensor(rng, t, {c}, 0.1, 2.0)};
      LegalizeCheckOptions o = t == DType::f32 ? f32Opts() : kHalfAccumulationOptions;
      o.also_symbolic_batch = false;  // the vectors do not share the batch dim
      expectLegalizeMatchesKernel("batch_norm", in, {{"axis", AttrValue(axis)}}, o);
    }
  }
}

TEST(LegalizeNorm, SymbolicBatchTypes) {
  // batch_norm over channels (axis 1) of x: [n, 3, 4] verifies with n symbolic.
  mlcc::ir::Var n = mlcc::ir::makeVar("n");
  Type x = Type::tensor(DType::f32, {n, mlcc::ir::makeInt(3), mlcc::ir::makeInt(4)});
  Type v = Type::tensor(DType::f32, std::vector<int64_t>{3});
  mlcc::ir::Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("batch_norm", {x, v, v, v, v}, {}, "bn"));
  m.functions.push_back(mlcc::ops::legalizeOp("softmax", {x}, {{"axis", AttrValue(0)}}, "sm"));
  mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string text = mlcc::ir::printModule(m);
  for (const char* block :
       {"block \"batch_norm_scale\"", "block \"batch_norm_shift\"", "block \"batch_norm\"",
        "block \"softmax_max\"", "block \"softmax_expsum\"", "block \"softmax\""})
    EXPECT_NE(text.find(block), std::string::npos) << text;
}

}  // namespace
