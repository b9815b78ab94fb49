// Structural equality and hashing: hand-built cases for each rule, a golden
// hash, and properties over random modules (tests/testlib/random_ir.h).
#include "mlcc/ir/structural.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "mlcc/ir/builder.h"
#include "random_ir.h"

using namespace mlcc::ir;
using namespace mlcc::ir::build;

namespace {

// Knobs for the hand-built prim func, so each test changes one thing.
struct MatmulSpec {
  std::string i = "i", j = "j", k = "k", A = "A", B = "B", C = "C";
  LoopKind outer_kind = LoopKind::parallel;
  std::string block_name = "matmul";
  bool swap_operands = false;
  Attrs loop_attrs = {};
  std::vector<int64_t> decision = {8, 16};
  std::string name = "mm";
};

// C[i, j] += A[i, k] * B[k, j] over 16x16 (with a one-instruction trace).
PrimFunc matmul(const MatmulSpec& s = {}) {
  Buffer A = makeBuffer(s.A, DType::f32, {makeInt(16), makeInt(16)});
  Buffer B = makeBuffer(s.B, DType::f32, {makeInt(16), makeInt(16)});
  Buffer C = makeBuffer(s.C, DType::f32, {makeInt(16), makeInt(16)});
  Var i = makeVar(s.i), j = makeVar(s.j), k = makeVar(s.k);
  Var vi = makeVar("v" + s.i), vj = makeVar("v" + s.j), vk = makeVar("v" + s.k);
  PrimExpr a = load(A, {vi, vk}), b = load(B, {vk, vj});
  PrimExpr product = s.swap_operands ? b * a : a * b;
  Stmt block = makeBlock(s.block_name,
                         {{vi, makeInt(16), IterKind::spatial, i},
                          {vj, makeInt(16), IterKind::spatial, j},
                          {vk, makeInt(16), IterKind::reduce, k}},
                         {point(A, {vi, vk}), point(B, {vk, vj})}, {point(C, {vi, vj})},
                         store(C, {vi, vj}, load(C, {vi, vj}) + product), store(C, {vi, vj}, lit(0.0f)));
  Stmt loops =
      makeFor(i, makeInt(16),
              makeFor(j, makeInt(16), makeFor(k, makeInt(16), block, LoopKind::serial, "", s.loop_attrs)),
              s.outer_kind);
  PrimFunc f;
  f.name = s.name;
  f.params = {A, B, C};
  f.body = loops;
  f.trace.insts.push_back(TraceInst{"get_block", {s.block_name}, {}, {"b0"}, std::nullopt});
  f.trace.insts.push_back(TraceInst{
      "sample_perfect_tile", {TraceRef{"b0"}}, {{"n", 2}}, {"v1", "v2"}, AttrValue::ints(s.decision)});
  return f;
}

// graph @main(%x: f32[n, 16]) -> f32[n, 16] calling @callee.
GraphFunc mainGraph(const std::string& x = "x", const std::string& callee = "mm", bool dataflow = true,
                    uint8_t first_byte = 0) {
  Var n = makeVar("n");
  GraphVar px = makeGraphVar(x, Type::tensor(DType::f32, {n, makeInt(16)}));
  GraphVar w = makeGraphVar("w", Type::tensor(DType::f32, std::vector<int64_t>{16, 16}));
  GraphVar c = makeGraphVar("c", Type::tensor(DType::i8, std::vector<int64_t>{2}));
  GraphVar y = makeGraphVar("y", px->type);
  GraphValue weight = mlcc::test::graphValue(ValueKind::Const);
  weight.weight = "fc.weight";
  GraphValue inline_const = mlcc::test::graphValue(ValueKind::Const);
  inline_const.is_inline = true;
  inline_const.data = {first_byte, 0xff};
  GraphValue call = mlcc::test::graphValue(ValueKind::CallTir, callee, {px, w});
  GraphFunc g;
  g.name = "main";
  g.params = {px};
  g.ret_type = px->type;
  g.blocks = {BindingBlock{dataflow, {{w, weight}, {c, inline_const}, {y, call}}}};
  g.ret = {y};
  g.attrs["entry"] = true;
  return g;
}

Module module(const std::string& callee = "mm") {
  Module m;
  m.weight_files = {"model.safetensors"};
  m.functions.push_back(mainGraph("x", callee));
  m.functions.push_back(matmul());
  return m;
}

template <class T>
void expectEqual(const T& a, const T& b) {
  EXPECT_TRUE(structuralEqual(a, b));
  EXPECT_EQ(structuralHash(a), structuralHash(b));
}

template <class T>
void expectUnequal(const T& a, const T& b) {
  EXPECT_FALSE(structuralEqual(a, b));
  EXPECT_NE(structuralHash(a), structuralHash(b));
}

}  // namespace

TEST(Structural, AlphaRenamedFuncsAreEqual) {
  expectEqual(matmul(), matmul({.i = "x", .j = "y", .k = "z", .A = "P", .B = "Q", .C = "R"}));
  // Every name alike: identity, not names, decides.
  expectEqual(matmul(), matmul({.i = "t", .j = "t", .k = "t", .A = "t", .B = "t", .C = "t"}));
  expectEqual(mainGraph("x"), mainGraph("input"));
}

TEST(Structural, SwappedOperandsDiffer) { expectUnequal(matmul(), matmul({.swap_operands = true})); }

TEST(Structural, LoopKindDiffers) { expectUnequal(matmul(), matmul({.outer_kind = LoopKind::serial})); }

TEST(Structural, BlockNameDiffers) { expectUnequal(matmul(), matmul({.block_name = "other"})); }

TEST(Structural, AttrsDiffer) {
  expectUnequal(matmul(), matmul({.loop_attrs = {{"pragma_auto_unroll_max_step", 16}}}));
  expectUnequal(matmul({.loop_attrs = {{"pragma_auto_unroll_max_step", 16}}}),
                matmul({.loop_attrs = {{"pragma_auto_unroll_max_step", 64}}}));
  expectUnequal(matmul({.loop_attrs = {{"x", AttrValue::List{1, AttrValue::List{2.0}}}}}),
                matmul({.loop_attrs = {{"x", AttrValue::List{1, AttrValue::List{2.5}}}}}));
}

TEST(Structural, TracesTakePartUnlessDisabled) {
  PrimFunc a = matmul(), b = matmul({.decision = {16, 8}});
  expectUnequal(a, b);
  StructuralOptions no_traces{.compare_traces = false};
  EXPECT_TRUE(structuralEqual(a, b, no_traces));
  EXPECT_EQ(structuralHash(a, no_traces), structuralHash(b, no_traces));
  PrimFunc unscheduled = matmul();
  unscheduled.trace = {};
  EXPECT_TRUE(structuralEqual(a, unscheduled, no_traces));
  EXPECT_FALSE(structuralEqual(a, unscheduled));
  // Trace random variables are alpha-renamed too.
  PrimFunc renamed = matmul();
  renamed.trace.insts[0].outputs = {"blk"};
  renamed.trace.insts[1].inputs = {TraceRef{"blk"}};
  expectEqual(a, renamed);
}

TEST(Structural, FunctionNamesIgnoredForFunctionsNotForModules) {
  expectEqual(matmul(), matmul({.name = "other"}));
  // In a module, callees are compared by name.
  Module a = module("mm"), b = module("mm");
  expectEqual(a, b);
  std::get<PrimFunc>(b.functions[1]).name = "mm2";
  expectUnequal(a, b);
  expectUnequal(module("mm"), module("mm2"));
  EXPECT_FALSE(structuralEqual(mainGraph("x", "mm"), mainGraph("x", "mm2")));
}

TEST(Structural, GraphDetailsDiffer) {
  expectUnequal(mainGraph("x", "mm", true), mainGraph("x", "mm", false));       // dataflow flag
  expectUnequal(mainGraph("x", "mm", true, 0), mainGraph("x", "mm", true, 1));  // inline bytes
  GraphFunc a = mainGraph(), b = mainGraph();
  b.ret_is_tuple = true;
  expectUnequal(a, b);
  Module m1 = module(), m2 = module();
  m2.weight_files.push_back("more.safetensors");
  expectUnequal(m1, m2);
}

// The text has no delimiter for plain (non-dataflow) blocks: a run of them is
// one block, and an empty one is nothing. Dataflow block boundaries count.
TEST(Structural, PlainBlockBoundariesAreIgnored) {
  GraphFunc merged = mainGraph("x", "mm", false);
  auto split = [&](bool dataflow, bool empty_between) {
    GraphFunc g = merged;
    const auto& bs = merged.blocks[0].bindings;
    g.blocks = {BindingBlock{dataflow, {bs[0]}}};
    if (empty_between) g.blocks.push_back(BindingBlock{false, {}});
    g.blocks.push_back(BindingBlock{dataflow, {bs[1], bs[2]}});
    g.blocks.insert(g.blocks.begin(), BindingBlock{false, {}});
    return g;
  };
  expectEqual(merged, split(false, false));
  expectEqual(merged, split(false, true));
  GraphFunc dataflow = mainGraph("x", "mm", true);
  expectUnequal(dataflow, split(true, false));
  expectEqual(split(true, false), split(true, true));  // an empty plain block between dataflow blocks
  GraphFunc with_empty = dataflow;
  with_empty.blocks.push_back(BindingBlock{false, {}});
  expectEqual(dataflow, with_empty);
  with_empty.blocks.back().dataflow = true;  // an empty dataflow block is kept by the text
  expectUnequal(dataflow, with_empty);
}

TEST(Structural, FreeVariablesMapConsistently) {
  Var i = makeVar("i"), j = makeVar("j"), p = makeVar("p"), q = makeVar("q");
  expectEqual(i + j, p + q);
  expectEqual(i + j, j + i);  // both free: the first use makes the pair
  expectUnequal(i + j, i + i);
  expectUnequal(i + i, i + j);
  expectEqual(i * (j + i), p * (q + p));
  expectUnequal(i * (j + i), p * (q + q));
  expectUnequal(PrimExpr(makeVar("i", DType::i64)), PrimExpr(makeVar("i", DType::i32)));
}

TEST(Structural, DefinitionsMustFormABijection) {
  // A: for %i { for %j { C[%i, %j] = ... } } vs B: one Var %k bound by both loops.
  Buffer C = makeBuffer("C", DType::f32, {makeInt(4), makeInt(4)});
  auto nest = [&](const Var& outer, const Var& inner) {
    PrimFunc f;
    f.params = {C};
    f.body = makeFor(outer, makeInt(4), makeFor(inner, makeInt(4), store(C, {outer, inner}, lit(1.0f))));
    return f;
  };
  Var i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
  // In B the inner loop shadows %k, so the store is C[inner, inner].
  expectUnequal(nest(i, j), nest(k, k));
  expectEqual(nest(i, j), nest(j, i));
}

TEST(Structural, FloatsCompareBitwise) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  expectEqual(makeFloat(nan), makeFloat(nan));
  expectUnequal(makeFloat(0.0), makeFloat(-0.0));
  expectUnequal(makeFloat(1.0), makeFloat(1.0, DType::f16));
  expectUnequal(makeInt(1), makeInt(1, DType::i32));
}

// The hash is a stable public key (the tuning database stores it): a change
// here means every stored record is invalidated. Update only on purpose.
TEST(Structural, GoldenHash) {
  EXPECT_EQ(structuralHash(module()), 4511433047548639288ULL);
  EXPECT_EQ(structuralHash(matmul()), 7265238479096444311ULL);
  EXPECT_EQ(structuralHash(makeVar("i") + 1), 1170626995605306632ULL);
}

// ---------------------------------------------------------------------------
// Properties over random modules.

namespace {
constexpr uint64_t kSeeds = 300;
}

TEST(StructuralProperty, ReflexiveAndDeterministic) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    SCOPED_TRACE(seed);
    Module m = mlcc::test::randomModule(seed);
    EXPECT_TRUE(structuralEqual(m, m));
    EXPECT_EQ(structuralHash(m), structuralHash(m));
    Module again = mlcc::test::randomModule(seed);  // new nodes, same structure
    EXPECT_TRUE(structuralEqual(m, again));
    EXPECT_EQ(structuralHash(m), structuralHash(again));
  }
}

TEST(StructuralProperty, RenamingKeepsEqualityAndHash) {
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    SCOPED_TRACE(seed);
    Module m = mlcc::test::randomModule(seed);
    Module r = mlcc::test::renameAll(m, seed);
    EXPECT_TRUE(structuralEqual(m, r));
    EXPECT_EQ(structuralHash(m), structuralHash(r));
    for (size_t k = 0; k < m.functions.size(); ++k) {
      if (const auto* p = std::get_if<PrimFunc>(&m.functions[k])) {
        const auto& renamed = std::get<PrimFunc>(r.functions[k]);
        EXPECT_EQ(structuralHash(*p), structuralHash(renamed));
        for (size_t b = 0; b < p->params.size(); ++b) {  // new nodes with new names
          EXPECT_NE(p->params[b], renamed.params[b]);
          EXPECT_NE(p->params[b]->name, renamed.params[b]->name);
        }
      } else {
        const auto& g = std::get<GraphFunc>(m.functions[k]);
        const auto& renamed = std::get<GraphFunc>(r.functions[k]);
        EXPECT_TRUE(structuralEqual(g, renamed));
        for (size_t v = 0; v < g.params.size(); ++v) EXPECT_NE(g.params[v]->name, renamed.params[v]->name);
      }
    }
  }
}

TEST(StructuralProperty, OneMutationBreaksEquality) {
  int hash_changed = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    SCOPED_TRACE(seed);
    Module m = mlcc::test::randomModule(seed);
    Module mutated = mlcc::test::mutateOnce(m, seed);
    EXPECT_FALSE(structuralEqual(m, mutated));
    EXPECT_FALSE(structuralEqual(mutated, m));
    hash_changed += structuralHash(m) != structuralHash(mutated);
  }
  EXPECT_GE(hash_changed, static_cast<int>(kSeeds * 99 / 100));
}

TEST(StructuralProperty, DistinctModulesHashApart) {
  std::set<uint64_t> hashes;
  for (uint64_t seed = 0; seed < kSeeds; ++seed)
    hashes.insert(structuralHash(mlcc::test::randomModule(seed)));
  EXPECT_EQ(hashes.size(), kSeeds);
}
