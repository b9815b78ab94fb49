// Legalization of the convolutions (conv2d, conv2d_transpose): the prim
// funcs compute what the reference kernels compute for strides, asymmetric
// padding, dilation, groups (2 and depthwise), output_padding, f16/bf16 and
// i32/i64,
// also with a symbolic batch dimension.
#include <gtest/gtest.h>

#include <cmath>

#include "legalize_check.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

struct Conv {
  std::vector<int64_t> x, w;
  std::vector<int64_t> strides{1, 1}, padding{0, 0, 0, 0}, dilation{1, 1};
  int64_t groups = 1;
  std::vector<int64_t> output_padding{};  // transpose only
  DType dtype = DType::f32;
};

void check(const char* op, const Conv& c) {
  std::mt19937 rng(
      static_cast<unsigned>(c.x[1] * 131 + c.w[0] * 17 + c.groups + c.strides[0] + c.padding[0]));
  Attrs attrs{{"strides", AttrValue::ints(c.strides)},
              {"padding", AttrValue::ints(c.padding)},
              {"dilation", AttrValue::ints(c.dilation)},
              {"groups", AttrValue(c.groups)}};
  if (!c.output_padding.empty()) attrs["output_padding"] = AttrValue::ints(c.output_padding);
  LegalizeCheckOptions opts;
  opts.rtol = c.dtype == DType::f32 ? 1e-4 : 4e-3;
  opts.atol = c.dtype == DType::f32 ? 1e-4 : 4e-3;
  SCOPED_TRACE(std::string(op) + " x " + mlcc::test::shapeText(c.x) + " w " + mlcc::test::shapeText(c.w));
  expectLegalizeMatchesKernel(op, {randomTensor(rng, c.dtype, c.x), randomTensor(rng, c.dtype, c.w)}, attrs,
                              opts);
}

}  // namespace

TEST(LegalizeConv, EveryOpHasALegalization) { expectEveryOpHasALegalization({"conv2d", "conv2d_transpose"}); }

TEST(LegalizeConv, Conv2dBasicAndPointwise) {
  check("conv2d", {.x = {2, 3, 6, 6}, .w = {4, 3, 3, 3}});
  check("conv2d", {.x = {1, 4, 5, 5}, .w = {3, 4, 1, 1}});
}

TEST(LegalizeConv, Conv2dStridesPaddingDilation) {
  check("conv2d", {.x = {2, 3, 7, 7}, .w = {4, 3, 3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
  check("conv2d", {.x = {1, 2, 7, 6}, .w = {3, 2, 3, 2}, .strides = {2, 1}, .padding = {2, 0, 1, 3}});
  check("conv2d", {.x = {1, 2, 9, 8}, .w = {2, 2, 3, 3}, .padding = {2, 2, 2, 2}, .dilation = {2, 3}});
  check("conv2d", {.x = {2, 2, 10, 9},
                   .w = {2, 2, 3, 2},
                   .strides = {3, 2},
                   .padding = {1, 0, 2, 1},
                   .dilation = {2, 2}});
}

TEST(LegalizeConv, Conv2dGroups) {
  check("conv2d", {.x = {2, 4, 6, 6}, .w = {6, 2, 3, 3}, .padding = {1, 1, 1, 1}, .groups = 2});
  // depthwise, with a channel multiplier of 2
  check("conv2d",
        {.x = {1, 3, 6, 6}, .w = {3, 1, 3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}, .groups = 3});
  check("conv2d", {.x = {1, 3, 5, 5}, .w = {6, 1, 3, 3}, .padding = {1, 1, 1, 1}, .groups = 3});
}

TEST(LegalizeConv, Conv2dReducedPrecision) {
  check("conv2d", {.x = {1, 3, 5, 5}, .w = {2, 3, 3, 3}, .padding = {1, 1, 1, 1}, .dtype = DType::f16});
  check("conv2d", {.x = {1, 2, 5, 5}, .w = {2, 2, 3, 3}, .strides = {2, 2}, .dtype = DType::bf16});
}

TEST(LegalizeConv, Conv2dIntegers) {
  check("conv2d", {.x = {1, 4, 6, 5},
                   .w = {4, 2, 3, 2},
                   .strides = {2, 1},
                   .padding = {1, 0, 1, 1},
                   .groups = 2,
                   .dtype = DType::i32});
  check("conv2d", {.x = {1, 2, 4, 4}, .w = {3, 2, 2, 2}, .dtype = DType::i64});
}

TEST(LegalizeConv, Conv2dStagesAreNamedAsInTopi) {
  Attrs attrs{{"padding", AttrValue::ints({1, 1, 1, 1})}};
  auto f = mlcc::ops::legalizeOp("conv2d",
                                 {Type::tensor(DType::f32, std::vector<int64_t>{1, 3, 6, 6}),
                                  Type::tensor(DType::f32, std::vector<int64_t>{4, 3, 3, 3})},
                                 attrs, "conv");
  std::string text = mlcc::ir::printFunction(f);
  EXPECT_NE(text.find("block \"pad\""), std::string::npos) << text;
  EXPECT_NE(text.find("block \"conv2d\""), std::string::npos) << text;
  EXPECT_EQ(f.allocs.size(), 1u) << text;
}

TEST(LegalizeConv, Conv2dTranspose) {
  check("conv2d_transpose", {.x = {2, 3, 4, 4}, .w = {3, 2, 3, 3}});
  check("conv2d_transpose",
        {.x = {1, 2, 3, 4}, .w = {2, 3, 3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
  check("conv2d_transpose", {.x = {1, 2, 3, 3},
                             .w = {2, 2, 3, 2},
                             .strides = {2, 3},
                             .padding = {1, 0, 0, 1},
                             .output_padding = {1, 2}});
  check("conv2d_transpose", {.x = {1, 2, 4, 3}, .w = {2, 2, 2, 3}, .strides = {2, 1}, .dilation = {2, 2}});
}

TEST(LegalizeConv, Conv2dTransposeGroupsAndPrecision) {
  check("conv2d_transpose",
        {.x = {2, 4, 3, 3}, .w = {4, 3, 3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}, .groups = 2});
  check("conv2d_transpose",
        {.x = {1, 3, 4, 4}, .w = {3, 1, 3, 3}, .strides = {2, 2}, .groups = 3, .output_padding = {1, 1}});
  check("conv2d_transpose", {.x = {1, 2, 3, 3}, .w = {2, 2, 3, 3}, .strides = {2, 2}, .dtype = DType::f16});
}

TEST(LegalizeConv, SymbolicSpatialDims) {
  std::mt19937 rng(9);
  for (int64_t h : {7, 8}) {
    Tensor x = randomTensor(rng, DType::f32, {1, 4, h, h + 1});
    expectSymbolicSpatialMatchesKernel("conv2d", {x, randomTensor(rng, DType::f32, {4, 2, 3, 3})},
                                       {{"padding", AttrValue::ints({1, 0, 1, 2})},
                                        {"strides", AttrValue::ints({2, 2})},
                                        {"groups", AttrValue(int64_t{2})}});
    expectSymbolicSpatialMatchesKernel(
        "conv2d_transpose", {x, randomTensor(rng, DType::f32, {4, 3, 3, 3})},
        {{"padding", AttrValue::ints({1, 0, 1, 0})}, {"strides", AttrValue::ints({2, 2})}});
  }
}
