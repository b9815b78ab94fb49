// The shape and data movement ops (libs/ops/src/manipulate.cpp): type
// inference over symbolic dimensions, error messages, and the reference
// kernels against numpy (transpose, squeeze, expand_dims, broadcast_to,
// concatenate, split, slicing, take, pad, tile) for every dtype, all cases in
// one python run.
#include <gtest/gtest.h>

#include <climits>
#include <random>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/npy.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using namespace mlcc::test;

// Floats in [-4, 4), integers in [-100, 100].
const mlcc::test::RandomRange kRange{-4, 4, -100, 100};

AttrValue ints(std::vector<int64_t> v) { return AttrValue::ints(v); }
AttrValue dims(std::vector<AttrValue> v) { return AttrValue(AttrValue::List(std::move(v))); }

struct Sym {
  PrimExpr n = mlcc::ir::makeVar("n"), m = mlcc::ir::makeVar("m");
  PrimExpr c(int64_t v) const { return mlcc::ops::dimConst(v); }
};

Type f32(std::vector<PrimExpr> shape) { return Type::tensor(DType::f32, std::move(shape)); }
Type f32(const std::vector<int64_t>& shape) { return Type::tensor(DType::f32, shape); }

// ---- type inference ----------------------------------------------------------

TEST(OpsManipulate, RegisteredInjectiveWithNoFlops) {
  for (const char* name : {"reshape", "permute_dims", "squeeze", "expand_dims", "broadcast_to", "concat",
                           "split", "strided_slice", "take", "pad", "tile"}) {
    const mlcc::ops::OpDef* def = mlcc::ops::findOp(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->pattern, mlcc::ops::OpPattern::Injective) << name;
    ASSERT_TRUE(def->flops) << name;
    EXPECT_EQ(def->flops({f32(std::vector<int64_t>{2, 3})}, f32(std::vector<int64_t>{6}), {}), 0) << name;
  }
  EXPECT_EQ(mlcc::ops::findOp("concat")->max_inputs, -1);
  EXPECT_EQ(mlcc::ops::findOp("take")->min_inputs, 2);
  // Defaults as in ops.md.
  Attrs split = mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("split"), {{"sizes", ints({1})}});
  EXPECT_EQ(split.at("axis").asInt(), 0);
  Attrs pad = mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("pad"), {{"pad_width", ints({0, 0})}});
  EXPECT_EQ(pad.at("mode").asString(), "constant");
  EXPECT_EQ(pad.at("pad_value").asFloat(), 0.0);
  Attrs perm = mlcc::ops::normalizeAttrs(*mlcc::ops::findOp("permute_dims"), {});
  EXPECT_EQ(perm.count("axes"), 0u);
}

TEST(OpsManipulate, InferSymbolic) {
  Sym s;
  EXPECT_EQ(inferred("reshape", {f32({s.n, s.c(4), s.c(3)})}, {{"shape", dims({s.n, 12})}}), "f32[n, 12]");
  EXPECT_EQ(inferred("reshape", {f32({s.n, s.c(4)})}, {{"shape", dims({mlcc::ops::dimMul(s.n, s.c(2)), 2})}}),
            "f32[n * 2, 2]");
  EXPECT_EQ(inferred("reshape", {f32(std::vector<int64_t>{2, 3})}, {{"shape", dims({3, 2})}}), "f32[3, 2]");
  EXPECT_EQ(inferred("permute_dims", {f32({s.n, s.c(3), s.m})}), "f32[m, 3, n]");
  EXPECT_EQ(inferred("permute_dims", {f32({s.n, s.c(3), s.m})}, {{"axes", ints({1, -1, 0})}}),
            "f32[3, m, n]");
  EXPECT_EQ(inferred("squeeze", {f32({s.n, s.c(1), s.c(3), s.c(1)})}), "f32[n, 3]");
  EXPECT_EQ(inferred("squeeze", {f32({s.n, s.c(1), s.c(3), s.c(1)})}, {{"axes", ints({-1})}}),
            "f32[n, 1, 3]");
  EXPECT_EQ(inferred("expand_dims", {f32({s.n, s.c(3)})}, {{"axes", ints({0, -1})}}), "f32[1, n, 3, 1]");
  EXPECT_EQ(inferred("expand_dims", {f32({s.n, s.c(3)})}, {{"axes", ints({1, 2})}}), "f32[n, 1, 1, 3]");
  EXPECT_EQ(inferred("broadcast_to", {f32({s.c(1), s.c(3)})}, {{"shape", dims({s.m, s.n, 3})}}),
            "f32[m, n, 3]");
  EXPECT_EQ(inferred("broadcast_to", {f32({s.n, s.c(3)})}, {{"shape", dims({2, s.n, 3})}}), "f32[2, n, 3]");
  EXPECT_EQ(
      inferred("concat", {f32({s.n, s.c(3)}), f32({s.m, s.c(3)}), f32({s.c(2), s.c(3)})}, {{"axis", 0}}),
      "f32[n + m + 2, 3]");
  EXPECT_EQ(inferred("concat", {f32({s.n, s.c(3)}), f32({s.n, s.c(2)})}, {{"axis", -1}}), "f32[n, 5]");
  EXPECT_EQ(inferred("concat", {f32({s.n, s.c(3)})}, {{"axis", 1}}), "f32[n, 3]");
  EXPECT_EQ(inferred("split", {f32({s.n, s.c(6)})}, {{"axis", 1}, {"sizes", ints({2, 4})}}),
            "(f32[n, 2], f32[n, 4])");
  EXPECT_EQ(inferred("split", {f32({s.n, s.c(6)})}, {{"sizes", ints({2, 4})}}), "(f32[2, 6], f32[4, 6])");
  EXPECT_EQ(inferred("strided_slice", {f32({s.n, s.c(8)})},
                     {{"axes", ints({1})}, {"begin", ints({1})}, {"end", ints({-1})}}),
            "f32[n, 6]");
  EXPECT_EQ(inferred("strided_slice", {f32({s.n, s.c(8)})},
                     {{"axes", ints({0, 1})},
                      {"begin", ints({0, 7})},
                      {"end", ints({INT64_MAX, INT64_MIN})},
                      {"strides", ints({1, -3})}}),
            "f32[n, 3]");
  EXPECT_EQ(
      inferred(
          "strided_slice", {f32({s.n, s.c(8)})},
          {{"axes", ints({0})}, {"begin", ints({-1})}, {"end", ints({INT64_MIN})}, {"strides", ints({-1})}}),
      "f32[n, 8]");
  EXPECT_EQ(inferred("take", {f32({s.n, s.c(5)}), Type::tensor(DType::i64, {s.m})}, {{"axis", 1}}),
            "f32[n, m]");
  EXPECT_EQ(inferred("take", {f32({s.n, s.c(5)}), Type::tensor(DType::i32, std::vector<int64_t>{2, 3})}),
            "f32[2, 3, 5]");
  EXPECT_EQ(inferred("take", {f32({s.c(4), s.c(5)}), Type::tensor(DType::i32, std::vector<int64_t>{})}),
            "f32[5]");
  EXPECT_EQ(inferred("pad", {f32({s.n, s.c(3)})}, {{"pad_width", ints({1, 0, 2, 1})}}), "f32[n + 3, 4]");
  EXPECT_EQ(inferred("pad", {f32({s.n, s.c(3)})}, {{"pad_width", ints({0, -1, 0, 0})}, {"mode", "edge"}}),
            "f32[n, 2]");
  EXPECT_EQ(inferred("tile", {f32({s.n, s.c(3)})}, {{"repeats", ints({2, 2})}}), "f32[n * 2, 6]");
  EXPECT_EQ(inferred("tile", {f32({s.n, s.c(3)})}, {{"repeats", ints({1, 0})}}), "f32[n, 0]");
  EXPECT_EQ(
      inferred("reshape", {Type::tensor(DType::boolean, std::vector<int64_t>{1})}, {{"shape", dims({})}}),
      "bool[]");
}

TEST(OpsManipulate, InferErrors) {
  Sym s;
  Type x23 = f32(std::vector<int64_t>{2, 3});
  EXPECT_EQ(inferError("reshape", {x23}, {{"shape", dims({4, 2})}}),
            "op 'reshape': cannot reshape f32[2, 3] (6 elements) to [4, 2] (8 elements)");
  EXPECT_EQ(
      inferError("reshape", {x23}, {{"shape", dims({-1, 2})}}),
      "op 'reshape': target shape [-1, 2] has a negative dimension (-1 must be resolved by the importer)");
  EXPECT_EQ(inferError("permute_dims", {x23}, {{"axes", ints({0})}}),
            "op 'permute_dims': axes [0] must list each of the 2 axes of f32[2, 3] once");
  EXPECT_EQ(inferError("permute_dims", {x23}, {{"axes", ints({0, -2})}}),
            "op 'permute_dims': axis -2 is repeated in [0, -2]");
  EXPECT_EQ(inferError("permute_dims", {x23}, {{"axes", ints({0, 2})}}),
            "op 'permute_dims': axis 2 is out of range for rank 2");
  EXPECT_EQ(inferError("squeeze", {x23}, {{"axes", ints({1})}}),
            "op 'squeeze': cannot squeeze axis 1 of f32[2, 3]: its size is 3, not 1");
  EXPECT_EQ(inferError("squeeze", {f32({s.n, s.c(1)})}, {{"axes", ints({0})}}),
            "op 'squeeze': cannot squeeze axis 0 of f32[n, 1]: its size is n, not 1");
  Type scalar = f32(std::vector<int64_t>{});
  EXPECT_EQ(inferError("squeeze", {scalar}, {{"axes", ints({0})}}),
            "op 'squeeze': axis 0 is out of range for rank 0");
  EXPECT_EQ(
      inferError("strided_slice", {scalar}, {{"axes", ints({0})}, {"begin", ints({0})}, {"end", ints({1})}}),
      "op 'strided_slice': axis 0 is out of range for rank 0");
  EXPECT_EQ(inferred("expand_dims", {scalar}, {{"axes", ints({0})}}), "f32[1]");
  EXPECT_EQ(inferError("expand_dims", {x23}, {{"axes", ints({3})}}),
            "op 'expand_dims': axis 3 is out of range for rank 3");
  EXPECT_EQ(inferError("broadcast_to", {x23}, {{"shape", dims({4, 3})}}),
            "op 'broadcast_to': cannot broadcast f32[2, 3] to [4, 3] (dimension 0 is 2, not 1 or 4)");
  EXPECT_EQ(inferError("broadcast_to", {f32({s.n, s.c(3)})}, {{"shape", dims({s.m, 3})}}),
            "op 'broadcast_to': cannot broadcast f32[n, 3] to [m, 3] (dimension 0 is n, not 1 or m)");
  EXPECT_EQ(inferError("broadcast_to", {x23}, {{"shape", dims({3})}}),
            "op 'broadcast_to': cannot broadcast f32[2, 3] to the lower rank shape [3]");
  EXPECT_EQ(inferError("concat", {}, {{"axis", 0}}), "op 'concat' takes at least 1 operand(s), not 0");
  EXPECT_EQ(inferError("concat", {x23, f32(std::vector<int64_t>{3, 3})}, {{"axis", 1}}),
            "op 'concat': operand 1 (f32[3, 3]) does not match operand 0 (f32[2, 3]) in dimension 0");
  EXPECT_EQ(inferError("concat", {x23, Type::tensor(DType::i32, std::vector<int64_t>{2, 3})}, {{"axis", 1}}),
            "op 'concat': operand 1 (i32[2, 3]) does not match operand 0 (f32[2, 3]) in dtype or rank");
  EXPECT_EQ(inferError("concat", {x23}), "op 'concat' needs attribute 'axis'");
  EXPECT_EQ(inferError("split", {x23}, {{"axis", 1}, {"sizes", ints({1, 1})}}),
            "op 'split': sizes [1, 1] add up to 2, but axis 1 of f32[2, 3] has 3");
  EXPECT_EQ(
      inferError("strided_slice", {f32({s.n, s.c(8)})},
                 {{"axes", ints({0})}, {"begin", ints({1})}, {"end", ints({INT64_MAX})}}),
      "op 'strided_slice': slicing axis 0 of f32[n, 8] (symbolic size n) is not supported yet, except a full "
      "slice");
  EXPECT_EQ(
      inferError("strided_slice", {x23},
                 {{"axes", ints({0})}, {"begin", ints({1})}, {"end", ints({2})}, {"strides", ints({0})}}),
      "op 'strided_slice': stride of axis 0 is 0");
  EXPECT_EQ(
      inferError("strided_slice", {x23}, {{"axes", ints({0})}, {"begin", ints({1, 0})}, {"end", ints({2})}}),
      "op 'strided_slice': axes [0], begin [1, 0], end [2] and strides [1] must have the same length");
  EXPECT_EQ(inferError("take", {x23, f32(std::vector<int64_t>{2})}),
            "op 'take': indices must be i32 or i64, not f32[2]");
  EXPECT_EQ(inferError("take", {x23, Type::tensor(DType::i64, std::vector<int64_t>{2})}, {{"axis", 2}}),
            "op 'take': axis 2 is out of range for rank 2");
  EXPECT_EQ(inferError("take", {x23}), "op 'take' takes 2 operand(s), not 1");
  EXPECT_EQ(
      inferError("pad", {x23}, {{"pad_width", ints({1, 1})}}),
      "op 'pad': pad_width [1, 1] must have 2 * rank = 4 entries (all begins, then all ends) for f32[2, 3]");
  EXPECT_EQ(inferError("pad", {x23}, {{"pad_width", ints({0, 0, 0, 0})}, {"mode", "circular"}}),
            "op 'pad': unknown mode 'circular' (expected \"constant\", \"reflect\", \"edge\" or \"wrap\")");
  EXPECT_EQ(inferError("pad", {x23}, {{"pad_width", ints({-2, 0, -1, 0})}}),
            "op 'pad': pad_width [-2, 0, -1, 0] removes more than axis 0 of f32[2, 3] holds");
  EXPECT_EQ(inferError("pad", {f32(std::vector<int64_t>{0, 3})},
                       {{"pad_width", ints({1, 0, 0, 0})}, {"mode", "edge"}}),
            "op 'pad': cannot pad the empty axis 0 of f32[0, 3] in mode 'edge'");
  // A pad value an integer or bool tensor cannot hold (it was saturated by
  // the reference kernel and wrapped by the legalized loop).
  const Type i8x = Type::tensor(DType::i8, std::vector<int64_t>{2, 3});
  EXPECT_EQ(inferError("pad", {i8x}, {{"pad_width", ints({0, 1, 0, 0})}, {"pad_value", AttrValue(300.0)}}),
            "op 'pad': pad_value 300.0 is not a value of i8");
  EXPECT_EQ(inferError("pad", {i8x}, {{"pad_width", ints({0, 1, 0, 0})}, {"pad_value", AttrValue(2.5)}}),
            "op 'pad': pad_value 2.5 is not a value of i8");
  EXPECT_EQ(inferError("pad", {Type::tensor(DType::u8, std::vector<int64_t>{2})},
                       {{"pad_width", ints({1, 0})}, {"pad_value", AttrValue(-1.0)}}),
            "op 'pad': pad_value -1.0 is not a value of u8");
  EXPECT_EQ(inferError("pad", {Type::tensor(DType::boolean, std::vector<int64_t>{2})},
                       {{"pad_width", ints({1, 0})}, {"pad_value", AttrValue(2.0)}}),
            "op 'pad': pad_value 2.0 is not a value of bool");
  EXPECT_EQ(inferred("pad", {i8x}, {{"pad_width", ints({0, 1, 0, 0})}, {"pad_value", AttrValue(-128.0)}}),
            "i8[2, 4]");
  EXPECT_EQ(inferError("tile", {x23}, {{"repeats", ints({2})}}),
            "op 'tile': repeats [2] must have one entry per axis of f32[2, 3]");
  EXPECT_EQ(inferError("tile", {x23}, {{"repeats", ints({2, -1})}}),
            "op 'tile': repeats [2, -1] has a negative entry");
}

// ---- reference kernels ----------------------------------------------------------

Tensor indexTensor(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  return Tensor::fromValues(t, std::move(shape), values);
}

// Each case's fn is a python list of arrays from `x` (the first input) and
// `xs` (all inputs); KernelsMatchNumpy makes it a callable.
std::vector<RefCase> cases() {
  std::mt19937 rng(1234);
  auto R = [&](std::vector<int64_t> shape, DType t = DType::f32) {
    return randomTensor(rng, t, std::move(shape), kRange);
  };
  std::vector<RefCase> c;
  // reshape
  c.push_back({"reshape", {R({2, 3, 4})}, {{"shape", dims({6, 4})}}, "[x.reshape(6, 4)]"});
  c.push_back({"reshape", {R({2, 3, 4})}, {{"shape", dims({4, 1, 3, 2})}}, "[x.reshape(4, 1, 3, 2)]"});
  c.push_back({"reshape", {R({1})}, {{"shape", dims({})}}, "[x.reshape(())]"});
  // permute_dims
  c.push_back({"permute_dims", {R({2, 3, 4})}, {{"axes", ints({1, 0, 2})}}, "[np.transpose(x, (1, 0, 2))]"});
  c.push_back({"permute_dims", {R({2, 3, 4})}, {{"axes", ints({2, 0, 1})}}, "[np.transpose(x, (2, 0, 1))]"});
  c.push_back(
      {"permute_dims", {R({2, 3, 4})}, {{"axes", ints({-1, 0, -2})}}, "[np.transpose(x, (2, 0, 1))]"});
  c.push_back({"permute_dims", {R({2, 3, 4, 5})}, {}, "[np.transpose(x)]"});
  c.push_back({"permute_dims",
               {R({2, 1, 3, 2, 2})},
               {{"axes", ints({4, 2, 0, 3, 1})}},
               "[np.transpose(x, (4, 2, 0, 3, 1))]"});
  c.push_back({"permute_dims", {R({3, 0, 2})}, {}, "[np.transpose(x)]"});
  c.push_back({"permute_dims", {R({})}, {}, "[np.transpose(x)]"});
  // squeeze / expand_dims
  c.push_back({"squeeze", {R({1, 3, 1, 4})}, {}, "[np.squeeze(x)]"});
  c.push_back({"squeeze", {R({1, 3, 1, 4})}, {{"axes", ints({0})}}, "[np.squeeze(x, axis=0)]"});
  c.push_back({"squeeze", {R({1, 3, 1, 4})}, {{"axes", ints({-2, 0})}}, "[np.squeeze(x, axis=(0, 2))]"});
  c.push_back({"expand_dims", {R({3, 4})}, {{"axes", ints({0})}}, "[np.expand_dims(x, 0)]"});
  c.push_back({"expand_dims", {R({3, 4})}, {{"axes", ints({-1})}}, "[np.expand_dims(x, -1)]"});
  c.push_back({"expand_dims", {R({3, 4})}, {{"axes", ints({0, 3})}}, "[np.expand_dims(x, (0, 3))]"});
  c.push_back({"expand_dims", {R({3, 4})}, {{"axes", ints({2, 1})}}, "[np.expand_dims(x, (1, 2))]"});
  // broadcast_to
  c.push_back({"broadcast_to", {R({3, 1})}, {{"shape", dims({2, 3, 5})}}, "[np.broadcast_to(x, (2, 3, 5))]"});
  c.push_back({"broadcast_to", {R({1})}, {{"shape", dims({4})}}, "[np.broadcast_to(x, (4,))]"});
  c.push_back({"broadcast_to", {R({})}, {{"shape", dims({2, 2})}}, "[np.broadcast_to(x, (2, 2))]"});
  c.push_back({"broadcast_to",
               {R({2, 1, 3})},
               {{"shape", dims({2, 2, 4, 3})}},
               "[np.broadcast_to(x, (2, 2, 4, 3))]"});
  // concat
  c.push_back({"concat", {R({2, 3}), R({2, 1}), R({2, 4})}, {{"axis", 1}}, "[np.concatenate(xs, axis=1)]"});
  c.push_back({"concat", {R({2, 3, 2}), R({2, 1, 2})}, {{"axis", -2}}, "[np.concatenate(xs, axis=-2)]"});
  c.push_back({"concat", {R({1, 3}), R({2, 3}), R({0, 3})}, {{"axis", 0}}, "[np.concatenate(xs, axis=0)]"});
  c.push_back({"concat", {R({2, 3})}, {{"axis", 1}}, "[np.concatenate(xs, axis=1)]"});
  // split
  c.push_back({"split", {R({6, 4})}, {{"sizes", ints({1, 2, 3})}}, "np.split(x, [1, 3], axis=0)"});
  c.push_back(
      {"split", {R({3, 4, 2})}, {{"axis", -2}, {"sizes", ints({2, 2})}}, "np.split(x, [2], axis=-2)"});
  c.push_back(
      {"split", {R({3, 4})}, {{"axis", 1}, {"sizes", ints({0, 3, 1})}}, "np.split(x, [0, 3], axis=1)"});
  // strided_slice (ONNX Slice = python slicing)
  auto slice = [&](std::vector<int64_t> shape, std::vector<int64_t> axes, std::vector<int64_t> b,
                   std::vector<int64_t> e, std::vector<int64_t> st) {
    auto py = [](const std::vector<int64_t>& v) {
      std::string s = "[";
      for (int64_t x : v) s += std::to_string(x) + ",";
      return s + "]";
    };
    Attrs a{{"axes", ints(axes)}, {"begin", ints(b)}, {"end", ints(e)}};
    std::string st_py = st.empty() ? py(std::vector<int64_t>(axes.size(), 1)) : py(st);
    if (!st.empty()) a["strides"] = ints(st);
    c.push_back({"strided_slice",
                 {R(shape)},
                 a,
                 "[sl(x, " + py(axes) + ", " + py(b) + ", " + py(e) + ", " + st_py + ")]"});
  };
  slice({7, 6}, {0}, {1}, {5}, {});
  slice({7, 6}, {0, 1}, {1, 0}, {7, 6}, {2, 3});
  slice({7, 6}, {1}, {-1}, {INT64_MIN}, {-1});
  slice({7, 6}, {0}, {5}, {1}, {-2});
  slice({7, 6}, {0, 1}, {INT64_MIN, -2}, {INT64_MAX, 1}, {1, -1});
  slice({7, 6}, {0}, {10}, {20}, {});
  slice({7, 6}, {-1}, {-100}, {100}, {4});
  slice({7, 6}, {0}, {INT64_MAX}, {INT64_MIN}, {-3});
  slice({7, 6}, {0}, {-1}, {-100}, {-3});
  slice({7, 6}, {1, 0}, {3, 6}, {3, -8}, {1, -1});
  slice({4, 5, 6}, {2, 0}, {-2, 3}, {0, INT64_MIN}, {-1, -2});
  slice({4, 5}, {0, 1}, {-1, 1}, {INT64_MIN, INT64_MAX}, {INT64_MIN, INT64_MAX});
  // take (ONNX Gather)
  c.push_back(
      {"take", {R({5, 4}), indexTensor(DType::i64, {3}, {3, -1, 0})}, {}, "[np.take(x, xs[1], axis=0)]"});
  c.push_back({"take",
               {R({5, 4}), indexTensor(DType::i32, {2, 2}, {0, 3, -4, 2})},
               {{"axis", 1}},
               "[np.take(x, xs[1], axis=1)]"});
  c.push_back({"take", {R({5, 4}), indexTensor(DType::i64, {}, {-2})}, {}, "[np.take(x, xs[1], axis=0)]"});
  c.push_back({"take",
               {R({2, 5, 3}), indexTensor(DType::i32, {4}, {4, 4, 0, -5})},
               {{"axis", -2}},
               "[np.take(x, xs[1], axis=-2)]"});
  c.push_back({"take",
               {R({2, 5, 3}), indexTensor(DType::i64, {0}, {})},
               {{"axis", 2}},
               "[np.take(x, xs[1], axis=2)]"});
  // pad (ONNX order: all begins, then all ends)
  c.push_back({"pad",
               {R({3, 4})},
               {{"pad_width", ints({1, 2, 0, 3})}, {"pad_value", 1.5}},
               "[onnx_pad(x, [1, 2, 0, 3], 'constant', 1.5)]"});
  c.push_back({"pad",
               {R({3, 4})},
               {{"pad_width", ints({1, 2, 0, 3})}},
               "[onnx_pad(x, [1, 2, 0, 3], 'constant', 0)]"});
  c.push_back({"pad",
               {R({4, 5})},
               {{"pad_width", ints({2, 3, 3, 1})}, {"mode", "reflect"}},
               "[onnx_pad(x, [2, 3, 3, 1], 'reflect', 0)]"});
  c.push_back({"pad",
               {R({4, 5})},
               {{"pad_width", ints({2, 3, 3, 1})}, {"mode", "edge"}},
               "[onnx_pad(x, [2, 3, 3, 1], 'edge', 0)]"});
  c.push_back({"pad",
               {R({3})},
               {{"pad_width", ints({5, 6})}, {"mode", "reflect"}},
               "[onnx_pad(x, [5, 6], 'reflect', 0)]"});
  c.push_back(
      {"pad", {R({3})}, {{"pad_width", ints({5, 7})}, {"mode", "wrap"}}, "[onnx_pad(x, [5, 7], 'wrap', 0)]"});
  c.push_back({"pad",
               {R({4, 5})},
               {{"pad_width", ints({2, -1, 3, 6})}, {"mode", "wrap"}},
               "[onnx_pad(x, [2, -1, 3, 6], 'wrap', 0)]"});
  c.push_back({"pad",
               {R({1, 2})},
               {{"pad_width", ints({2, 0, 1, 0})}, {"mode", "reflect"}},
               "[onnx_pad(x, [2, 0, 1, 0], 'reflect', 0)]"});
  c.push_back({"pad",
               {R({3, 4})},
               {{"pad_width", ints({1, -1, -2, 2})}, {"pad_value", -3.0}},
               "[onnx_pad(x, [1, -1, -2, 2], 'constant', -3.0)]"});
  c.push_back({"pad",
               {R({3, 4})},
               {{"pad_width", ints({-1, 2, 1, -3})}, {"mode", "edge"}},
               "[onnx_pad(x, [-1, 2, 1, -3], 'edge', 0)]"});
  c.push_back({"pad",
               {R({2, 3, 4})},
               {{"pad_width", ints({0, 1, 1, 1, 0, 2})}, {"mode", "reflect"}},
               "[onnx_pad(x, [0, 1, 1, 1, 0, 2], 'reflect', 0)]"});
  // tile
  c.push_back({"tile", {R({2, 3})}, {{"repeats", ints({2, 3})}}, "[np.tile(x, (2, 3))]"});
  c.push_back({"tile", {R({2, 3})}, {{"repeats", ints({1, 1})}}, "[np.tile(x, (1, 1))]"});
  c.push_back({"tile", {R({2, 1, 3})}, {{"repeats", ints({3, 2, 0})}}, "[np.tile(x, (3, 2, 0))]"});
  c.push_back({"tile", {R({2, 1, 3})}, {{"repeats", ints({1, 4, 2})}}, "[np.tile(x, (1, 4, 2))]"});
  // Every other dtype (bf16 has no numpy form; see BF16MovesBytes).
  for (DType t : {DType::f16, DType::i8, DType::i32, DType::i64, DType::boolean}) {
    c.push_back(
        {"permute_dims", {R({2, 3, 4}, t)}, {{"axes", ints({2, 0, 1})}}, "[np.transpose(x, (2, 0, 1))]"});
    c.push_back({"reshape", {R({2, 3}, t)}, {{"shape", dims({3, 2})}}, "[x.reshape(3, 2)]"});
    c.push_back(
        {"broadcast_to", {R({3, 1}, t)}, {{"shape", dims({2, 3, 2})}}, "[np.broadcast_to(x, (2, 3, 2))]"});
    c.push_back({"concat", {R({2, 3}, t), R({2, 2}, t)}, {{"axis", 1}}, "[np.concatenate(xs, axis=1)]"});
    c.push_back({"split", {R({5, 2}, t)}, {{"sizes", ints({2, 3})}}, "np.split(x, [2], axis=0)"});
    slice({5, 4}, {0, 1}, {-1, 0}, {INT64_MIN, 4}, {-2, 3});
    c.back().inputs[0] = R({5, 4}, t);
    c.push_back(
        {"take", {R({5, 3}, t), indexTensor(DType::i64, {2}, {-1, 2})}, {}, "[np.take(x, xs[1], axis=0)]"});
    c.push_back({"pad",
                 {R({2, 3}, t)},
                 {{"pad_width", ints({1, 0, 1, 2})}, {"pad_value", 1.0}},
                 "[onnx_pad(x, [1, 0, 1, 2], 'constant', 1.0)]"});
    c.push_back({"pad",
                 {R({3, 3}, t)},
                 {{"pad_width", ints({2, 1, 0, 2})}, {"mode", "reflect"}},
                 "[onnx_pad(x, [2, 1, 0, 2], 'reflect', 0)]"});
    c.push_back({"tile", {R({2, 3}, t)}, {{"repeats", ints({2, 2})}}, "[np.tile(x, (2, 2))]"});
  }
  return c;
}

const char* kPrelude = R"(def sl(x, axes, b, e, s):
    idx = [slice(None)] * x.ndim
    for a, bb, ee, ss in zip(axes, b, e, s):
        idx[a] = slice(bb, ee, ss)
    return x[tuple(idx)]

def onnx_pad(x, pads, mode, v):
    r = x.ndim
    b, e = pads[:r], pads[r:]
    pw = [(max(p, 0), max(q, 0)) for p, q in zip(b, e)]
    if mode == 'constant':
        y = np.pad(x, pw, mode='constant', constant_values=np.array(v).astype(x.dtype))
    else:
        y = np.pad(x, pw, mode=mode)
    return y[tuple(slice(-min(p, 0), y.shape[i] + min(q, 0)) for i, (p, q) in enumerate(zip(b, e)))]

)";

TEST(OpsManipulate, KernelsMatchNumpy) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::vector<RefCase> all = cases();
  for (RefCase& c : all) {
    c.label = "on " + mlcc::ir::printType(Type::tensor(c.inputs[0].dtype(), c.inputs[0].shape()));
    // The kernel's results have the inferred types.
    std::vector<Type> types;
    for (const auto& t : c.inputs) types.push_back(Type::tensor(t.dtype(), t.shape()));
    Type inferred = mlcc::ops::inferOpType(c.op, types, c.attrs);
    std::vector<Type> fields = inferred.isTuple() ? inferred.fields : std::vector<Type>{inferred};
    std::vector<Tensor> got = mlcc::ops::computeOp(c.op, c.inputs, c.attrs);
    ASSERT_EQ(got.size(), fields.size()) << c.op << " " << c.label << ": " << c.fn;
    for (size_t k = 0; k < got.size(); ++k)
      EXPECT_EQ(mlcc::ir::printType(Type::tensor(got[k].dtype(), got[k].shape())),
                mlcc::ir::printType(fields[k]))
          << c.op << " " << c.label << ": " << c.fn;
    c.fn = "lambda *xs: (lambda x: " + c.fn + ")(xs[0])";
  }
  EXPECT_EQ(mlcc::test::runRefCases(all, {.prelude = kPrelude, .results_list = true, .same_bytes = true}),
            static_cast<int>(all.size()));
}

// Data movement is byte movement: bf16 gives the same bytes as f16.
TEST(OpsManipulate, BF16MovesBytes) {
  std::mt19937 rng(7);
  Tensor h = randomTensor(rng, DType::f16, {3, 4});
  Tensor b = Tensor::copyOf(DType::bf16, {3, 4}, std::span<const std::byte>(h.bytes(), h.nbytes()));
  std::vector<std::pair<std::string, Attrs>> ops = {
      {"permute_dims", {}},
      {"strided_slice",
       {{"axes", ints({1})}, {"begin", ints({-1})}, {"end", ints({INT64_MIN})}, {"strides", ints({-2})}}},
      {"pad", {{"pad_width", ints({1, 1, 2, 0})}, {"mode", "reflect"}}},
      {"tile", {{"repeats", ints({2, 1})}}}};
  for (const auto& [op, attrs] : ops) {
    Tensor rh = mlcc::ops::computeOp(op, {h}, attrs)[0], rb = mlcc::ops::computeOp(op, {b}, attrs)[0];
    EXPECT_EQ(rb.dtype(), DType::bf16);
    EXPECT_EQ(rh.shape(), rb.shape()) << op;
    EXPECT_TRUE(std::equal(rh.bytes(), rh.bytes() + rh.nbytes(), rb.bytes())) << op;
  }
  // The pad value is converted to the dtype.
  Tensor p = mlcc::ops::computeOp("pad", {b}, {{"pad_width", ints({1, 0, 0, 0})}, {"pad_value", 2.5}})[0];
  EXPECT_EQ(p.at(0), 2.5);
}

TEST(OpsManipulate, ComputeErrorsAndSymbolicAttributes) {
  Tensor x = Tensor::fromValues(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor bad = Tensor::fromValues(DType::i64, {2}, {1, 3});
  try {
    mlcc::ops::computeOp("take", {x, bad}, {});
    ADD_FAILURE() << "no error for an index out of range";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.message(), "op 'take': index 3 is out of range for axis 0 of size 3");
  }
  Tensor neg = Tensor::fromValues(DType::i32, {1}, {-4});
  EXPECT_THROW(mlcc::ops::computeOp("take", {x, neg}, {}), mlcc::Error);
  // A symbolic dimension of reshape's target is solved at run time.
  Sym s;
  Tensor y = mlcc::ops::computeOp("reshape", {x}, {{"shape", dims({s.n, 3})}})[0];
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y.at(5), 6.0);
  try {
    mlcc::ops::computeOp("reshape", {x}, {{"shape", dims({s.n, s.m})}});
    ADD_FAILURE() << "no error for two unknown dims";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.message(),
              "op 'reshape': the target shape [n, m] has more than one symbolic dimension; bind them before "
              "running "
              "the kernel");
  }
  // split's sizes are checked against the concrete dimension.
  EXPECT_THROW(mlcc::ops::computeOp("split", {x}, {{"sizes", ints({1, 1})}}), mlcc::Error);
}

}  // namespace
