// Legalization of the data movement ops (libs/ops/src/manipulate.cpp): each
// op's TensorIR compute definition, run through the interpreter, matches the
// reference kernel for every attribute variant and several dtypes, with
// static shapes and with a symbolic batch dimension.
#include <gtest/gtest.h>

#include <climits>
#include <random>

#include "legalize_check.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using namespace mlcc::test;

const mlcc::test::RandomRange kRange{-4, 4, -100, 100};
const DType kMoveTypes[] = {DType::f32, DType::f16, DType::bf16,   DType::i8,
                            DType::i32, DType::i64, DType::boolean};

AttrValue ints(std::vector<int64_t> v) { return AttrValue::ints(v); }

struct LegalizeManipulate : ::testing::Test {
  std::mt19937 rng{1234};
  Tensor rand(DType t, std::vector<int64_t> shape) { return mlcc::test::randomTensor(rng, t, shape, kRange); }
  LegalizeCheckOptions staticOnly() {
    LegalizeCheckOptions o;
    o.also_symbolic_batch = false;
    return o;
  }
};

TEST_F(LegalizeManipulate, EveryOpHasALegalization) {
  for (const char* name : {"reshape", "permute_dims", "squeeze", "expand_dims", "broadcast_to", "concat",
                           "split", "strided_slice", "take", "pad", "tile"})
    EXPECT_TRUE(mlcc::ops::findOp(name)->legalize) << name;
}

TEST_F(LegalizeManipulate, Reshape) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("reshape", {rand(t, {2, 3, 4})}, {{"shape", ints({4, 6})}});
  }
  Tensor x = rand(DType::f32, {3, 4, 5});
  expectLegalizeMatchesKernel("reshape", {x}, {{"shape", ints({60})}});
  expectLegalizeMatchesKernel("reshape", {x}, {{"shape", ints({5, 2, 3, 2})}});
  expectLegalizeMatchesKernel("reshape", {x}, {{"shape", ints({3, 4, 5})}});  // identity
  expectLegalizeMatchesKernel("reshape", {rand(DType::i32, {1})}, {{"shape", ints({})}});
  expectLegalizeMatchesKernel("reshape", {rand(DType::i32, {})}, {{"shape", ints({1, 1})}});
  expectLegalizeMatchesKernel("reshape", {rand(DType::f32, {0, 3})}, {{"shape", ints({3, 0})}});
}

// reshape between symbolic shapes: [n, 4, 3] -> [n * 2, 6] and back, run
// with n bound by the buffers.
TEST_F(LegalizeManipulate, ReshapeSymbolicTarget) {
  using namespace mlcc::ir;
  Var n = makeVar("n");
  Type x_type = Type::tensor(DType::f32, {n, makeInt(4), makeInt(3)});
  Attrs attrs{
      {"shape", AttrValue(AttrValue::List{AttrValue(mlcc::ops::dimMul(n, makeInt(2))), AttrValue(6)})}};
  Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("reshape", {x_type}, attrs, "reshape"));
  verifyModule(m, mlcc::ops::opTypeInfo());
  Tensor x = rand(DType::f32, {5, 4, 3});
  Tensor y = Tensor::zeros(DType::f32, {10, 6});
  mlcc::interp::Interpreter in(m);
  in.runPrim("reshape", {&x, &y});
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.at(i), x.at(i)) << i;
}

TEST_F(LegalizeManipulate, PermuteDims) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("permute_dims", {rand(t, {2, 3, 4})}, {});
  }
  Tensor x = rand(DType::f32, {2, 3, 4, 5});
  expectLegalizeMatchesKernel("permute_dims", {x}, {{"axes", ints({0, 2, 3, 1})}});
  expectLegalizeMatchesKernel("permute_dims", {x}, {{"axes", ints({-1, 0, -2, 1})}});
  expectLegalizeMatchesKernel("permute_dims", {rand(DType::i64, {})}, {});
}

TEST_F(LegalizeManipulate, SqueezeAndExpandDims) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("squeeze", {rand(t, {2, 1, 3, 1})}, {});
    expectLegalizeMatchesKernel("expand_dims", {rand(t, {2, 3})}, {{"axes", ints({0, -1})}});
  }
  Tensor x = rand(DType::f32, {2, 1, 3, 1});
  expectLegalizeMatchesKernel("squeeze", {x}, {{"axes", ints({-1})}});
  expectLegalizeMatchesKernel("squeeze", {x}, {{"axes", ints({1, 3})}});
  expectLegalizeMatchesKernel("squeeze", {rand(DType::f32, {1, 1})}, {}, staticOnly());  // n stays
  expectLegalizeMatchesKernel("expand_dims", {rand(DType::f32, {2, 3})}, {{"axes", ints({1, 3})}});
  expectLegalizeMatchesKernel("expand_dims", {rand(DType::i8, {})}, {{"axes", ints({0})}});
}

TEST_F(LegalizeManipulate, BroadcastTo) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("broadcast_to", {rand(t, {3, 1})}, {{"shape", ints({2, 3, 4})}},
                                staticOnly());
  }
  expectLegalizeMatchesKernel("broadcast_to", {rand(DType::f32, {2, 1, 4})}, {{"shape", ints({2, 3, 4})}},
                              staticOnly());
  expectLegalizeMatchesKernel("broadcast_to", {rand(DType::f32, {})}, {{"shape", ints({2, 2})}});
  expectLegalizeMatchesKernel("broadcast_to", {rand(DType::f32, {4})}, {{"shape", ints({3, 4})}},
                              staticOnly());
}

TEST_F(LegalizeManipulate, Concat) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("concat", {rand(t, {2, 3}), rand(t, {2, 1}), rand(t, {2, 4})},
                                {{"axis", AttrValue(1)}});
  }
  // Axis 0 (symbolic in the batch check), a negative axis, an empty operand.
  expectLegalizeMatchesKernel("concat", {rand(DType::f32, {2, 3}), rand(DType::f32, {2, 3})},
                              {{"axis", AttrValue(0)}});
  expectLegalizeMatchesKernel(
      "concat", {rand(DType::f32, {2, 3, 2}), rand(DType::f32, {2, 3, 5}), rand(DType::f32, {2, 3, 1})},
      {{"axis", AttrValue(-1)}});
  expectLegalizeMatchesKernel("concat",
                              {rand(DType::i32, {2, 2}), rand(DType::i32, {2, 0}), rand(DType::i32, {2, 3})},
                              {{"axis", AttrValue(1)}});
  expectLegalizeMatchesKernel("concat", {rand(DType::i32, {4, 2})}, {{"axis", AttrValue(0)}});
  expectLegalizeMatchesKernel("concat", {rand(DType::i32, {0, 2}), rand(DType::i32, {0, 2})},
                              {{"axis", AttrValue(0)}});
}

// A concat of hundreds of operands (an unrolled 300-step recurrence's
// outputs) computes the same, and its function prints as IR the parser
// reads back: the operand is picked by a balanced select tree, not a chain
// 300 selects deep (past the parser's nesting limit).
TEST_F(LegalizeManipulate, ConcatOfManyOperandsStaysShallow) {
  std::vector<mlcc::ir::Tensor> parts;
  for (int i = 0; i < 300; ++i) parts.push_back(rand(DType::f32, {1, 2}));
  expectLegalizeMatchesKernel("concat", parts, {{"axis", AttrValue(0)}}, staticOnly());
  std::vector<mlcc::ir::Type> types(300, mlcc::ir::Type::tensor(DType::f32, std::vector<int64_t>{1, 2}));
  mlcc::ir::Module m;
  m.functions.push_back(mlcc::ops::legalizeOp("concat", types, {{"axis", AttrValue(0)}}, "f"));
  const std::string text = mlcc::ir::printModule(m);
  EXPECT_NO_THROW(mlcc::ir::parseModule(text, "concat300.ir"));
}

TEST_F(LegalizeManipulate, Split) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("split", {rand(t, {2, 6})},
                                {{"axis", AttrValue(1)}, {"sizes", ints({1, 2, 3})}});
  }
  expectLegalizeMatchesKernel("split", {rand(DType::f32, {5, 2})}, {{"sizes", ints({2, 3})}}, staticOnly());
  expectLegalizeMatchesKernel("split", {rand(DType::f32, {2, 3, 4})},
                              {{"axis", AttrValue(-1)}, {"sizes", ints({0, 4, 0})}});
  expectLegalizeMatchesKernel("split", {rand(DType::f32, {2, 3, 4})},
                              {{"axis", AttrValue(1)}, {"sizes", ints({3})}});
}

TEST_F(LegalizeManipulate, StridedSlice) {
  auto slice = [](std::vector<int64_t> axes, std::vector<int64_t> b, std::vector<int64_t> e,
                  std::vector<int64_t> s) {
    Attrs a{{"axes", ints(axes)}, {"begin", ints(b)}, {"end", ints(e)}};
    if (!s.empty()) a["strides"] = ints(s);
    return a;
  };
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("strided_slice", {rand(t, {3, 8})}, slice({1}, {1}, {7}, {2}));
  }
  Tensor x = rand(DType::f32, {4, 9, 5});
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({1, 2}, {-7, 0}, {-1, 10}, {}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({-1}, {4}, {0}, {-1}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({1}, {-1}, {INT64_MIN}, {-3}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({1}, {100}, {-100}, {-2}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({2, 1}, {1, 3}, {1, 3}, {1, 1}));  // empty
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({1}, {2}, {INT64_MAX}, {INT64_MAX}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({1}, {8}, {-20}, {INT64_MIN}));
  // Slices of axis 0: a full slice and a full reverse keep a symbolic batch.
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({0}, {0}, {INT64_MAX}, {1}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({0, 2}, {-1, 1}, {INT64_MIN, 4}, {-1, 2}));
  expectLegalizeMatchesKernel("strided_slice", {x}, slice({0}, {1}, {3}, {1}), staticOnly());
}

TEST_F(LegalizeManipulate, Take) {
  auto indices = [](DType t, std::vector<int64_t> shape, std::vector<double> v) {
    return Tensor::fromValues(t, std::move(shape), v);
  };
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("take", {rand(t, {5, 3}), indices(DType::i64, {4}, {0, -1, 4, -5})}, {});
  }
  for (DType it : {DType::i32, DType::i64}) {
    SCOPED_TRACE(mlcc::ir::dtypeName(it));
    Tensor x = rand(DType::f32, {2, 4, 3});
    expectLegalizeMatchesKernel("take", {x, indices(it, {2, 3}, {3, -4, 0, 1, -1, 2})},
                                {{"axis", AttrValue(1)}});
    expectLegalizeMatchesKernel("take", {x, indices(it, {}, {-2})}, {{"axis", AttrValue(-1)}});
    expectLegalizeMatchesKernel("take", {x, indices(it, {2}, {1, -2})}, {{"axis", AttrValue(0)}});
    expectLegalizeMatchesKernel("take", {x, indices(it, {0}, {})}, {{"axis", AttrValue(2)}});
  }
}

// The kernel throws on an out-of-range index; the TensorIR cannot raise, so
// it clamps the index into the axis instead.
TEST_F(LegalizeManipulate, TakeClampsOutOfRangeIndices) {
  using namespace mlcc::ir;
  Module m;
  m.functions.push_back(mlcc::ops::legalizeOp(
      "take",
      {Type::tensor(DType::f32, std::vector<int64_t>{4}), Type::tensor(DType::i32, std::vector<int64_t>{4})},
      {}, "take"));
  verifyModule(m, mlcc::ops::opTypeInfo());
  Tensor x = Tensor::fromValues(DType::f32, {4}, {10, 11, 12, 13});
  Tensor idx = Tensor::fromValues(DType::i32, {4}, {7, -9, 4, -5});
  Tensor y = Tensor::zeros(DType::f32, {4});
  mlcc::interp::Interpreter in(m);
  in.runPrim("take", {&x, &idx, &y});
  const double expect[4] = {13, 10, 13, 10};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.at(i), expect[i]) << i;
}

TEST_F(LegalizeManipulate, Pad) {
  auto pad = [](std::vector<int64_t> w, const char* mode, double value = 0) {
    return Attrs{{"pad_width", ints(w)}, {"mode", mode}, {"pad_value", AttrValue(value)}};
  };
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    for (const char* mode : {"constant", "reflect", "edge", "wrap"})
      expectLegalizeMatchesKernel("pad", {rand(t, {3, 4})}, pad({1, 2, 2, 5}, mode, 1));
  }
  Tensor x = rand(DType::f32, {2, 3, 4});
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    SCOPED_TRACE(mode);
    expectLegalizeMatchesKernel("pad", {x}, pad({0, 7, 1, 0, 0, 9}, mode, -2.5));  // longer than the axis
    expectLegalizeMatchesKernel("pad", {x}, pad({0, -1, 2, 1, 0, -2}, mode, 3));   // crops too
    expectLegalizeMatchesKernel("pad", {rand(DType::i32, {2, 1})}, pad({0, 3, 0, 2}, mode, 7));  // axis of 1
    expectLegalizeMatchesKernel("pad", {x}, pad({0, 0, 0, 0, 0, 0}, mode));
  }
  expectLegalizeMatchesKernel("pad", {rand(DType::f32, {2, 0})}, pad({0, 1, 0, 2}, "constant", 4));
  // The pad value converted to the dtype.
  expectLegalizeMatchesKernel("pad", {rand(DType::f16, {2, 2})}, pad({1, 1, 1, 1}, "constant", 0.1));
  expectLegalizeMatchesKernel("pad", {rand(DType::boolean, {2, 2})}, pad({1, 1, 1, 1}, "constant", 1));
}

TEST_F(LegalizeManipulate, Tile) {
  for (DType t : kMoveTypes) {
    SCOPED_TRACE(mlcc::ir::dtypeName(t));
    expectLegalizeMatchesKernel("tile", {rand(t, {2, 3})}, {{"repeats", ints({2, 3})}});
  }
  expectLegalizeMatchesKernel("tile", {rand(DType::f32, {2, 3, 1})}, {{"repeats", ints({1, 0, 4})}});
  expectLegalizeMatchesKernel("tile", {rand(DType::f32, {0, 3})}, {{"repeats", ints({2, 2})}});
  expectLegalizeMatchesKernel("tile", {rand(DType::f32, {})}, {{"repeats", ints({})}});
}

// Lowering errors name the op and the prim funcs are named after it.
TEST_F(LegalizeManipulate, BlocksAreNamedAfterTheOp) {
  using namespace mlcc::ir;
  PrimFunc f = mlcc::ops::legalizeOp("split", {Type::tensor(DType::f32, std::vector<int64_t>{4, 2})},
                                     {{"sizes", ints({1, 3})}}, "f");
  ASSERT_EQ(f.params.size(), 3u);
  std::string text = printFunction(f);
  EXPECT_NE(text.find("block \"split\""), std::string::npos) << text;
  EXPECT_NE(text.find("block \"split_1\""), std::string::npos) << text;
}

}  // namespace
