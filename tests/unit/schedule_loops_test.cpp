// The loop primitives: split, fuse, reorder, loop kinds (parallel,
// vectorize, unroll, bind) and annotations. Each is checked for the loop
// structure it makes, the meaning (interpreter), trace replay, and the
// errors of illegal uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mlcc/schedule/gpu_check.h"
#include "mlcc/target/target.h"
#include "schedule_loops_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

// --- split -------------------------------------------------------------------

TEST(ScheduleSplit, DivisibleSplitOfASpatialLoop) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("add"));
  auto ij = sch.split(loops[1], {int64_t{4}, std::nullopt});
  ASSERT_EQ(ij.size(), 2u);
  EXPECT_EQ(sch.loopVar(ij[0])->name, "j_0");
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_loops/split_divisible_split_of_a_spatial_loop_expected.ir"));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("%l3, %l4 = split(%l2, [4, -1])"), std::string::npos)
      << ir::printTrace(sch.func().trace);
}

TEST(ScheduleSplit, ThreeWaySplitOfTheReduction) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto k = sch.split(loops[2], {std::nullopt, int64_t{4}, int64_t{2}});
  EXPECT_EQ(sch.loopVar(k[2])->name, "k_2");
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_loops/split_three_way_split_of_the_reduction_expected.ir"));
}

TEST(ScheduleSplit, NonDivisibleSplitGetsAPredicate) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  sch.split(loops[1], {std::nullopt, int64_t{4}});
  const std::string expected =
      fixture("schedule_loops/split_non_divisible_split_gets_a_predicate_expected.ir");
  expectScheduledAs(f, sch.func(), expected);

  // A product larger than the extent without an inferred factor: the same.
  Schedule sch2(f);
  sch2.split(sch2.getLoops(sch2.getBlock("sum"))[1], {int64_t{3}, int64_t{4}});
  expectScheduledAs(f, sch2.func(), expected);
}

TEST(ScheduleSplit, SplittingTwiceKeepsOnePredicate) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  auto k = sch.split(loops[1], {std::nullopt, int64_t{4}});
  sch.split(k[1], {int64_t{2}, int64_t{2}});
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_loops/split_splitting_twice_keeps_one_predicate_expected.ir"));
}

TEST(ScheduleSplit, SymbolicExtent) {
  ir::PrimFunc f = parsePrim(kSymbolic);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("relu"));
  sch.split(loops[0], {std::nullopt, int64_t{4}});
  const std::string expected = fixture("schedule_loops/split_symbolic_extent_expected.ir");
  for (int64_t n : {1, 4, 5, 11}) expectScheduledAs(f, sch.func(), expected, 0, {{"n", n}});

  // Inferring the outer factor: the inner one is symbolic.
  Schedule sch2(f);
  sch2.split(sch2.getLoops(sch2.getBlock("relu"))[0], {int64_t{2}, std::nullopt});
  expectScheduledAs(f, sch2.func(), fixture("schedule_loops/split_symbolic_extent_expected_2.ir"), 0,
                    {{"n", 7}});

  // A single inferred factor needs no predicate.
  Schedule sch3(f);
  sch3.split(sch3.getLoops(sch3.getBlock("relu"))[0], {std::nullopt});
  EXPECT_EQ(ir::printFunction(sch3.func()).find("where"), std::string::npos)
      << ir::printFunction(sch3.func());
}

TEST(ScheduleSplit, Errors) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  expectScheduleError(
      [&] {
        sch.split(loops[1], {int64_t{2}, int64_t{4}});
      },
      "in prim @rowsum: cannot split loop %k: the factors [2, 4] multiply to 8, less than its extent 10");
  expectScheduleError(
      [&] {
        sch.split(loops[1], {std::nullopt, std::nullopt});
      },
      "at most one factor may be -1");
  expectScheduleError(
      [&] {
        sch.split(loops[1], {int64_t{0}, std::nullopt});
      },
      "cannot split loop %k: factor 0 in [0, -1] is less than 1");
  expectScheduleError([&] { sch.split(loops[1], {}); }, "non-empty list of factors");

  ir::PrimFunc g = parsePrim(kSymbolic);
  Schedule sch2(g);
  auto l2 = sch2.getLoops(sch2.getBlock("relu"));
  expectScheduleError(
      [&] {
        sch2.split(l2[0], {int64_t{4}, int64_t{4}});
      },
      "cannot split loop %i: the factors [4, 4] multiply to 16, which may not cover its extent n "
      "(write -1 for one factor to infer it)");
  // The old loop is gone after a split.
  sch2.split(l2[0], {std::nullopt, int64_t{2}});
  expectScheduleError(
      [&] {
        sch2.split(l2[0], {std::nullopt, int64_t{2}});
      },
      "loop %i is no longer in the function");
}

TEST(ScheduleSplit, RefusesAPredicateOverStoresOutsideBlocks) {
  ir::PrimFunc f =
      parsePrim(fixture("schedule_loops/split_refuses_a_predicate_over_stores_outside_blocks.ir"));
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("copy"));
  expectScheduleError(
      [&] {
        sch.split(loops[0], {int64_t{3}, int64_t{4}});
      },
      "cannot split loop %i by factors that do not divide its extent: loop %i has a store to %x outside any "
      "block");
  expectScheduleError([&] { sch.parallel(loops[0]); },
                      "cannot parallelize loop %i: loop %i has a store to %x outside any block");
  sch.split(loops[0], {int64_t{5}, int64_t{2}});  // exact: no predicate needed
  expectSameMeaning(f, sch.func());
}

// --- fuse --------------------------------------------------------------------

// Two blocks under one loop, and a loop whose extent depends on another.
const std::string kTwoBlocks = fixture("schedule_loops/two_blocks.ir");

const std::string kTriangle = fixture("schedule_loops/triangle.ir");

TEST(ScheduleFuse, TwoSpatialLoops) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("add"));
  LoopRV fused = sch.fuse(loops);
  EXPECT_EQ(sch.loopVar(fused)->name, "i_j_fused");
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/fuse_two_spatial_loops_expected.ir"));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("%l3 = fuse([%l1, %l2])"), std::string::npos);
}

TEST(ScheduleFuse, ThreeLoopsWithTheReduction) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  sch.fuse(sch.getLoops(sch.getBlock("C")));
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/fuse_three_loops_with_the_reduction_expected.ir"));
}

TEST(ScheduleFuse, SymbolicExtentAndSplitBack) {
  ir::PrimFunc f = parsePrim(kSymbolic);
  Schedule sch(f);
  LoopRV fused = sch.fuse(sch.getLoops(sch.getBlock("relu")));
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/fuse_symbolic_extent_and_split_back_expected.ir"),
                    0, {{"n", 3}});
  // The usual GPU fallback: fuse, then split by the thread count.
  auto bt = sch.split(fused, {std::nullopt, int64_t{32}});
  expectSameMeaning(f, sch.func(), 0, {{"n", 7}});
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
  (void)bt;
}

TEST(ScheduleFuse, FusingASplitBack) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("add"));
  auto parts = sch.split(loops[1], {int64_t{4}, int64_t{8}});
  LoopRV j = sch.fuse(parts);
  EXPECT_EQ(sch.loopVar(j)->name, "j_0_j_1_fused");
  expectScheduledAs(f, sch.func(), kAdd);
}

TEST(ScheduleFuse, SingleLoopIsUnchanged) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("add"));
  LoopRV l = sch.fuse({loops[1]});
  EXPECT_EQ(sch.loopVar(l), sch.loopVar(loops[1]));
  expectScheduledAs(f, sch.func(), kAdd);
}

TEST(ScheduleFuse, Errors) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  expectScheduleError(
      [&] {
        sch.fuse({loops[0], loops[2]});
      },
      "cannot fuse loop %i and loop %k: the body of loop %i is not exactly loop %k");
  expectScheduleError(
      [&] {
        sch.fuse({loops[1], loops[0]});
      },
      "cannot fuse loop %j and loop %i: the body of loop %j is not exactly loop %i");
  expectScheduleError([&] { sch.fuse({loops[0], loops[0]}); }, "cannot fuse: loop %i is given twice");
  expectScheduleError([&] { sch.fuse({}); }, "fuse: needs at least one loop");
  sch.unroll(loops[2]);
  expectScheduleError(
      [&] {
        sch.fuse({loops[1], loops[2]});
      },
      "cannot fuse loop %k: it is unrolled; fuse loops before changing their kind");

  ir::PrimFunc g = parsePrim(kTwoBlocks);
  Schedule sch2(g);
  auto bl = sch2.getLoops(sch2.getBlock("B"));
  expectScheduleError([&] { sch2.fuse(bl); }, "the body of loop %i is not exactly loop %j");

  ir::PrimFunc t = parsePrim(kTriangle);
  Schedule sch3(t);
  expectScheduleError([&] { sch3.fuse(sch3.getLoops(sch3.getBlock("T"))); },
                      "cannot fuse loop %j: its extent depends on loop %i");
}

// --- loop kinds --------------------------------------------------------------

TEST(ScheduleLoopKind, ParallelVectorizeUnroll) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.parallel(loops[0]);
  sch.vectorize(loops[1]);
  sch.unroll(loops[2]);
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/loop_kind_parallel_vectorize_unroll_expected.ir"));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("  parallel(%l1)\n  vectorize(%l2)\n  unroll(%l3)\n"),
            std::string::npos)
      << ir::printTrace(sch.func().trace);
}

TEST(ScheduleLoopKind, BindAFusedSplitLoop) {
  ir::PrimFunc f = parsePrim(kSymbolic);
  Schedule sch(f);
  LoopRV fused = sch.fuse(sch.getLoops(sch.getBlock("relu")));
  auto bt = sch.split(fused, {std::nullopt, int64_t{32}});
  sch.bind(bt[0], "blockIdx.x");
  sch.bind(bt[1], "threadIdx.x");
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/loop_kind_bind_a_fused_split_loop_expected.ir"), 0,
                    {{"n", 5}});
  EXPECT_NE(ir::printTrace(sch.func().trace).find("bind(%l5, \"threadIdx.x\")"), std::string::npos);
}

// --- add_unit_loop -----------------------------------------------------------

TEST(ScheduleAddUnitLoop, AroundABlockAndALoop) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  LoopRV u = sch.addUnitLoop(sch.getBlock("add"));
  EXPECT_EQ(sch.loopVar(u)->name, "add_unit");
  auto loops = sch.getLoops(sch.getBlock("add"));
  ASSERT_EQ(loops.size(), 3u);  // i, j, then the unit loop right around the block
  EXPECT_EQ(sch.loopVar(loops[2]), sch.loopVar(u));
  LoopRV v = sch.addUnitLoop(loops[0]);
  EXPECT_EQ(sch.loopVar(v)->name, "i_unit");
  EXPECT_EQ(sch.loopVar(sch.getLoops(sch.getBlock("add"))[0]), sch.loopVar(v));
  expectSameMeaning(f, sch.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("%l1 = add_unit_loop(%b0)"), std::string::npos)
      << ir::printTrace(sch.func().trace);
}

TEST(ScheduleAddUnitLoop, ABlockWithoutLoopsIsBoundToAThread) {
  // A scalar's block (MLC: add_unit_loop, then bind the new loop).
  ir::PrimFunc f = parsePrim(R"(prim @total(%a: f32[8], %s: f32[]) {
  block "init" () {
    reads()
    writes(%s[])
    %s[] = 0.0
  }
  for %k in 0..8 {
    block "acc" (%vk = reduce(8, %k)) {
      reads(%s[], %a[%vk])
      writes(%s[])
      %s[] = %s[] + %a[%vk]
    }
  }
}
)");
  Schedule sch(f);
  LoopRV u = sch.addUnitLoop(sch.getBlock("init"));
  sch.bind(u, "threadIdx.x");
  expectSameMeaning(f, sch.func());
  EXPECT_EQ(sch.getLoops(sch.getBlock("init")).size(), 1u);
}

TEST(ScheduleLoopKind, SiblingLoopsMayShareAThreadTag) {
  ir::PrimFunc f = parsePrim(kTwoBlocks);
  Schedule sch(f);
  auto b = sch.getLoops(sch.getBlock("B"));
  auto c = sch.getLoops(sch.getBlock("C"));
  sch.bind(b[0], "blockIdx.x");
  sch.bind(b[1], "threadIdx.x");
  sch.bind(c[1], "threadIdx.x");
  expectSameMeaning(f, sch.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
  expectScheduleError(
      [&] { sch.bind(sch.getLoops(sch.getBlock("C"))[1], "threadIdx.y"); },
      "cannot bind loop %j: it is thread_binding(threadIdx.x), and only serial loops change their kind");
}

// The MLC course's cooperative fetch: 64 threads each own an 8 x 8 tile of
// C; A's 8 x 8 rows of the block at each stage are staged in shared memory
// under the thread loop (compute_at widens them to the thread block's
// rows), and the copy loop is bound to threadIdx.x again, so the threads
// fetch the tile together.
struct CooperativeFetch {
  Schedule sch;
  LoopRV tx, ko;
  BlockRV copy;
  explicit CooperativeFetch(const ir::PrimFunc& f, ir::StorageScope scope) : sch(f) {
    BlockRV c = sch.getBlock("C");
    auto l = sch.getLoops(c);
    auto i = sch.split(l[0], {int64_t{8}, std::nullopt});
    auto j = sch.split(l[1], {int64_t{8}, std::nullopt});
    auto k = sch.split(l[2], {std::nullopt, int64_t{8}});
    sch.reorder({i[0], j[0], i[1], j[1], k[0], k[1]});
    sch.bind(i[0], "blockIdx.y");
    sch.bind(j[0], "blockIdx.x");
    tx = sch.fuse({i[1], j[1]});
    sch.bind(tx, "threadIdx.x");
    ko = k[0];
    copy = sch.cacheRead(c, 0, scope);
    sch.computeAt(copy, ko);
  }
  // The copy's tile loops (below blockIdx.y, blockIdx.x, threadIdx.x and
  // ko) fused and split by `threads`.
  LoopRV threadLoop(int64_t threads) {
    auto l = sch.getLoops(copy);
    LoopRV tile = l.size() == 5 ? l[4] : sch.fuse({l[4], l[5]});
    return sch.split(tile, {std::nullopt, threads})[1];
  }
};

TEST(ScheduleLoopKind, ThreadsFetchASharedTileTogether) {
  ir::PrimFunc f = parsePrim(kMatmul);
  CooperativeFetch s(f, ir::StorageScope::shared);
  s.sch.bind(s.threadLoop(64), "threadIdx.x");
  expectSameMeaning(f, s.sch.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, s.sch.func().trace), s.sch.func()));
  // The copy is the thread block's 8 rows x 8 (one element per thread), not
  // the thread's own row: its bindings do not use the outer thread loop.
  const std::string text = ir::printStmt(s.sch.func().body);
  const size_t at = text.find("block \"A_shared\"");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string copy = text.substr(at, text.find('\n', at) - at);
  EXPECT_EQ(copy.find(s.sch.loopVar(s.tx)->name), std::string::npos) << copy;
  schedule::verifyGpuFunc(s.sch.func(), target::Target::parse("cuda"));
}

TEST(ScheduleLoopKind, ThreadsFetchTogetherOnlyWhatAllOfThemRead) {
  ir::PrimFunc f = parsePrim(kMatmul);
  {
    CooperativeFetch s(f, ir::StorageScope::shared);
    expectScheduleError(
        [&] { s.sch.bind(s.threadLoop(32), "threadIdx.x"); },
        "has extent 32, but loop %i_1_j_1_fused bound to threadIdx.x around it has extent 64");
  }
  {
    // A local copy is each thread's own row (8 elements, split past its
    // end): it uses the outer thread loop.
    CooperativeFetch s(f, ir::StorageScope::local);
    expectScheduleError([&] { s.sch.bind(s.threadLoop(64), "threadIdx.x"); },
                        "uses loop %i_1_j_1_fused (bound to threadIdx.x too): each thread would run another "
                        "part of it");
  }
  {
    // Stored to global memory, the tile would need a barrier no code places.
    CooperativeFetch s(f, ir::StorageScope::shared);
    s.sch.bind(s.threadLoop(64), "threadIdx.x");
    s.sch.setScope(s.copy, 0, ir::StorageScope::global);
    try {
      schedule::verifyGpuFunc(s.sch.func(), target::Target::parse("cuda"));
      ADD_FAILURE() << "verifyGpuFunc accepted a global tile fetched by the threads together";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("writes global buffer %A_shared (under a loop bound to the same "
                                           "axis, only shared buffers can be written"),
                std::string::npos)
          << e.what();
    }
  }
  {
    Schedule sch(f);
    auto l = sch.getLoops(sch.getBlock("C"));
    sch.bind(l[0], "blockIdx.x");
    expectScheduleError([&] { sch.bind(l[1], "blockIdx.x"); },
                        "(only a threadIdx axis can be bound again inside its loop)");
  }
}

const std::string kBroadcastAgain = fixture("schedule_loops/broadcast_again.ir");

const std::string kOpaque = fixture("schedule_loops/opaque.ir");

TEST(ScheduleLoopKind, Errors) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  expectScheduleError([&] { sch.vectorize(loops[2]); },
                      "in prim @mm: cannot vectorize loop %k: it carries a reduction of block \"C\" "
                      "(iteration variable %vk)");
  expectScheduleError([&] { sch.parallel(loops[2]); }, "cannot parallelize loop %k: it carries a reduction");
  expectScheduleError(
      [&] { sch.bind(loops[2], "blockIdx.x"); },
      "cannot bind loop %k: it carries a reduction of block \"C\" (iteration variable %vk); it "
      "cannot reduce across threads: only a threadIdx axis can");
  expectScheduleError([&] { sch.bind(loops[0], "threadIdx.w"); },
                      "cannot bind loop %i to \"threadIdx.w\": not a thread axis");
  sch.bind(loops[0], "threadIdx.x");
  expectScheduleError([&] { sch.bind(loops[0], "threadIdx.x"); },
                      "cannot bind loop %i: it is already thread_binding(threadIdx.x)");
  expectScheduleError([&] { sch.bind(loops[1], "threadIdx.x"); },
                      "cannot bind loop %j to threadIdx.x: what loop %j runs uses loop %i (bound to "
                      "threadIdx.x too)");
  sch.parallel(loops[1]);
  expectScheduleError([&] { sch.parallel(loops[1]); }, "cannot parallelize loop %j: it is already parallel");
  expectScheduleError([&] { sch.vectorize(loops[1]); },
                      "cannot vectorize loop %j: it is parallel, and only serial loops change their kind");
  sch.unroll(loops[2]);
  expectScheduleError([&] { sch.unroll(loops[2]); }, "cannot unroll loop %k: it is already unrolled");
  // A split or fused loop needs its kind set afterwards.
  expectScheduleError(
      [&] {
        sch.split(loops[1], {int64_t{2}, std::nullopt});
      },
      "cannot split loop %j: it is parallel; split loop %j before changing its kind");

  ir::PrimFunc g = parsePrim(kBroadcastAgain);
  Schedule sch2(g);
  auto l2 = sch2.getLoops(sch2.getBlock("copy"));
  expectScheduleError([&] { sch2.parallel(l2[0]); },
                      "cannot parallelize loop %r: block \"copy\" under it does not depend on it, so every "
                      "iteration would redo the same writes");
  sch2.unroll(l2[0]);  // fine: unrolling keeps the order
  sch2.vectorize(l2[1]);
  expectSameMeaning(g, sch2.func());

  ir::PrimFunc o = parsePrim(kOpaque);
  Schedule sch3(o);
  expectScheduleError(
      [&] { sch3.parallel(sch3.getLoops(sch3.getBlock("o"))[0]); },
      "cannot parallelize loop %i: it is bound to the opaque iteration variable %vi of block \"o\"");
}

// --- reorder -----------------------------------------------------------------

TEST(ScheduleReorder, SwapsTheOuterAndInnerLoop) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.reorder({loops[2], loops[0]});
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_loops/reorder_swaps_the_outer_and_inner_loop_expected.ir"));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("reorder([%l3, %l1])"), std::string::npos);
}

TEST(ScheduleReorder, TilesAMatmul) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto i = sch.split(loops[0], {std::nullopt, int64_t{8}});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{16}});
  auto k = sch.split(loops[2], {std::nullopt, int64_t{4}});
  sch.reorder({i[0], j[0], k[0], i[1], k[1], j[1]});
  sch.parallel(i[0]);
  sch.vectorize(j[1]);
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/reorder_tiles_a_matmul_expected.ir"));
}

TEST(ScheduleReorder, LoopsBetweenStayInPlace) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.unroll(loops[1]);
  sch.reorder({loops[2], loops[0]});
  sch.reorder({loops[2]});  // one loop: nothing moves
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("for %k in 0..64 {\n    for %j in 0..64 unrolled {\n      for %i in 0..64 {"),
            std::string::npos)
      << text;
  expectSameMeaning(f, sch.func());
}

TEST(ScheduleReorder, Errors) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  expectScheduleError([&] { sch.reorder({loops[1], loops[1]}); }, "cannot reorder: loop %j is given twice");
  expectScheduleError([&] { sch.reorder({}); }, "reorder: needs at least one loop");

  ir::PrimFunc g = parsePrim(kTwoBlocks);
  Schedule sch2(g);
  auto b = sch2.getLoops(sch2.getBlock("B"));
  auto c = sch2.getLoops(sch2.getBlock("C"));
  expectScheduleError(
      [&] {
        sch2.reorder({b[1], c[1]});
      },
      "cannot reorder loop %j and loop %j: they are not nested in one another");
  expectScheduleError(
      [&] {
        sch2.reorder({b[1], b[0]});
      },
      "cannot reorder: the body of loop %i is not exactly the next loop (the loops must be perfectly "
      "nested)");

  ir::PrimFunc t = parsePrim(kTriangle);
  Schedule sch3(t);
  auto tl = sch3.getLoops(sch3.getBlock("T"));
  expectScheduleError(
      [&] {
        sch3.reorder({tl[1], tl[0]});
      },
      "cannot reorder: the extent of loop %j depends on loop %i, which would be inside it");

  ir::PrimFunc o = parsePrim(fixture("schedule_loops/reorder_errors.ir"));
  Schedule sch4(o);
  auto ol = sch4.getLoops(sch4.getBlock("o"));
  expectScheduleError(
      [&] {
        sch4.reorder({ol[1], ol[0]});
      },
      "cannot reorder loop %j: it is bound to the opaque iteration variable %vj of block \"o\"");

  // A store outside the blocks.
  ir::PrimFunc r = parsePrim(fixture("schedule_loops/reorder_errors_2.ir"));
  Schedule sch6(r);
  auto rl = sch6.getLoops(sch6.getBlock("copy"));
  expectScheduleError(
      [&] {
        sch6.reorder({rl[1], rl[0]});
      },
      "cannot reorder the loops: loop %j has a store to %x outside any block");

  // A block between two loops.
  ir::PrimFunc n = parsePrim(fixture("schedule_loops/reorder_errors_3.ir"));
  Schedule sch5(n);
  BlockRV inner = sch5.getBlock("inner");
  auto j = sch5.getLoops(inner);
  auto i = sch5.getLoops(sch5.getBlock("outer"));
  expectScheduleError(
      [&] {
        sch5.reorder({j[0], i[0]});
      },
      "cannot reorder loop %j: block \"outer\" lies between the loops");
}

// --- annotate ----------------------------------------------------------------

TEST(ScheduleAnnotate, LoopsAndBlocks) {
  ir::PrimFunc f = parsePrim(kAdd);
  Schedule sch(f);
  BlockRV b = sch.getBlock("add");
  auto loops = sch.getLoops(b);
  sch.annotate(loops[0], "pragma_auto_unroll_max_step", int64_t{16});
  sch.annotate(loops[0], "pragma_unroll_explicit", true);
  sch.annotate(b, "meta_schedule.tiling_structure", "SSRSRS");
  sch.annotate(b, "note", ir::AttrValue::ints({1, 2}));
  sch.unannotate(b, "note");
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/annotate_loops_and_blocks_expected.ir"));
  // Re-annotating replaces the value; annotations survive a split (on the
  // outer loop) and a fuse (from the outermost loop).
  sch.annotate(loops[0], "pragma_auto_unroll_max_step", int64_t{64});
  auto parts = sch.split(loops[0], {int64_t{4}, std::nullopt});
  LoopRV fused = sch.fuse(parts);
  sch.unannotate(fused, "pragma_unroll_explicit");
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("for %i_0_i_1_fused in 0..16 attrs(pragma_auto_unroll_max_step = 64) {"),
            std::string::npos)
      << text;
  EXPECT_NE(ir::printTrace(sch.func().trace).find("annotate(%l1, \"pragma_auto_unroll_max_step\", 64)"),
            std::string::npos);
}

TEST(ScheduleAnnotate, Errors) {
  Schedule sch(parsePrim(kAdd));
  BlockRV b = sch.getBlock("add");
  auto loops = sch.getLoops(b);
  expectScheduleError([&] { sch.unannotate(loops[1], "pragma_auto_unroll_max_step"); },
                      "cannot unannotate loop %j: it has no annotation \"pragma_auto_unroll_max_step\"");
  expectScheduleError([&] { sch.unannotate(b, "x"); },
                      "cannot unannotate block \"add\": it has no annotation \"x\"");
  expectScheduleError([&] { sch.annotate(b, "two words", int64_t{1}); },
                      "annotate: \"two words\" is not an annotation key");
  expectScheduleError([&] { sch.annotate(b, "a..b", int64_t{1}); }, "is not an annotation key");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"annotate", {ir::TraceRef{"l1"}, "k"}, {}, {}, {}});
      },
      "annotate: takes 3 positional arguments, not 2");
}

// --- random loop schedules ----------------------------------------------------

const std::string kSmallMatmul = fixture("schedule_loops/small_matmul.ir");

// A softmax row by row: three blocks under one loop.
const std::string kSoftmax = fixture("schedule_loops/softmax.ir");

TEST(ScheduleLoops, SoftmaxRows) {
  ir::PrimFunc f = parsePrim(kSoftmax);
  Schedule sch(f);
  auto rows = sch.getLoops(sch.getBlock("max"));
  sch.parallel(rows[0]);  // every block under it is spatial in %i
  auto k = sch.split(rows[1], {std::nullopt, int64_t{4}});
  sch.unroll(k[1]);
  auto j = sch.getLoops(sch.getBlock("normalize"));
  auto jj = sch.split(j[1], {std::nullopt, int64_t{8}});
  sch.vectorize(jj[1]);
  expectScheduledAs(f, sch.func(), fixture("schedule_loops/loops_softmax_rows_expected.ir"), 1e-5,
                    {{"n", 6}});
  // The row loop holds three sibling loops: no fuse or reorder through it.
  expectScheduleError([&] { sch.fuse({rows[0], k[0]}); }, "the body of loop %i is not exactly loop %k_0");
  expectScheduleError(
      [&] {
        sch.reorder({k[0], rows[0]});
      },
      "the body of loop %i is not exactly the next loop");
  expectScheduleError([&] { sch.vectorize(sch.getLoops(sch.getBlock("sum"))[1]); },
                      "cannot vectorize loop %k: it carries a reduction of block \"sum\"");
}

// Random sequences of loop primitives (illegal ones are refused and change
// nothing) keep the meaning and replay exactly.
TEST(ScheduleLoops, RandomSchedulesKeepTheMeaning) {
  struct Case {
    std::string text;
    std::vector<std::string> blocks;
  };
  const Case cases[] = {{kSmallMatmul, {"C"}}, {kAdd, {"add"}},          {kRowSum, {"sum"}},
                        {kSymbolic, {"relu"}}, {kTwoBlocks, {"B", "C"}}, {kTriangle, {"T"}}};
  int applied = 0, refused = 0;
  for (const auto& c : cases) {
    ir::PrimFunc f = parsePrim(c.text);
    for (uint64_t seed = 0; seed < 12; ++seed) {
      std::mt19937_64 rng(seed);
      auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
      Schedule sch(f, seed);
      for (int step = 0; step < 6; ++step) {
        auto loops = sch.getLoops(sch.getBlock(c.blocks[pick(c.blocks.size())]));
        try {
          switch (pick(6)) {
            case 0: {
              int64_t a = 1 + static_cast<int64_t>(pick(5)), b = 1 + static_cast<int64_t>(pick(3));
              std::vector<Factor> fs[] = {
                  {std::nullopt, a}, {a, std::nullopt}, {a, b, std::nullopt}, {b, a * 3}};
              sch.split(loops[pick(loops.size())], fs[pick(4)]);
              break;
            }
            case 1: {
              size_t first = pick(loops.size());
              size_t n = std::min(loops.size() - first, 1 + pick(3));
              sch.fuse(std::vector<LoopRV>(loops.begin() + first, loops.begin() + first + n));
              break;
            }
            case 2:
            case 3: {
              std::vector<LoopRV> order = loops;
              std::shuffle(order.begin(), order.end(), rng);
              order.resize(1 + pick(order.size()));
              sch.reorder(order);
              break;
            }
            case 4: sch.parallel(loops[pick(loops.size())]); break;
            case 5: sch.unroll(loops[pick(loops.size())]); break;
          }
          ++applied;
        } catch (const ScheduleError& e) {
          EXPECT_EQ(e.message().find("internal error"), std::string::npos) << e.message();
          ++refused;
        }
      }
      SCOPED_TRACE(ir::printFunction(sch.func()));
      expectSameMeaning(f, sch.func(), 1e-5, {{"n", 7}});
      EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
    }
  }
  EXPECT_GT(applied, 150);
  EXPECT_GT(refused, 10);
}

}  // namespace
