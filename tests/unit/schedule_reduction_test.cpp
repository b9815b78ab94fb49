// Reduction primitives: decompose_reduction and rfactor. Each is checked for
// the loop structure it makes, for keeping the function's meaning
// (interpreter), for trace replay, and for its refusals.
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

const std::string kMatmul = fixture("matmul_64.ir");

// The matmul with k split into %k0 * 16 + %k1 (as split would make it).
const std::string kSplitMatmul = fixture("schedule_reduction/split_matmul.ir");

// A row sum into an intermediate, then a scaling of it.
const std::string kRowSum = fixture("row_sum.ir");

// --- decompose_reduction -------------------------------------------------------

TEST(ScheduleDecomposeReduction, AtTheInnerSpatialLoop) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  BlockRV init = sch.decomposeReduction(c, loops[1]);
  EXPECT_EQ(sch.getLoops(init).size(), 2u);
  expectStructure(sch.func(),
                  fixture("schedule_reduction/decompose_reduction_at_the_inner_spatial_loop_expected.ir"));
  EXPECT_EQ(ir::printTrace(sch.func().trace),
            "trace {\n"
            "  %b0 = get_block(\"C\")\n"
            "  %l1, %l2, %l3 = get_loops(%b0)\n"
            "  %b4 = decompose_reduction(%b0, %l2)\n"
            "  %l5, %l6 = get_loops(%b4)\n"
            "}\n");
  expectScheduled(parsePrim(kMatmul), sch.func());
}

// Every loop down to the outermost reduce loop is legal; loops under a reduce
// loop are not.
TEST(ScheduleDecomposeReduction, AtEachLoop) {
  for (const std::string& text : {kMatmul, kSplitMatmul}) {
    Schedule probe(parsePrim(text));
    size_t count = probe.getLoops(probe.getBlock("C")).size();
    for (size_t i = 0; i < count; ++i) {
      SCOPED_TRACE(i);
      Schedule sch(parsePrim(text));
      BlockRV c = sch.getBlock("C");
      auto loops = sch.getLoops(c);
      if (i < 3) {
        sch.decomposeReduction(c, loops[i]);
        expectScheduled(parsePrim(text), sch.func());
      } else {
        expectScheduleError(
            [&] { sch.decomposeReduction(c, loops[i]); },
            "binds reduce iteration variable %vk of block \"C\"; the init would run again in each "
            "of its iterations");
      }
    }
  }
}

// Under a reduce loop of extent 1 (the whole reduction in one outer block),
// the init may go right above the reduce loop that iterates, inside the
// spatial loops between: it still runs once per output element. Under one
// of extent 2 it may not.
TEST(ScheduleDecomposeReduction, BelowAUnitReduceLoop) {
  for (int64_t outer : {1, 2}) {
    SCOPED_TRACE(outer);
    Schedule sch(parsePrim(kMatmul));
    BlockRV c = sch.getBlock("C");
    auto loops = sch.getLoops(c);
    auto k = sch.split(loops[2], {Factor(outer), Factor(64 / outer)});
    sch.reorder({loops[0], k[0], loops[1], k[1]});
    if (outer == 1) {
      BlockRV init = sch.decomposeReduction(c, k[1]);
      EXPECT_EQ(sch.getLoops(init).size(), 3u);  // %i, %k_0, %j: one element per (i, j)
      expectScheduled(parsePrim(kMatmul), sch.func());
    } else {
      expectScheduleError(
          [&] { sch.decomposeReduction(c, k[1]); },
          "binds reduce iteration variable %vk of block \"C\"; the init would run again in each "
          "of its iterations");
    }
  }
}

TEST(ScheduleDecomposeReduction, AtTheOuterLoop) {
  Schedule sch(parsePrim(kSplitMatmul));
  BlockRV c = sch.getBlock("C");
  sch.decomposeReduction(c, sch.getLoops(c)[0]);
  expectStructure(sch.func(),
                  fixture("schedule_reduction/decompose_reduction_at_the_outer_loop_expected.ir"));
  expectScheduled(parsePrim(kSplitMatmul), sch.func());
}

// With the reduce loop between the spatial ones, only the loops above it
// are legal; the reduce loop under the chosen one is not copied, the
// spatial loop under it is.
TEST(ScheduleDecomposeReduction, ReduceLoopInTheMiddle) {
  const std::string text = fixture("schedule_reduction/decompose_reduction_reduce_loop_in_the_middle.ir");
  {
    // At the reduce loop itself: the init nest (over j) goes right before it.
    Schedule at_k(parsePrim(text));
    BlockRV b = at_k.getBlock("S");
    at_k.decomposeReduction(b, at_k.getLoops(b)[1]);
    expectScheduled(parsePrim(text), at_k.func());
  }
  Schedule sch(parsePrim(text));
  BlockRV s = sch.getBlock("S");
  auto loops = sch.getLoops(s);
  expectScheduleError([&] { sch.decomposeReduction(s, loops[2]); },
                      "decompose_reduction: loop %k (above loop %j) binds reduce iteration variable %vk");
  sch.decomposeReduction(s, loops[0]);
  expectStructure(sch.func(),
                  fixture("schedule_reduction/decompose_reduction_reduce_loop_in_the_middle_expected.ir"));
  expectScheduled(parsePrim(text), sch.func());
}

// A split spatial loop with a predicate: the init block keeps the
// predicate, on the copied loop.
TEST(ScheduleDecomposeReduction, KeepsThePredicate) {
  const std::string text = fixture("schedule_reduction/decompose_reduction_keeps_the_predicate.ir");
  Schedule sch(parsePrim(text));
  BlockRV s = sch.getBlock("S");
  sch.decomposeReduction(s, sch.getLoops(s)[1]);
  expectStructure(sch.func(),
                  fixture("schedule_reduction/decompose_reduction_keeps_the_predicate_expected.ir"));
  expectScheduled(parsePrim(text), sch.func());
}

// An init that reads a buffer: its read region is its load.
TEST(ScheduleDecomposeReduction, InitThatReads) {
  const std::string text = fixture("schedule_reduction/decompose_reduction_init_that_reads.ir");
  Schedule sch(parsePrim(text));
  BlockRV s = sch.getBlock("S");
  sch.decomposeReduction(s, sch.getLoops(s)[0]);
  std::string got = ir::printFunction(sch.func());
  EXPECT_NE(got.find("reads(%bias[%vi])\n      writes(%S[%vi])\n      %S[%vi] = %bias[%vi]\n"),
            std::string::npos)
      << got;
  expectScheduled(parsePrim(text), sch.func());
}

TEST(ScheduleDecomposeReduction, Refusals) {
  Schedule sch(parsePrim(kRowSum));
  BlockRV s = sch.getBlock("S"), d = sch.getBlock("D");
  auto d_loops = sch.getLoops(d);
  expectScheduleError([&] { sch.decomposeReduction(d, d_loops[0]); },
                      "decompose_reduction: block \"D\" has no init");
  expectScheduleError([&] { sch.decomposeReduction(s, d_loops[0]); },
                      "decompose_reduction: loop %i is not a loop above block \"S\"");

  // A loop that binds nothing: the original re-runs the init in each of its
  // iterations, the decomposed one would not.
  Schedule idle(parsePrim(fixture("schedule_reduction/decompose_reduction_refusals.ir")));
  BlockRV is = idle.getBlock("S");
  expectScheduleError(
      [&] { idle.decomposeReduction(is, idle.getLoops(is)[0]); },
      "decompose_reduction: loop %u binds no iteration variable of block \"S\", so the block and "
      "its init run again for each of its iterations");

  // Another block under the loop reads what the init writes.
  Schedule shared(parsePrim(fixture("schedule_reduction/decompose_reduction_refusals_2.ir")));
  BlockRV ss = shared.getBlock("S");
  expectScheduleError(
      [&] { shared.decomposeReduction(ss, shared.getLoops(ss)[0]); },
      "decompose_reduction: block \"D\" accesses %S under loop %i, which the init of block \"S\" "
      "writes");

  // A condition on the reduce loops that fails where the init runs.
  Schedule pred(parsePrim(fixture("schedule_reduction/decompose_reduction_refusals_3.ir")));
  BlockRV ps = pred.getBlock("S");
  expectScheduleError(
      [&] { pred.decomposeReduction(ps, pred.getLoops(ps)[0]); },
      "decompose_reduction: the predicate of block \"S\" has a condition on loops %k0, %k1 that may not hold "
      "where its init runs");
  EXPECT_EQ(pred.func().trace.insts.size(), 2u);
}

// A non-divisible split of the reduce loop: its condition holds where the
// init runs, so the init block goes without it; a spatial condition stays.
const std::string kNonDivisible = fixture("schedule_reduction/non_divisible.ir");

TEST(ScheduleDecomposeReduction, NonDivisibleSplits) {
  Schedule sch(parsePrim(kNonDivisible));
  BlockRV s = sch.getBlock("S");
  sch.decomposeReduction(s, sch.getLoops(s)[0]);
  std::string got = ir::printFunction(sch.func());
  EXPECT_NE(got.find("block \"S_init\" (%vi = spatial(60, %i0_init * 16 + %i1_init)) {\n"
                     "        where(%i0_init * 16 + %i1_init < 60)\n"
                     "        reads()\n"),
            std::string::npos)
      << got;
  expectScheduled(parsePrim(kNonDivisible), sch.func());
}

// --- rfactor -----------------------------------------------------------------------

TEST(ScheduleRFactor, InnerPartOfASplitReduction) {
  Schedule sch(parsePrim(kSplitMatmul));
  BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  BlockRV rf = sch.rfactor(loops[3], 0);
  EXPECT_EQ(sch.getLoops(rf).size(), 4u);
  EXPECT_EQ(sch.getLoops(c).size(), 3u);  // the original block, in its new nest
  expectStructure(sch.func(),
                  fixture("schedule_reduction/r_factor_inner_part_of_a_split_reduction_expected.ir"));
  expectScheduled(parsePrim(kSplitMatmul), sch.func());
}

TEST(ScheduleRFactor, OuterPartAtTheLastAxis) {
  Schedule sch(parsePrim(kSplitMatmul));
  BlockRV c = sch.getBlock("C");
  BlockRV rf = sch.rfactor(sch.getLoops(c)[2], 2);
  std::string got = ir::printFunction(sch.func());
  EXPECT_NE(got.find("alloc_buffer %C_rf: f32[64, 64, 4]\n"), std::string::npos) << got;
  EXPECT_NE(
      got.find("block \"C_rf\" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk0 = spatial(4, %k0), %vk1 = "
               "reduce(16, %k1))"),
      std::string::npos)
      << got;
  EXPECT_NE(got.find("%C[%vi, %vj] = %C[%vi, %vj] + %C_rf[%vi, %vj, %vk0]"), std::string::npos) << got;
  // The rf block is a reduction of its own: decompose it.
  sch.decomposeReduction(rf, sch.getLoops(rf)[2]);
  expectScheduled(parsePrim(kSplitMatmul), sch.func());
}

// Non-divisible splits of both loops: every partial result is still
// initialized (for either part of k), so rfactor keeps the predicate.
TEST(ScheduleRFactor, NonDivisibleSplits) {
  for (int part : {2, 3}) {
    for (int axis : {0, -1}) {
      Schedule sch(parsePrim(kNonDivisible));
      BlockRV s = sch.getBlock("S");
      BlockRV rf = sch.rfactor(sch.getLoops(s)[part], axis);
      std::string got = ir::printFunction(sch.func());
      EXPECT_NE(
          got.find(part == 3 ? "alloc_buffer %S_rf: f32[" + std::string(axis == 0 ? "16, 60" : "60, 16") + "]"
                             : "alloc_buffer %S_rf: f32[" + std::string(axis == 0 ? "4, 60" : "60, 4") + "]"),
          std::string::npos)
          << got;
      EXPECT_NE(got.find("where(%i0 * 16 + %i1 < 60 && %k0 * 16 + %k1 < 60)"), std::string::npos) << got;
      sch.decomposeReduction(rf, sch.getLoops(rf)[1]);
      expectScheduled(parsePrim(kNonDivisible), sch.func());
    }
  }
}

// A single reduce loop: the rf block has no reduce variable left, so each
// partial result is `identity op value`.
TEST(ScheduleRFactor, WholeReduceLoopOfARowSum) {
  Schedule sch(parsePrim(kRowSum));
  BlockRV s = sch.getBlock("S");
  sch.rfactor(sch.getLoops(s)[1], 1);
  expectStructure(sch.func(),
                  fixture("schedule_reduction/r_factor_whole_reduce_loop_of_a_row_sum_expected.ir"));
  expectScheduled(parsePrim(kRowSum), sch.func());
}

// max, min and product reductions, with the accumulator on either side.
TEST(ScheduleRFactor, OtherReductions) {
  for (const char* update :
       {"max(%S[%vi], %A[%vi, %vk])", "min(%A[%vi, %vk], %S[%vi])", "%S[%vi] * (%A[%vi, %vk] * 0.1 + 1.0)"}) {
    std::string op = update;
    std::string identity = op.rfind("max", 0) == 0 ? "-inf" : op.rfind("min", 0) == 0 ? "inf" : "1.0";
    std::string text = R"(
prim @red(%A: f32[8, 16], %S: f32[8]) {
  for %i in 0..8 {
    for %k0 in 0..4 {
      for %k1 in 0..4 {
        block "S" (%vi = spatial(8, %i), %vk = reduce(16, %k0 * 4 + %k1)) {
          reads(%A[%vi, %vk])
          writes(%S[%vi])
          init {
            %S[%vi] = )" +
                       identity + R"(
          }
          %S[%vi] = )" +
                       op + R"(
        }
      }
    }
  }
}
)";
    SCOPED_TRACE(text);
    Schedule sch(parsePrim(text));
    BlockRV s = sch.getBlock("S");
    BlockRV rf = sch.rfactor(sch.getLoops(s)[1], 0);
    sch.decomposeReduction(rf, sch.getLoops(rf)[1]);
    expectScheduled(parsePrim(text), sch.func());
  }
}

TEST(ScheduleRFactor, Refusals) {
  Schedule sch(parsePrim(kSplitMatmul));
  BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  expectScheduleError([&] { sch.rfactor(loops[0], 0); },
                      "rfactor: loop %i binds no reduce iteration variable of any block");
  expectScheduleError([&] { sch.rfactor(loops[3], 3); },
                      "rfactor: factor_axis 3 is out of range [-3, 2] for %C");
  expectScheduleError([&] { sch.rfactor(loops[3], -4); }, "factor_axis -4 is out of range");

  auto refuse = [](const std::string& text, const std::string& message) {
    SCOPED_TRACE(text);
    Schedule s(parsePrim(text));
    auto l = s.getLoops(s.getBlock("S"));
    expectScheduleError([&] { s.rfactor(l.back(), 0); }, message);
  };
  const std::string head = R"(
prim @r(%A: f32[8, 16], %S: f32[8]) {
  for %i in 0..8 {
    for %k in 0..16 {
      block "S" (%vi = spatial(8, %i), %vk = reduce(16, %k)) {
        reads(%A[%vi, %vk])
        writes(%S[%vi])
)";
  const std::string tail = "\n      }\n    }\n  }\n}\n";
  refuse(head + "init {\n %S[%vi] = 1.0\n }\n %S[%vi] = %S[%vi] + %A[%vi, %vk]" + tail,
         "rfactor: the init of block \"S\" stores 1.0, not 0.0, the identity of its '+' reduction");
  refuse(head + "init {\n %S[%vi] = 0.0\n }\n %S[%vi] = %S[%vi] - %A[%vi, %vk]" + tail,
         "rfactor: block \"S\" combines with '-', which rfactor does not support");
  refuse(head + "%S[%vi] = %S[%vi] + %A[%vi, %vk]" + tail,
         "rfactor: block \"S\" has no init that stores the element it reduces into");
  refuse(head + "init {\n %S[%vi] = 0.0\n }\n %S[%vi] = %A[%vi, %vk] + %A[%vi, 0]" + tail,
         "rfactor: block \"S\" does not update %S with its own value");
  refuse(head + "init {\n %S[%vi] = 0.0\n }\n %S[%vi] = %S[%vi] + %S[%vi] * %A[%vi, %vk]" + tail,
         "rfactor: block \"S\" reads %S other than as its accumulator");

  // A split of a 10-long reduce loop by 16: the partial results of %k1 from
  // 10 on are never initialized.
  refuse(fixture("schedule_reduction/r_factor_refusals.ir"),
         "rfactor: the predicate of block \"S\" has a condition on loops %k0, %k1 that may skip the first "
         "iteration "
         "for some value of loop %k1; some partial results would stay uninitialized");

  // A loop fused from a spatial and a reduce one.
  refuse(fixture("schedule_reduction/r_factor_refusals_2.ir"),
         "rfactor: loop %f binds both spatial and reduce iteration variables of block \"S\"");

  // Another block in the nest reads the result.
  refuse(fixture("schedule_reduction/r_factor_refusals_3.ir"),
         "rfactor: block \"D\" accesses %S in the loop nest of block \"S\"; the reduction into it moves "
         "after that "
         "nest");

  // Two reductions share the loop.
  Schedule two(parsePrim(fixture("schedule_reduction/r_factor_refusals_4.ir")));
  expectScheduleError(
      [&] { two.rfactor(two.getLoops(two.getBlock("S"))[1], 0); },
      "rfactor: loop %k binds reduce iteration variables of block \"S\" and block \"T\"; rfactor "
      "needs exactly one block");
}

}  // namespace
