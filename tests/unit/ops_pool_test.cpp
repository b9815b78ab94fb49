// The pooling ops: type inference (symbolic batch, strides defaulting to
// pool_size, ceil_mode), error messages, FLOP counts, and reference kernels
// against torch.nn.functional on seeded random inputs (one python run).
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "numpy_reference.h"

using namespace mlcc::ir;
using namespace mlcc::test;

namespace {

// Floats in [-1, 1), integers in [-5, 5].
const mlcc::test::RandomRange kRange{-1, 1, -5, 5};

Type t(std::vector<int64_t> s, DType d = DType::f32) { return Type::tensor(d, s); }

std::string list(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += std::to_string(v[i]) + ",";
  return s + ")";
}

Attrs poolAttrs(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p,
                std::vector<int64_t> d = {1, 1}, bool ceil_mode = false) {
  Attrs a{{"pool_size", AttrValue::ints(k)},
          {"padding", AttrValue::ints(p)},
          {"dilation", AttrValue::ints(d)},
          {"ceil_mode", AttrValue(ceil_mode)}};
  if (!s.empty()) a["strides"] = AttrValue::ints(s);
  return a;
}

TEST(OpsPool, Registered) {
  using mlcc::ops::OpPattern;
  const std::pair<const char*, OpPattern> ops[] = {{"max_pool2d", OpPattern::Opaque},
                                                   {"avg_pool2d", OpPattern::Opaque},
                                                   {"global_avg_pool2d", OpPattern::Reduction},
                                                   {"global_max_pool2d", OpPattern::Reduction},
                                                   {"adaptive_avg_pool2d", OpPattern::Opaque}};
  for (const auto& [name, pattern] : ops) {
    const auto* def = mlcc::ops::findOp(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->pattern, pattern) << name;
  }
  Attrs full =
      mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("avg_pool2d"), {{"pool_size", AttrValue::ints({2, 2})}});
  EXPECT_EQ(full.count("strides"), 0u);  // resolved to pool_size by the op
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("padding")), "[0, 0, 0, 0]");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("dilation")), "[1, 1]");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("ceil_mode")), "false");
  EXPECT_EQ(mlcc::ir::printAttrValue(full.at("count_include_pad")), "false");
}

TEST(OpsPool, Types) {
  auto n = mlcc::ir::makeVar("n");
  auto i = [](int64_t v) { return mlcc::ir::makeInt(v); };
  Type x = Type::tensor(DType::f32, {n, i(64), i(112), i(112)});
  Type out = mlcc::ops::inferOpType("max_pool2d", {x}, poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  EXPECT_EQ(mlcc::ir::printType(out), "f32[n, 64, 56, 56]");
  EXPECT_EQ(out.shape[0], n);
  // strides default to pool_size
  EXPECT_EQ(inferred("avg_pool2d", {t({1, 2, 9, 8})}, poolAttrs({3, 2}, {}, {0, 0, 0, 0})),
            "f32[1, 2, 3, 4]");
  // ceil_mode, including the rule that drops a window starting in the bottom padding
  EXPECT_EQ(inferred("max_pool2d", {t({1, 1, 8, 8})}, poolAttrs({3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, true)),
            "f32[1, 1, 3, 3]");
  EXPECT_EQ(inferred("max_pool2d", {t({1, 1, 5, 5})}, poolAttrs({3, 3}, {3, 3}, {1, 1, 1, 1}, {1, 1}, true)),
            "f32[1, 1, 2, 2]");
  // dilation and asymmetric padding
  EXPECT_EQ(inferred("max_pool2d", {t({1, 1, 10, 11})}, poolAttrs({3, 2}, {1, 2}, {1, 0, 0, 1}, {2, 3})),
            "f32[1, 1, 7, 5]");
  // symbolic spatial dims
  auto h = mlcc::ir::makeVar("h");
  EXPECT_EQ(inferred("max_pool2d", {Type::tensor(DType::f32, {n, i(4), h, h})},
                     poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1})),
            "f32[n, 4, (h + 1) / 2, (h + 1) / 2]");
  EXPECT_EQ(inferred("global_avg_pool2d", {x}, {}), "f32[n, 64, 1, 1]");
  EXPECT_EQ(inferred("global_max_pool2d", {t({2, 3, 5, 5}, DType::f16)}, {}), "f16[2, 3, 1, 1]");
  EXPECT_EQ(inferred("adaptive_avg_pool2d", {x}, {{"output_size", AttrValue::ints({7, 5})}}),
            "f32[n, 64, 7, 5]");
}

TEST(OpsPool, Errors) {
  EXPECT_EQ(inferError("max_pool2d", {t({1, 1, 8, 8})}), "op 'max_pool2d' needs attribute 'pool_size'");
  EXPECT_EQ(inferError("max_pool2d", {t({1, 1, 2, 8})}, poolAttrs({3, 3}, {1, 1}, {0, 0, 0, 0})),
            "op 'max_pool2d': the padded input height 2 is smaller than the (dilated) window 3");
  EXPECT_EQ(inferError("avg_pool2d", {t({1, 1, 8, 8})}, poolAttrs({3}, {}, {0, 0, 0, 0})),
            "op 'avg_pool2d': attribute 'pool_size' must have 2 items, not 1");
  EXPECT_EQ(inferError("avg_pool2d", {t({1, 8, 8})}, poolAttrs({2, 2}, {}, {0, 0, 0, 0})),
            "op 'avg_pool2d': the input must have rank 4, not f32[1, 8, 8]");
  EXPECT_EQ(inferError("max_pool2d", {t({1, 1, 8, 8}, DType::i32)}, poolAttrs({2, 2}, {}, {0, 0, 0, 0})),
            "op 'max_pool2d': the input must be a float tensor (f32, f16, bf16), not i32[1, 1, 8, 8]");
  auto n = mlcc::ir::makeVar("n");
  auto h = mlcc::ir::makeVar("h");
  EXPECT_EQ(inferError("max_pool2d", {Type::tensor(DType::f32, {n, mlcc::ir::makeInt(1), h, h})},
                       poolAttrs({2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true)),
            "op 'max_pool2d': ceil_mode with a symbolic input height (h) is supported only when padding + "
            "stride <= the window");
  EXPECT_EQ(inferError("adaptive_avg_pool2d", {t({1, 1, 8, 8})}, {{"output_size", AttrValue::ints({0, 2})}}),
            "op 'adaptive_avg_pool2d': attribute 'output_size' items must be >= 1, not 0");
  EXPECT_EQ(
      inferError("avg_pool2d", {t({1, 1, 8, 8})}, {{"pool_size", AttrValue::ints({2, 2})}, {"axis", 1}}),
      "op 'avg_pool2d' has no attribute 'axis' (it takes: pool_size, strides, padding, dilation, ceil_mode, "
      "count_include_pad, layout)");
}

TEST(OpsPool, Flops) {
  EXPECT_EQ(mlcc::ops::findOp("max_pool2d")
                ->flops({t({1, 64, 112, 112})}, t({1, 64, 56, 56}), poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1})),
            64LL * 56 * 56 * 9);
  EXPECT_EQ(mlcc::ops::findOp("global_avg_pool2d")->flops({t({1, 512, 7, 7})}, t({1, 512, 1, 1}), {}),
            512LL * 49);
}

TEST(OpsPool, AgainstTorch) {
  if (std::string why = mlcc::test::torchUnavailable(); !why.empty()) GTEST_SKIP() << why;
  std::mt19937 rng(2024);
  auto r = [&](std::vector<int64_t> s, DType d = DType::f32) { return randomTensor(rng, d, s, kRange); };
  std::vector<RefCase> cases;
  // A case: op on inputs against a torch expression over t0 (tolerance 1e-4).
  auto add = [&](const std::string& name, const char* op, std::vector<Tensor> inputs, Attrs attrs,
                 const std::string& expr) {
    cases.push_back(
        {op, std::move(inputs), std::move(attrs), mlcc::test::operandExpr(expr), 1e-4, 1e-4, name});
  };
  // Symmetric padding: torch's own padding and ceil_mode.
  auto maxp = [&](std::string name, std::vector<int64_t> xs, std::vector<int64_t> k, std::vector<int64_t> s,
                  int64_t ph, int64_t pw, std::vector<int64_t> d, bool ceil) {
    add(name, "max_pool2d", {r(xs)}, poolAttrs(k, s, {ph, pw, ph, pw}, d, ceil),
        "F.max_pool2d(t0, " + list(k) + ", stride=" + list(s) + ", padding=" + list({ph, pw}) +
            ", dilation=" + list(d) + ", ceil_mode=" + (ceil ? "True" : "False") + ")");
  };
  maxp("max_resnet", {1, 8, 16, 16}, {3, 3}, {2, 2}, 1, 1, {1, 1}, false);
  maxp("max_2x2", {2, 3, 9, 8}, {2, 2}, {2, 2}, 0, 0, {1, 1}, false);
  maxp("max_ceil", {1, 3, 9, 8}, {2, 2}, {2, 2}, 0, 0, {1, 1}, true);
  maxp("max_ceil_pad_rule", {1, 2, 5, 5}, {3, 3}, {3, 3}, 1, 1, {1, 1}, true);
  maxp("max_ceil_partial", {1, 2, 8, 10}, {3, 3}, {3, 3}, 0, 1, {1, 1}, true);
  maxp("max_dilation", {1, 2, 12, 13}, {3, 2}, {1, 2}, 1, 1, {2, 3}, false);
  maxp("max_dilation_ceil", {1, 2, 12, 13}, {3, 3}, {2, 2}, 1, 1, {2, 2}, true);
  maxp("max_rect", {1, 2, 11, 7}, {3, 1}, {2, 1}, 1, 0, {1, 1}, false);
  // Asymmetric padding: pad with -inf first (no ceil_mode: torch's rule would
  // count the padding as input).
  {
    Tensor x = r({1, 3, 9, 10});
    add("max_pad_asym", "max_pool2d", {x}, poolAttrs({3, 3}, {2, 2}, {0, 1, 2, 0}),
        "F.max_pool2d(F.pad(t0, (1, 0, 0, 2), value=-float('inf')), (3, 3), stride=(2, 2))");
  }
  auto avgp = [&](std::string name, std::vector<int64_t> xs, std::vector<int64_t> k, std::vector<int64_t> s,
                  int64_t ph, int64_t pw, bool ceil, bool include) {
    Attrs a = poolAttrs(k, s, {ph, pw, ph, pw}, {1, 1}, ceil);
    a["count_include_pad"] = AttrValue(include);
    add(name, "avg_pool2d", {r(xs)}, a,
        "F.avg_pool2d(t0, " + list(k) + ", stride=" + list(s) + ", padding=" + list({ph, pw}) +
            ", ceil_mode=" + (ceil ? "True" : "False") +
            ", count_include_pad=" + (include ? "True" : "False") + ")");
  };
  avgp("avg_2x2", {2, 3, 8, 8}, {2, 2}, {2, 2}, 0, 0, false, false);
  avgp("avg_pad_exclude", {1, 3, 9, 9}, {3, 3}, {2, 2}, 1, 1, false, false);
  avgp("avg_pad_include", {1, 3, 9, 9}, {3, 3}, {2, 2}, 1, 1, false, true);
  avgp("avg_ceil_exclude", {1, 2, 10, 9}, {3, 3}, {2, 2}, 1, 1, true, false);
  avgp("avg_ceil_include", {1, 2, 10, 9}, {3, 3}, {2, 2}, 1, 1, true, true);
  avgp("avg_ceil_rule_include", {1, 2, 5, 5}, {3, 3}, {3, 3}, 1, 1, true, true);
  avgp("avg_ceil_nopad", {1, 2, 8, 10}, {3, 3}, {3, 3}, 0, 0, true, true);
  avgp("avg_rect", {1, 2, 11, 12}, {2, 4}, {1, 3}, 1, 2, false, true);
  // Asymmetric padding: sum over zero-padded input, divided by the count of
  // padded taps (include) or of real taps (exclude).
  {
    Tensor x = r({1, 3, 9, 10});
    Attrs a = poolAttrs({3, 3}, {2, 2}, {0, 1, 2, 0});
    const std::string pad = "(1, 0, 0, 2)";
    std::string sum = "F.avg_pool2d(F.pad(t0, " + pad + "), (3, 3), stride=(2, 2), divisor_override=1)";
    std::string cnt =
        "F.avg_pool2d(F.pad(torch.ones_like(t0), " + pad + "), (3, 3), stride=(2, 2), divisor_override=1)";
    a["count_include_pad"] = AttrValue(true);
    add("avg_pad_asym_include", "avg_pool2d", {x}, a,
        "F.avg_pool2d(F.pad(t0, " + pad + "), (3, 3), stride=(2, 2))");
    a["count_include_pad"] = AttrValue(false);
    add("avg_pad_asym_exclude", "avg_pool2d", {x}, a, sum + " / " + cnt);
  }
  add("gavg", "global_avg_pool2d", {r({2, 5, 7, 6})}, {}, "t0.mean(dim=(2, 3), keepdim=True)");
  add("gmax", "global_max_pool2d", {r({2, 5, 7, 6})}, {}, "t0.amax(dim=(2, 3), keepdim=True)");
  add("gavg_f16", "global_avg_pool2d", {r({1, 3, 4, 4}, DType::f16)}, {},
      "t0.float().mean(dim=(2, 3), keepdim=True)");
  cases.back().rtol = cases.back().atol = 1e-2;
  auto adapt = [&](std::string name, std::vector<int64_t> xs, std::vector<int64_t> size) {
    add(name, "adaptive_avg_pool2d", {r(xs)}, {{"output_size", AttrValue::ints(size)}},
        "F.adaptive_avg_pool2d(t0, " + list(size) + ")");
  };
  adapt("adapt_1x1", {2, 4, 7, 7}, {1, 1});
  adapt("adapt_uneven", {1, 3, 7, 7}, {3, 3});
  adapt("adapt_rect", {1, 3, 10, 9}, {4, 5});
  adapt("adapt_upsample", {1, 2, 5, 3}, {7, 6});
  adapt("adapt_same", {1, 2, 6, 6}, {6, 6});
  EXPECT_EQ(mlcc::test::runRefCases(cases, {.same_dtype = true}), static_cast<int>(cases.size()));
}

}  // namespace
