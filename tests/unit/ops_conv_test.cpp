// The convolution ops (conv2d, conv2d_transpose): type inference with a
// symbolic batch, error messages, FLOP counts, and reference kernels against
// torch.nn.functional on seeded random inputs (all cases in one python run),
// plus an informational timing of a ResNet-18-sized 3x3 conv.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

// Floats in [-1, 1), integers in [-5, 5].
const mlcc::test::RandomRange kRange{-1, 1, -5, 5};

Type t(std::vector<int64_t> s, DType d = DType::f32) { return Type::tensor(d, s); }

Attrs convAttrs(std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                int64_t groups) {
  return {{"strides", AttrValue::ints(strides)},
          {"padding", AttrValue::ints(padding)},
          {"dilation", AttrValue::ints(dilation)},
          {"groups", AttrValue(groups)}};
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += std::to_string(v[i]) + ",";
  return s + ")";
}

TEST(OpsConv, Registered) {
  const auto* conv = mlcc::ops::findOp("conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->pattern, mlcc::ops::OpPattern::OutEwiseFusable);
  Attrs full = mlcc::ops::normalizeAttrs(*conv, {});
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("strides")), "[1, 1]");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("padding")), "[0, 0, 0, 0]");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("dilation")), "[1, 1]");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("groups")), "1");
  const auto* tr = mlcc::ops::findOp("conv2d_transpose");
  ASSERT_NE(tr, nullptr);
  EXPECT_EQ(tr->pattern, mlcc::ops::OpPattern::OutEwiseFusable);
  EXPECT_EQ(mlcc::ir::printAttrValue(mlcc::ops::normalizeAttrs(*tr, {}).at("output_padding")), "[0, 0]");
}

TEST(OpsConv, Types) {
  auto n = mlcc::ir::makeVar("n");
  auto i = [](int64_t v) { return mlcc::ir::makeInt(v); };
  Type x = Type::tensor(DType::f32, {n, i(3), i(224), i(224)});
  Type out =
      mlcc::ops::inferOpType("conv2d", {x, t({64, 3, 7, 7})}, convAttrs({2, 2}, {3, 3, 3, 3}, {1, 1}, 1));
  EXPECT_EQ(mlcc::ir::printType(out), "f32[n, 64, 112, 112]");
  EXPECT_EQ(out.shape[0], n);
  // asymmetric padding, dilation, groups
  EXPECT_EQ(mlcc::ir::printType(mlcc::ops::inferOpType("conv2d", {t({1, 4, 10, 11}), t({6, 2, 3, 2})},
                                                       convAttrs({2, 3}, {1, 0, 2, 1}, {2, 1}, 2))),
            "f32[1, 6, 5, 4]");
  // symbolic spatial dims stay symbolic expressions
  auto h = mlcc::ir::makeVar("h");
  EXPECT_EQ(mlcc::ir::printType(mlcc::ops::inferOpType(
                "conv2d", {Type::tensor(DType::f32, {n, i(8), h, i(9)}), t({8, 8, 3, 3})},
                convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1))),
            "f32[n, 8, h, 9]");
  EXPECT_EQ(mlcc::ir::printType(
                mlcc::ops::inferOpType("conv2d", {Type::tensor(DType::f32, {n, i(8), h, h}), t({8, 8, 3, 3})},
                                       convAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 1))),
            "f32[n, 8, (h + 1) / 2, (h + 1) / 2]");
  Attrs tattrs = convAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
  tattrs["output_padding"] = AttrValue::ints({1, 1});
  EXPECT_EQ(
      mlcc::ir::printType(mlcc::ops::inferOpType(
          "conv2d_transpose", {Type::tensor(DType::f32, {n, i(16), i(7), i(7)}), t({16, 8, 3, 3})}, tattrs)),
      "f32[n, 8, 14, 14]");
}

TEST(OpsConv, Errors) {
  EXPECT_EQ(inferError("conv2d", {t({1, 3, 8, 8}), t({8, 4, 3, 3})}),
            "op 'conv2d': input has 3 channels but the weight expects 4 (groups = 1)");
  EXPECT_EQ(
      inferError("conv2d", {t({1, 3, 8, 8}), t({8, 1, 3, 3})}, convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)),
      "op 'conv2d': groups = 2 does not divide the 3 input channels");
  EXPECT_EQ(
      inferError("conv2d", {t({1, 4, 8, 8}), t({6, 1, 3, 3})}, convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 4)),
      "op 'conv2d': groups = 4 does not divide the 6 output channels of the weight");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 2, 8}), t({6, 4, 3, 3})}),
            "op 'conv2d': the output height would be 0, not positive");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8}), t({6, 4, 3, 3})}),
            "op 'conv2d': the input must have rank 4, not f32[1, 4, 8]");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8, 8}, DType::u8), t({6, 4, 3, 3}, DType::u8)}),
            "op 'conv2d': the input must be a float, i32 or i64 tensor (8-bit integers: widen them to i32 "
            "first), not u8[1, 4, 8, 8]");
  EXPECT_EQ(inferError("conv2d_transpose", {t({1, 4, 8, 8}, DType::i32), t({4, 6, 3, 3}, DType::i32)}),
            "op 'conv2d_transpose': the input must be a float tensor (f32, f16, bf16), not i32[1, 4, 8, 8]");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8, 8}), t({6, 4, 3, 3})}, {{"strides", AttrValue::ints({1})}}),
            "op 'conv2d': attribute 'strides' must have 2 items, not 1");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8, 8}), t({6, 4, 3, 3})}, {{"strides", AttrValue::ints({0, 1})}}),
            "op 'conv2d': attribute 'strides' items must be between 1 and 2147483648, not 0");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8, 8}), t({6, 4, 3, 3})}, {{"groups", AttrValue(int64_t{0})}}),
            "op 'conv2d': attribute 'groups' must be >= 1, not 0");
  EXPECT_EQ(inferError("conv2d", {t({1, 4, 8, 8}), t({6, 4, 3, 3})}, {{"padding", AttrValue::ints({1, 1})}}),
            "op 'conv2d': attribute 'padding' must have 4 items, not 2");
  EXPECT_EQ(
      inferError("conv2d_transpose", {t({1, 4, 8, 8}), t({3, 2, 3, 3})}),
      "op 'conv2d_transpose': input has 4 channels but the weight expects 3 (its shape is [C, O/groups, KH, "
      "KW])");
  EXPECT_EQ(inferError("conv2d_transpose", {t({1, 3, 8, 8}), t({3, 2, 3, 3})},
                       convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)),
            "op 'conv2d_transpose': groups = 2 does not divide the 3 input channels");
}

// No output element: the kernels return at once, without the im2col buffer,
// whose size does not depend on the batch or the output channels (an empty
// batch of 4096-channel 64x64 windows over 65536x65536 images once asked for
// exabytes; a fuzzed model folded at import asked for 4 GB).
TEST(OpsConv, EmptyOutputAllocatesNothing) {
  Tensor x = Tensor::zeros(DType::f32, {0, 4096, 65536, 65536});
  Tensor w = Tensor::zeros(DType::f32, {0, 4096, 64, 64});
  auto y = mlcc::ops::computeOp("conv2d", {x, w}, convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1));
  EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{0, 0, 65473, 65473}));
  Tensor wt = Tensor::zeros(DType::f32, {4096, 0, 64, 64});
  Attrs at = convAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  at["output_padding"] = AttrValue::ints({0, 0});
  auto yt = mlcc::ops::computeOp("conv2d_transpose", {x, wt}, at);
  EXPECT_EQ(yt[0].shape(), (std::vector<int64_t>{0, 0, 65599, 65599}));
}

TEST(OpsConv, Flops) {
  const auto* conv = mlcc::ops::findOp("conv2d");
  EXPECT_EQ(conv->flops({t({1, 64, 56, 56}), t({64, 64, 3, 3})}, t({1, 64, 56, 56}), {}),
            2LL * 64 * 56 * 56 * 64 * 9);
  EXPECT_EQ(conv->flops({t({2, 32, 8, 8}), t({32, 1, 3, 3})}, t({2, 32, 8, 8}), {}), 2LL * 2 * 32 * 64 * 9);
  const auto* tr = mlcc::ops::findOp("conv2d_transpose");
  EXPECT_EQ(tr->flops({t({1, 16, 7, 7}), t({16, 8, 3, 3})}, t({1, 8, 14, 14}), {}), 2LL * 16 * 49 * 8 * 9);
}

TEST(OpsConv, AgainstTorch) {
  if (std::string why = mlcc::test::torchUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(4321);
  auto r = [&](std::vector<int64_t> s, DType d = DType::f32) { return randomTensor(rng, d, s, kRange); };
  std::vector<RefCase> cases;
  // name, x shape, w shape, strides, padding (t, l, b, r), dilation, groups
  auto conv = [&](std::string name, std::vector<int64_t> xs, std::vector<int64_t> ws, std::vector<int64_t> s,
                  std::vector<int64_t> p, std::vector<int64_t> d, int64_t g, DType dt = DType::f32) {
    std::string pad = "F.pad(t0, " + list({p[1], p[3], p[0], p[2]}) + ")";
    cases.push_back({"conv2d",
                     {r(xs, dt), r(ws, dt)},
                     convAttrs(s, p, d, g),
                     operandExpr("F.conv2d(" + pad + ".float(), t1.float(), stride=" + list(s) +
                                 ", dilation=" + list(d) + ", groups=" + std::to_string(g) + ")"),
                     1e-4,
                     1e-4,
                     name});
    if (dt != DType::f32) cases.back().rtol = cases.back().atol = isFloat(dt) ? 2e-2 : 0;
  };
  conv("conv_plain", {1, 3, 9, 10}, {5, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  conv("conv_pad1", {2, 8, 12, 12}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  conv("conv_stride2", {1, 4, 15, 16}, {6, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
  conv("conv_stride_asym", {1, 4, 15, 16}, {6, 4, 3, 2}, {2, 3}, {0, 0, 0, 0}, {1, 1}, 1);
  conv("conv_pad_asym", {1, 3, 11, 9}, {4, 3, 3, 3}, {1, 1}, {2, 0, 1, 3}, {1, 1}, 1);
  conv("conv_dilation", {1, 3, 16, 16}, {4, 3, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1);
  conv("conv_dilation_asym", {1, 3, 16, 17}, {4, 3, 3, 2}, {2, 1}, {1, 2, 0, 1}, {3, 2}, 1);
  conv("conv_groups2", {2, 8, 10, 10}, {6, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2);
  conv("conv_depthwise", {1, 16, 14, 14}, {16, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 16);
  conv("conv_depthwise_mult", {1, 8, 14, 14}, {16, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 8);
  conv("conv_1x1", {2, 32, 7, 7}, {20, 32, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  conv("conv_1x1_stride2", {1, 32, 8, 8}, {20, 32, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1);
  conv("conv_7x7_stem", {1, 3, 64, 64}, {16, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1);
  conv("conv_big_k", {1, 64, 14, 14}, {70, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  conv("conv_f16", {1, 4, 8, 8}, {4, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, DType::f16);
  // i32 (ConvInteger, QLinearConv): exact, the sums of small products exact in torch's f32 too.
  conv("conv_i32", {1, 4, 7, 7}, {6, 2, 3, 3}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2, DType::i32);
  // conv2d_transpose: torch pads symmetrically, so asymmetric padding crops
  // the full (padding 0) result.
  auto tconv = [&](std::string name, std::vector<int64_t> xs, std::vector<int64_t> ws, std::vector<int64_t> s,
                   std::vector<int64_t> p, std::vector<int64_t> op, std::vector<int64_t> d, int64_t g) {
    Attrs attrs = convAttrs(s, p, d, g);
    attrs["output_padding"] = AttrValue::ints(op);
    // Full output of padding 0 and output_padding 0, then crop and extend.
    int64_t fh = (xs[2] - 1) * s[0] + d[0] * (ws[2] - 1) + 1;
    int64_t fw = (xs[3] - 1) * s[1] + d[1] * (ws[3] - 1) + 1;
    std::string full = "F.conv_transpose2d(t0, t1, stride=" + list(s) + ", dilation=" + list(d) +
                       ", groups=" + std::to_string(g) + ")";
    // output_padding extends the bottom/right with zeros (no input reaches there).
    std::string ext =
        "F.pad(" + full + ", (0, " + std::to_string(op[1]) + ", 0, " + std::to_string(op[0]) + "))";
    std::string crop = ext + "[:, :, " + std::to_string(p[0]) + ":" + std::to_string(fh + op[0] - p[2]) +
                       ", " + std::to_string(p[1]) + ":" + std::to_string(fw + op[1] - p[3]) + "]";
    cases.push_back({"conv2d_transpose", {r(xs), r(ws)}, attrs, operandExpr(crop), 1e-4, 1e-4, name});
    // The symmetric cases also go through torch's own padding/output_padding.
    if (p[0] == p[2] && p[1] == p[3]) {
      cases.push_back({"conv2d_transpose", cases.back().inputs, attrs,
                       operandExpr("F.conv_transpose2d(t0, t1, stride=" + list(s) +
                                   ", padding=" + list({p[0], p[1]}) + ", output_padding=" + list(op) +
                                   ", dilation=" + list(d) + ", groups=" + std::to_string(g) + ")"),
                       1e-4, 1e-4, name + "_torch"});
    }
  };
  tconv("tconv_plain", {1, 4, 5, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 1);
  tconv("tconv_stride2", {2, 8, 7, 7}, {8, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1);
  tconv("tconv_stride_asym", {1, 3, 5, 6}, {3, 2, 4, 3}, {3, 2}, {1, 0, 1, 0}, {2, 1}, {1, 1}, 1);
  tconv("tconv_pad_asym", {1, 3, 6, 6}, {3, 2, 3, 3}, {2, 2}, {0, 1, 2, 0}, {1, 0}, {1, 1}, 1);
  tconv("tconv_dilation", {1, 3, 6, 5}, {3, 4, 3, 3}, {2, 1}, {1, 1, 1, 1}, {0, 0}, {2, 3}, 1);
  tconv("tconv_groups2", {1, 6, 5, 5}, {6, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 2);
  tconv("tconv_depthwise", {1, 4, 5, 5}, {4, 1, 4, 4}, {2, 2}, {1, 1, 1, 1}, {0, 0}, {1, 1}, 4);
  EXPECT_EQ(mlcc::test::runRefCases(cases, {.same_dtype = true}), static_cast<int>(cases.size()));
}

TEST(OpsConv, SpeedInfo) {
  // Not a timed assertion: prints the time of a ResNet-18-sized 3x3 conv.
  std::mt19937 rng(99);
  Tensor x = randomTensor(rng, DType::f32, {1, 64, 56, 56}, kRange);
  Tensor w = randomTensor(rng, DType::f32, {64, 64, 3, 3}, kRange);
  Attrs attrs = convAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  mlcc::ops::computeOp("conv2d", {x, w}, attrs);  // warm up
  auto start = std::chrono::steady_clock::now();
  const int reps = 3;
  for (int i = 0; i < reps; ++i) mlcc::ops::computeOp("conv2d", {x, w}, attrs);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / reps;
  double gflop = 2.0 * 64 * 56 * 56 * 64 * 9 / 1e9;
  std::cout << "[info] conv2d 1x64x56x56 -> 64, 3x3, pad 1, f32: " << ms << " ms (" << gflop / (ms / 1e3)
            << " GFLOP/s)\n";

  // All convolutions of ResNet-18 at batch 1 (224x224), once each.
  struct Layer {
    int64_t c, o, h, k, s, p, count;
  };
  const Layer layers[] = {{3, 64, 224, 7, 2, 3, 1},   {64, 64, 56, 3, 1, 1, 4},   {64, 128, 56, 3, 2, 1, 1},
                          {128, 128, 28, 3, 1, 1, 3}, {64, 128, 56, 1, 2, 0, 1},  {128, 256, 28, 3, 2, 1, 1},
                          {256, 256, 14, 3, 1, 1, 3}, {128, 256, 28, 1, 2, 0, 1}, {256, 512, 14, 3, 2, 1, 1},
                          {512, 512, 7, 3, 1, 1, 3},  {256, 512, 14, 1, 2, 0, 1}};
  start = std::chrono::steady_clock::now();
  for (const Layer& l : layers) {
    Tensor lx = randomTensor(rng, DType::f32, {1, l.c, l.h, l.h}, kRange);
    Tensor lw = randomTensor(rng, DType::f32, {l.o, l.c, l.k, l.k}, kRange);
    Attrs la = convAttrs({l.s, l.s}, {l.p, l.p, l.p, l.p}, {1, 1}, 1);
    for (int64_t i = 0; i < l.count; ++i) mlcc::ops::computeOp("conv2d", {lx, lw}, la);
  }
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[info] all 20 ResNet-18 convs (batch 1), including input generation: " << ms << " ms\n";
}

}  // namespace
