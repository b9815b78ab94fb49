// Compute-location primitives: compute_at, reverse_compute_at,
// compute_inline, reverse_compute_inline and sample_compute_location. Each
// is checked for the loop structure it makes, for keeping the meaning
// (interpreter), for trace replay, and for refusing illegal uses.
#include <gtest/gtest.h>

#include <set>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"

using namespace mlcc;
using namespace mlcc::schedule;
using mlcc::test::expectSameMeaning;
using mlcc::test::expectScheduled;
using mlcc::test::expectScheduledAs;
using mlcc::test::expectScheduleError;
using mlcc::test::parsePrim;

namespace {

// B = A * 2; C = B + 1.
const char* kTwoStages = R"(
prim @f(%a: f32[8, 16], %c: f32[8, 16]) {
  alloc_buffer %b: f32[8, 16]
  for %i in 0..8 {
    for %j in 0..16 {
      block "B" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %i in 0..8 {
    for %j in 0..16 {
      block "C" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)";

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

TEST(ScheduleComputeAt, ProducerUnderTheInnerLoop) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1]);
  expectScheduledAs(f, sch.func(), twoStagesWith(R"(
  for %i in 0..8 {
    for %j in 0..16 {
      block "B" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      })" + std::string(kConsumerC) + R"(
    }
  }
)"));
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
const char* kStencil = R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %i in 0..18 {
    block "B" (%vi = spatial(18, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %io in 0..4 {
    for %ii in 0..4 {
      block "C" (%vi = spatial(16, %io * 4 + %ii)) {
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)";

TEST(ScheduleComputeAt, StencilUnderTheInnerSplitLoop) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1]);
  expectScheduledAs(f, sch.func(), R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %io in 0..4 {
    for %ii in 0..4 {
      for %ax0 in 0..3 {
        block "B" (%vi = spatial(18, %io * 4 + %ii + %ax0)) {
          reads(%a[%vi])
          writes(%b[%vi])
          %b[%vi] = %a[%vi] * 2.0
        }
      }
      block "C" (%vi = spatial(16, %io * 4 + %ii)) {
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)");
}

TEST(ScheduleComputeAt, StencilUnderTheOuterSplitLoop) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %io in 0..4 {
    for %ax0 in 0..6 {
      block "B" (%vi = spatial(18, %io * 4 + %ax0)) {
        reads(%a[%vi])
        writes(%b[%vi])
        %b[%vi] = %a[%vi] * 2.0
      }
    }
    for %ii in 0..4 {
      block "C" (%vi = spatial(16, %io * 4 + %ii)) {
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)");
}

// The same with the consumer's loop split by the schedule.
TEST(ScheduleComputeAt, StencilUnderALoopSplitByTheSchedule) {
  const char* text = R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %i in 0..18 {
    block "B" (%vi = spatial(18, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..16 {
    block "C" (%vi = spatial(16, %i)) {
      reads(%b[%vi +: 3])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto tiles = sch.split(loops[0], {std::nullopt, int64_t{4}});
  sch.computeAt(sch.getBlock("B"), tiles[1]);
  expectScheduledAs(f, sch.func(), R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %io in 0..4 {
    for %ii in 0..4 {
      for %ax0 in 0..3 {
        block "B" (%vi = spatial(18, %io * 4 + %ii + %ax0)) {
          reads(%a[%vi])
          writes(%b[%vi])
          %b[%vi] = %a[%vi] * 2.0
        }
      }
      block "C" (%vi = spatial(16, %io * 4 + %ii)) {
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)");
}

// A non-divisible split of the producer: the consumer follows each tile,
// with the split's predicate.
TEST(ScheduleReverseComputeAt, ConsumerFollowsATileOfANonDivisibleSplit) {
  const char* text = R"(
prim @f(%a: f32[10], %c: f32[10]) {
  alloc_buffer %b: f32[10]
  for %i in 0..10 {
    block "B" (%vi = spatial(10, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..10 {
    block "C" (%vi = spatial(10, %i)) {
      reads(%b[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + 1.0
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  auto tiles = sch.split(sch.getLoops(sch.getBlock("B"))[0], {std::nullopt, int64_t{4}});
  sch.reverseComputeAt(sch.getBlock("C"), tiles[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @f(%a: f32[10], %c: f32[10]) {
  alloc_buffer %b: f32[10]
  for %io in 0..3 {
    for %ii in 0..4 {
      block "B" (%vi = spatial(10, %io * 4 + %ii)) {
        where(%io * 4 + %ii < 10)
        reads(%a[%vi])
        writes(%b[%vi])
        %b[%vi] = %a[%vi] * 2.0
      }
    }
    for %ax0 in 0..4 {
      block "C" (%vi = spatial(10, %io * 4 + %ax0)) {
        where(%io * 4 + %ax0 < 10)
        reads(%b[%vi])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + 1.0
      }
    }
  }
}
)");
}

// The consumer's loop split 3 x 6 (non-divisible, with a predicate): the
// region of the last iteration leaves B's domain, so B gets a predicate.
TEST(ScheduleComputeAt, RegionLeavingTheDomainGetsAPredicate) {
  const char* text = R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %i in 0..18 {
    block "B" (%vi = spatial(18, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %io in 0..3 {
    for %ii in 0..6 {
      block "C" (%vi = spatial(16, %io * 6 + %ii)) {
        where(%io * 6 + %ii < 16)
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  alloc_buffer %b: f32[18]
  for %io in 0..3 {
    for %ax0 in 0..8 {
      block "B" (%vi = spatial(18, %io * 6 + %ax0)) {
        where(%io * 6 + %ax0 < 18)
        reads(%a[%vi])
        writes(%b[%vi])
        %b[%vi] = %a[%vi] * 2.0
      }
    }
    for %ii in 0..6 {
      block "C" (%vi = spatial(16, %io * 6 + %ii)) {
        where(%io * 6 + %ii < 16)
        reads(%b[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + %b[%vi + 1] + %b[%vi + 2]
      }
    }
  }
}
)");
}

// A reduction producer keeps its reduce loop whole under the consumer's loop.
const char* kDenseRelu = R"(
prim @dense_relu(%x: f32[4, 8], %w: f32[6, 8], %out: f32[4, 6]) {
  alloc_buffer %acc: f32[4, 6]
  for %i in 0..4 {
    for %j in 0..6 {
      for %k in 0..8 {
        block "dense" (%vi = spatial(4, %i), %vj = spatial(6, %j), %vk = reduce(8, %k)) {
          reads(%x[%vi, %vk], %w[%vj, %vk])
          writes(%acc[%vi, %vj])
          init {
            %acc[%vi, %vj] = 0.0
          }
          %acc[%vi, %vj] = %acc[%vi, %vj] + %x[%vi, %vk] * %w[%vj, %vk]
        }
      }
    }
  }
  for %i in 0..4 {
    for %j in 0..6 {
      block "relu" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%acc[%vi, %vj])
        writes(%out[%vi, %vj])
        %out[%vi, %vj] = max(%acc[%vi, %vj], 0.0)
      }
    }
  }
}
)";

TEST(ScheduleComputeAt, ReductionProducerKeepsItsReduceLoop) {
  ir::PrimFunc f = parsePrim(kDenseRelu);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("relu"));
  sch.computeAt(sch.getBlock("dense"), loops[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @dense_relu(%x: f32[4, 8], %w: f32[6, 8], %out: f32[4, 6]) {
  alloc_buffer %acc: f32[4, 6]
  for %i in 0..4 {
    for %ax0 in 0..6 {
      for %ax1 in 0..8 {
        block "dense" (%vi = spatial(4, %i), %vj = spatial(6, %ax0), %vk = reduce(8, %ax1)) {
          reads(%x[%vi, %vk], %w[%vj, %vk])
          writes(%acc[%vi, %vj])
          init {
            %acc[%vi, %vj] = 0.0
          }
          %acc[%vi, %vj] = %acc[%vi, %vj] + %x[%vi, %vk] * %w[%vj, %vk]
        }
      }
    }
    for %j in 0..6 {
      block "relu" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%acc[%vi, %vj])
        writes(%out[%vi, %vj])
        %out[%vi, %vj] = max(%acc[%vi, %vj], 0.0)
      }
    }
  }
}
)");
}

// The two stages over a symbolic number of rows.
const char* kTwoStagesN = R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  alloc_buffer %b: f32[n, 16]
  for %i in 0..n {
    for %j in 0..16 {
      block "B" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %i in 0..n {
    for %j in 0..16 {
      block "C" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)";

const char* kBlockBN = R"(
      block "B" (%vi = spatial(n, %i), %vj = spatial(16, %ax0)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
)";

TEST(ScheduleComputeAt, SymbolicExtent) {
  ir::PrimFunc f = parsePrim(kTwoStagesN);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectScheduledAs(f, sch.func(),
                    R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  alloc_buffer %b: f32[n, 16]
  for %i in 0..n {
    for %ax0 in 0..16 {)" +
                        std::string(kBlockBN) + R"(
    }
    for %j in 0..16 {
      block "C" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)",
                    1e-5, {{"n", 3}});
}

TEST(ScheduleComputeAt, SymbolicRegionExtentIsRefused) {
  const char* text = R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  alloc_buffer %b: f32[n, 16]
  for %i in 0..n {
    for %j in 0..16 {
      block "B" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %j in 0..16 {
    for %i in 0..n {
      block "C" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)";
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
  const char* text = R"(
prim @f(%a: f32[8], %b: f32[8], %c: f32[8]) {
  for %i in 0..8 {
    block "B" (%vi = spatial(8, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%b[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + 1.0
    }
    block "D" (%vi = spatial(8, %i)) {
      reads(%c[%vi])
      writes(%c[%vi])
      %c[%vi] = %c[%vi] * 3.0
    }
  }
}
)";
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

const char* kDenseBiasRelu = R"(
prim @dense_bias_relu(%x: f32[4, 8], %w: f32[6, 8], %bias: f32[6], %out: f32[4, 6]) {
  alloc_buffer %acc: f32[4, 6]
  alloc_buffer %biased: f32[4, 6]
  for %i in 0..4 {
    for %j in 0..6 {
      for %k in 0..8 {
        block "dense" (%vi = spatial(4, %i), %vj = spatial(6, %j), %vk = reduce(8, %k)) {
          reads(%x[%vi, %vk], %w[%vj, %vk])
          writes(%acc[%vi, %vj])
          init {
            %acc[%vi, %vj] = 0.0
          }
          %acc[%vi, %vj] = %acc[%vi, %vj] + %x[%vi, %vk] * %w[%vj, %vk]
        }
      }
    }
  }
  for %i in 0..4 {
    for %j in 0..6 {
      block "bias" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%acc[%vi, %vj], %bias[%vj])
        writes(%biased[%vi, %vj])
        %biased[%vi, %vj] = %acc[%vi, %vj] + %bias[%vj]
      }
    }
  }
  for %i in 0..4 {
    for %j in 0..6 {
      block "relu" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%biased[%vi, %vj])
        writes(%out[%vi, %vj])
        %out[%vi, %vj] = max(%biased[%vi, %vj], 0.0)
      }
    }
  }
}
)";

const char* kDenseBlock = R"(
        block "dense" (%vi = spatial(4, %i), %vj = spatial(6, %j), %vk = reduce(8, %k)) {
          reads(%x[%vi, %vk], %w[%vj, %vk])
          writes(%acc[%vi, %vj])
          init {
            %acc[%vi, %vj] = 0.0
          }
          %acc[%vi, %vj] = %acc[%vi, %vj] + %x[%vi, %vk] * %w[%vj, %vk]
        }
)";

TEST(ScheduleReverseComputeAt, EpilogueUnderTheMatmulRowLoop) {
  ir::PrimFunc f = parsePrim(kDenseBiasRelu);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("dense"));
  sch.reverseComputeAt(sch.getBlock("bias"), loops[0]);
  sch.reverseComputeAt(sch.getBlock("relu"), loops[0]);
  expectScheduledAs(f, sch.func(),
                    R"(
prim @dense_bias_relu(%x: f32[4, 8], %w: f32[6, 8], %bias: f32[6], %out: f32[4, 6]) {
  alloc_buffer %acc: f32[4, 6]
  alloc_buffer %biased: f32[4, 6]
  for %i in 0..4 {
    for %j in 0..6 {
      for %k in 0..8 {)" +
                        std::string(kDenseBlock) + R"(
      }
    }
    for %ax0 in 0..6 {
      block "bias" (%vi = spatial(4, %i), %vj = spatial(6, %ax0)) {
        reads(%acc[%vi, %vj], %bias[%vj])
        writes(%biased[%vi, %vj])
        %biased[%vi, %vj] = %acc[%vi, %vj] + %bias[%vj]
      }
    }
    for %ax0 in 0..6 {
      block "relu" (%vi = spatial(4, %i), %vj = spatial(6, %ax0)) {
        reads(%biased[%vi, %vj])
        writes(%out[%vi, %vj])
        %out[%vi, %vj] = max(%biased[%vi, %vj], 0.0)
      }
    }
  }
}
)");
}

TEST(ScheduleReverseComputeAt, EpilogueUnderTheMatmulColumnLoop) {
  ir::PrimFunc f = parsePrim(kDenseBiasRelu);
  Schedule sch(f);
  sch.reverseComputeInline(sch.getBlock("relu"));
  auto loops = sch.getLoops(sch.getBlock("dense"));
  sch.reverseComputeAt(sch.getBlock("bias"), loops[1]);
  expectScheduledAs(f, sch.func(),
                    R"(
prim @dense_bias_relu(%x: f32[4, 8], %w: f32[6, 8], %bias: f32[6], %out: f32[4, 6]) {
  alloc_buffer %acc: f32[4, 6]
  for %i in 0..4 {
    for %j in 0..6 {
      for %k in 0..8 {)" +
                        std::string(kDenseBlock) + R"(
      }
      block "bias" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%acc[%vi, %vj], %bias[%vj])
        writes(%out[%vi, %vj])
        %out[%vi, %vj] = max(%acc[%vi, %vj] + %bias[%vj], 0.0)
      }
    }
  }
}
)");
}

// The producer's loop split in IR: the consumer follows the tile.
TEST(ScheduleReverseComputeAt, ConsumerFollowsASplitProducer) {
  const char* text = R"(
prim @f(%a: f32[10], %c: f32[10]) {
  alloc_buffer %b: f32[10]
  for %io in 0..3 {
    for %ii in 0..4 {
      block "B" (%vi = spatial(10, %io * 4 + %ii)) {
        where(%io * 4 + %ii < 10)
        reads(%a[%vi])
        writes(%b[%vi])
        %b[%vi] = %a[%vi] * 2.0
      }
    }
  }
  for %i in 0..10 {
    block "C" (%vi = spatial(10, %i)) {
      reads(%b[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + 1.0
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("B"));
  sch.reverseComputeAt(sch.getBlock("C"), loops[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @f(%a: f32[10], %c: f32[10]) {
  alloc_buffer %b: f32[10]
  for %io in 0..3 {
    for %ii in 0..4 {
      block "B" (%vi = spatial(10, %io * 4 + %ii)) {
        where(%io * 4 + %ii < 10)
        reads(%a[%vi])
        writes(%b[%vi])
        %b[%vi] = %a[%vi] * 2.0
      }
    }
    for %ax0 in 0..4 {
      block "C" (%vi = spatial(10, %io * 4 + %ax0)) {
        where(%io * 4 + %ax0 < 10)
        reads(%b[%vi])
        writes(%c[%vi])
        %c[%vi] = %b[%vi] + 1.0
      }
    }
  }
}
)");
}

TEST(ScheduleReverseComputeAt, SymbolicExtent) {
  ir::PrimFunc f = parsePrim(kTwoStagesN);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("B"));
  sch.reverseComputeAt(sch.getBlock("C"), loops[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  alloc_buffer %b: f32[n, 16]
  for %i in 0..n {
    for %j in 0..16 {
      block "B" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
    for %ax0 in 0..16 {
      block "C" (%vi = spatial(n, %i), %vj = spatial(16, %ax0)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)",
                    1e-5, {{"n", 2}});
}

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
  const char* shifted = R"(
prim @f(%a: f32[9], %c: f32[8]) {
  alloc_buffer %b: f32[9]
  for %i in 0..9 {
    block "B" (%vi = spatial(9, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%b[%vi + 1])
      writes(%c[%vi])
      %c[%vi] = %b[%vi + 1]
    }
  }
}
)";
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
const char* kPadConv = R"(
prim @pad_conv(%a: f32[8], %w: f32[3], %c: f32[8]) {
  alloc_buffer %p: f32[10]
  for %i in 0..10 {
    block "pad" (%vi = spatial(10, %i)) {
      reads(%a[0 +: 8])
      writes(%p[%vi])
      %p[%vi] = select(1 <= %vi && %vi < 9, %a[max(min(%vi - 1, 7), 0)], 0.0)
    }
  }
  for %i in 0..8 {
    for %k in 0..3 {
      block "conv" (%vi = spatial(8, %i), %vk = reduce(3, %k)) {
        reads(%p[%vi + %vk], %w[%vk])
        writes(%c[%vi])
        init {
          %c[%vi] = 0.0
        }
        %c[%vi] = %c[%vi] + %p[%vi + %vk] * %w[%vk]
      }
    }
  }
}
)";

TEST(ScheduleComputeInline, PaddingIntoConvolution) {
  ir::PrimFunc f = parsePrim(kPadConv);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("pad"));
  expectScheduledAs(f, sch.func(), R"(
prim @pad_conv(%a: f32[8], %w: f32[3], %c: f32[8]) {
  for %i in 0..8 {
    for %k in 0..3 {
      block "conv" (%vi = spatial(8, %i), %vk = reduce(3, %k)) {
        reads(%a[0 +: 8], %w[%vk])
        writes(%c[%vi])
        init {
          %c[%vi] = 0.0
        }
        %c[%vi] = %c[%vi] + select(1 <= %vi + %vk && %vi + %vk < 9, %a[max(min(%vi + %vk - 1, 7), 0)], 0.0) * %w[%vk]
      }
    }
  }
}
)");
  expectScheduleError([&] { sch.getBlock("pad"); }, "no block \"pad\"");
}

TEST(ScheduleComputeInline, ReadRegionsAreMapped) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("B"));
  expectScheduledAs(f, sch.func(), R"(
prim @stencil(%a: f32[18], %c: f32[16]) {
  for %io in 0..4 {
    for %ii in 0..4 {
      block "C" (%vi = spatial(16, %io * 4 + %ii)) {
        reads(%a[%vi +: 3])
        writes(%c[%vi])
        %c[%vi] = %a[%vi] * 2.0 + %a[%vi + 1] * 2.0 + %a[%vi + 2] * 2.0
      }
    }
  }
}
)");
}

TEST(ScheduleComputeInline, TwoStages) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("B"));
  expectScheduledAs(f, sch.func(), R"(
prim @f(%a: f32[8, 16], %c: f32[8, 16]) {
  for %i in 0..8 {
    for %j in 0..16 {
      block "C" (%vi = spatial(8, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %a[%vi, %vj] * 2.0 + 1.0
      }
    }
  }
}
)");
}

TEST(ScheduleComputeInline, SymbolicShapes) {
  ir::PrimFunc f = parsePrim(kTwoStagesN);
  const char* expected = R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  for %i in 0..n {
    for %j in 0..16 {
      block "C" (%vi = spatial(n, %i), %vj = spatial(16, %j)) {
        reads(%a[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %a[%vi, %vj] * 2.0 + 1.0
      }
    }
  }
}
)";
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

TEST(ScheduleReverseComputeInline, ReluIntoAdd) {
  const char* text = R"(
prim @add_relu(%a: f32[4, 6], %b: f32[4, 6], %c: f32[4, 6]) {
  alloc_buffer %t: f32[4, 6]
  for %i in 0..4 {
    for %j in 0..6 {
      block "add" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%a[%vi, %vj], %b[%vi, %vj])
        writes(%t[%vi, %vj])
        %t[%vi, %vj] = %a[%vi, %vj] + %b[%vi, %vj]
      }
    }
  }
  for %i in 0..4 {
    for %j in 0..6 {
      block "relu" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%t[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = max(%t[%vi, %vj], 0.0)
      }
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  sch.reverseComputeInline(sch.getBlock("relu"));
  expectScheduledAs(f, sch.func(), R"(
prim @add_relu(%a: f32[4, 6], %b: f32[4, 6], %c: f32[4, 6]) {
  for %i in 0..4 {
    for %j in 0..6 {
      block "add" (%vi = spatial(4, %i), %vj = spatial(6, %j)) {
        reads(%a[%vi, %vj], %b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = max(%a[%vi, %vj] + %b[%vi, %vj], 0.0)
      }
    }
  }
}
)");
}

TEST(ScheduleReverseComputeInline, IllegalUsesAreRefused) {
  Schedule sch(parsePrim(kDenseRelu));
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("relu")); },
                      "cannot reverse-inline block \"relu\": its producer block \"dense\" is a reduction");
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("dense")); },
                      "cannot reverse-inline block \"dense\": it is a reduction");
}

// --- hazards: moving a computation past a block that interferes --------------------

// X overwrites %a, which B reads, between B and its consumer C.
const char* kOverwrite = R"(
prim @f(%a: f32[8], %c: f32[8]) {
  alloc_buffer %b: f32[8]
  for %i in 0..8 {
    block "B" (%vi = spatial(8, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..8 {
    block "X" (%vi = spatial(8, %i)) {
      reads()
      writes(%a[%vi])
      %a[%vi] = 0.5
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%b[%vi], %a[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + %a[%vi]
    }
  }
}
)";

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
  const char* text = R"(
prim @f(%x: f32[4, 8], %out: f32[4]) {
  alloc_buffer %s: f32[4]
  for %i in 0..4 {
    for %k in 0..8 {
      block "sum" (%vi = spatial(4, %i), %vk = reduce(8, %k)) {
        reads(%x[%vi, %vk])
        writes(%s[%vi])
        %s[%vi] = %s[%vi] + %x[%vi, %vk]
      }
    }
  }
  for %i in 0..4 {
    block "copy" (%vi = spatial(4, %i)) {
      reads(%s[%vi])
      writes(%out[%vi])
      %out[%vi] = %s[%vi]
    }
  }
}
)";
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  BlockRV sum = sch.getBlock("sum"), copy = sch.getBlock("copy");
  expectScheduleError(
      [&] { sch.computeAt(sum, sch.getLoops(copy)[0]); },
      "cannot compute block \"sum\" at loop %i: it is a reduction without an init, which cannot be "
      "recomputed");
  sch.reverseComputeAt(copy, sch.getLoops(sum)[0]);
  expectScheduledAs(f, sch.func(), R"(
prim @f(%x: f32[4, 8], %out: f32[4]) {
  alloc_buffer %s: f32[4]
  for %i in 0..4 {
    for %k in 0..8 {
      block "sum" (%vi = spatial(4, %i), %vk = reduce(8, %k)) {
        reads(%x[%vi, %vk])
        writes(%s[%vi])
        %s[%vi] = %s[%vi] + %x[%vi, %vk]
      }
    }
    block "copy" (%vi = spatial(4, %i)) {
      reads(%s[%vi])
      writes(%out[%vi])
      %out[%vi] = %s[%vi]
    }
  }
}
)");
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
  const char* two = R"(
prim @f(%a: f32[8], %c: f32[8]) {
  alloc_buffer %b: f32[8]
  for %i in 0..8 {
    block "B" (%vi = spatial(8, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
    block "B2" (%vi = spatial(8, %i)) {
      reads(%b[%vi])
      writes(%b[%vi])
      %b[%vi] = %b[%vi] + 3.0
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%b[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + 1.0
    }
  }
}
)";
  Schedule s2(parsePrim(two));
  BlockRV c2 = s2.getBlock("C");
  expectScheduleError(
      [&] { s2.reverseComputeAt(c2, s2.getLoops(s2.getBlock("B"))[0]); },
      "cannot reverse-compute block \"C\" at loop %i: block \"B\" and block \"B2\" under that "
      "loop both write %b, which it reads");

  // Two intermediates read by one consumer; an intermediate with two readers.
  const char* join = R"(
prim @f(%a: f32[8], %c: f32[8], %d: f32[8]) {
  alloc_buffer %t: f32[8]
  alloc_buffer %u: f32[8]
  for %i in 0..8 {
    block "T" (%vi = spatial(8, %i)) {
      reads(%a[%vi])
      writes(%t[%vi])
      %t[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..8 {
    block "U" (%vi = spatial(8, %i)) {
      reads(%t[%vi])
      writes(%u[%vi])
      %u[%vi] = %t[%vi] + 1.0
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%t[%vi], %u[%vi])
      writes(%c[%vi])
      %c[%vi] = %t[%vi] * %u[%vi]
    }
  }
  for %i in 0..8 {
    block "D" (%vi = spatial(8, %i)) {
      reads(%u[%vi])
      writes(%d[%vi])
      %d[%vi] = %u[%vi] - 1.0
    }
  }
}
)";
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
  const char* text = R"(
prim @f(%a: f32[8], %c: f32[8]) {
  alloc_buffer %b: f32[8]
  for %i in 0..4 {
    block "B" (%vi = spatial(4, %i)) {
      reads(%a[%vi])
      writes(%b[%vi])
      %b[%vi] = %a[%vi] * 2.0
    }
  }
  for %i in 0..8 {
    block "C" (%vi = spatial(8, %i)) {
      reads(%b[%vi])
      writes(%c[%vi])
      %c[%vi] = %b[%vi] + 1.0
    }
  }
}
)";
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

const char* kLegalizedConv = R"(
prim @fused_conv2d_add_relu(%x: f32[1, 2, 6, 6], %w: f32[3, 2, 3, 3], %b: f32[1, 3, 1, 1], %r: f32[1, 3, 6, 6]) {
  alloc_buffer %c: f32[1, 3, 6, 6]
  alloc_buffer %pad: f32[1, 2, 8, 8]
  alloc_buffer %cb: f32[1, 3, 6, 6]
  for %i0 in 0..1 {
    for %i1 in 0..2 {
      for %i2 in 0..8 {
        for %i3 in 0..8 {
          block "pad" (%v0 = spatial(1, %i0), %v1 = spatial(2, %i1), %v2 = spatial(8, %i2), %v3 = spatial(8, %i3)) {
            reads(%x[%v0, %v1, max(min(%v2 - 1, 5), 0), max(min(%v3 - 1, 5), 0)])
            writes(%pad[%v0, %v1, %v2, %v3])
            %pad[%v0, %v1, %v2, %v3] = select(%v2 - 1 >= 0 && %v2 - 1 < 6 && (%v3 - 1 >= 0 && %v3 - 1 < 6), %x[%v0, %v1, max(min(%v2 - 1, 5), 0), max(min(%v3 - 1, 5), 0)], 0.0)
          }
        }
      }
    }
  }
  for %i0 in 0..1 {
    for %i1 in 0..3 {
      for %i2 in 0..6 {
        for %i3 in 0..6 {
          for %k0 in 0..2 {
            for %k1 in 0..3 {
              for %k2 in 0..3 {
                block "conv2d" (%v0 = spatial(1, %i0), %v1 = spatial(3, %i1), %v2 = spatial(6, %i2), %v3 = spatial(6, %i3), %vk0 = reduce(2, %k0), %vk1 = reduce(3, %k1), %vk2 = reduce(3, %k2)) {
                  reads(%pad[%v0, %vk0, %v2 + %vk1, %v3 + %vk2], %w[%v1, %vk0, %vk1, %vk2])
                  writes(%c[%v0, %v1, %v2, %v3])
                  init {
                    %c[%v0, %v1, %v2, %v3] = 0.0
                  }
                  %c[%v0, %v1, %v2, %v3] = %c[%v0, %v1, %v2, %v3] + %pad[%v0, %vk0, %v2 + %vk1, %v3 + %vk2] * %w[%v1, %vk0, %vk1, %vk2]
                }
              }
            }
          }
        }
      }
    }
  }
  for %i0 in 0..1 {
    for %i1 in 0..3 {
      for %i2 in 0..6 {
        for %i3 in 0..6 {
          block "add" (%v0 = spatial(1, %i0), %v1 = spatial(3, %i1), %v2 = spatial(6, %i2), %v3 = spatial(6, %i3)) {
            reads(%c[%v0, %v1, %v2, %v3], %b[%v0, %v1, 0, 0])
            writes(%cb[%v0, %v1, %v2, %v3])
            %cb[%v0, %v1, %v2, %v3] = %c[%v0, %v1, %v2, %v3] + %b[%v0, %v1, 0, 0]
          }
        }
      }
    }
  }
  for %i0 in 0..1 {
    for %i1 in 0..3 {
      for %i2 in 0..6 {
        for %i3 in 0..6 {
          block "relu" (%v0 = spatial(1, %i0), %v1 = spatial(3, %i1), %v2 = spatial(6, %i2), %v3 = spatial(6, %i3)) {
            reads(%cb[%v0, %v1, %v2, %v3])
            writes(%r[%v0, %v1, %v2, %v3])
            %r[%v0, %v1, %v2, %v3] = select(%cb[%v0, %v1, %v2, %v3] < 0.0, 0.0, %cb[%v0, %v1, %v2, %v3])
          }
        }
      }
    }
  }
}
)";

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

const char* kLegalizedSoftmax = R"(
prim @fused_softmax(%dr: f32[n, 8], %s: f32[n, 8]) {
  alloc_buffer %softmax_max: f32[n]
  alloc_buffer %softmax_expsum: f32[n]
  for %i0 in 0..n {
    for %k0 in 0..8 {
      block "softmax_max" (%v0 = spatial(n, %i0), %vk0 = reduce(8, %k0)) {
        reads(%dr[%v0, %vk0])
        writes(%softmax_max[%v0])
        init {
          %softmax_max[%v0] = -inf
        }
        %softmax_max[%v0] = max(%softmax_max[%v0], %dr[%v0, %vk0])
      }
    }
  }
  for %i0 in 0..n {
    for %k0 in 0..8 {
      block "softmax_expsum" (%v0 = spatial(n, %i0), %vk0 = reduce(8, %k0)) {
        reads(%dr[%v0, %vk0], %softmax_max[%v0])
        writes(%softmax_expsum[%v0])
        init {
          %softmax_expsum[%v0] = 0.0
        }
        %softmax_expsum[%v0] = %softmax_expsum[%v0] + exp(%dr[%v0, %vk0] - %softmax_max[%v0])
      }
    }
  }
  for %i0 in 0..n {
    for %i1 in 0..8 {
      block "softmax" (%v0 = spatial(n, %i0), %v1 = spatial(8, %i1)) {
        reads(%dr[%v0, %v1], %softmax_max[%v0], %softmax_expsum[%v0])
        writes(%s[%v0, %v1])
        %s[%v0, %v1] = exp(%dr[%v0, %v1] - %softmax_max[%v0]) * (1.0 / %softmax_expsum[%v0])
      }
    }
  }
}
)";

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
  expectScheduledAs(f, sch.func(), R"(
prim @fused_softmax(%dr: f32[n, 8], %s: f32[n, 8]) {
  alloc_buffer %softmax_max: f32[n]
  alloc_buffer %softmax_expsum: f32[n]
  for %i0 in 0..n {
    for %ax0 in 0..8 {
      block "softmax_max" (%v0 = spatial(n, %i0), %vk0 = reduce(8, %ax0)) {
        reads(%dr[%v0, %vk0])
        writes(%softmax_max[%v0])
        init {
          %softmax_max[%v0] = -inf
        }
        %softmax_max[%v0] = max(%softmax_max[%v0], %dr[%v0, %vk0])
      }
    }
    for %ax0 in 0..8 {
      block "softmax_expsum" (%v0 = spatial(n, %i0), %vk0 = reduce(8, %ax0)) {
        reads(%dr[%v0, %vk0], %softmax_max[%v0])
        writes(%softmax_expsum[%v0])
        init {
          %softmax_expsum[%v0] = 0.0
        }
        %softmax_expsum[%v0] = %softmax_expsum[%v0] + exp(%dr[%v0, %vk0] - %softmax_max[%v0])
      }
    }
    for %i1 in 0..8 {
      block "softmax" (%v0 = spatial(n, %i0), %v1 = spatial(8, %i1)) {
        reads(%dr[%v0, %v1], %softmax_max[%v0], %softmax_expsum[%v0])
        writes(%s[%v0, %v1])
        %s[%v0, %v1] = exp(%dr[%v0, %v1] - %softmax_max[%v0]) * (1.0 / %softmax_expsum[%v0])
      }
    }
  }
}
)",
                    1e-5, {{"n", 3}});
}

// --- with the other primitives -------------------------------------------------------

const char* kMatmul = R"(
prim @mm(%a: f32[16, 12], %b: f32[12, 8], %c: f32[16, 8]) {
  for %i in 0..16 {
    for %j in 0..8 {
      for %k in 0..12 {
        block "mm" (%vi = spatial(16, %i), %vj = spatial(8, %j), %vk = reduce(12, %k)) {
          reads(%a[%vi, %vk], %b[%vk, %vj])
          writes(%c[%vi, %vj])
          init {
            %c[%vi, %vj] = 0.0
          }
          %c[%vi, %vj] = %c[%vi, %vj] + %a[%vi, %vk] * %b[%vk, %vj]
        }
      }
    }
  }
}
)";

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
  expectScheduledAs(f, sch.func(), R"(
prim @mm(%a: f32[16, 12], %b: f32[12, 8], %c: f32[16, 8]) {
  alloc_buffer %a_shared: f32[16, 12] shared
  alloc_buffer %b_shared: f32[12, 8] shared
  alloc_buffer %c_local: f32[16, 8] local
  for %i_0 in 0..4 {
    for %j_0 in 0..2 {
      for %k_0 in 0..3 {
        for %ax0 in 0..4 {
          for %ax1 in 0..4 {
            block "b_shared" (%v0 = spatial(12, %k_0 * 4 + %ax0), %v1 = spatial(8, %j_0 * 4 + %ax1)) {
              reads(%b[%v0, %v1])
              writes(%b_shared[%v0, %v1])
              %b_shared[%v0, %v1] = %b[%v0, %v1]
            }
          }
        }
        for %ax0 in 0..4 {
          for %ax1 in 0..4 {
            block "a_shared" (%v0 = spatial(16, %i_0 * 4 + %ax0), %v1 = spatial(12, %k_0 * 4 + %ax1)) {
              reads(%a[%v0, %v1])
              writes(%a_shared[%v0, %v1])
              %a_shared[%v0, %v1] = %a[%v0, %v1]
            }
          }
        }
        for %i_1 in 0..4 {
          for %j_1 in 0..4 {
            for %k_1 in 0..4 {
              block "mm" (%vi = spatial(16, %i_0 * 4 + %i_1), %vj = spatial(8, %j_0 * 4 + %j_1), %vk = reduce(12, %k_0 * 4 + %k_1)) {
                reads(%a_shared[%vi, %vk], %b_shared[%vk, %vj])
                writes(%c_local[%vi, %vj])
                init {
                  %c_local[%vi, %vj] = 0.0
                }
                %c_local[%vi, %vj] = %c_local[%vi, %vj] + %a_shared[%vi, %vk] * %b_shared[%vk, %vj]
              }
            }
          }
        }
      }
      for %ax0 in 0..4 {
        for %ax1 in 0..4 {
          block "c_local" (%v0 = spatial(16, %i_0 * 4 + %ax0), %v1 = spatial(8, %j_0 * 4 + %ax1)) {
            reads(%c_local[%v0, %v1])
            writes(%c[%v0, %v1])
            %c[%v0, %v1] = %c_local[%v0, %v1]
          }
        }
      }
    }
  }
}
)");
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
  for (const char* text : {kTwoStages, kStencil, kDenseRelu}) {
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
  const char* text = R"(
prim @f(%a: f32[8, 4], %c: f32[8, 4], %d: f32[8, 4]) {
  alloc_buffer %b: f32[8, 4]
  for %i in 0..8 {
    for %j in 0..4 {
      block "B" (%vi = spatial(8, %i), %vj = spatial(4, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %i in 0..8 {
    for %j in 0..4 {
      block "C" (%vi = spatial(8, %i), %vj = spatial(4, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
    for %j in 0..4 {
      block "D" (%vi = spatial(8, %i), %vj = spatial(4, %j)) {
        reads(%b[%vi, %vj])
        writes(%d[%vi, %vj])
        %d[%vi, %vj] = %b[%vi, %vj] - 1.0
      }
    }
  }
}
)";
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
