// Compute-location primitives: compute_at, reverse_compute_at,
// compute_inline, reverse_compute_inline and sample_compute_location. Each
// is checked for the loop structure it makes, for keeping the meaning
// (interpreter), for trace replay, and for refusing illegal uses.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

// B = A * 2; C = B + 1.
const std::string kTwoStages = fixture("two_stages.ir");

const char* kConsumerC = R"(
      block "C" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
)";

std::string twoStagesWith(const std::string& body) {
  return "prim @f(%a: f32[8, 16], %c: f32[8, 16]) {\n  alloc_buffer %b: f32[8, 16]\n" + body + "}\n";
}

// The steps of the table rows below: one primitive on blocks and loops
// found by name.
using Steps = std::function<void(Schedule&)>;

// compute_at of `block` at loop `loop` of block `at`'s nest.
Steps computeAtLoop(const std::string& block, const std::string& at, size_t loop) {
  return [=](Schedule& sch) {
    auto loops = sch.getLoops(sch.getBlock(at));
    sch.computeAt(sch.getBlock(block), loops[loop]);
  };
}

// reverse_compute_at of `block` at loop `loop` of block `at`'s nest.
Steps reverseComputeAtLoop(const std::string& block, const std::string& at, size_t loop) {
  return [=](Schedule& sch) {
    auto loops = sch.getLoops(sch.getBlock(at));
    sch.reverseComputeAt(sch.getBlock(block), loops[loop]);
  };
}

Steps inlineBlock(const std::string& block) {
  return [=](Schedule& sch) { sch.computeInline(sch.getBlock(block)); };
}

Steps reverseInlineBlock(const std::string& block) {
  return [=](Schedule& sch) { sch.reverseComputeInline(sch.getBlock(block)); };
}

// A row's input scheduled by its steps has the structure of its expected
// program and keeps the meaning (expectScheduleCase).
class ScheduledAs : public testing::TestWithParam<ScheduleCase> {};

TEST_P(ScheduledAs, Expected) { expectScheduleCase(GetParam()); }

// --- compute_at ------------------------------------------------------------------

TEST(ScheduleComputeAt, ProducerUnderTheOuterLoop) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectScheduledAs(f, sch.func(),
                    twoStagesWith(R"(
  for %i in 0..8 {
    for %ax0 in 0..16 {
      block "B" (%vi = spatial(8, %i), %vj = spatial(16, %ax0)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
    for %j in 0..16 {)" + std::string(kConsumerC) +
                                  R"(
    }
  }
)"));
  EXPECT_EQ(ir::printTrace(sch.func().trace),
            "trace {\n"
            "  %b0 = get_block(\"C\")\n"
            "  %l1, %l2 = get_loops(%b0)\n"
            "  %b3 = get_block(\"B\")\n"
            "  compute_at(%b3, %l1)\n"
            "}\n");
}

TEST(ScheduleComputeAt, PreserveUnitLoops) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1], /*preserve_unit_loops=*/true);
  expectScheduledAs(f, sch.func(), twoStagesWith(R"(
  for %i in 0..8 {
    for %j in 0..16 {
      for %ax0 in 0..1 {
        for %ax1 in 0..1 {
          block "B" (%vi = spatial(8, %i + %ax0), %vj = spatial(16, %j + %ax1)) {
            reads(%a[%vi, %vj])
            writes(%b[%vi, %vj])
            %b[%vi, %vj] = %a[%vi, %vj] * 2.0
          }
        }
      })" + std::string(kConsumerC) + R"(
    }
  }
)"));
  EXPECT_NE(ir::printTrace(sch.func().trace).find("compute_at(%b3, %l2, preserve_unit_loops = true)"),
            std::string::npos);
}

TEST(ScheduleComputeAt, RootLeavesTheBlockWhereItIs) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  BlockRV b = sch.getBlock("B");
  // Decision -1: the root.
  ir::TraceInst inst{"sample_compute_location", {ir::TraceRef{b.name}}, {}, {}, ir::AttrValue(int64_t{-1})};
  LoopRV root{sch.apply(inst)[0]};
  EXPECT_EQ(sch.loopVar(root), nullptr);
  sch.computeAt(b, root);
  EXPECT_TRUE(ir::structuralEqual(sch.func(), f, {.compare_traces = false}));
  EXPECT_EQ(sch.func().trace.insts.back().name, "compute_at");
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
}

// A 1-d stencil: C[i] = B[i] + B[i + 1] + B[i + 2], C's loop split in IR.
const std::string kStencil = fixture("schedule_compute/stencil.ir");

// A reduction producer keeps its reduce loop whole under the consumer's loop.
const std::string kDenseRelu = fixture("schedule_compute/dense_relu.ir");

// The two stages over a symbolic number of rows.
const std::string kTwoStagesN = fixture("schedule_compute/two_stages_n.ir");

// The value of n a row of the tables runs kTwoStagesN with.
std::map<std::string, int64_t> rows(int64_t n) { return {{"n", n}}; }

INSTANTIATE_TEST_SUITE_P(
    ScheduleComputeAt, ScheduledAs,
    testing::Values(
        ScheduleCase{"ProducerUnderTheInnerLoop", kTwoStages, computeAtLoop("B", "C", 1),
                     fixture("schedule_compute/compute_at_producer_under_the_inner_loop_expected.ir")},
        ScheduleCase{"StencilUnderTheInnerSplitLoop", kStencil, computeAtLoop("B", "C", 1),
                     fixture("schedule_compute/compute_at_stencil_under_the_inner_split_loop_expected.ir")},
        ScheduleCase{"StencilUnderTheOuterSplitLoop", kStencil, computeAtLoop("B", "C", 0),
                     fixture("schedule_compute/compute_at_stencil_under_the_outer_split_loop_expected.ir")},
        // The same with the consumer's loop split by the schedule.
        ScheduleCase{"StencilUnderALoopSplitByTheSchedule",
                     fixture("schedule_compute/compute_at_stencil_under_a_loop_split_by_the_schedule.ir"),
                     [](Schedule& sch) {
                       auto loops = sch.getLoops(sch.getBlock("C"));
                       auto tiles = sch.split(loops[0], {std::nullopt, int64_t{4}});
                       sch.computeAt(sch.getBlock("B"), tiles[1]);
                     },
                     fixture("schedule_compute/compute_at_stencil_under_the_inner_split_loop_expected.ir")},
        // The consumer's loop split 3 x 6 (non-divisible, with a predicate):
        // the region of the last iteration leaves B's domain, so B gets a
        // predicate.
        ScheduleCase{
            "RegionLeavingTheDomainGetsAPredicate",
            fixture("schedule_compute/compute_at_region_leaving_the_domain_gets_a_predicate.ir"),
            computeAtLoop("B", "C", 0),
            fixture("schedule_compute/compute_at_region_leaving_the_domain_gets_a_predicate_expected.ir")},
        // A reduction producer keeps its reduce loop whole under the
        // consumer's loop.
        ScheduleCase{
            "ReductionProducerKeepsItsReduceLoop", kDenseRelu, computeAtLoop("dense", "relu", 0),
            fixture("schedule_compute/compute_at_reduction_producer_keeps_its_reduce_loop_expected.ir")},
        ScheduleCase{"SymbolicExtent", kTwoStagesN, computeAtLoop("B", "C", 0),
                     fixture("schedule_compute/compute_at_symbolic_extent_expected.ir"), rows(3)}),
    ScheduleCaseName());

TEST(ScheduleComputeAt, SymbolicRegionExtentIsRefused) {
  const std::string text = fixture("schedule_compute/compute_at_symbolic_region_extent_is_refused.ir");
  Schedule sch(parsePrim(text));
  auto loops = sch.getLoops(sch.getBlock("C"));
  BlockRV b = sch.getBlock("B");
  expectScheduleError(
      [&] { sch.computeAt(b, loops[0]); },
      "cannot compute block \"B\" at loop %j: the region of %b needed per iteration has extent n in "
      "dimension 0, not a constant");
  sch.computeAt(b, loops[1]);  // one row and one column per iteration
}

TEST(ScheduleComputeAt, IllegalUsesAreRefused) {
  // A second consumer outside the loop.
  std::string three = kTwoStages;
  three.insert(three.rfind('}'), R"(
  for %i in 0..8 {
    block "D" (%vi = spatial(8, %i)) {
      reads(%b[%vi, 0])
      writes(%c[%vi, 0])
      %c[%vi, 0] = %b[%vi, 0]
    }
  }
)");
  {
    Schedule sch(parsePrim(three));
    auto loops = sch.getLoops(sch.getBlock("C"));
    BlockRV b = sch.getBlock("B");
    expectScheduleError(
        [&] { sch.computeAt(b, loops[0]); },
        "in prim @f: cannot compute block \"B\" at loop %i: its consumer block \"D\" is not under that "
        "loop");
  }
  Schedule sch(parsePrim(kTwoStages));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  auto bloops = sch.getLoops(b), cloops = sch.getLoops(c);
  // The consumer comes after the producer's nest.
  expectScheduleError([&] { sch.computeAt(c, bloops[0]); },
                      "cannot compute block \"C\" at loop %i: it comes after the loop nest of that loop");
  expectScheduleError([&] { sch.computeAt(b, bloops[1]); }, "the loop is one of the block's own loops");
  expectScheduleError([&] { sch.reverseComputeAt(b, cloops[0]); },
                      "it comes before the loop nest of that loop");
  expectScheduleError([&] { sch.reverseComputeInline(b); },
                      "cannot reverse-inline block \"B\": it reads no intermediate buffer");
  // Failed primitives change nothing and are not recorded.
  EXPECT_TRUE(ir::structuralEqual(sch.func(), parsePrim(kTwoStages), {.compare_traces = false}));
  EXPECT_EQ(sch.func().trace.insts.size(), 4u);
}

TEST(ScheduleComputeAt, ParameterOutputsAndBlocksSharingANestAreRefused) {
  const std::string text =
      fixture("schedule_compute/compute_at_parameter_outputs_and_blocks_sharing_a_nest_are_refused.ir");
  Schedule sch(parsePrim(text));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  auto cloops = sch.getLoops(c);
  expectScheduleError(
      [&] { sch.computeAt(b, cloops[0]); },
      "cannot compute block \"B\" at loop %i: it writes parameter %b, which must be computed whole");
  expectScheduleError([&] { sch.computeAt(c, sch.getLoops(b)[0]); },
                      "cannot compute block \"C\" at loop %i: it is not alone in its loop nest");
  BlockRV d = sch.getBlock("D");
  expectScheduleError([&] { sch.reverseComputeAt(d, sch.getLoops(b)[0]); },
                      "it is not alone in its loop nest");
}

// --- reverse_compute_at --------------------------------------------------------

const std::string kDenseBiasRelu = fixture("schedule_compute/dense_bias_relu.ir");

INSTANTIATE_TEST_SUITE_P(
    ScheduleReverseComputeAt, ScheduledAs,
    testing::Values(
        ScheduleCase{
            "EpilogueUnderTheMatmulRowLoop", kDenseBiasRelu,
            [](Schedule& sch) {
              auto loops = sch.getLoops(sch.getBlock("dense"));
              sch.reverseComputeAt(sch.getBlock("bias"), loops[0]);
              sch.reverseComputeAt(sch.getBlock("relu"), loops[0]);
            },
            fixture("schedule_compute/reverse_compute_at_epilogue_under_the_matmul_row_loop_expected.ir")},
        ScheduleCase{
            "EpilogueUnderTheMatmulColumnLoop", kDenseBiasRelu,
            [](Schedule& sch) {
              sch.reverseComputeInline(sch.getBlock("relu"));
              reverseComputeAtLoop("bias", "dense", 1)(sch);
            },
            fixture("schedule_compute/reverse_compute_at_epilogue_under_the_matmul_column_loop_expected.ir")},
        // The producer's loop split in IR: the consumer follows the tile.
        ScheduleCase{
            "ConsumerFollowsASplitProducer",
            fixture("schedule_compute/reverse_compute_at_consumer_follows_a_split_producer.ir"),
            reverseComputeAtLoop("C", "B", 0),
            fixture("schedule_compute/"
                    "reverse_compute_at_consumer_follows_a_tile_of_a_non_divisible_split_expected.ir")},
        // A non-divisible split of the producer: the consumer follows each
        // tile, with the split's predicate.
        ScheduleCase{
            "ConsumerFollowsATileOfANonDivisibleSplit",
            fixture(
                "schedule_compute/reverse_compute_at_consumer_follows_a_tile_of_a_non_divisible_split.ir"),
            [](Schedule& sch) {
              auto tiles = sch.split(sch.getLoops(sch.getBlock("B"))[0], {std::nullopt, int64_t{4}});
              sch.reverseComputeAt(sch.getBlock("C"), tiles[0]);
            },
            fixture("schedule_compute/"
                    "reverse_compute_at_consumer_follows_a_tile_of_a_non_divisible_split_expected.ir")},
        ScheduleCase{"SymbolicExtent", kTwoStagesN, reverseComputeAtLoop("C", "B", 0),
                     fixture("schedule_compute/reverse_compute_at_symbolic_extent_expected.ir"), rows(2)}),
    ScheduleCaseName());

TEST(ScheduleReverseComputeAt, IllegalUsesAreRefused) {
  Schedule sch(parsePrim(kDenseBiasRelu));
  BlockRV dense = sch.getBlock("dense"), bias = sch.getBlock("bias"), relu = sch.getBlock("relu");
  auto loops = sch.getLoops(dense);
  expectScheduleError(
      [&] { sch.reverseComputeAt(bias, loops[2]); },
      "cannot reverse-compute block \"bias\" at loop %k: its producer block \"dense\" reduces over "
      "loop %k, so %acc is not final within one iteration of that loop");
  expectScheduleError(
      [&] { sch.reverseComputeAt(relu, loops[0]); },
      "cannot reverse-compute block \"relu\" at loop %i: block \"bias\" writes %biased, which it "
      "reads, outside that loop but before it");

  // Shifted reads: C[i] = B[i + 1].
  const std::string shifted = fixture("schedule_compute/shifted.ir");
  Schedule s2(parsePrim(shifted));
  auto bl = s2.getLoops(s2.getBlock("B"));
  BlockRV c = s2.getBlock("C");
  expectScheduleError(
      [&] { s2.reverseComputeAt(c, bl[0]); },
      "cannot reverse-compute block \"C\" at loop %i: it reads %b[%vi + 1], not element for element "
      "through its spatial iteration variables");
  expectScheduleError([&] { s2.reverseComputeInline(c); },
                      "cannot reverse-inline block \"C\": it reads %b[%vi + 1], not element for element");
  // Inlining B into C instead is fine.
  ir::PrimFunc before = s2.func();
  s2.computeInline(s2.getBlock("B"));
  expectSameMeaning(before, s2.func());
}

// --- compute_inline --------------------------------------------------------------

// A padding block (clamped load under a select, as legalize writes it) read
// by a 1-d convolution.
const std::string kPadConv = fixture("schedule_compute/pad_conv.ir");

TEST(ScheduleComputeInline, PaddingIntoConvolution) {
  ir::PrimFunc f = parsePrim(kPadConv);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("pad"));
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_compute/compute_inline_padding_into_convolution_expected.ir"));
  expectScheduleError([&] { sch.getBlock("pad"); }, "no block \"pad\"");
}

INSTANTIATE_TEST_SUITE_P(
    ScheduleComputeInline, ScheduledAs,
    testing::Values(
        ScheduleCase{"ReadRegionsAreMapped", kStencil, inlineBlock("B"),
                     fixture("schedule_compute/compute_inline_read_regions_are_mapped_expected.ir")},
        ScheduleCase{"TwoStages", kTwoStages, inlineBlock("B"),
                     fixture("schedule_compute/compute_inline_two_stages_expected.ir")}),
    ScheduleCaseName());

TEST(ScheduleComputeInline, SymbolicShapes) {
  ir::PrimFunc f = parsePrim(kTwoStagesN);
  const std::string expected = fixture("schedule_compute/compute_inline_symbolic_shapes_expected.ir");
  Schedule sch(f);
  sch.computeInline(sch.getBlock("B"));
  expectScheduledAs(f, sch.func(), expected, 1e-5, {{"n", 4}});
  // Folding C into B instead gives the same program, under B's name.
  Schedule rev(f);
  rev.reverseComputeInline(rev.getBlock("C"));
  std::string renamed = expected;
  renamed.replace(renamed.find("\"C\""), 3, "\"B\"");
  expectScheduledAs(f, rev.func(), renamed, 1e-5, {{"n", 4}});
}

TEST(ScheduleComputeInline, IllegalUsesAreRefused) {
  Schedule sch(parsePrim(kDenseBiasRelu));
  expectScheduleError([&] { sch.computeInline(sch.getBlock("dense")); },
                      "in prim @dense_bias_relu: cannot inline block \"dense\": it is a reduction");
  expectScheduleError([&] { sch.computeInline(sch.getBlock("relu")); },
                      "cannot inline block \"relu\": it writes parameter %out");
  // A producer computed only partly: B covers 6 of the 8 rows.
  std::string partial = kTwoStages;
  partial.replace(partial.find("spatial(8, %i), %vj = spatial(16, %j)) {\n        reads(%a"), 14,
                  "spatial(6, %i)");
  partial.replace(partial.find("for %i in 0..8"), 14, "for %i in 0..6");
  Schedule s2(parsePrim(partial));
  expectScheduleError([&] { s2.computeInline(s2.getBlock("B")); },
                      "cannot inline block \"B\": it covers only part of %b (dimension 0)");
}

// --- reverse_compute_inline --------------------------------------------------------

INSTANTIATE_TEST_SUITE_P(ScheduleReverseComputeInline, ScheduledAs,
                         testing::Values(ScheduleCase{
                             "ReluIntoAdd",
                             fixture("schedule_compute/reverse_compute_inline_relu_into_add.ir"),
                             reverseInlineBlock("relu"),
                             fixture("schedule_compute/reverse_compute_inline_relu_into_add_expected.ir")}),
                         ScheduleCaseName());

TEST(ScheduleReverseComputeInline, IllegalUsesAreRefused) {
  Schedule sch(parsePrim(kDenseRelu));
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("relu")); },
                      "cannot reverse-inline block \"relu\": its producer block \"dense\" is a reduction");
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("dense")); },
                      "cannot reverse-inline block \"dense\": it is a reduction");
}

// --- hazards: moving a computation past a block that interferes --------------------

// X overwrites %a, which B reads, between B and its consumer C.
const std::string kOverwrite = fixture("schedule_compute/overwrite.ir");

TEST(ScheduleComputeHazards, OverwrittenInputsAreRefused) {
  Schedule sch(parsePrim(kOverwrite));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  expectScheduleError(
      [&] { sch.computeAt(b, sch.getLoops(c)[0]); },
      "cannot compute block \"B\" at loop %i: block \"X\" writes %a, which it reads, before that "
      "loop's iterations end");
  expectScheduleError([&] { sch.reverseComputeAt(c, sch.getLoops(b)[0]); },
                      "cannot reverse-compute block \"C\" at loop %i: block \"X\" writes %a, which it reads, "
                      "outside that loop but before it");
  expectScheduleError(
      [&] { sch.computeInline(b); },
      "cannot inline block \"B\": block \"X\" writes %a, which it reads, in or after its loop nest");
  expectScheduleError([&] { sch.reverseComputeInline(c); },
                      "cannot reverse-inline block \"C\": block \"X\" writes %a, which it reads, between its "
                      "producer and it");
}

TEST(ScheduleComputeHazards, PredicatesThatSkipIterationsAreRefused) {
  std::string text = kTwoStages;
  text.insert(text.find("        reads(%a"), "        where(%i % 2 == 0)\n");
  Schedule sch(parsePrim(text));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  expectScheduleError([&] { sch.computeInline(b); },
                      "cannot inline block \"B\": its predicate %i % 2 == 0 may skip part of its domain");
  expectScheduleError(
      [&] { sch.computeAt(b, sch.getLoops(c)[0]); },
      "cannot compute block \"B\" at loop %i: its predicate %i % 2 == 0 is not a bound on its "
      "iteration variables");
  expectScheduleError(
      [&] { sch.reverseComputeAt(c, sch.getLoops(b)[0]); },
      "its producer block \"B\" has predicate %i % 2 == 0, which is not a bound on an index of %b "
      "it writes");
  expectScheduleError(
      [&] { sch.reverseComputeInline(c); },
      "cannot reverse-inline block \"C\": its producer's predicate %i % 2 == 0 may skip part of its "
      "domain");
}

// A reduction without an init (accumulating into a zeroed buffer) cannot be
// recomputed, but a consumer can still follow it.
TEST(ScheduleComputeHazards, ReductionWithoutInit) {
  const std::string text = fixture("schedule_compute/compute_hazards_reduction_without_init.ir");
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  BlockRV sum = sch.getBlock("sum"), copy = sch.getBlock("copy");
  expectScheduleError(
      [&] { sch.computeAt(sum, sch.getLoops(copy)[0]); },
      "cannot compute block \"sum\" at loop %i: it is a reduction without an init, which cannot be "
      "recomputed");
  sch.reverseComputeAt(copy, sch.getLoops(sum)[0]);
  expectScheduledAs(f, sch.func(),
                    fixture("schedule_compute/compute_hazards_reduction_without_init_expected.ir"));
}

TEST(ScheduleComputeHazards, SeveralWritersAndReaders) {
  // B2 updates %b in place after B; D reads %t besides C.
  std::string text = kTwoStages;
  text.insert(text.find("  for %i in 0..8 {\n    for %j in 0..16 {\n      block \"C\""), R"(  for %i in 0..8 {
    for %j in 0..16 {
      block "B2" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %b[%vi, %vj] + 3.0
      }
    }
  }
)");
  Schedule sch(parsePrim(text));
  BlockRV b = sch.getBlock("B"), b2 = sch.getBlock("B2"), c = sch.getBlock("C");
  expectScheduleError([&] { sch.computeInline(b); },
                      "cannot inline block \"B\": block \"B2\" also writes %b");
  expectScheduleError([&] { sch.computeInline(b2); },
                      "cannot inline block \"B2\": it reads %b, which it writes");
  expectScheduleError([&] { sch.reverseComputeInline(c); },
                      "cannot reverse-inline block \"C\": %b is written by 2 blocks, not by one producer");
  expectScheduleError([&] { sch.computeAt(b, sch.getLoops(c)[0]); },
                      "cannot compute block \"B\" at loop %i: block \"B2\" also writes %b");

  // Two blocks under the producer's loop write what the consumer reads.
  const std::string two = fixture("schedule_compute/two.ir");
  Schedule s2(parsePrim(two));
  BlockRV c2 = s2.getBlock("C");
  expectScheduleError(
      [&] { s2.reverseComputeAt(c2, s2.getLoops(s2.getBlock("B"))[0]); },
      "cannot reverse-compute block \"C\" at loop %i: block \"B\" and block \"B2\" under that "
      "loop both write %b, which it reads");

  // Two intermediates read by one consumer; an intermediate with two readers.
  const std::string join = fixture("schedule_compute/join.ir");
  ir::PrimFunc jf = parsePrim(join);
  Schedule s3(jf);
  expectScheduleError([&] { s3.reverseComputeInline(s3.getBlock("C")); },
                      "cannot reverse-inline block \"C\": it reads several intermediate buffers (%t, %u)");
  expectScheduleError([&] { s3.reverseComputeInline(s3.getBlock("U")); },
                      "cannot reverse-inline block \"U\": block \"C\" also reads %t");
  // Inlining T into both readers is fine.
  s3.computeInline(s3.getBlock("T"));
  expectSameMeaning(jf, s3.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(jf, s3.func().trace), s3.func()));
}

TEST(ScheduleComputeHazards, ConsumerReadingMoreThanTheLoopWrites) {
  const std::string text =
      fixture("schedule_compute/compute_hazards_consumer_reading_more_than_the_loop_writes.ir");
  Schedule sch(parsePrim(text));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  expectScheduleError(
      [&] { sch.reverseComputeAt(c, sch.getLoops(b)[0]); },
      "cannot reverse-compute block \"C\" at loop %i: the blocks under that loop do not write all "
      "of %b that it reads");
  expectScheduleError([&] { sch.reverseComputeInline(c); },
                      "cannot reverse-inline block \"C\": its producer block \"B\" covers only part of %b");
  expectScheduleError([&] { sch.computeInline(b); }, "cannot inline block \"B\": it covers only part of %b");
}

// --- prim funcs as mlcc-legalize writes them ----------------------------------------

const std::string kLegalizedConv = fixture("schedule_compute/legalized_conv.ir");

TEST(ScheduleComputeLegalized, ConvolutionWithPaddingAndEpilogue) {
  ir::PrimFunc f = parsePrim(kLegalizedConv);
  // Pad computed per output row, bias+relu folded and moved under the row loop.
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("conv2d"));
  sch.computeAt(sch.getBlock("pad"), loops[2]);
  sch.reverseComputeInline(sch.getBlock("relu"));
  sch.reverseComputeAt(sch.getBlock("add"), loops[2]);
  expectSameMeaning(f, sch.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
  std::string text = ir::printFunction(sch.func());
  // One input channel block of 2 x 3 rows x 8 columns of padding per output row.
  EXPECT_NE(
      text.find("block \"pad\" (%v0 = spatial(1, %i0), %v1 = spatial(2, %ax0), %v2 = spatial(8, %i2 + %ax1), "
                "%v3 = spatial(8, %ax2))"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("block \"add\" (%v0 = spatial(1, %i0), %v1 = spatial(3, %i1), %v2 = spatial(6, %i2), "
                      "%v3 = spatial(6, %ax0))"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("alloc_buffer %cb"), std::string::npos) << text;

  // Or the padding inlined into the convolution.
  Schedule inl(f);
  inl.computeInline(inl.getBlock("pad"));
  inl.reverseComputeInline(inl.getBlock("relu"));
  expectSameMeaning(f, inl.func());
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, inl.func().trace), inl.func()));
}

const std::string kLegalizedSoftmax = fixture("schedule_compute/legalized_softmax.ir");

TEST(ScheduleComputeLegalized, SoftmaxReductionsUnderTheRowLoop) {
  ir::PrimFunc f = parsePrim(kLegalizedSoftmax);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("softmax"));
  BlockRV mx = sch.getBlock("softmax_max"), sum = sch.getBlock("softmax_expsum");
  // The max feeds the sum, which is not under the loop yet.
  expectScheduleError([&] { sch.computeAt(mx, loops[0]); },
                      "its consumer block \"softmax_expsum\" is not under that loop");
  sch.computeAt(sum, loops[0]);
  sch.computeAt(mx, loops[0]);
  expectScheduledAs(
      f, sch.func(),
      fixture("schedule_compute/compute_legalized_softmax_reductions_under_the_row_loop_expected.ir"), 1e-5,
      {{"n", 3}});
}

// --- with the other primitives -------------------------------------------------------

const std::string kMatmul = fixture("schedule_compute/matmul.ir");

// GPU-style tiling: operand tiles copied to shared memory per reduction
// step, the accumulator tile written back from local memory per output tile.
TEST(ScheduleComputePipeline, TiledMatmulWithSharedAndLocalCaches) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch(f);
  BlockRV mm = sch.getBlock("mm");
  auto loops = sch.getLoops(mm);
  auto i = sch.split(loops[0], {std::nullopt, int64_t{4}});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{4}});
  auto k = sch.split(loops[2], {std::nullopt, int64_t{4}});
  sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]});
  BlockRV as = sch.cacheRead(mm, 0, ir::StorageScope::shared);
  BlockRV bs = sch.cacheRead(mm, 1, ir::StorageScope::shared);
  BlockRV cl = sch.cacheWrite(mm, 0, ir::StorageScope::local);
  sch.computeAt(as, k[0]);
  sch.computeAt(bs, k[0]);
  sch.reverseComputeAt(cl, j[0]);
  expectScheduledAs(
      f, sch.func(),
      fixture("schedule_compute/compute_pipeline_tiled_matmul_with_shared_and_local_caches_expected.ir"));
  // The accumulator is not final inside the reduction loop.
  Schedule bad(f);
  BlockRV mm2 = bad.getBlock("mm");
  BlockRV cl2 = bad.cacheWrite(mm2, 0, ir::StorageScope::local);
  auto l2 = bad.getLoops(mm2);
  expectScheduleError([&] { bad.reverseComputeAt(cl2, l2[2]); }, "reduces over loop %k");
}

// Sampled compute locations of a cache copy, replayed and mutated.
TEST(ScheduleComputePipeline, SampledLocationsOfACacheCopy) {
  ir::PrimFunc f = parsePrim(kMatmul);
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Schedule sch(f, seed);
    BlockRV mm = sch.getBlock("mm");
    BlockRV as = sch.cacheRead(mm, 0, ir::StorageScope::shared);
    LoopRV l = sch.sampleComputeLocation(as);
    sch.computeAt(as, l);
    expectSameMeaning(f, sch.func());
    EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
    // Every other decision replays to an equivalent program too.
    for (int64_t d = -1; d < 3; ++d) {
      ir::Trace t = sch.func().trace;
      for (auto& inst : t.insts)
        if (inst.name == "sample_compute_location") inst.decision = ir::AttrValue(d);
      expectSameMeaning(f, replayTrace(f, t));
    }
  }
}

// --- sample_compute_location -------------------------------------------------------

TEST(ScheduleSampleComputeLocation, EveryDecisionReplaysToAnEquivalentProgram) {
  for (const std::string& text : {kTwoStages, kStencil, kDenseRelu}) {
    ir::PrimFunc f = parsePrim(text);
    std::string producer = text == kDenseRelu ? "dense" : "B";
    for (int64_t d = -1; d < 2; ++d) {
      Schedule sch(f);
      BlockRV b = sch.getBlock(producer);
      ir::TraceInst inst{"sample_compute_location", {ir::TraceRef{b.name}}, {}, {}, ir::AttrValue(d)};
      LoopRV l{sch.apply(inst)[0]};
      sch.computeAt(b, l);
      expectSameMeaning(f, sch.func());
      EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
    }
    Schedule sch(f);
    BlockRV b = sch.getBlock(producer);
    ir::TraceInst inst{"sample_compute_location", {ir::TraceRef{b.name}}, {}, {}, ir::AttrValue(int64_t{2})};
    expectScheduleError([&] { sch.apply(inst); },
                        "sample_compute_location: decision 2 is out of range: block \"" + producer +
                            "\" has 2 candidate loops (decisions -1 for the root to 1)");
  }
}

TEST(ScheduleSampleComputeLocation, SamplesAreRecordedAndReplay) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  std::set<int64_t> seen;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    Schedule sch(f, seed);
    BlockRV b = sch.getBlock("B");
    LoopRV l = sch.sampleComputeLocation(b);
    sch.computeAt(b, l);
    const ir::TraceInst& sample = sch.func().trace.insts[1];
    ASSERT_TRUE(sample.decision && sample.decision->isInt());
    seen.insert(sample.decision->asInt());
    EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace, seed + 100), sch.func()));
    expectSameMeaning(f, sch.func());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{-1, 0, 1}));
}

TEST(ScheduleSampleComputeLocation, OnlyLegalLoopsAreCandidates) {
  // B's consumers C and D: only the loop enclosing both qualifies.
  const std::string text =
      fixture("schedule_compute/sample_compute_location_only_legal_loops_are_candidates.ir");
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  BlockRV b = sch.getBlock("B");
  ir::TraceInst inst{"sample_compute_location", {ir::TraceRef{b.name}}, {}, {}, ir::AttrValue(int64_t{0})};
  LoopRV l{sch.apply(inst)[0]};
  EXPECT_EQ(sch.loopVar(l)->name, "i");
  sch.computeAt(b, l);
  expectSameMeaning(f, sch.func());
  ir::TraceInst bad{"sample_compute_location", {ir::TraceRef{b.name}}, {}, {}, ir::AttrValue(int64_t{1})};
  Schedule sch2(f);
  BlockRV b2 = sch2.getBlock("B");
  bad.inputs = {ir::TraceRef{b2.name}};
  expectScheduleError([&] { sch2.apply(bad); }, "has 1 candidate loop (decisions -1 for the root to 0)");
  bad.decision = ir::AttrValue("i");
  expectScheduleError([&] { sch2.apply(bad); }, "the decision must be an integer, not \"i\"");
}

}  // namespace
