// The loop primitives: split, fuse, reorder, loop kinds (parallel,
// vectorize, unroll, bind) and annotations. Each is checked for the loop
// structure it makes, the meaning (interpreter), trace replay, and the
// errors of illegal uses.
#include <gtest/gtest.h>

#include "schedule_loops_check.h"

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
  expectScheduled(f, sch, R"(
prim @add(%a: f32[16, 32], %b: f32[16, 32], %c: f32[16, 32]) {
  for %i in 0..16 {
    for %j_0 in 0..4 {
      for %j_1 in 0..8 {
        block "add" (%vi = spatial(16, %i), %vj = spatial(32, %j_0 * 8 + %j_1)) {
          reads(%a[%vi, %vj], %b[%vi, %vj])
          writes(%c[%vi, %vj])
          %c[%vi, %vj] = %a[%vi, %vj] + %b[%vi, %vj]
        }
      }
    }
  }
}
)");
  EXPECT_NE(ir::printTrace(sch.func().trace).find("%l3, %l4 = split(%l2, [4, -1])"), std::string::npos)
      << ir::printTrace(sch.func().trace);
}

TEST(ScheduleSplit, ThreeWaySplitOfTheReduction) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto k = sch.split(loops[2], {std::nullopt, int64_t{4}, int64_t{2}});
  EXPECT_EQ(sch.loopVar(k[2])->name, "k_2");
  expectScheduled(f, sch, R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      for %k_0 in 0..8 {
        for %k_1 in 0..4 {
          for %k_2 in 0..2 {
            block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k_0 * 8 + %k_1 * 2 + %k_2)) {
              reads(%A[%vi, %vk], %B[%vk, %vj])
              writes(%C[%vi, %vj])
              init {
                %C[%vi, %vj] = 0.0
              }
              %C[%vi, %vj] = %C[%vi, %vj] + %A[%vi, %vk] * %B[%vk, %vj]
            }
          }
        }
      }
    }
  }
}
)");
}

TEST(ScheduleSplit, NonDivisibleSplitGetsAPredicate) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  sch.split(loops[1], {std::nullopt, int64_t{4}});
  const char* expected = R"(
prim @rowsum(%x: f32[6, 10], %y: f32[6]) {
  for %i in 0..6 {
    for %k_0 in 0..3 {
      for %k_1 in 0..4 {
        block "sum" (%vi = spatial(6, %i), %vk = reduce(10, %k_0 * 4 + %k_1)) {
          where(%k_0 * 4 + %k_1 < 10)
          reads(%x[%vi, %vk])
          writes(%y[%vi])
          init {
            %y[%vi] = 0.0
          }
          %y[%vi] = %y[%vi] + %x[%vi, %vk]
        }
      }
    }
  }
}
)";
  expectScheduled(f, sch, expected);

  // A product larger than the extent without an inferred factor: the same.
  Schedule sch2(f);
  sch2.split(sch2.getLoops(sch2.getBlock("sum"))[1], {int64_t{3}, int64_t{4}});
  expectScheduled(f, sch2, expected);
}

TEST(ScheduleSplit, SplittingTwiceKeepsOnePredicate) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  auto k = sch.split(loops[1], {std::nullopt, int64_t{4}});
  sch.split(k[1], {int64_t{2}, int64_t{2}});
  expectScheduled(f, sch, R"(
prim @rowsum(%x: f32[6, 10], %y: f32[6]) {
  for %i in 0..6 {
    for %k_0 in 0..3 {
      for %k_1_0 in 0..2 {
        for %k_1_1 in 0..2 {
          block "sum" (%vi = spatial(6, %i), %vk = reduce(10, %k_0 * 4 + %k_1_0 * 2 + %k_1_1)) {
            where(%k_0 * 4 + %k_1_0 * 2 + %k_1_1 < 10)
            reads(%x[%vi, %vk])
            writes(%y[%vi])
            init {
              %y[%vi] = 0.0
            }
            %y[%vi] = %y[%vi] + %x[%vi, %vk]
          }
        }
      }
    }
  }
}
)");
}

TEST(ScheduleSplit, SymbolicExtent) {
  ir::PrimFunc f = parsePrim(kSymbolic);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("relu"));
  sch.split(loops[0], {std::nullopt, int64_t{4}});
  const char* expected = R"(
prim @relu(%x: f32[n, 8], %y: f32[n, 8]) {
  for %i_0 in 0..(n + 3) / 4 {
    for %i_1 in 0..4 {
      for %j in 0..8 {
        block "relu" (%vi = spatial(n, %i_0 * 4 + %i_1), %vj = spatial(8, %j)) {
          where(%i_0 * 4 + %i_1 < n)
          reads(%x[%vi, %vj])
          writes(%y[%vi, %vj])
          %y[%vi, %vj] = max(%x[%vi, %vj], 0.0)
        }
      }
    }
  }
}
)";
  for (int64_t n : {1, 4, 5, 11}) expectScheduled(f, sch, expected, 0, {{"n", n}});

  // Inferring the outer factor: the inner one is symbolic.
  Schedule sch2(f);
  sch2.split(sch2.getLoops(sch2.getBlock("relu"))[0], {int64_t{2}, std::nullopt});
  expectScheduled(f, sch2, R"(
prim @relu(%x: f32[n, 8], %y: f32[n, 8]) {
  for %i_0 in 0..2 {
    for %i_1 in 0..(n + 1) / 2 {
      for %j in 0..8 {
        block "relu" (%vi = spatial(n, %i_0 * ((n + 1) / 2) + %i_1), %vj = spatial(8, %j)) {
          where(%i_0 * ((n + 1) / 2) + %i_1 < n)
          reads(%x[%vi, %vj])
          writes(%y[%vi, %vj])
          %y[%vi, %vj] = max(%x[%vi, %vj], 0.0)
        }
      }
    }
  }
}
)",
                  0, {{"n", 7}});

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
  ir::PrimFunc f = parsePrim(R"(
prim @raw(%x: f32[10], %y: f32[10]) {
  for %i in 0..10 {
    %x[%i] = 1.0
    block "copy" (%vi = spatial(10, %i)) {
      reads(%x[%vi])
      writes(%y[%vi])
      %y[%vi] = %x[%vi]
    }
  }
}
)");
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("copy"));
  expectScheduleError(
      [&] {
        sch.split(loops[0], {int64_t{3}, int64_t{4}});
      },
      "cannot split with a predicate loop %i: it has a store to %x outside any block");
  sch.split(loops[0], {int64_t{5}, int64_t{2}});  // exact: no predicate needed
  expectSameMeaning(f, sch.func());
}

}  // namespace
