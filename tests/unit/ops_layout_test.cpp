// Layouts and the blocked-layout ops (libs/ops/src/layout.cpp, conv.cpp):
// layout strings, layout_transform's kernel against index loops written
// out here, round trips, its legalization against the kernel, conv2d_nchwc
// against conv2d and dense_pack against dense on the same data moved by
// hand, and the errors.
#include <gtest/gtest.h>

#include <random>

#include "legalize_check.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/layout.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;
using mlcc::ops::Layout;

namespace {

Attrs layouts(const std::string& from, const std::string& to) {
  return {{"src_layout", AttrValue(from)}, {"dst_layout", AttrValue(to)}};
}

Tensor transform(const Tensor& x, const std::string& from, const std::string& to) {
  return mlcc::ops::computeOp("layout_transform", {x}, layouts(from, to)).at(0);
}

Tensor iota(DType t, std::vector<int64_t> shape) {
  Tensor x = Tensor::zeros(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i % 251));
  return x;
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlcc::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Layout, ParsesAndPrints) {
  Layout l = Layout::parse("OIHW16i8o");
  EXPECT_EQ(l.rank(), 6u);
  EXPECT_EQ(l.str(), "OIHW16i8o");
  EXPECT_EQ(l.primal(), "OIHW");
  EXPECT_EQ(l.factorOf('I'), 16);
  EXPECT_EQ(l.factorOf('O'), 8);
  EXPECT_EQ(l.factorOf('H'), 0);
  EXPECT_EQ(l.position('i'), 4);
  EXPECT_EQ(mlcc::ops::nchwcLayout(4), "NCHW4c");
  EXPECT_EQ(Layout::parse(mlcc::ops::nchwcLayout(16)).factorOf('C'), 16);
}

TEST(Layout, BadStringsAreErrors) {
  EXPECT_NE(errorOf([] { Layout::parse("NCHW16"); }).find("followed by a lower-case axis"),
            std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse("NCHWc"); }).find("needs a factor"), std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse("NCHW4d"); }).find("has no primal axis 'D'"), std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse("NCCW"); }).find("appears twice"), std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse("N2CHW"); }).find("primal axis 'C' takes no factor"),
            std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse("NC-HW"); }).find("is no axis"), std::string::npos);
  EXPECT_NE(errorOf([] { Layout::parse(""); }).find("no axes"), std::string::npos);
}

TEST(LayoutTransform, TypeInferenceAndErrors) {
  auto infer = [](std::vector<int64_t> shape, const std::string& from, const std::string& to) {
    return printType(
        mlcc::ops::inferOpType("layout_transform", {Type::tensor(DType::f32, shape)}, layouts(from, to)));
  };
  EXPECT_EQ(infer({2, 32, 7, 5}, "NCHW", "NCHW16c"), "f32[2, 2, 7, 5, 16]");
  EXPECT_EQ(infer({2, 2, 7, 5, 16}, "NCHW16c", "NCHW"), "f32[2, 32, 7, 5]");
  EXPECT_EQ(infer({32, 6, 3, 3}, "OIHW", "OIHW3i8o"), "f32[4, 2, 3, 3, 3, 8]");
  EXPECT_EQ(infer({24, 1, 1}, "CHW", "CHW8c"), "f32[3, 1, 1, 8]");
  EXPECT_EQ(infer({2, 3, 4}, "ABC", "CAB"), "f32[4, 2, 3]");
  EXPECT_NE(errorOf([&] {
              infer({1, 6, 2, 2}, "NCHW", "NCHW4c");
            }).find("6 elements, not a multiple of the block of 4"),
            std::string::npos);
  EXPECT_EQ(infer({1, 8, 2, 3}, "NCHW", "NHWC4c"), "f32[1, 2, 3, 2, 4]");
  EXPECT_NE(errorOf([&] {
              infer({1, 8, 2, 2}, "NCHW", "NCHD");
            }).find("different primal axes"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              infer({1, 2, 2, 2, 4}, "NCHW4c", "NCHW2c");
            }).find("not supported yet"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { infer({1, 8, 2}, "NCHW", "NCHW4c"); }).find("has rank 3"), std::string::npos);
  EXPECT_NE(errorOf([&] {
              infer({1, 8, 2, 2}, "NCHW", "NCHW4");
            }).find("op 'layout_transform': layout 'NCHW4'"),
            std::string::npos);
  // A symbolic channel count cannot be blocked; other symbolic axes pass.
  Type sym = Type::tensor(
      DType::f32, {makeVar("n"), mlcc::ops::dimConst(8), mlcc::ops::dimConst(3), mlcc::ops::dimConst(3)});
  EXPECT_EQ(printType(mlcc::ops::inferOpType("layout_transform", {sym}, layouts("NCHW", "NCHW4c"))),
            "f32[n, 2, 3, 3, 4]");
  Type symc = Type::tensor(
      DType::f32, {mlcc::ops::dimConst(1), makeVar("c"), mlcc::ops::dimConst(3), mlcc::ops::dimConst(3)});
  EXPECT_THROW(mlcc::ops::inferOpType("layout_transform", {symc}, layouts("NCHW", "NCHW4c")), mlcc::Error);
}

TEST(LayoutTransform, KernelMovesEachElementWhereTheLayoutsSay) {
  const int64_t N = 2, C = 6, H = 3, W = 4, b = 3;
  Tensor x = iota(DType::f32, {N, C, H, W});
  Tensor y = transform(x, "NCHW", "NCHW3c");
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{N, C / b, H, W, b}));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          ASSERT_EQ(y.at((((n * (C / b) + c / b) * H + h) * W + w) * b + c % b),
                    x.at(((n * C + c) * H + h) * W + w));
  // Weights: OIHW -> OIHW{i}i{o}o.
  const int64_t O = 4, I = 6, K = 2, ib = 2, ob = 4;
  Tensor w = iota(DType::f32, {O, I, K, K});
  Tensor p = transform(w, "OIHW", "OIHW2i4o");
  ASSERT_EQ(p.shape(), (std::vector<int64_t>{O / ob, I / ib, K, K, ib, ob}));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i)
      for (int64_t kh = 0; kh < K; ++kh)
        for (int64_t kw = 0; kw < K; ++kw)
          ASSERT_EQ(p.at(((((o / ob * (I / ib) + i / ib) * K + kh) * K + kw) * ib + i % ib) * ob + o % ob),
                    w.at(((o * I + i) * K + kh) * K + kw));
}

TEST(LayoutTransform, RoundTripsForEveryDtype) {
  for (DType t : {DType::f32, DType::f16, DType::i8, DType::i64, DType::boolean}) {
    Tensor x = iota(t, {2, 8, 3, 5});
    Tensor back = transform(transform(x, "NCHW", "NCHW4c"), "NCHW4c", "NCHW");
    ASSERT_EQ(back.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i)
      ASSERT_EQ(back.at(i), x.at(i)) << dtypeName(t) << " element " << i;
    Tensor w = iota(t, {8, 4, 3, 3});
    Tensor wb = transform(transform(w, "OIHW", "OIHW2i4o"), "OIHW2i4o", "OIHW");
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(wb.at(i), w.at(i)) << dtypeName(t) << " element " << i;
  }
}

TEST(LayoutTransform, LegalizationMatchesTheKernel) {
  expectEveryOpHasALegalization({"layout_transform", "conv2d_nchwc", "dense_pack"});
  std::mt19937 rng(5);
  LegalizeCheckOptions opts;
  for (const auto& [shape, from, to] :
       std::vector<std::tuple<std::vector<int64_t>, std::string, std::string>>{
           {{2, 8, 3, 5}, "NCHW", "NCHW4c"},
           {{2, 2, 3, 5, 4}, "NCHW4c", "NCHW"},
           {{6, 4, 3, 3}, "OIHW", "OIHW2i3o"},
           {{12, 1, 1}, "CHW", "CHW4c"},
           {{2, 3, 4}, "ABC", "CBA"}}) {
    SCOPED_TRACE(from + " -> " + to);
    // (a symbolic first axis cannot be blocked: O of OIHW2i3o, C of CHW4c)
    opts.also_symbolic_batch = from != "OIHW" && from != "CHW";
    expectLegalizeMatchesKernel("layout_transform", {randomTensor(rng, DType::f32, shape)}, layouts(from, to),
                                opts);
  }
}

namespace {

// conv2d_nchwc on blocked copies of (x, w) equals conv2d on (x, w), blocked.
void expectNchwcMatchesConv2d(std::vector<int64_t> xs, std::vector<int64_t> ws, int64_t ib, int64_t ob,
                              Attrs attrs) {
  std::mt19937 rng(static_cast<unsigned>(xs[1] * 7 + ws[0]));
  Tensor x = randomTensor(rng, DType::f32, xs), w = randomTensor(rng, DType::f32, ws);
  const bool depthwise = attrs.count("groups") && attrs.at("groups").asInt() == xs[1] && ws[1] == 1;
  const std::string wl = "OIHW" + std::to_string(depthwise ? 1 : ib) + "i" + std::to_string(ob) + "o";
  Tensor xb = transform(x, "NCHW", "NCHW" + std::to_string(ib) + "c"), wb = transform(w, "OIHW", wl);
  Tensor want = transform(mlcc::ops::computeOp("conv2d", {x, w}, attrs).at(0), "NCHW",
                          "NCHW" + std::to_string(ob) + "c");
  Tensor got = mlcc::ops::computeOp("conv2d_nchwc", {xb, wb}, attrs).at(0);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.at(i), want.at(i), 1e-5) << i;
  LegalizeCheckOptions opts;
  opts.rtol = opts.atol = 1e-4;
  expectLegalizeMatchesKernel("conv2d_nchwc", {xb, wb}, attrs, opts);
}

}  // namespace

TEST(Conv2dNchwc, MatchesConv2dAndLegalizes) {
  expectNchwcMatchesConv2d({1, 6, 7, 7}, {8, 6, 3, 3}, 3, 4, {{"padding", AttrValue::ints({1, 1, 1, 1})}});
  expectNchwcMatchesConv2d({2, 4, 9, 8}, {4, 4, 3, 2}, 4, 2,
                           {{"padding", AttrValue::ints({2, 0, 1, 1})},
                            {"strides", AttrValue::ints({2, 3})},
                            {"dilation", AttrValue::ints({2, 1})}});
  expectNchwcMatchesConv2d({1, 3, 6, 6}, {8, 3, 1, 1}, 3, 8, {});
  // depthwise: weight [C, 1, KH, KW] -> [C/b, 1, KH, KW, 1, b]
  expectNchwcMatchesConv2d({1, 8, 7, 7}, {8, 1, 3, 3}, 4, 4,
                           {{"padding", AttrValue::ints({1, 1, 1, 1})},
                            {"strides", AttrValue::ints({2, 2})},
                            {"groups", AttrValue(int64_t{8})}});
  // grouped, blocks dividing each group's channels: 3 groups of 4 input and
  // 4 output channels in blocks of 2 and 4 (weight [O/4, 4/2, KH, KW, 2, 4]);
  // 2 groups of 8 -> 6 in blocks of 8 and 3 (RegNet's 8-channel groups).
  expectNchwcMatchesConv2d({2, 12, 7, 6}, {12, 4, 3, 3}, 2, 4,
                           {{"padding", AttrValue::ints({1, 1, 1, 1})},
                            {"strides", AttrValue::ints({2, 1})},
                            {"groups", AttrValue(int64_t{3})}});
  expectNchwcMatchesConv2d({1, 16, 5, 5}, {12, 8, 3, 3}, 8, 3,
                           {{"padding", AttrValue::ints({1, 0, 1, 2})}, {"groups", AttrValue(int64_t{2})}});
}

TEST(Conv2dNchwc, TypeErrors) {
  auto infer = [](std::vector<int64_t> x, std::vector<int64_t> w, int64_t groups) {
    return printType(mlcc::ops::inferOpType("conv2d_nchwc",
                                            {Type::tensor(DType::f32, x), Type::tensor(DType::f32, w)},
                                            {{"groups", AttrValue(groups)}}));
  };
  EXPECT_EQ(infer({1, 2, 5, 5, 4}, {3, 2, 3, 3, 4, 8}, 1), "f32[1, 3, 3, 3, 8]");
  EXPECT_NE(errorOf([&] {
              infer({1, 2, 5, 5}, {3, 2, 3, 3, 4, 8}, 1);
            }).find("must have rank 5"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              infer({1, 2, 5, 5, 4}, {3, 2, 3, 3, 2, 8}, 1);
            }).find("disagree on the input channels"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              infer({1, 2, 5, 5, 4}, {2, 1, 3, 3, 2, 4}, 2);
            }).find("blocks that divide each group's channels"),
            std::string::npos);
  EXPECT_EQ(infer({1, 2, 5, 5, 4}, {2, 1, 3, 3, 4, 4}, 2), "f32[1, 2, 3, 3, 4]");  // 2 groups of one block
  EXPECT_EQ(infer({1, 2, 5, 5, 4}, {2, 1, 3, 3, 1, 4}, 8), "f32[1, 2, 3, 3, 4]");
}

// dense_pack(x, w in NK{b}n) equals dense(x, w), and legalizes; a matmul's
// [K, N] weight packs the same way (KN -> NK{b}n).
TEST(DensePack, MatchesDenseAndLegalizes) {
  std::mt19937 rng(11);
  for (const auto& [xs, n, b] : std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t>>{
           {{5, 12}, 8, 4}, {{2, 3, 7}, 32, 16}, {{9}, 6, 3}}) {
    const int64_t k = xs.back();
    Tensor x = randomTensor(rng, DType::f32, xs), w = randomTensor(rng, DType::f32, {n, k});
    const std::string packed = "NK" + std::to_string(b) + "n";
    Tensor wp = transform(w, "NK", packed);
    EXPECT_EQ(wp.shape(), (std::vector<int64_t>{n / b, k, b}));
    Tensor want = mlcc::ops::computeOp("dense", {x, w}, {}).at(0);
    Tensor got = mlcc::ops::computeOp("dense_pack", {x, wp}, {}).at(0);
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.at(i), want.at(i), 1e-5) << i;
    // The same weight as a matmul's [K, N].
    Tensor wt = transform(w, "NK", "KN");
    Tensor from_kn = transform(wt, "KN", packed);
    for (int64_t i = 0; i < wp.numel(); ++i) ASSERT_EQ(from_kn.at(i), wp.at(i)) << i;
    LegalizeCheckOptions opts;
    opts.rtol = opts.atol = 1e-4;
    opts.also_symbolic_batch = false;  // (it would make the weight's panel count symbolic too)
    expectLegalizeMatchesKernel("dense_pack", {x, wp}, {}, opts);
  }
}

TEST(DensePack, TypeErrors) {
  auto infer = [](std::vector<int64_t> x, std::vector<int64_t> w) {
    return printType(
        mlcc::ops::inferOpType("dense_pack", {Type::tensor(DType::f32, x), Type::tensor(DType::f32, w)}, {}));
  };
  EXPECT_EQ(infer({4, 7, 12}, {2, 12, 16}), "f32[4, 7, 32]");
  EXPECT_NE(errorOf([&] { infer({4, 12}, {24, 12}); }).find("must have rank 3"), std::string::npos);
  EXPECT_NE(errorOf([&] {
              infer({4, 12}, {2, 10, 16});
            }).find("x has 12 features but the packed weight"),
            std::string::npos);
}

// The pools with layout = "NCHW{b}c" compute the NCHW pool, blocked.
TEST(PoolBlocked, MatchesNchwAndLegalizes) {
  std::mt19937 rng(11);
  Tensor x = randomTensor(rng, DType::f32, {2, 8, 7, 6});
  Tensor xb = transform(x, "NCHW", "NCHW4c");
  for (const auto& [op, attrs] :
       std::vector<std::pair<std::string, Attrs>>{{"max_pool2d",
                                                   {{"pool_size", AttrValue::ints({3, 3})},
                                                    {"strides", AttrValue::ints({2, 2})},
                                                    {"padding", AttrValue::ints({1, 1, 1, 1})}}},
                                                  {"avg_pool2d",
                                                   {{"pool_size", AttrValue::ints({2, 3})},
                                                    {"padding", AttrValue::ints({1, 0, 1, 1})},
                                                    {"ceil_mode", AttrValue(true)}}},
                                                  {"global_avg_pool2d", {}},
                                                  {"global_max_pool2d", {}}}) {
    SCOPED_TRACE(op);
    Attrs blocked = attrs;
    blocked["layout"] = AttrValue("NCHW4c");
    Tensor want = transform(mlcc::ops::computeOp(op, {x}, attrs).at(0), "NCHW", "NCHW4c");
    Tensor got = mlcc::ops::computeOp(op, {xb}, blocked).at(0);
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_NEAR(got.at(i), want.at(i), 1e-6) << i;
    LegalizeCheckOptions opts;
    expectLegalizeMatchesKernel(op, {xb}, blocked, opts);
  }
  EXPECT_NE(errorOf([&] {
              mlcc::ops::computeOp("max_pool2d", {xb},
                                   {{"pool_size", AttrValue::ints({2, 2})}, {"layout", AttrValue("NHWC")}});
            }).find("neither NCHW nor NCHW{b}c"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              mlcc::ops::computeOp("global_max_pool2d", {xb}, {{"layout", AttrValue("NCHW8c")}});
            }).find("does not have the layout's block of 8"),
            std::string::npos);
}
