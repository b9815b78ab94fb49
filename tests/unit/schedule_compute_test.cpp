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
using mlcc::test::expectScheduleError;
using mlcc::test::parsePrim;

namespace {

// The scheduled function has the structure of `expected` (names aside), the
// same meaning as the original, and its trace replays to it.
void expectResult(const ir::PrimFunc& original, const Schedule& sch, const std::string& expected,
                  const std::map<std::string, int64_t>& dims = {}) {
  ir::PrimFunc want = parsePrim(expected);
  EXPECT_TRUE(ir::structuralEqual(sch.func(), want, {.compare_traces = false}))
      << "got:\n"
      << ir::printFunction(sch.func()) << "expected:\n"
      << ir::printFunction(want);
  expectSameMeaning(original, sch.func(), 1e-5, dims);
  ir::PrimFunc replayed = replayTrace(original, sch.func().trace);
  EXPECT_TRUE(ir::structuralEqual(replayed, sch.func())) << "replayed:\n" << ir::printFunction(replayed);
}

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

TEST(ComputeAt, ProducerUnderTheOuterLoop) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectResult(f, sch,
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

TEST(ComputeAt, ProducerUnderTheInnerLoop) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1]);
  expectResult(f, sch, twoStagesWith(R"(
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

TEST(ComputeAt, PreserveUnitLoops) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1], /*preserve_unit_loops=*/true);
  expectResult(f, sch, twoStagesWith(R"(
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

TEST(ComputeAt, RootLeavesTheBlockWhereItIs) {
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

TEST(ComputeAt, StencilUnderTheInnerSplitLoop) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[1]);
  expectResult(f, sch, R"(
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

TEST(ComputeAt, StencilUnderTheOuterSplitLoop) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectResult(f, sch, R"(
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

// The consumer's loop split 3 x 6 (non-divisible, with a predicate): the
// region of the last iteration leaves B's domain, so B gets a predicate.
TEST(ComputeAt, RegionLeavingTheDomainGetsAPredicate) {
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
  expectResult(f, sch, R"(
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

TEST(ComputeAt, ReductionProducerKeepsItsReduceLoop) {
  ir::PrimFunc f = parsePrim(kDenseRelu);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("relu"));
  sch.computeAt(sch.getBlock("dense"), loops[0]);
  expectResult(f, sch, R"(
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

TEST(ComputeAt, SymbolicExtent) {
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
  ir::PrimFunc f = parsePrim(text);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.computeAt(sch.getBlock("B"), loops[0]);
  expectResult(f, sch, R"(
prim @f(%a: f32[n, 16], %c: f32[n, 16]) {
  alloc_buffer %b: f32[n, 16]
  for %i in 0..n {
    for %ax0 in 0..16 {
      block "B" (%vi = spatial(n, %i), %vj = spatial(16, %ax0)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
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
               {{"n", 3}});
}

TEST(ComputeAt, SymbolicRegionExtentIsRefused) {
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

TEST(ComputeAt, IllegalUsesAreRefused) {
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

TEST(ComputeAt, ParameterOutputsAndBlocksSharingANestAreRefused) {
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

TEST(ReverseComputeAt, EpilogueUnderTheMatmulRowLoop) {
  ir::PrimFunc f = parsePrim(kDenseBiasRelu);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("dense"));
  sch.reverseComputeAt(sch.getBlock("bias"), loops[0]);
  sch.reverseComputeAt(sch.getBlock("relu"), loops[0]);
  expectResult(f, sch,
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

TEST(ReverseComputeAt, EpilogueUnderTheMatmulColumnLoop) {
  ir::PrimFunc f = parsePrim(kDenseBiasRelu);
  Schedule sch(f);
  sch.reverseComputeInline(sch.getBlock("relu"));
  auto loops = sch.getLoops(sch.getBlock("dense"));
  sch.reverseComputeAt(sch.getBlock("bias"), loops[1]);
  expectResult(f, sch,
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
TEST(ReverseComputeAt, ConsumerFollowsASplitProducer) {
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
  expectResult(f, sch, R"(
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

TEST(ReverseComputeAt, IllegalUsesAreRefused) {
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

TEST(ComputeInline, PaddingIntoConvolution) {
  ir::PrimFunc f = parsePrim(kPadConv);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("pad"));
  expectResult(f, sch, R"(
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

TEST(ComputeInline, ReadRegionsAreMapped) {
  ir::PrimFunc f = parsePrim(kStencil);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("B"));
  expectResult(f, sch, R"(
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

TEST(ComputeInline, TwoStagesAndSymbolicShapes) {
  ir::PrimFunc f = parsePrim(kTwoStages);
  Schedule sch(f);
  sch.computeInline(sch.getBlock("B"));
  expectResult(f, sch, R"(
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

TEST(ComputeInline, IllegalUsesAreRefused) {
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

TEST(ReverseComputeInline, ReluIntoAdd) {
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
  expectResult(f, sch, R"(
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

TEST(ReverseComputeInline, IllegalUsesAreRefused) {
  Schedule sch(parsePrim(kDenseRelu));
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("relu")); },
                      "cannot reverse-inline block \"relu\": its producer block \"dense\" is a reduction");
  expectScheduleError([&] { sch.reverseComputeInline(sch.getBlock("dense")); },
                      "cannot reverse-inline block \"dense\": it is a reduction");
}

// --- sample_compute_location -------------------------------------------------------

TEST(SampleComputeLocation, EveryDecisionReplaysToAnEquivalentProgram) {
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

TEST(SampleComputeLocation, SamplesAreRecordedAndReplay) {
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

TEST(SampleComputeLocation, OnlyLegalLoopsAreCandidates) {
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
}

}  // namespace
