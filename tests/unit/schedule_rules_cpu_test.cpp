// The default CPU (llvm) schedule rules on prim funcs made the way the
// compiler makes them (a small graph, fuse-ops, legalize): which rule
// schedules each function, the loop structure it gives (vectorized
// innermost loops, parallel outer loops, inlined producers, the epilogue
// under the tile), tile sizes recorded as sample_perfect_tile decisions,
// trace replay, and the same meaning before and after (symbolic batch,
// non-divisible extents). Also ResNet-18's prim funcs, scheduled and
// interpreted against PyTorch's output.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>

#include "mlcc/frontend/onnx.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/npy.h"
#include "mlcc/transform/pass.h"
#include "schedule_check.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using mlcc::target::Target;
using mlcc::test::fixture;

namespace {

// 4 cores, 8 f32 lanes, 48 KiB of L1 and 2 MiB of L2, whole 512-bit FMAs
// (not Zen 4's halves): the tests do not depend on the host. A parallel
// grain of 64 Ki multiply-adds (16 Ki elements) makes the small functions
// here parallel, so that the tests see the parallel loops the rules make.
Target cpu() {
  Target t = Target::parse("llvm -num-cores=4 -vector-bits=256 -parallel-grain=65536");
  t.cpu.l1d_cache_bytes = 48 * 1024;
  t.cpu.l2_cache_bytes = 2 * 1024 * 1024;
  t.cpu.split_512bit_fma = false;
  return t;
}

// The graph module `text` after fuse-ops and legalize.
ir::Module lower(const std::string& text) {
  ir::Module m = ir::parseModule(text, "m.ir");
  transform::PassContext ctx;
  ctx.verify_each = true;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  return m;
}

const ir::PrimFunc* findPrim(const ir::Module& m, const std::string& name) {
  for (const auto& f : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&f); p && p->name == name) return p;
  return nullptr;
}

// The loops from the function's body down to block `name` (outermost
// first); empty when there is no such block (found = false).
struct BlockLoops {
  bool found = false;
  std::vector<const ir::ForNode*> loops;
};

BlockLoops loopsOf(const ir::PrimFunc& f, const std::string& name) {
  BlockLoops out;
  std::vector<const ir::ForNode*> stack;
  std::function<void(const ir::Stmt&)> visit = [&](const ir::Stmt& s) {
    if (!s || out.found) return;
    if (const auto* loop = s->as<ir::ForNode>()) {
      stack.push_back(loop);
      visit(loop->body);
      stack.pop_back();
    } else if (const auto* seq = s->as<ir::SeqNode>()) {
      for (const auto& x : seq->stmts) visit(x);
    } else if (const auto* b = s->as<ir::BlockNode>()) {
      if (b->name == name) {
        out.found = true;
        out.loops = stack;
        return;
      }
      visit(b->init);
      visit(b->body);
    } else if (const auto* i = s->as<ir::IfNode>()) {
      visit(i->then_case);
      visit(i->else_case);
    }
  };
  visit(f.body);
  return out;
}

std::vector<std::string> blockNames(const ir::PrimFunc& f) {
  std::vector<std::string> names;
  std::function<void(const ir::Stmt&)> visit = [&](const ir::Stmt& s) {
    if (!s) return;
    if (const auto* loop = s->as<ir::ForNode>()) {
      visit(loop->body);
    } else if (const auto* seq = s->as<ir::SeqNode>()) {
      for (const auto& x : seq->stmts) visit(x);
    } else if (const auto* b = s->as<ir::BlockNode>()) {
      names.push_back(b->name);
      visit(b->init);
      visit(b->body);
    } else if (const auto* i = s->as<ir::IfNode>()) {
      visit(i->then_case);
      visit(i->else_case);
    }
  };
  visit(f.body);
  return names;
}

bool hasBlock(const ir::PrimFunc& f, const std::string& name) { return loopsOf(f, name).found; }

std::vector<int64_t> extents(const BlockLoops& l) {
  std::vector<int64_t> out;
  for (const auto* f : l.loops) {
    int64_t e = -1;
    ir::asConstInt(f->extent, &e);
    out.push_back(e);
  }
  return out;
}

ir::LoopKind innermostKind(const ir::PrimFunc& f, const std::string& block) {
  auto l = loopsOf(f, block);
  EXPECT_TRUE(l.found && !l.loops.empty()) << block;
  return l.loops.empty() ? ir::LoopKind::serial : l.loops.back()->loop_kind;
}

ir::LoopKind outermostKind(const ir::PrimFunc& f, const std::string& block) {
  auto l = loopsOf(f, block);
  EXPECT_TRUE(l.found && !l.loops.empty()) << block;
  return l.loops.empty() ? ir::LoopKind::serial : l.loops.front()->loop_kind;
}

// A block other than `known` whose name starts with `prefix` (the init
// block decompose_reduction made, the rfactor block).
std::string otherBlock(const ir::PrimFunc& f, const std::string& prefix,
                       const std::vector<std::string>& known) {
  for (const auto& n : blockNames(f))
    if (n.rfind(prefix, 0) == 0 && std::find(known.begin(), known.end(), n) == known.end()) return n;
  return "";
}

struct Scheduled {
  ir::PrimFunc before, after;
  std::string rule;
};

// Lowers `graph`, applies the default llvm rules, and checks for every prim
// func: the same meaning (tol; symbolic n = 3 and 5), the trace replays to
// the scheduled function, and the tile sizes are recorded decisions.
// Returns prim func `name`.
Scheduled scheduleAndCheck(const std::string& graph, const std::string& name, double tol = 1e-4,
                           const Target& target = cpu()) {
  ir::Module m = lower(graph);
  ir::Module original = m;
  auto report = applyDefaultRules(m, target);
  Scheduled out;
  for (const auto& r : report) {
    const ir::PrimFunc* before = findPrim(original, r.func);
    const ir::PrimFunc* after = findPrim(m, r.func);
    EXPECT_TRUE(before && after) << r.func;
    if (!before || !after) continue;
    SCOPED_TRACE("prim @" + r.func + " (rule " + r.rule + ")\n" + ir::printFunction(*after));
    if (std::getenv("MLCC_TEST_PRINT"))
      std::cout << "rule " << r.rule << ":\n" << ir::printFunction(*after) << "\n";
    test::expectSameMeaning(*before, *after, tol, {{"n", 3}});
    test::expectSameMeaning(*before, *after, tol, {{"n", 5}}, 2);
    ir::PrimFunc replayed = replayTrace(*before, after->trace);
    EXPECT_TRUE(ir::structuralEqual(replayed, *after)) << ir::printFunction(replayed);
    if (r.func == name) out = {*before, *after, r.rule};
  }
  EXPECT_FALSE(out.rule.empty()) << "no prim func @" << name;
  // The scheduled module (traces included) prints and parses back.
  std::string printed = ir::printModule(m);
  EXPECT_EQ(ir::printModule(ir::parseModule(printed, "scheduled.ir")), printed);
  return out;
}

std::string traceText(const ir::PrimFunc& f) { return ir::printTrace(f.trace); }

// --- matmul-like anchors -------------------------------------------------------

TEST(ScheduleRulesCpu, DenseBiasReluIsTiledVectorizedAndParallel) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[32, 64], %w: f32[48, 64], %b: f32[48]) -> f32[32, 48] {
  dataflow {
    %d: f32[32, 48] = dense(%x, %w)
    %a: f32[32, 48] = add(%d, %b)
    %y: f32[32, 48] = relu(%a)
  }
  return %y
}
)",
                            "fused_dense_add_relu");
  EXPECT_EQ(s.rule, "matmul");
  const auto& f = s.after;
  // The weight, read along its rows by the output's vector (w[j, k]), is
  // packed into panels of one vector (8 lanes) by a copy block, vectorized.
  std::string trace = traceText(f);
  EXPECT_NE(trace.find("transform_layout(%b1, \"w\", [d0, d1], [d0 / 8, d1, d0 % 8])"), std::string::npos)
      << trace;
  EXPECT_EQ(innermostKind(f, "w_layout"), ir::LoopKind::vectorized);
  // SSRSRS, cache-blocked for the packed weight: S0 (i: 4, j: 2; fused,
  // parallel: 2 per core), S1 (j: 1), R0 (1), S1 (i: 1: the row blocks
  // inside R0), S2 (i: 1, then j: 3 panels),
  // R1 (the whole 64: 16 x 4, the 4 unrolled), S3 (8 rows unrolled, 8 lanes
  // vectorized).
  auto dense = loopsOf(f, "dense");
  EXPECT_EQ(extents(dense), (std::vector<int64_t>{8, 1, 1, 1, 1, 3, 16, 4, 8, 8})) << ir::printFunction(f);
  EXPECT_EQ(innermostKind(f, "dense"), ir::LoopKind::vectorized);
  ASSERT_GE(dense.loops.size(), 3u);
  EXPECT_EQ(dense.loops[dense.loops.size() - 2]->loop_kind, ir::LoopKind::unrolled);
  EXPECT_EQ(dense.loops[dense.loops.size() - 3]->loop_kind, ir::LoopKind::unrolled);
  EXPECT_EQ(outermostKind(f, "dense"), ir::LoopKind::parallel);
  // The bias add is inlined into the relu, which runs under the tile loops
  // outside R0 (S0 and the columns' S1), after the whole reduction.
  EXPECT_FALSE(hasBlock(f, "add"));
  auto relu = loopsOf(f, "relu");
  ASSERT_TRUE(relu.found);
  ASSERT_GE(relu.loops.size(), 3u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(relu.loops[i], dense.loops[i]) << "relu is not under the S1 loops";
  EXPECT_NE(relu.loops[2], dense.loops[2]) << "relu is under R0";
  EXPECT_EQ(innermostKind(f, "relu"), ir::LoopKind::vectorized);
  // The init is decomposed out right before the reduce-outer loop (R0), into
  // its own vectorized register tile.
  EXPECT_EQ(blockNames(f), (std::vector<std::string>{"w_layout", "dense_init", "dense", "relu"}));
  EXPECT_EQ(innermostKind(f, "dense_init"), ir::LoopKind::vectorized);
  // The tile sizes are sampling decisions a tuner can change.
  EXPECT_NE(trace.find("sample_perfect_tile(%"), std::string::npos) << trace;
  EXPECT_NE(trace.find("max_innermost_factor = 64, n = 4) decision [4, 1, 1, 8]"), std::string::npos)
      << trace;
  EXPECT_NE(trace.find("max_innermost_factor = 64, n = 4) decision [2, 1, 3, 8]"), std::string::npos)
      << trace;
  EXPECT_NE(trace.find("n = 3) decision [1, 16, 4]"), std::string::npos) << trace;
}

// A plain matmul's B (row-major [k, j]) is packed into panels only when it
// is reused over enough rows (kMinPackReuse) and larger than L1
// (kMinPackBytes); the packed reads are whole vectors of one panel.
TEST(ScheduleRulesCpu, LargeMatmulPacksItsRightOperand) {
  const char* big = R"(mlcc.ir 1
graph @main(%a: f32[128, 256], %b: f32[256, 256]) -> f32[128, 256] {
  dataflow {
    %y: f32[128, 256] = matmul(%a, %b)
  }
  return %y
}
)";
  auto s = scheduleAndCheck(big, "fused_matmul");
  EXPECT_EQ(s.rule, "matmul");
  std::string trace = traceText(s.after);
  EXPECT_NE(trace.find("transform_layout(%b0, \"b\", [d0, d1], [d1 / 8, d0, d1 % 8])"), std::string::npos)
      << trace;
  EXPECT_EQ(blockNames(s.after), (std::vector<std::string>{"b_layout", "matmul_init", "matmul"}));
  EXPECT_EQ(outermostKind(s.after, "b_layout"), ir::LoopKind::parallel);
  // S0 (i: 8, 2 per core; parallel) S1 (1, 1) R0 (1) S2 (the 2 row tiles of
  // the parallel part, then 32 panels) R1 (256: 64 x 4, the 4 unrolled) S3
  // (8 rows x 8 lanes)
  EXPECT_EQ(extents(loopsOf(s.after, "matmul")), (std::vector<int64_t>{8, 1, 1, 1, 2, 32, 64, 4, 8, 8}));
  // Few rows (8: the copy would cost as much as it saves) or a small B: no packing.
  auto few = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[16, 256], %b: f32[256, 256]) -> f32[16, 256] {
  dataflow {
    %y: f32[16, 256] = matmul(%a, %b)
  }
  return %y
}
)",
                              "fused_matmul");
  EXPECT_EQ(traceText(few.after).find("transform_layout"), std::string::npos) << traceText(few.after);
  auto small = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[128, 64], %b: f32[64, 64]) -> f32[128, 64] {
  dataflow {
    %y: f32[128, 64] = matmul(%a, %b)
  }
  return %y
}
)",
                                "fused_matmul");
  EXPECT_EQ(traceText(small.after).find("transform_layout"), std::string::npos) << traceText(small.after);
}

// A reduction short enough to be one cache block (R0 = 1, as attention's
// Q K^T over a head of 64): each register tile is zeroed right before its
// reduction, under the same loops (not in a pass over the whole output
// first, which the reduction then read back from memory: Whisper's Q K^T
// 20.0 -> 15.1 ms).
TEST(ScheduleRulesCpu, OneBlockReductionZeroesEachTileBeforeItsReduction) {
  Target tiny_l1 = cpu();  // the parallel tile's 8 x 256 outputs (8 KiB) do not fit
  tiny_l1.cpu.l1d_cache_bytes = 4 * 1024;
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[96, 64], %b: f32[64, 256]) -> f32[96, 256] {
  dataflow {
    %y: f32[96, 256] = matmul(%a, %b)
  }
  return %y
}
)",
                            "fused_matmul", 1e-4, tiny_l1);
  EXPECT_EQ(s.rule, "matmul");
  auto update = loopsOf(s.after, "matmul"), init = loopsOf(s.after, "matmul_init");
  ASSERT_TRUE(init.found);
  // The init's own loops are the register tile's (rows, lanes); every loop
  // above them is one of the update's, down to its first iterating reduce loop.
  ASSERT_GE(init.loops.size(), 2u);
  const size_t shared = init.loops.size() - 2;
  for (size_t i = 0; i < shared; ++i) EXPECT_EQ(init.loops[i], update.loops[i]) << i;
  ASSERT_LT(shared, update.loops.size());
  EXPECT_NE(update.loops[shared]->loop_var->name.find("k"), std::string::npos) << ir::printFunction(s.after);
  EXPECT_EQ(init.loops.back()->loop_kind, ir::LoopKind::vectorized);
}

// Two vectors a row (packed, AVX-512) over rows that 8 does not divide (36):
// 12 rows (24 accumulators), with or without an epilogue (a bias: the matmul
// then writes an intermediate, whose tile codegen keeps in registers too,
// register_tiles.cpp).
TEST(ScheduleRulesCpu, TwoVectorTilesTakeTwelveRowsWhereEightDoNotDivide) {
  Target avx512 = cpu();
  avx512.vector_bits = 512;
  auto graph = [](bool bias) {
    return std::string(
               "mlcc.ir 1\ngraph @main(%a: f32[36, 128], %b: f32[128, 256], %c: f32[256]) -> "
               "f32[36, 256] {\n  dataflow {\n    %m: f32[36, 256] = matmul(%a, %b)\n") +
           (bias ? "    %y: f32[36, 256] = add(%m, %c)\n  }\n  return %y\n}\n" : "  }\n  return %m\n}\n");
  };
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias);
    auto s = scheduleAndCheck(graph(bias), bias ? "fused_matmul_add" : "fused_matmul", 1e-4, avx512);
    EXPECT_EQ(s.rule, "matmul");
    const std::vector<int64_t> e = extents(loopsOf(s.after, "matmul"));
    ASSERT_GE(e.size(), 3u);
    // S3: rows, two vectors, lanes.
    EXPECT_EQ(std::vector<int64_t>(e.end() - 3, e.end()), (std::vector<int64_t>{12, 2, 16}))
        << ir::printFunction(s.after);
  }
}

// dense_pack's weight is in panels already (convert-layout packed it at
// compile time): no copy, the same cache-blocked tiling as a packed operand
// (R1 the whole reduction of 96, the 10 panels swept per register tile).
TEST(ScheduleRulesCpu, DensePackIsTiledLikeAPackedOperand) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[64, 96], %wp: f32[10, 96, 8]) -> f32[64, 80] {
  dataflow {
    %y: f32[64, 80] = dense_pack(%x, %wp)
  }
  return %y
}
)",
                            "fused_dense_pack");
  EXPECT_EQ(s.rule, "matmul");
  EXPECT_EQ(traceText(s.after).find("transform_layout"), std::string::npos) << traceText(s.after);
  auto l = loopsOf(s.after, "dense_pack");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{8, 1, 1, 1, 1, 10, 24, 4, 8, 8})) << ir::printFunction(s.after);
  EXPECT_EQ(innermostKind(s.after, "dense_pack"), ir::LoopKind::vectorized);
}

// A tuner mutates the recorded tile sizes: the same trace with other
// decisions replays to another program with the same meaning.
TEST(ScheduleRulesCpu, MutatedTileDecisionsReplayToTheSameMeaning) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[32, 64], %w: f32[48, 64], %b: f32[48]) -> f32[32, 48] {
  dataflow {
    %d: f32[32, 48] = dense(%x, %w)
    %a: f32[32, 48] = add(%d, %b)
    %y: f32[32, 48] = relu(%a)
  }
  return %y
}
)",
                            "fused_dense_add_relu");
  // Decisions for i (32), j (48) and k (64: a block, unrolled by the last).
  struct Mutation {
    std::vector<int64_t> i, j, k;
  };
  std::vector<Mutation> mutations = {{{1, 1, 4, 8}, {2, 2, 2, 6}, {1, 64, 1}},
                                     {{2, 2, 2, 4}, {3, 2, 1, 8}, {64, 1, 1}},
                                     {{8, 1, 1, 4}, {1, 6, 2, 4}, {4, 2, 8}},
                                     {{1, 2, 4, 4}, {6, 1, 1, 8}, {2, 16, 2}}};
  int changed = 0;
  for (const auto& m : mutations) {
    ir::Trace trace = s.after.trace;
    int spatial = 0;
    bool copy_tile = true;  // the first 2-factor decision splits the packed weight's copy
    for (auto& inst : trace.insts) {
      if (inst.name != "sample_perfect_tile") continue;
      if (inst.decision->asList().size() == 2 && std::exchange(copy_tile, false)) continue;
      if (inst.decision->asList().size() == 3)  // k: the reduction block and its unrolled steps
        inst.decision = ir::AttrValue::ints(m.k);
      else
        inst.decision = ir::AttrValue::ints(spatial++ == 0 ? m.i : m.j);
    }
    SCOPED_TRACE(ir::printTrace(trace));
    ir::PrimFunc mutated = replayTrace(s.before, trace);
    test::expectSameMeaning(s.before, mutated, 1e-4);
    changed += !ir::structuralEqual(mutated, s.after);
  }
  EXPECT_EQ(changed, 4);
}

// The parallel tiles of a packed matmul split the rows, unless it has more
// columns than rows and its panels are larger than L2: then the columns,
// so that each tile reads only its own panels (ViT-B/16's dense layers).
TEST(ScheduleRulesCpu, PanelsLargerThanL2SplitTheColumnsAcrossCores) {
  const std::string graph = R"(mlcc.ir 1
graph @main(%x: f32[64, 64], %w: f32[192, 64]) -> f32[64, 192] {
  dataflow {
    %y: f32[64, 192] = dense(%x, %w)
  }
  return %y
}
)";
  // 192 x 64 floats of panels: 48 KiB, in the default 2 MiB of L2.
  auto rows = scheduleAndCheck(graph, "fused_dense");
  EXPECT_NE(traceText(rows.after).find("n = 4) decision [8, 1, 1, 8]"), std::string::npos)
      << traceText(rows.after);
  Target small = cpu();
  small.cpu.l2_cache_bytes = 32 * 1024;
  auto cols = scheduleAndCheck(graph, "fused_dense", 1e-4, small);
  const std::string trace = traceText(cols.after);
  const size_t row_tiles = trace.find("n = 4) decision [");
  ASSERT_NE(row_tiles, std::string::npos) << trace;
  EXPECT_EQ(trace.substr(row_tiles, 21), "n = 4) decision [1, 2") << trace;  // rows: S0 1
  EXPECT_EQ(trace.substr(trace.find("n = 4) decision [", row_tiles + 1), 21), "n = 4) decision [8, 1")
      << trace;  // columns: S0 8
}

// 71 rows (a prime) have no divisor to make a register tile's rows of: the
// rows are padded to 72 (pad_einsum), A read through a zero-padded copy and
// C written through a padded one, then tiled by 8 rows like any other.
TEST(ScheduleRulesCpu, PrimeRowsArePaddedToATileOfRows) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[71, 64], %b: f32[64, 48]) -> f32[71, 48] {
  dataflow {
    %c: f32[71, 48] = matmul(%a, %b)
    %y: f32[71, 48] = relu(%c)
  }
  return %y
}
)",
                            "fused_matmul_relu");
  EXPECT_EQ(s.rule, "matmul");
  const std::string trace = traceText(s.after);
  EXPECT_NE(trace.find("pad_einsum(%b1, [8, 1, 1])"), std::string::npos) << trace;
  const std::string text = ir::printFunction(s.after);
  EXPECT_NE(text.find("alloc_buffer %a_pad: f32[72, 64]"), std::string::npos) << text;
  auto mm = loopsOf(s.after, "matmul");
  ASSERT_TRUE(mm.found);
  EXPECT_EQ(mm.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(mm)[mm.loops.size() - 2], 8) << text;  // the rows, unrolled
  EXPECT_EQ(mm.loops[mm.loops.size() - 2]->loop_kind, ir::LoopKind::unrolled);
  // The crop is inlined into the relu, which reads the padded output.
  EXPECT_NE(text.find("%y[%v0, %v1] = select(%c_pad["), std::string::npos) << text;
}

TEST(ScheduleRulesCpu, BatchMatmul) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[8, 16, 32], %b: f32[8, 32, 24]) -> f32[8, 16, 24] {
  dataflow {
    %y: f32[8, 16, 24] = matmul(%a, %b)
  }
  return %y
}
)",
                            "fused_matmul");
  EXPECT_EQ(s.rule, "matmul");
  EXPECT_EQ(innermostKind(s.after, "matmul"), ir::LoopKind::vectorized);
  EXPECT_EQ(outermostKind(s.after, "matmul"), ir::LoopKind::parallel);
  auto l = loopsOf(s.after, "matmul");
  EXPECT_EQ(l.loops[l.loops.size() - 2]->loop_kind, ir::LoopKind::unrolled);
}

const char* kConv = R"(mlcc.ir 1
graph @main(%x: f32[1, 8, 30, 30], %w: f32[16, 8, 3, 3], %b: f32[1, 16, 1, 1]) -> f32[1, 16, 15, 15] {
  dataflow {
    %c: f32[1, 16, 15, 15] = conv2d(%x, %w, strides = [2, 2], padding = [1, 1, 1, 1])
    %cb: f32[1, 16, 15, 15] = add(%c, %b)
    %y: f32[1, 16, 15, 15] = relu(%cb)
  }
  return %y
}
)";

TEST(ScheduleRulesCpu, Conv2dPaddedStridedWithBiasRelu) {
  auto s = scheduleAndCheck(kConv, "fused_conv2d_add_relu");
  EXPECT_EQ(s.rule, "matmul");
  const auto& f = s.after;
  // The bias is inlined; the 15 output columns (at most two vectors of 8,
  // not a multiple of one) are one vector, 8 output channels the rows; the
  // 15 output rows are the parallel loop.
  EXPECT_FALSE(hasBlock(f, "add"));
  auto conv = loopsOf(f, "conv2d");
  ASSERT_TRUE(conv.found);
  // The stride-2 read of the padding along the vector would be a gather:
  // the padding buffer is re-indexed [.., w] -> [.., w % 2, w / 2], which
  // makes it unit-stride (pad[.., kw % 2, ow + kw / 2]); the padding is
  // computed on its own, before the convolution.
  auto pad = loopsOf(f, "pad");
  ASSERT_TRUE(pad.found);
  EXPECT_NE(pad.loops.front(), conv.loops.front());
  const std::string text = ir::printFunction(f);
  EXPECT_NE(text.find("alloc_buffer %pad: f32[1, 8, 32, 2, 16]"), std::string::npos) << text;
  EXPECT_NE(text.find("%pad[%v0, %vk0, %v2 * 2 + %vk1, %vk2 % 2, %v3 + %vk2 / 2]"), std::string::npos)
      << text;
  EXPECT_EQ(conv.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(conv).back(), 15);
  EXPECT_EQ(extents(conv).front(), 15);
  EXPECT_EQ(conv.loops[conv.loops.size() - 2]->loop_kind, ir::LoopKind::unrolled);
  EXPECT_EQ(extents(conv)[conv.loops.size() - 2], 8);
  EXPECT_EQ(outermostKind(f, "conv2d"), ir::LoopKind::parallel);
  auto relu = loopsOf(f, "relu");
  ASSERT_TRUE(relu.found);
  EXPECT_EQ(relu.loops.front(), conv.loops.front());
  EXPECT_EQ(innermostKind(f, "relu"), ir::LoopKind::vectorized);
}

TEST(ScheduleRulesCpu, Conv2dResidualBlock7x7) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 32, 7, 7], %w: f32[32, 32, 3, 3], %b: f32[1, 32, 1, 1], %r: f32[1, 32, 7, 7]) -> f32[1, 32, 7, 7] {
  dataflow {
    %c: f32[1, 32, 7, 7] = conv2d(%x, %w, padding = [1, 1, 1, 1])
    %cb: f32[1, 32, 7, 7] = add(%c, %b)
    %s: f32[1, 32, 7, 7] = add(%cb, %r)
    %y: f32[1, 32, 7, 7] = relu(%s)
  }
  return %y
}
)",
                            "fused_conv2d_add_add_relu");
  EXPECT_EQ(s.rule, "matmul");
  const auto& f = s.after;
  // 7 columns: one vector of 7. The output channels are the parallel loop,
  // so every iteration would pad the same input: the padding stays a nest
  // of its own (its rows of 9 plain loops: see the transpose below).
  auto conv = loopsOf(f, "conv2d");
  EXPECT_EQ(conv.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(conv).back(), 7);
  EXPECT_EQ(conv.loops.front()->loop_kind, ir::LoopKind::parallel);
  auto pad = loopsOf(f, "pad");
  ASSERT_TRUE(pad.found);
  EXPECT_NE(pad.loops.front(), conv.loops.front());
  EXPECT_EQ(extents(pad).back(), 9);
  EXPECT_FALSE(hasBlock(f, "add"));
  EXPECT_FALSE(hasBlock(f, "add_1"));
  EXPECT_EQ(innermostKind(f, "relu"), ir::LoopKind::vectorized);
}

// A 3x3 convolution (padding 1) of 64 channels in blocks of 8 to as many
// over h x w.
std::string conv3x3Blocked(int64_t h, int64_t w) {
  const std::string t = "f32[1, 8, " + std::to_string(h) + ", " + std::to_string(w) + ", 8]";
  return "mlcc.ir 1\ngraph @main(%x: " + t + ", %w: f32[8, 8, 3, 3, 8, 8]) -> " + t +
         " {\n  dataflow {\n    %y: " + t +
         " = conv2d_nchwc(%x, %w, padding = [1, 1, 1, 1])\n  }\n  return %y\n}\n";
}
// The test target with 16 KiB of L1 (which that convolution's weight chunk
// exceeds).
Target smallL1() {
  Target t = cpu();
  t.cpu.l1d_cache_bytes = 16 * 1024;
  return t;
}

// A convolution whose weight chunk of the register tile's reduction (its
// input-channel blocks x 3 x 3 x 8 lanes x one vector of 8 output channels,
// 18 KiB here) exceeds L1 (16 KiB in this target) reads it in chunks of half
// of L1 (R1: 2 of the 8 input-channel blocks) and sweeps its output rows
// inside each chunk (S2: the 7 rows, their accumulators within a quarter of
// L1), so that a chunk is read from L1 by every row: ResNet-18's 7 x 7
// stage-4 convolutions (a 295 KiB chunk), 116-118 -> 142-146 GFLOPS on one
// Xeon core. The same convolution under 48 KiB of L1, or on a CPU that
// issues 512-bit FMAs as two halves (Zen 4: half the FLOPs a cycle, the
// weight streams from L2), keeps its whole reduction in R1 and its rows in
// S1.
TEST(ScheduleRulesCpu, ConvolutionWeightLargerThanL1IsReadInChunksByEveryRow) {
  const std::string graph = conv3x3Blocked(7, 7);
  auto s = scheduleAndCheck(graph, "fused_conv2d_nchwc", 1e-4, smallL1());
  EXPECT_EQ(s.rule, "matmul");
  // Loops: S0 (fused) S1 (oc, h, w, lane) R0 (ic, kh, kw, lane) S2 (oc, h,
  // w, lane) R1 (ic, kh, kw, lane) S3 (oc, h, w, lane).
  auto conv = loopsOf(s.after, "conv2d_nchwc");
  const std::vector<int64_t> chunked = extents(conv);
  ASSERT_EQ(chunked.size(), 21u) << ir::printFunction(s.after);
  EXPECT_EQ(chunked[2], 1) << "S1 of the output rows";
  EXPECT_EQ(chunked[5], 4) << "R0 of the input-channel blocks";
  EXPECT_EQ(chunked[10], 7) << "S2 of the output rows";
  EXPECT_EQ(chunked[13], 2) << "R1 of the input-channel blocks";
  Target split_fma = smallL1();
  split_fma.cpu.split_512bit_fma = true;
  for (const Target& t : {cpu(), split_fma}) {
    auto whole = scheduleAndCheck(graph, "fused_conv2d_nchwc", 1e-4, t);
    const std::vector<int64_t> unchunked = extents(loopsOf(whole.after, "conv2d_nchwc"));
    ASSERT_EQ(unchunked.size(), 21u) << ir::printFunction(whole.after);
    EXPECT_EQ(unchunked[2], 7);
    EXPECT_EQ(unchunked[5], 1);
    EXPECT_EQ(unchunked[10], 1);
    EXPECT_EQ(unchunked[13], 8);
  }
}

// The same convolution over wide output rows (64 columns: 8 register tiles
// of 8) gives up to 4 of the tiles that share a weight chunk in L1 to the
// columns (S2 of w: one run of 4 x 8 + 2 input columns per row, 163-172
// GFLOPS at 128 x 128 on one Xeon core where 8 rows of one tile ran at
// 139-145), the rest to the output rows.
TEST(ScheduleRulesCpu, WideConvolutionSharesWeightChunksAlongItsColumnsFirst) {
  auto s = scheduleAndCheck(conv3x3Blocked(8, 64), "fused_conv2d_nchwc", 1e-4, smallL1());
  EXPECT_EQ(s.rule, "matmul");
  const std::vector<int64_t> loops = extents(loopsOf(s.after, "conv2d_nchwc"));
  ASSERT_EQ(loops.size(), 21u) << ir::printFunction(s.after);
  EXPECT_EQ(loops[11], 4) << "S2 of the output columns";
  EXPECT_EQ(loops[10], 4) << "S2 of the output rows";
  EXPECT_EQ(loops[19], 8) << "S3 of the output columns";
  // Rows of a few tiles (3 of 7 columns) keep taking what the output rows
  // leave of the tiles that share a chunk.
  const std::vector<int64_t> narrow = extents(loopsOf(
      scheduleAndCheck(conv3x3Blocked(2, 21), "fused_conv2d_nchwc", 1e-4, smallL1()).after, "conv2d_nchwc"));
  ASSERT_EQ(narrow.size(), 21u);
  EXPECT_EQ(narrow[19], 7) << "S3 of the output columns";
  EXPECT_EQ(narrow[10], 2) << "S2 of the output rows";
  EXPECT_EQ(narrow[11], 3) << "S2 of the output columns";
}

// A register tile of 8 output columns x 3 vectors of output channels (24
// accumulators) leaves no room for the 8 columns' broadcasts besides (with
// the channel blocks outside the columns, LLVM keeps all of them live
// across the 3 weight vectors: a spill per step): its channel blocks go
// inside its columns, next to the vector, each column's broadcast used by
// the 3 vectors at once. 8 x 2 keeps them outside (each weight vector
// loaded once a step).
TEST(ScheduleRulesCpu, ChannelBlocksGoInsideTheColumnsWhereTheirBroadcastsWouldSpill) {
  auto graph = [](int64_t blocks) {
    const std::string y = "f32[1, " + std::to_string(blocks) + ", 4, 8, 16]";
    return "mlcc.ir 1\ngraph @main(%x: f32[1, 2, 4, 8, 16], %w: f32[" + std::to_string(blocks) +
           ", 2, 3, 3, 16, 16]) -> " + y + " {\n  dataflow {\n    %y: " + y +
           " = conv2d_nchwc(%x, %w, padding = [1, 1, 1, 1])\n  }\n  return %y\n}\n";
  };
  Target avx512 = cpu();
  avx512.vector_bits = 512;
  for (int64_t blocks : {3, 2}) {
    auto s = scheduleAndCheck(graph(blocks), "fused_conv2d_nchwc", 1e-4, avx512);
    EXPECT_EQ(s.rule, "matmul");
    auto conv = loopsOf(s.after, "conv2d_nchwc");
    const std::vector<int64_t> e = extents(conv);
    ASSERT_GE(e.size(), 4u);
    const std::vector<int64_t> s3(e.end() - 4, e.end());  // S3: oc, h, w, lanes in some order
    if (blocks == 3)
      EXPECT_EQ(s3, (std::vector<int64_t>{1, 8, 3, 16})) << ir::printFunction(s.after);
    else
      EXPECT_EQ(s3, (std::vector<int64_t>{2, 1, 8, 16})) << ir::printFunction(s.after);
    EXPECT_EQ(conv.loops.back()->loop_kind, ir::LoopKind::vectorized);
  }
}

// Seven output-channel blocks split 4 + 3 on two cores: the parallel loop
// also takes the output rows' halves (7 x 2 = 14 tiles, 7 + 7), where no
// input is padded. RegNetY-800MF and MobileNetV3-Large at 2 threads 8-10%
// faster, 1 thread unchanged.
TEST(ScheduleRulesCpu, ParallelTilesEvenedOutOverTheCores) {
  const char* graph = R"(mlcc.ir 1
graph @main(%x: f32[1, 8, 28, 28, 8], %w: f32[7, 8, 1, 1, 8, 8]) -> f32[1, 7, 28, 28, 8] {
  dataflow {
    %y: f32[1, 7, 28, 28, 8] = conv2d_nchwc(%x, %w)
  }
  return %y
}
)";
  Target two_cores = cpu();
  two_cores.num_cores = 2;
  auto s = scheduleAndCheck(graph, "fused_conv2d_nchwc", 1e-4, two_cores);
  EXPECT_EQ(s.rule, "matmul");
  auto conv = loopsOf(s.after, "conv2d_nchwc");
  ASSERT_FALSE(conv.loops.empty());
  EXPECT_EQ(conv.loops.front()->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(extents(conv).front(), 14) << ir::printFunction(s.after);
  // On 3 and 4 cores too, no core's share is more than 5% above the mean.
  for (int cores : {3, 4}) {
    Target t = cpu();
    t.num_cores = cores;
    auto c = loopsOf(scheduleAndCheck(graph, "fused_conv2d_nchwc", 1e-4, t).after, "conv2d_nchwc");
    ASSERT_FALSE(c.loops.empty());
    const int64_t tiles = extents(c).front();
    EXPECT_LE((tiles + cores - 1) / cores * cores * 20, tiles * 21)
        << tiles << " tiles on " << cores << " cores";
  }
}

// A stride-2 depthwise convolution keeps its padding per tile (not
// deinterleaved, see llvm_matmul.cpp): computed on its own it costs more
// than the gathers it saves.
TEST(ScheduleRulesCpu, StridedDepthwiseConvKeepsItsPaddingPerTile) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 8, 28, 28], %dw: f32[8, 1, 3, 3]) -> f32[1, 8, 14, 14] {
  dataflow {
    %d: f32[1, 8, 14, 14] = conv2d(%x, %dw, strides = [2, 2], padding = [1, 1, 1, 1], groups = 8)
  }
  return %d
}
)",
                            "fused_conv2d");
  EXPECT_EQ(s.rule, "gemv");
  const std::string text = ir::printFunction(s.after);
  EXPECT_NE(text.find("alloc_buffer %pad: f32[1, 8, 30, 30]"), std::string::npos) << text;
  EXPECT_EQ(loopsOf(s.after, "pad").loops.front(), loopsOf(s.after, "conv2d").loops.front());
}

TEST(ScheduleRulesCpu, DepthwiseConvIsGemvTiledAlongTheRow) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 48, 14, 14], %dw: f32[48, 1, 3, 3]) -> f32[1, 48, 14, 14] {
  dataflow {
    %d: f32[1, 48, 14, 14] = conv2d(%x, %dw, padding = [1, 1, 1, 1], groups = 48)
  }
  return %d
}
)",
                            "fused_conv2d");
  EXPECT_EQ(s.rule, "gemv");
  EXPECT_EQ(loopsOf(s.after, "pad").loops.front(), loopsOf(s.after, "conv2d").loops.front());
  EXPECT_EQ(innermostKind(s.after, "conv2d"), ir::LoopKind::vectorized);
  // 14 columns on 8 lanes: at most two vectors and not a multiple of one,
  // so the whole row is the vector (the emitter unrolls it: 8 + 4 + 2 lanes).
  EXPECT_EQ(extents(loopsOf(s.after, "conv2d")).back(), 14);
  EXPECT_EQ(outermostKind(s.after, "conv2d"), ir::LoopKind::parallel);
}

TEST(ScheduleRulesCpu, Batch1DenseIsGemvWithAVectorizedReduction) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[1, 256], %w: f32[1000, 256], %b: f32[1000]) -> f32[1, 1000] {
  dataflow {
    %d: f32[1, 1000] = dense(%a, %w)
    %y: f32[1, 1000] = add(%d, %b)
  }
  return %y
}
)",
                            "fused_dense_add");
  EXPECT_EQ(s.rule, "gemv");
  const auto& f = s.after;
  // The partial sums over 8 lanes of k are a vectorized block; the final
  // sums and the bias run per output under the same parallel loop.
  std::string rf = otherBlock(f, "dense", {"dense"});
  ASSERT_FALSE(rf.empty()) << ir::printFunction(f);
  std::string rf_update;
  for (const auto& n : blockNames(f))
    if (n != "dense" && n != "add" && innermostKind(f, n) == ir::LoopKind::vectorized) rf_update = n;
  ASSERT_FALSE(rf_update.empty()) << ir::printFunction(f);
  EXPECT_EQ(extents(loopsOf(f, rf_update)).back(), 8);
  EXPECT_EQ(outermostKind(f, rf_update), ir::LoopKind::parallel);
  EXPECT_EQ(loopsOf(f, "dense").loops.front(), loopsOf(f, rf_update).loops.front());
  EXPECT_EQ(loopsOf(f, "add").loops.front(), loopsOf(f, rf_update).loops.front());
  EXPECT_NE(traceText(f).find("rfactor("), std::string::npos);
  // Four outputs' partial sums are computed together (four independent
  // accumulators rather than one chain of FMAs as long as k): the parallel
  // loop runs over 250 groups, the 4 outputs unrolled next to the vector.
  auto rf_loops = loopsOf(f, rf_update);
  auto rf_extents = extents(rf_loops);
  ASSERT_GE(rf_extents.size(), 3u) << ir::printFunction(f);
  EXPECT_EQ(rf_extents.front(), 250) << ir::printFunction(f);
  EXPECT_EQ(rf_extents[rf_extents.size() - 2], 4) << ir::printFunction(f);
  EXPECT_EQ(rf_loops.loops[rf_loops.loops.size() - 2]->loop_kind, ir::LoopKind::unrolled);
}

// A batch-4 dense layer: vectorizing the output's columns would read the
// weight w[j, k] with a stride; the reduction is vectorized instead along
// k (contiguous in both operands) through rfactor, as for batch 1, with the
// batch rows inside (MLP 784-256-10 at batch 4: 0.104 -> 0.036 ms).
TEST(ScheduleRulesCpu, SmallBatchDenseVectorizesTheReduction) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[4, 256], %w: f32[200, 256], %b: f32[200]) -> f32[4, 200] {
  dataflow {
    %d: f32[4, 200] = dense(%a, %w)
    %e: f32[4, 200] = add(%d, %b)
    %y: f32[4, 200] = relu(%e)
  }
  return %y
}
)",
                            "fused_dense_add_relu");
  EXPECT_EQ(s.rule, "matmul");
  const auto& f = s.after;
  std::string rf_update;
  for (const auto& n : blockNames(f))
    if (n != "dense" && n != "relu" && n.find("init") == std::string::npos &&
        innermostKind(f, n) == ir::LoopKind::vectorized)
      rf_update = n;
  ASSERT_FALSE(rf_update.empty()) << ir::printFunction(f);
  EXPECT_EQ(extents(loopsOf(f, rf_update)).back(), 8) << ir::printFunction(f);
  EXPECT_EQ(outermostKind(f, rf_update), ir::LoopKind::parallel);
  EXPECT_EQ(loopsOf(f, "dense").loops.front(), loopsOf(f, rf_update).loops.front());
  // The parallel loop runs over the weight's rows (200) only; the 4 batch
  // rows are unrolled inside it, next to the vector (4 accumulators that
  // share each vector of w), and the epilogue follows under the same loop.
  auto rf_extents = extents(loopsOf(f, rf_update));
  ASSERT_GE(rf_extents.size(), 3u) << ir::printFunction(f);
  EXPECT_EQ(rf_extents.front(), 200) << ir::printFunction(f);
  EXPECT_EQ(rf_extents[rf_extents.size() - 2], 4) << ir::printFunction(f);
  EXPECT_EQ(loopsOf(f, "relu").loops.front(), loopsOf(f, rf_update).loops.front());
  EXPECT_NE(traceText(f).find("rfactor("), std::string::npos);
}

// A batch of 9 rows is a matmul again: the register-tiled schedule.
TEST(ScheduleRulesCpu, Batch9DenseIsTiled) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[9, 64], %w: f32[32, 64]) -> f32[9, 32] {
  dataflow {
    %d: f32[9, 32] = dense(%a, %w)
  }
  return %d
}
)",
                            "fused_dense");
  EXPECT_EQ(s.rule, "matmul");
  EXPECT_EQ(traceText(s.after).find("rfactor("), std::string::npos);
}

TEST(ScheduleRulesCpu, SymbolicBatchDense) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%a: f32[n, 64], %w: f32[100, 64], %b: f32[100]) -> f32[n, 100] {
  dataflow {
    %d: f32[n, 100] = dense(%a, %w)
    %y: f32[n, 100] = add(%d, %b)
  }
  return %y
}
)",
                            "fused_dense_add");
  EXPECT_EQ(s.rule, "matmul");
  const auto& f = s.after;
  // 100 outputs: vectors of 4 (no predicates); n is not split.
  auto dense = loopsOf(f, "dense");
  EXPECT_EQ(dense.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(dense).back(), 4);
  EXPECT_EQ(outermostKind(f, "dense"), ir::LoopKind::parallel);
  EXPECT_EQ(ir::printFunction(f).find("where("), std::string::npos) << ir::printFunction(f);
}

// --- reductions ------------------------------------------------------------------

TEST(ScheduleRulesCpu, SoftmaxRowsAreParallelWithTheirReductions) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%t: f32[64, 32, 32]) -> f32[64, 32, 32] {
  dataflow {
    %y: f32[64, 32, 32] = softmax(%t, axis = -1)
  }
  return %y
}
)",
                            "fused_softmax");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  auto out = loopsOf(f, "softmax");
  ASSERT_TRUE(out.found);
  EXPECT_EQ(extents(out), (std::vector<int64_t>{2048, 4, 8}));
  EXPECT_EQ(out.loops.front()->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(out.loops.back()->loop_kind, ir::LoopKind::vectorized);
  for (const char* r : {"softmax_max", "softmax_expsum"}) {
    auto l = loopsOf(f, r);
    ASSERT_TRUE(l.found) << r;
    EXPECT_EQ(l.loops.front(), out.loops.front()) << r << " is not computed per row";
  }
  // The row reductions run along the contiguous axis (32 = 4 vectors of 8):
  // rfactor'ed into a vector of partial results per row (the lanes loop
  // inside the 4 steps of the reduction, vectorized), then the lanes reduced.
  for (const char* r : {"softmax_max_rf", "softmax_expsum_rf"}) {
    auto l = loopsOf(f, r);
    ASSERT_TRUE(l.found) << r << "\n" << ir::printFunction(f);
    EXPECT_EQ(l.loops.front(), out.loops.front()) << r << " is not computed per row";
    EXPECT_EQ(extents(l), (std::vector<int64_t>{2048, 4, 8})) << r;
    EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized) << r;
  }
}

// Rows of a single vector (attention over 8 tokens, 8 lanes): the exp is a
// block of its own, computed a row at a time before its sum and the
// normalization read it, and vectorized (one vector exp per row instead of
// 8 scalar calls); the max and the sum, a plain comparison or add per
// element, are not rfactor'ed (their partials would cost a pass of their
// own).
TEST(ScheduleRulesCpu, SoftmaxRowsOfOneVectorVectorizeTheExp) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%t: f32[4, 8, 8]) -> f32[4, 8, 8] {
  dataflow {
    %y: f32[4, 8, 8] = softmax(%t, axis = -1)
  }
  return %y
}
)",
                            "fused_softmax");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  auto e = loopsOf(f, "softmax_exp");
  ASSERT_TRUE(e.found) << ir::printFunction(f);
  EXPECT_EQ(e.loops.front(), loopsOf(f, "softmax").loops.front()) << "the exp is not computed per row";
  EXPECT_EQ(e.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(e).back(), 8);
  EXPECT_FALSE(hasBlock(f, "softmax_max_rf")) << ir::printFunction(f);
  EXPECT_FALSE(hasBlock(f, "softmax_expsum_rf")) << ir::printFunction(f);
}

// Rows that no vector divides (37 columns, 8 lanes; ViT's 197 tokens) are
// still vectorized: 5 vectors, the last masked by the split's predicate,
// both reductions as vectors of partial results computed per row (compute_at
// rewrites the rf blocks' predicate for their new loops). So are rows whose
// widest dividing vector is no power of two (42 columns: 7 lanes, which LLVM
// runs as narrower vectors and a scalar rest; Whisper's 1500 scores: 15):
// 6 vectors of 8.
TEST(ScheduleRulesCpu, SoftmaxRowsNoVectorDividesAreMasked) {
  for (int64_t columns : {37, 42}) {
    SCOPED_TRACE(columns);
    const std::string n = std::to_string(columns);
    auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%t: f32[3, 5, )" + n + R"(]) -> f32[3, 5, )" +
                                  n + R"(] {
  dataflow {
    %y: f32[3, 5, )" + n + R"(] = softmax(%t, axis = -1)
  }
  return %y
}
)",
                              "fused_softmax");
    EXPECT_EQ(s.rule, "reduction");
    const auto& f = s.after;
    for (const char* b : {"softmax_max_rf", "softmax_expsum_rf", "softmax"}) {
      auto l = loopsOf(f, b);
      ASSERT_TRUE(l.found) << b << "\n" << ir::printFunction(f);
      ASSERT_GE(l.loops.size(), 3u) << b;
      EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized) << b;
      EXPECT_EQ(extents(l).back(), 8) << b;
      EXPECT_EQ(l.loops[l.loops.size() - 2]->extent->as<ir::IntImmNode>()->value, (columns + 7) / 8) << b;
    }
    EXPECT_NE(ir::printFunction(f).find("* 8 + "), std::string::npos);
    EXPECT_NE(ir::printFunction(f).find("< " + n + ")"), std::string::npos) << ir::printFunction(f);
  }
}

// The fused topk of `k` positions along the last axis of f32[`rows`, n].
Scheduled scheduleTopk(const std::string& rows, int64_t n, int64_t k) {
  const std::string in = "f32[" + rows + ", " + std::to_string(n) + "]";
  const std::string v = "f32[" + rows + ", " + std::to_string(k) + "]";
  const std::string i = "i64[" + rows + ", " + std::to_string(k) + "]";
  return scheduleAndCheck("mlcc.ir 1\ngraph @main(%d: " + in + ") -> (" + v + ", " + i +
                              ") {\n  dataflow {\n" + "    %t: (" + v + ", " + i +
                              ") = topk(%d, k = " + std::to_string(k) + ")\n" + "    %v: " + v +
                              " = %t[0]\n    %i: " + i + " = %t[1]\n  }\n  return (%v, %i)\n}\n",
                          "fused_topk");
}

// TopK of many positions of a row (20 of 64: ranked, ops/src/topk.cpp): its
// ranks, read by the indices and not by the output, are not computed per
// output element under the output's rows but on their own, vectorized along
// the ranked elements (their counts in i32) and parallel; no per-lane
// partial results. The interpreter agrees.
TEST(ScheduleRulesCpu, TopkRanksAreScheduledOnTheirOwn) {
  auto s = scheduleTopk("2, 8", 64, 20);
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  EXPECT_FALSE(hasBlock(f, "topk_rank_rf")) << ir::printFunction(f);
  EXPECT_EQ(innermostKind(f, "topk_rank"), ir::LoopKind::vectorized) << ir::printFunction(f);
  EXPECT_EQ(outermostKind(f, "topk_rank"), ir::LoopKind::parallel) << ir::printFunction(f);
  EXPECT_NE(ir::printFunction(f).find("alloc_buffer %topk_rank: i32[2, 8, 64]"), std::string::npos)
      << ir::printFunction(f);
}

// topk selecting 4 of 256 (ops/src/topk.cpp): each step's reductions along
// the row (the best value, the first index holding it) accumulate a vector
// of partial results per row (rfactor), parallel over the rows.
TEST(ScheduleRulesCpu, TopkSelectionStepsAreVectorizedAlongTheRow) {
  auto s = scheduleTopk("4, 64", 256, 4);
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  for (const char* step : {"topk_best", "topk_first", "topk_best_3", "topk_first_3"}) {
    SCOPED_TRACE(step);
    const std::string partials = std::string(step) + "_rf";
    EXPECT_EQ(innermostKind(f, partials), ir::LoopKind::vectorized) << ir::printFunction(f);
    EXPECT_EQ(outermostKind(f, step), ir::LoopKind::parallel) << ir::printFunction(f);
  }
}

TEST(ScheduleRulesCpu, LayerNorm) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%t: f32[64, 32, 32], %g: f32[32], %b: f32[32]) -> f32[64, 32, 32] {
  dataflow {
    %y: f32[64, 32, 32] = layer_norm(%t, %g, %b)
  }
  return %y
}
)",
                            "fused_layer_norm");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  EXPECT_EQ(outermostKind(f, "layer_norm"), ir::LoopKind::parallel);
  EXPECT_EQ(innermostKind(f, "layer_norm"), ir::LoopKind::vectorized);
  for (const char* r : {"layer_norm_sum", "layer_norm_sqdev", "layer_norm_sum_rf", "layer_norm_sqdev_rf"})
    EXPECT_EQ(loopsOf(f, r).loops.front(), loopsOf(f, "layer_norm").loops.front()) << r;
  for (const char* r : {"layer_norm_sum_rf", "layer_norm_sqdev_rf"})
    EXPECT_EQ(innermostKind(f, r), ir::LoopKind::vectorized) << r;
}

TEST(ScheduleRulesCpu, MaxPoolVectorizesTheOutputColumns) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 160, 14, 14]) -> f32[1, 160, 7, 7] {
  dataflow {
    %y: f32[1, 160, 7, 7] = max_pool2d(%x, pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1])
  }
  return %y
}
)",
                            "fused_max_pool2d");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  auto l = loopsOf(f, "max_pool2d");
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(l).back(), 7);
  EXPECT_EQ(l.loops.front()->loop_kind, ir::LoopKind::parallel);
  std::string init = otherBlock(f, "max_pool2d", {"max_pool2d"});
  ASSERT_FALSE(init.empty()) << ir::printFunction(f);
  EXPECT_EQ(innermostKind(f, init), ir::LoopKind::vectorized);
}

TEST(ScheduleRulesCpu, GlobalAvgPool) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 352, 14, 14]) -> f32[1, 352, 1, 1] {
  dataflow {
    %y: f32[1, 352, 1, 1] = global_avg_pool2d(%x)
  }
  return %y
}
)",
                            "fused_global_avg_pool2d");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  EXPECT_EQ(outermostKind(f, "global_avg_pool2d_divide"), ir::LoopKind::parallel);
  EXPECT_EQ(loopsOf(f, "global_avg_pool2d").loops.front(),
            loopsOf(f, "global_avg_pool2d_divide").loops.front());
}

// A mean over the rows of a matrix scaled per row (a layer norm's output
// pooled over the tokens): each output column is a row of the last block,
// and no reduction runs along a row, so the reduction is scheduled on its
// own, vectorized along its output columns (the per-row scale the same in
// every lane), rather than one scalar sum per column.
TEST(ScheduleRulesCpu, MeanOverRowsIsVectorizedAlongItsOutput) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 32, 64], %s: f32[1, 32, 1]) -> f32[1, 64] {
  dataflow {
    %y: f32[1, 32, 64] = multiply(%x, %s)
    %m: f32[1, 64] = mean(%y, axes = [1])
  }
  return %m
}
)",
                            "fused_multiply_mean");
  EXPECT_EQ(s.rule, "reduction");
  const auto& f = s.after;
  std::string acc;
  for (const auto& n : blockNames(f))
    if (n.find("init") == std::string::npos && n != "mean" && n.rfind("mean", 0) == 0) acc = n;
  ASSERT_FALSE(acc.empty()) << ir::printFunction(f);
  auto l = loopsOf(f, acc);
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized) << ir::printFunction(f);
  EXPECT_EQ(extents(l).back(), 8);
  EXPECT_EQ(innermostKind(f, "mean"), ir::LoopKind::vectorized);
}

TEST(ScheduleRulesCpu, SymbolicRowsSoftmaxAndMiddleAxisSum) {
  const char* graph = R"(mlcc.ir 1
graph @main(%x: f32[n, 10], %z: f32[8, 3, 40]) -> (f32[n, 10], f32[8, 40]) {
  dataflow {
    %s: f32[n, 10] = softmax(%x, axis = -1)
    %r: f32[8, 40] = sum(%z, axes = [1])
  }
  return (%s, %r)
}
)";
  auto s = scheduleAndCheck(graph, "fused_softmax");
  EXPECT_EQ(s.rule, "reduction");
  // The n rows in parallel, each with its reductions; 10 columns: vectors of 5.
  auto out = loopsOf(s.after, "softmax");
  EXPECT_EQ(out.loops.front()->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(out.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(out).back(), 5);
  EXPECT_EQ(loopsOf(s.after, "softmax_max").loops.front(), out.loops.front());
  // A sum over the middle axis: the output columns walk the input's last
  // dimension, so they are the vector, inside the reduction.
  auto sum = scheduleAndCheck(graph, "fused_sum");
  EXPECT_EQ(sum.rule, "reduction");
  auto l = loopsOf(sum.after, "sum");
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(extents(l).back(), 8);
}

// --- injective -----------------------------------------------------------------------

// An innermost dimension of half a vector (a blocked layout's 4 channels
// under 8 lanes) is the vector on its own: the outer loops stay loops (their
// indices uniform across the lanes), not fused into the vector.
TEST(ScheduleRulesCpu, HalfVectorInnermostDimensionIsTheVector) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 3, 6, 6, 4], %y: f32[1, 3, 6, 6, 4]) -> f32[1, 3, 6, 6, 4] {
  dataflow {
    %a: f32[1, 3, 6, 6, 4] = add(%x, %y)
  }
  return %a
}
)",
                            "fused_add");
  EXPECT_EQ(s.rule, "injective");
  auto l = loopsOf(s.after, "add");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{1, 3, 6, 6, 4})) << ir::printFunction(s.after);
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
}

// A quarter vector (4 channels under 16 lanes) read from another layout
// (NCHW16c -> NCHW4c, before ResNeXt's grouped convolutions) is a short
// vector on its own too: fused and split by 16, each lane would divide its
// index back into the dimensions.
TEST(ScheduleRulesCpu, QuarterVectorFromAnotherLayoutIsTheVector) {
  Target wide = cpu();
  wide.vector_bits = 512;
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 2, 6, 6, 16]) -> f32[1, 8, 6, 6, 4] {
  dataflow {
    %n: f32[1, 32, 6, 6] = layout_transform(%x, dst_layout = "NCHW", src_layout = "NCHW16c")
    %y: f32[1, 8, 6, 6, 4] = layout_transform(%n, dst_layout = "NCHW4c", src_layout = "NCHW")
  }
  return %y
}
)",
                            "fused_layout_transform_layout_transform", 1e-4, wide);
  EXPECT_EQ(s.rule, "injective");
  auto l = loopsOf(s.after, "layout_transform_1");
  EXPECT_EQ(extents(l).back(), 4) << ir::printFunction(s.after);
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
}

TEST(ScheduleRulesCpu, ElementwiseChainIsOneVectorizedParallelLoop) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1344, 50], %y: f32[1344, 50]) -> f32[1344, 50] {
  dataflow {
    %a: f32[1344, 50] = add(%x, %y)
    %e: f32[1344, 50] = exp(%a)
    %m: f32[1344, 50] = multiply(%e, %x)
  }
  return %m
}
)",
                            "fused_add_exp_multiply");
  EXPECT_EQ(s.rule, "injective");
  const auto& f = s.after;
  EXPECT_EQ(blockNames(f), std::vector<std::string>{"multiply"}) << ir::printFunction(f);
  auto l = loopsOf(f, "multiply");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{8400, 8}));
  EXPECT_EQ(l.loops[0]->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(l.loops[1]->loop_kind, ir::LoopKind::vectorized);
}

// A slice whose long innermost extent no vector divides (ViT's 197
// attention columns out of a padded [12, 200, 208] product): the innermost
// loop stays whole and contiguous (LLVM vectorizes it with a remainder)
// rather than fused with the others and split by 12, each lane dividing its
// index back into three dimensions.
TEST(ScheduleRulesCpu, SliceWithAPrimeInnermostExtentKeepsItsRowLoop) {
  // x[:, :n, :n] of x: f32[batch, rows, cols].
  auto slice = [](int batch, int rows, int cols, int n) {
    const std::string b = std::to_string(batch), k = std::to_string(n);
    return "mlcc.ir 1\ngraph @main(%x: f32[" + b + ", " + std::to_string(rows) + ", " + std::to_string(cols) +
           "]) -> f32[" + b + ", " + k + ", " + k + "] {\n  dataflow {\n    %y: f32[" + b + ", " + k + ", " +
           k + "] = strided_slice(%x, axes = [1, 2], begin = [0, 0], end = [" + k + ", " + k +
           "])\n  }\n  return %y\n}\n";
  };
  auto s = scheduleAndCheck(slice(12, 200, 208, 197), "fused_strided_slice");
  EXPECT_EQ(s.rule, "injective");
  auto l = loopsOf(s.after, "strided_slice");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{2364, 197})) << ir::printFunction(s.after);
  EXPECT_EQ(l.loops[0]->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(l.loops[1]->loop_kind, ir::LoopKind::serial);
  // A short one (ViT's 17 tokens at 2 heads: 2 x 17 x 17 = 2 x 289, no
  // divisor between 2 and 16): not fused and split into vectors of 2 lanes
  // that straddle the rows (LLVM refused to vectorize them and warned);
  // the plain loops stay.
  auto shortRows = scheduleAndCheck(slice(2, 24, 32, 17), "fused_strided_slice");
  auto sl = loopsOf(shortRows.after, "strided_slice");
  EXPECT_EQ(extents(sl), (std::vector<int64_t>{2, 17, 17})) << ir::printFunction(shortRows.after);
  for (const auto* loop : sl.loops) EXPECT_NE(loop->loop_kind, ir::LoopKind::vectorized);
}

// Too little work to pay for waking the thread pool (kMinParallelWork
// iterations): the loop nest stays serial, still vectorized.
TEST(ScheduleRulesCpu, SmallWorkStaysSerial) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[64, 50], %y: f32[64, 50]) -> f32[64, 50] {
  dataflow {
    %a: f32[64, 50] = add(%x, %y)
  }
  return %a
}
)",
                            "fused_add");
  auto l = loopsOf(s.after, "add");
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
  for (const auto* loop : l.loops)
    EXPECT_NE(loop->loop_kind, ir::LoopKind::parallel) << ir::printFunction(s.after);
}

// A bilinear upsampling legalizes in two passes (resize.cpp): each input
// row resized along W, then two of those rows blended per output row. In
// NCHW the second pass reads the first contiguously along its vector, at
// two rows: the first stays a stage (inlined, its gathers and index
// arithmetic would run twice per output element). Between layout moves of
// a blocked layout (the vector along the channels) it is inlined.
TEST(ScheduleRulesCpu, SeparableResizeKeepsItsFirstPassWhereTheVectorRunsAlongW) {
  auto nchw = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 3, 7, 7]) -> f32[1, 3, 28, 32] {
  dataflow {
    %y: f32[1, 3, 28, 32] = resize2d(%x, size = [28, 32], method = "linear")
  }
  return %y
}
)",
                               "fused_resize2d");
  EXPECT_EQ(nchw.rule, "injective");
  ASSERT_TRUE(loopsOf(nchw.before, "resize2d_columns").found) << ir::printFunction(nchw.before);
  EXPECT_TRUE(loopsOf(nchw.after, "resize2d_columns").found) << ir::printFunction(nchw.after);
  EXPECT_EQ(innermostKind(nchw.after, "resize2d"), ir::LoopKind::vectorized);
  auto blocked = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 1, 7, 7, 16]) -> f32[1, 1, 14, 14, 16] {
  dataflow {
    %a: f32[1, 16, 7, 7] = layout_transform(%x, src_layout = "NCHW16c", dst_layout = "NCHW")
    %r: f32[1, 16, 14, 14] = resize2d(%a, size = [14, 14], method = "linear")
    %y: f32[1, 1, 14, 14, 16] = layout_transform(%r, src_layout = "NCHW", dst_layout = "NCHW16c")
  }
  return %y
}
)",
                                  "fused_layout_transform_resize2d_layout_transform");
  EXPECT_FALSE(loopsOf(blocked.after, "resize2d_columns").found) << ir::printFunction(blocked.after);
}

TEST(ScheduleRulesCpu, TransposeWithSymbolicBatchAndOddExtents) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[n, 13, 7]) -> f32[n, 7, 13] {
  dataflow {
    %y: f32[n, 7, 13] = permute_dims(%x, axes = [0, 2, 1])
  }
  return %y
}
)",
                            "fused_permute_dims");
  EXPECT_EQ(s.rule, "injective");
  const auto& f = s.after;
  auto l = loopsOf(f, "permute_dims");
  // The rows of 13 stay plain loops (LLVM's loop vectorizer takes them):
  // fused and split by 7 (a divisor of 91), each lane divided its index by
  // 13 and gathered (256 x 13 x 7: 67 -> 4 us a call).
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::serial);
  EXPECT_EQ(extents(l).back(), 13);
  EXPECT_EQ(l.loops.front()->loop_kind, ir::LoopKind::parallel);
}

// A flatten of a blocked layout (a CNN's classifier input): the flat index
// is taken apart by divisions (x[v / 400, v / 5 % 5, v % 5, v / 25 % 16]);
// the rule splits the loop at those periods, so that the indices are loop
// variables, and vectorizes the output's innermost part, instead of a
// vector of 16 flat indices each divided per lane.
TEST(ScheduleRulesCpu, FlattenOfABlockedLayoutIsSplitAtItsPeriods) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[1, 2, 5, 5, 16]) -> f32[1, 800] {
  dataflow {
    %t: f32[1, 32, 5, 5] = layout_transform(%x, dst_layout = "NCHW", src_layout = "NCHW16c")
    %f: f32[1, 800] = reshape(%t, shape = [1, 800])
  }
  return %f
}
)",
                            "fused_layout_transform_reshape");
  EXPECT_EQ(s.rule, "injective");
  auto l = loopsOf(s.after, "reshape");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{1, 2, 16, 5, 5})) << ir::printFunction(s.after);
  EXPECT_EQ(l.loops.back()->loop_kind, ir::LoopKind::vectorized);
}

// NCHW to NCHW3c (a CNN's 3-channel input): the output's innermost
// dimension is 3 channels; the width loop, along which the input is
// contiguous, is the vector, the channels inside it unrolled.
TEST(ScheduleRulesCpu, TransposeToAShortInnermostDimensionVectorizesTheInputsRow) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[2, 3, 20, 40]) -> f32[2, 1, 20, 40, 3] {
  dataflow {
    %t: f32[2, 1, 20, 40, 3] = layout_transform(%x, dst_layout = "NCHW3c", src_layout = "NCHW")
  }
  return %t
}
)",
                            "fused_layout_transform");
  EXPECT_EQ(s.rule, "injective");
  auto l = loopsOf(s.after, "layout_transform");
  EXPECT_EQ(extents(l), (std::vector<int64_t>{2, 1, 20, 40, 3})) << ir::printFunction(s.after);
  EXPECT_EQ(l.loops[3]->loop_kind, ir::LoopKind::vectorized);
  EXPECT_EQ(l.loops[4]->loop_kind, ir::LoopKind::unrolled);
}

TEST(ScheduleRulesCpu, ConcatOfAnInlinedProducerWithSymbolicRows) {
  auto s = scheduleAndCheck(R"(mlcc.ir 1
graph @main(%x: f32[n, 4], %y: f32[n, 6]) -> f32[n, 10] {
  dataflow {
    %e: f32[n, 4] = exp(%x)
    %c: f32[n, 10] = concat(%e, %y, axis = 1)
  }
  return %c
}
)",
                            "fused_exp_concat");
  EXPECT_EQ(s.rule, "injective");
  // One copy per operand (ops/src/manipulate.cpp), the exp inlined into the
  // first (its 4 columns a vector; the second's 6 stay fused with the rows).
  EXPECT_EQ(blockNames(s.after), (std::vector<std::string>{"concat_1", "concat_2"}));
  EXPECT_EQ(innermostKind(s.after, "concat_1"), ir::LoopKind::vectorized) << ir::printFunction(s.after);
  for (const char* copy : {"concat_1", "concat_2"})
    EXPECT_EQ(outermostKind(s.after, copy), ir::LoopKind::parallel) << ir::printFunction(s.after);
}

TEST(ScheduleRulesCpu, RuleNamesAndAlreadyScheduledFunctions) {
  EXPECT_EQ(ruleNames(Target::Kind::llvm),
            (std::vector<std::string>{"scan", "matmul", "gemv", "reduction", "injective", "fallback"}));
  ir::Module m = lower(kConv);
  applyDefaultRules(m, cpu());
  ir::Module again = m;
  auto report = applyDefaultRules(again, cpu());
  for (const auto& r : report) EXPECT_EQ(r.rule, "already scheduled") << r.func;
  EXPECT_EQ(ir::printModule(again), ir::printModule(m));
  // Deterministic.
  ir::Module other = lower(kConv);
  applyDefaultRules(other, cpu());
  EXPECT_EQ(ir::printModule(other), ir::printModule(m));
}

// The parallel grain: below it a nest stays serial (the fork-join and the
// data moving between the cores' caches cost more than the split saves).
// The dense + bias + relu above is 98 Ki multiply-adds: parallel with a grain
// of 64 Ki, serial at the default 256 Ki (the same tiling otherwise); an
// elementwise nest counts 4 per element.
TEST(ScheduleRulesCpu, NestsBelowTheParallelGrainStaySerial) {
  const char* dense = R"(mlcc.ir 1
graph @main(%x: f32[32, 64], %w: f32[48, 64], %b: f32[48]) -> f32[32, 48] {
  dataflow {
    %d: f32[32, 48] = dense(%x, %w)
    %a: f32[32, 48] = add(%d, %b)
    %y: f32[32, 48] = relu(%a)
  }
  return %y
}
)";
  auto schedule = [](const std::string& text, const std::string& grain, const std::string& name) {
    ir::Module m = lower(text);
    applyDefaultRules(m, Target::parse("llvm -num-cores=4 -vector-bits=256" + grain));
    return *findPrim(m, name);
  };
  EXPECT_EQ(outermostKind(schedule(dense, " -parallel-grain=65536", "fused_dense_add_relu"), "dense"),
            ir::LoopKind::parallel);
  const ir::PrimFunc serial = schedule(dense, "", "fused_dense_add_relu");
  for (const auto* loop : loopsOf(serial, "dense").loops) EXPECT_NE(loop->loop_kind, ir::LoopKind::parallel);
  EXPECT_EQ(innermostKind(serial, "dense"), ir::LoopKind::vectorized);
  test::expectSameMeaning(*findPrim(lower(dense), "fused_dense_add_relu"), serial, 1e-4);
  // 128 x 512 = 64 Ki elements: 256 Ki multiply-adds' worth.
  const char* ewise = R"(mlcc.ir 1
graph @main(%x: f32[128, 512]) -> f32[128, 512] {
  dataflow {
    %y: f32[128, 512] = relu(%x)
  }
  return %y
}
)";
  EXPECT_EQ(outermostKind(schedule(ewise, " -parallel-grain=262144", "fused_relu"), "relu"),
            ir::LoopKind::parallel);
  EXPECT_EQ(outermostKind(schedule(ewise, " -parallel-grain=262148", "fused_relu"), "relu"),
            ir::LoopKind::serial);
}

TEST(ScheduleRulesCpu, FallbackParallelizesWhatNoRuleHandles) {
  // Two reductions of different kinds in one function: a matmul-like block
  // next to a plain reduction is no rule's pattern.
  ir::PrimFunc f =
      test::parsePrim(fixture("schedule_rules_cpu/rules_cpu_fallback_parallelizes_what_no_rule_handles.ir"));
  ir::Module m;
  m.functions.push_back(f);
  auto report = applyDefaultRules(m, cpu());
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].rule, "fallback");
  const auto& after = std::get<ir::PrimFunc>(m.functions[0]);
  EXPECT_EQ(outermostKind(after, "mm"), ir::LoopKind::parallel);
  EXPECT_EQ(outermostKind(after, "rowsum"), ir::LoopKind::parallel);
  test::expectSameMeaning(f, after, 1e-5);
}

namespace {

// An LSTM over `steps` steps of a batch of `batch`, `hidden` units: its
// recurrence with the input projection given (xw).
std::string lstmSteps(int steps, int batch, int hidden, const std::string& attrs) {
  auto t = [](std::vector<int> dims) {
    std::string s = "f32[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  };
  const std::string y = t({steps, batch, hidden}), state = t({batch, hidden});
  return "mlcc.ir 1\ngraph @main(%xw: " + t({steps, batch, 4 * hidden}) +
         ", %rt: " + t({hidden, 4 * hidden}) + ", %h0: " + state + ", %c0: " + state +
         ", %p: " + t({3 * hidden}) + ", %lens: i64[" + std::to_string(batch) + "]) -> " + y +
         " {\n  dataflow {\n    %r: (" + y + ", " + state + ", " + state +
         ") = recurrence(%xw, %rt, %h0, %c0, %p, %lens, cell = \"lstm\"" + attrs + ")\n    %y: " + y +
         " = %r[0]\n  }\n  return %y\n}\n";
}

}  // namespace

// An LSTM's steps (a recurrence, legalized as a scan): the step loop stays
// serial and outermost; one step's product gets a register tile (rows
// unrolled, a vector of the gates' columns, the whole reduction inside),
// its init decomposed out per step; the cell's blocks are vectorized; nothing
// is parallel (3 x 64 x 16 multiply-adds a step are below the parallel
// grain). Entries of the batch end at different steps (lens).
TEST(ScheduleRulesCpu, RecurrenceStepsStaySerialAndAreVectorized) {
  auto s = scheduleAndCheck(lstmSteps(5, 3, 16, ", clip = 2.0"), "fused_recurrence");
  EXPECT_EQ(s.rule, "scan");
  const auto& f = s.after;
  auto gates = loopsOf(f, "recurrence_gates");
  // step 5; rows 3 / 3; columns 64 / (2 vectors of 8); k 16; rows 3 unrolled; 16 columns vectorized.
  EXPECT_EQ(extents(gates), (std::vector<int64_t>{5, 1, 4, 16, 3, 16})) << ir::printFunction(f);
  ASSERT_EQ(gates.loops.size(), 6u);
  EXPECT_EQ(gates.loops[0]->loop_var->name, "step");
  EXPECT_EQ(gates.loops[4]->loop_kind, ir::LoopKind::unrolled);
  EXPECT_EQ(gates.loops[5]->loop_kind, ir::LoopKind::vectorized);
  auto init = loopsOf(f, "recurrence_gates_init");
  ASSERT_TRUE(init.found);
  EXPECT_EQ(init.loops[0], gates.loops[0]);  // once per step
  EXPECT_EQ(innermostKind(f, "recurrence_gates_init"), ir::LoopKind::vectorized);
  for (const char* b : {"recurrence_cell", "recurrence_hidden", "recurrence_y", "recurrence_state_c",
                        "recurrence_state_h", "recurrence_h0"}) {
    EXPECT_EQ(innermostKind(f, b), ir::LoopKind::vectorized) << b;
    for (const auto* l : loopsOf(f, b).loops) EXPECT_NE(l->loop_kind, ir::LoopKind::parallel) << b;
  }
  EXPECT_EQ(loopsOf(f, "recurrence_cell").loops[0], gates.loops[0]);
}

// An LSTM of 256 hidden units: one step's product, 256 x 1024
// multiply-adds, is worth the fork-join: its tiles of gate columns (16 of
// 8 vectors of the tests' 8 lanes) run in parallel inside each step; the
// step loop and the cell's blocks stay serial.
TEST(ScheduleRulesCpu, LargeRecurrenceStepProductRunsInParallel) {
  auto s = scheduleAndCheck(lstmSteps(2, 1, 256, ""), "fused_recurrence");
  EXPECT_EQ(s.rule, "scan");
  const auto& f = s.after;
  auto gates = loopsOf(f, "recurrence_gates");
  // step 2; (1 row tile x 16 column tiles) fused, parallel; k 256; 1 row; 64 columns.
  EXPECT_EQ(extents(gates), (std::vector<int64_t>{2, 16, 256, 1, 64})) << ir::printFunction(f);
  ASSERT_EQ(gates.loops.size(), 5u);
  EXPECT_EQ(gates.loops[0]->loop_var->name, "step");
  EXPECT_EQ(gates.loops[0]->loop_kind, ir::LoopKind::serial);
  EXPECT_EQ(gates.loops[1]->loop_kind, ir::LoopKind::parallel);
  for (const char* b : {"recurrence_cell", "recurrence_hidden", "recurrence_state_h"})
    for (const auto* l : loopsOf(f, b).loops) EXPECT_NE(l->loop_kind, ir::LoopKind::parallel) << b;
}

// --- the public suite ----------------------------------------------------------------

// ResNet-18 (generated with PyTorch): imported, fused, legalized, scheduled
// with the default rules, interpreted, and compared with PyTorch's output.
TEST(ScheduleRulesCpu, ResNet18ScheduledMatchesPyTorch) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"resnet18"}), 0);
  auto imported = frontend::importOnnxFile(dir.file("resnet18.onnx"));
  frontend::writeImportedModel(imported, dir.file("resnet18.ir"), "");
  ir::Module m = ir::parseModuleFile(dir.file("resnet18.ir"));
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  auto t0 = std::chrono::steady_clock::now();
  auto report = applyDefaultRules(m, Target::parse("llvm -num-cores=8 -vector-bits=512"));
  auto t1 = std::chrono::steady_clock::now();
  std::cout << "scheduling ResNet-18's prim funcs: " << std::chrono::duration<double>(t1 - t0).count()
            << " s\n";
  std::map<std::string, int> rules;
  for (const auto& r : report) ++rules[r.rule];
  EXPECT_EQ(rules["matmul"], 15);    // the convolutions (with bias, residual, relu)
  EXPECT_EQ(rules["gemv"], 1);       // the batch-1 classifier
  EXPECT_EQ(rules["reduction"], 2);  // max pool, global average pool
  EXPECT_EQ(rules["injective"], 1);  // flatten
  EXPECT_EQ(report.size(), 19u);
  for (const auto& f : m.functions) {
    const auto* p = std::get_if<ir::PrimFunc>(&f);
    EXPECT_TRUE(!p || !p->trace.empty()) << p->name;
  }

  NpyArray input = readNpy(dir.file("resnet18.input.npy"));
  NpyArray output = readNpy(dir.file("resnet18.output.npy"));
  ir::Tensor expected = ir::Tensor::copyOf(ir::DType::f32, output.shape, output.data);
  interp::Interpreter in(m);
  auto out = in.run("main", {{"input", ir::Tensor::copyOf(ir::DType::f32, input.shape, input.data)}});
  std::cout << "interpreting scheduled ResNet-18: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() << " s\n";
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].tensor.numel(), expected.numel());
  double scale = 1.0;
  for (int64_t i = 0; i < expected.numel(); ++i) scale = std::max(scale, std::abs(expected.at(i)));
  for (int64_t i = 0; i < expected.numel(); ++i)
    ASSERT_NEAR(out[0].tensor.at(i), expected.at(i), 1e-3 * std::abs(expected.at(i)) + 1e-4 * scale)
        << "output element " << i;
}

}  // namespace
