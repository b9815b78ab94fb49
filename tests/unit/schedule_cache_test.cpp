// Cache and storage primitives: cache_read, cache_write, set_scope,
// storage_align. Each is checked for the loop structure it makes, for
// keeping the function's meaning (interpreter), for trace replay, and for
// its refusals.
#include <gtest/gtest.h>

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

const char* kMatmul = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      for %k in 0..64 {
        block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k)) {
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
)";

// A row sum into an intermediate, then a scaling of it.
const char* kRowSum = R"(
prim @rowsum(%A: f32[16, 32], %D: f32[16]) {
  alloc_buffer %S: f32[16]
  for %i in 0..16 {
    for %k in 0..32 {
      block "S" (%vi = spatial(16, %i), %vk = reduce(32, %k)) {
        reads(%A[%vi, %vk])
        writes(%S[%vi])
        init {
          %S[%vi] = 0.0
        }
        %S[%vi] = %S[%vi] + %A[%vi, %vk]
      }
    }
  }
  for %i in 0..16 {
    block "D" (%vi = spatial(16, %i)) {
      reads(%S[%vi])
      writes(%D[%vi])
      %D[%vi] = %S[%vi] * 0.5
    }
  }
}
)";

// The scheduled function keeps the meaning and replays from its trace.
void expectGood(const char* text, const Schedule& sch) { expectScheduled(parsePrim(text), sch.func()); }

// The scheduled function is `expected` (traces aside).
void expectStructure(const Schedule& sch, const char* expected) {
  ir::PrimFunc want = parsePrim(expected);
  EXPECT_TRUE(ir::structuralEqual(sch.func(), want, {.compare_traces = false}))
      << "got:\n"
      << ir::printFunction(sch.func()) << "\nexpected:\n"
      << ir::printFunction(want);
}

TEST(ScheduleCache, CacheReadAndWriteOfMatmul) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV c = sch.getBlock("C");
  BlockRV a_shared = sch.cacheRead(c, 0, ir::StorageScope::shared);
  BlockRV b_shared = sch.cacheRead(c, 1, ir::StorageScope::shared);
  BlockRV c_local = sch.cacheWrite(c, 0, ir::StorageScope::local);
  EXPECT_EQ(sch.getLoops(a_shared).size(), 2u);
  EXPECT_EQ(sch.getConsumers(b_shared).size(), 1u);
  EXPECT_EQ(sch.getProducers(c_local).size(), 1u);
  expectStructure(sch, R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  alloc_buffer %A_shared: f32[64, 64] shared
  alloc_buffer %B_shared: f32[64, 64] shared
  alloc_buffer %C_local: f32[64, 64] local
  for %ax0 in 0..64 {
    for %ax1 in 0..64 {
      block "A_shared" (%v0 = spatial(64, %ax0), %v1 = spatial(64, %ax1)) {
        reads(%A[%v0, %v1])
        writes(%A_shared[%v0, %v1])
        %A_shared[%v0, %v1] = %A[%v0, %v1]
      }
    }
  }
  for %ax0 in 0..64 {
    for %ax1 in 0..64 {
      block "B_shared" (%v0 = spatial(64, %ax0), %v1 = spatial(64, %ax1)) {
        reads(%B[%v0, %v1])
        writes(%B_shared[%v0, %v1])
        %B_shared[%v0, %v1] = %B[%v0, %v1]
      }
    }
  }
  for %i in 0..64 {
    for %j in 0..64 {
      for %k in 0..64 {
        block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k)) {
          reads(%A_shared[%vi, %vk], %B_shared[%vk, %vj])
          writes(%C_local[%vi, %vj])
          init {
            %C_local[%vi, %vj] = 0.0
          }
          %C_local[%vi, %vj] = %C_local[%vi, %vj] + %A_shared[%vi, %vk] * %B_shared[%vk, %vj]
        }
      }
    }
  }
  for %ax0 in 0..64 {
    for %ax1 in 0..64 {
      block "C_local" (%v0 = spatial(64, %ax0), %v1 = spatial(64, %ax1)) {
        reads(%C_local[%v0, %v1])
        writes(%C[%v0, %v1])
        %C[%v0, %v1] = %C_local[%v0, %v1]
      }
    }
  }
}
)");
  EXPECT_EQ(ir::printTrace(sch.func().trace),
            "trace {\n"
            "  %b0 = get_block(\"C\")\n"
            "  %b1 = cache_read(%b0, 0, \"shared\")\n"
            "  %b2 = cache_read(%b0, 1, \"shared\")\n"
            "  %b3 = cache_write(%b0, 0, \"local\")\n"
            "  %l4, %l5 = get_loops(%b1)\n"
            "  %b6 = get_consumers(%b2)\n"
            "  %b7 = get_producers(%b3)\n"
            "}\n");
  expectGood(kMatmul, sch);
}

// As a GPU matmul schedule starts: shared-memory copies of the operands
// with padded rows, a local accumulator, its init decomposed.
TEST(ScheduleCache, MatmulPipeline) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV c = sch.getBlock("C");
  BlockRV a_shared = sch.cacheRead(c, 0, ir::StorageScope::shared);
  BlockRV b_shared = sch.cacheRead(c, 1, ir::StorageScope::shared);
  sch.cacheWrite(c, 0, ir::StorageScope::local);
  sch.storageAlign(a_shared, 0, -2, 32, 8);
  sch.storageAlign(b_shared, 0, -2, 32, 8);
  BlockRV init = sch.decomposeReduction(c, sch.getLoops(c)[1]);
  sch.setScope(init, 0, ir::StorageScope::global);  // the accumulator, back in global memory
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("alloc_buffer %A_shared: f32[64, 72] shared\n"
                      "  alloc_buffer %B_shared: f32[64, 72] shared\n"
                      "  alloc_buffer %C_local: f32[64, 64]\n"),
            std::string::npos)
      << text;
  expectGood(kMatmul, sch);
}

TEST(ScheduleCache, CachesOfAnIntermediate) {
  Schedule sch(parsePrim(kRowSum));
  BlockRV d = sch.getBlock("D");
  sch.cacheRead(d, 0, ir::StorageScope::local);
  sch.cacheWrite(sch.getBlock("S"), 0, ir::StorageScope::shared);
  expectStructure(sch, R"(
prim @rowsum(%A: f32[16, 32], %D: f32[16]) {
  alloc_buffer %S: f32[16]
  alloc_buffer %S_local: f32[16] local
  alloc_buffer %S_shared: f32[16] shared
  for %i in 0..16 {
    for %k in 0..32 {
      block "S" (%vi = spatial(16, %i), %vk = reduce(32, %k)) {
        reads(%A[%vi, %vk])
        writes(%S_shared[%vi])
        init {
          %S_shared[%vi] = 0.0
        }
        %S_shared[%vi] = %S_shared[%vi] + %A[%vi, %vk]
      }
    }
  }
  for %ax0 in 0..16 {
    block "S_shared" (%v0 = spatial(16, %ax0)) {
      reads(%S_shared[%v0])
      writes(%S[%v0])
      %S[%v0] = %S_shared[%v0]
    }
  }
  for %ax0 in 0..16 {
    block "S_local" (%v0 = spatial(16, %ax0)) {
      reads(%S[%v0])
      writes(%S_local[%v0])
      %S_local[%v0] = %S[%v0]
    }
  }
  for %i in 0..16 {
    block "D" (%vi = spatial(16, %i)) {
      reads(%S_local[%vi])
      writes(%D[%vi])
      %D[%vi] = %S_local[%vi] * 0.5
    }
  }
}
)");
  expectGood(kRowSum, sch);
}

// A block that writes part of an output: only that part is copied back, so
// the rest keeps its values.
TEST(ScheduleCache, CacheWriteCopiesBackTheWrittenBox) {
  const char* text = R"(
prim @part(%A: f32[4], %C: f32[8]) {
  for %i in 0..4 {
    block "C" (%vi = spatial(4, %i)) {
      reads(%A[%vi])
      writes(%C[%vi + 2])
      %C[%vi + 2] = %A[%vi] + 1.0
    }
  }
}
)";
  Schedule sch(parsePrim(text));
  sch.cacheWrite(sch.getBlock("C"), 0, ir::StorageScope::local);
  expectStructure(sch, R"(
prim @part(%A: f32[4], %C: f32[8]) {
  alloc_buffer %C_local: f32[8] local
  for %i in 0..4 {
    block "C" (%vi = spatial(4, %i)) {
      reads(%A[%vi])
      writes(%C_local[%vi + 2])
      %C_local[%vi + 2] = %A[%vi] + 1.0
    }
  }
  for %ax0 in 0..4 {
    block "C_local" (%v0 = spatial(4, %ax0)) {
      reads(%C_local[%v0 + 2])
      writes(%C[%v0 + 2])
      %C[%v0 + 2] = %C_local[%v0 + 2]
    }
  }
}
)");
  expectGood(text, sch);
}

// Names already taken get a suffix: caching the copy block's read of %A
// again wants the buffer and block name "A_shared" a second time.
TEST(ScheduleCache, FreshNames) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV first = sch.cacheRead(sch.getBlock("C"), 0, ir::StorageScope::shared);
  BlockRV second = sch.cacheRead(first, 0, ir::StorageScope::shared);
  EXPECT_EQ(sch.getLoops(second).size(), 2u);
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("alloc_buffer %A_shared_1: f32[64, 64] shared"), std::string::npos) << text;
  EXPECT_NE(text.find("block \"A_shared_1\" ("), std::string::npos) << text;
  expectGood(kMatmul, sch);
}

TEST(ScheduleCache, CacheRefusals) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV c = sch.getBlock("C");
  expectScheduleError([&] { sch.cacheRead(c, 2, ir::StorageScope::shared); },
                      "cache_read: read index 2 is out of range: block \"C\" has 2 read region(s)");
  expectScheduleError([&] { sch.cacheWrite(c, -1, ir::StorageScope::local); },
                      "cache_write: write index -1 is out of range");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"cache_read", {ir::TraceRef{c.name}, 0, "texture"}, {}, {}, {}});
      },
      "cache_read: unknown storage scope \"texture\" (expected \"global\", \"shared\" or \"local\")");
  EXPECT_EQ(sch.func().trace.insts.size(), 1u);  // failures are not recorded

  // In place: the block reads and writes %A.
  Schedule inplace(parsePrim(R"(
prim @inc(%A: f32[8]) {
  for %i in 0..8 {
    block "inc" (%vi = spatial(8, %i)) {
      reads(%A[%vi])
      writes(%A[%vi])
      %A[%vi] = %A[%vi] + 1.0
    }
  }
}
)"));
  expectScheduleError([&] { inplace.cacheRead(inplace.getBlock("inc"), 0, ir::StorageScope::local); },
                      "block \"inc\" also writes %A; cache_read needs a buffer the block only reads");
  expectScheduleError([&] { inplace.cacheWrite(inplace.getBlock("inc"), 0, ir::StorageScope::local); },
                      "block \"inc\" reads %A other than as the accumulator of a reduction with an init");
}

const char* kSameNest = R"(
prim @nest(%A: f32[8], %C: f32[8]) {
  alloc_buffer %B: f32[8]
  for %i in 0..8 {
    block "B" (%vi = spatial(8, %i)) {
      reads(%A[%vi])
      writes(%B[%vi])
      %B[%vi] = %A[%vi] * 2.0
    }
    block "C" (%vi = spatial(8, %i)) {
      reads(%B[%vi])
      writes(%C[%vi])
      %C[%vi] = %B[%vi] + 1.0
    }
  }
}
)";

TEST(ScheduleCache, RefusesWhenTheNestAlsoProducesOrConsumes) {
  Schedule sch(parsePrim(kSameNest));
  expectScheduleError(
      [&] { sch.cacheRead(sch.getBlock("C"), 0, ir::StorageScope::local); },
      "block \"B\" writes %B in the loop nest of block \"C\"; a copy made before that nest would "
      "miss its values");
  expectScheduleError(
      [&] { sch.cacheWrite(sch.getBlock("B"), 0, ir::StorageScope::local); },
      "block \"C\" reads %B in the loop nest of block \"B\"; it would read it before the copy back");
  // Reading %A in that nest is fine: nothing there writes it.
  sch.cacheRead(sch.getBlock("B"), 0, ir::StorageScope::local);
  expectGood(kSameNest, sch);
}

TEST(ScheduleCache, CacheWriteRefusals) {
  Schedule two(parsePrim(R"(
prim @two(%A: f32[8], %C: f32[8]) {
  for %i in 0..8 {
    block "C1" (%vi = spatial(8, %i)) {
      reads(%A[%vi])
      writes(%C[%vi])
      %C[%vi] = %A[%vi]
    }
  }
  for %i in 0..4 {
    block "C2" (%vi = spatial(4, %i)) {
      reads(%A[%vi])
      writes(%C[%vi])
      %C[%vi] = %A[%vi] * 2.0
    }
  }
}
)"));
  expectScheduleError([&] { two.cacheWrite(two.getBlock("C1"), 0, ir::StorageScope::local); },
                      "block \"C2\" also writes %C; cache_write needs a buffer only block \"C1\" writes");

  Schedule strided(parsePrim(R"(
prim @strided(%A: f32[4], %C: f32[8]) {
  for %i in 0..4 {
    block "C" (%vi = spatial(4, %i)) {
      reads(%A[%vi])
      writes(%C[%vi * 2])
      %C[%vi * 2] = %A[%vi]
    }
  }
}
)"));
  expectScheduleError([&] { strided.cacheWrite(strided.getBlock("C"), 0, ir::StorageScope::local); },
                      "the region of %C that block \"C\" writes is not a dense box of its iteration domain");

  Schedule noinit(parsePrim(R"(
prim @acc(%A: f32[8, 4], %C: f32[8]) {
  for %i in 0..8 {
    for %k in 0..4 {
      block "C" (%vi = spatial(8, %i), %vk = reduce(4, %k)) {
        reads(%A[%vi, %vk])
        writes(%C[%vi])
        %C[%vi] = %C[%vi] + %A[%vi, %vk]
      }
    }
  }
}
)"));
  expectScheduleError([&] { noinit.cacheWrite(noinit.getBlock("C"), 0, ir::StorageScope::local); },
                      "block \"C\" reads %C other than as the accumulator of a reduction with an init");
}

TEST(ScheduleCache, RefusesNestedBlocks) {
  Schedule sch(parsePrim(R"(
prim @nested(%A: f32[8], %C: f32[8]) {
  block "outer" () {
    reads(%A[0 +: 8])
    writes(%C[0 +: 8])
    for %i in 0..8 {
      block "inner" (%vi = spatial(8, %i)) {
        reads(%A[%vi])
        writes(%C[%vi])
        %C[%vi] = %A[%vi]
      }
    }
  }
}
)"));
  expectScheduleError(
      [&] { sch.cacheRead(sch.getBlock("inner"), 0, ir::StorageScope::local); },
      "block \"inner\" is nested in block \"outer\"; only blocks of the function's top level are "
      "supported");
}

// --- set_scope and storage_align -------------------------------------------------

const char* kTwoStages = R"(
prim @f(%a: f32[8, 30], %c: f32[8, 30]) {
  alloc_buffer %b: f32[8, 30]
  for %i in 0..8 {
    for %j in 0..30 {
      block "B" (%vi = spatial(8, %i), %vj = spatial(30, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %i in 0..8 {
    for %j in 0..30 {
      block "C" (%vi = spatial(8, %i), %vj = spatial(30, %j)) {
        reads(%b[%vi, %vj])
        writes(%c[%vi, %vj])
        %c[%vi, %vj] = %b[%vi, %vj] + 1.0
      }
    }
  }
}
)";

TEST(ScheduleStorage, SetScope) {
  Schedule sch(parsePrim(kTwoStages));
  sch.setScope(sch.getBlock("B"), 0, ir::StorageScope::shared);
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("alloc_buffer %b: f32[8, 30] shared\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  set_scope(%b0, 0, \"shared\")\n"), std::string::npos) << text;
  // Every use refers to the new buffer (the verifier would reject a stale one).
  EXPECT_EQ(sch.func().allocs.size(), 1u);
  EXPECT_EQ(sch.func().allocs[0]->scope, ir::StorageScope::shared);
  expectGood(kTwoStages, sch);
}

TEST(ScheduleStorage, SetScopeOfABlockBuffer) {
  const char* text = R"(
prim @g(%a: f32[8], %c: f32[8]) {
  block "outer" () {
    reads(%a[0 +: 8])
    writes(%c[0 +: 8])
    alloc_buffer %t: f32[8]
    for %i in 0..8 {
      block "T" (%vi = spatial(8, %i)) {
        reads(%a[%vi])
        writes(%t[%vi])
        %t[%vi] = %a[%vi] + 1.0
      }
    }
    for %i in 0..8 {
      block "C" (%vi = spatial(8, %i)) {
        reads(%t[%vi])
        writes(%c[%vi])
        %c[%vi] = %t[%vi] * 3.0
      }
    }
  }
}
)";
  Schedule sch(parsePrim(text));
  sch.setScope(sch.getBlock("T"), 0, ir::StorageScope::local);
  EXPECT_NE(ir::printFunction(sch.func()).find("alloc_buffer %t: f32[8] local"), std::string::npos);
  expectGood(text, sch);
}

TEST(ScheduleStorage, StorageAlignPadsTheInnermostDimension) {
  Schedule sch(parsePrim(kTwoStages));
  sch.storageAlign(sch.getBlock("B"), 0, 0, 32, 1);
  std::string text = ir::printFunction(sch.func());
  // 30 -> 33: the smallest s >= 30 with s % 32 == 1.
  EXPECT_NE(text.find("alloc_buffer %b: f32[8, 33]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  storage_align(%b0, 0, axis = 0, factor = 32, offset = 1)\n"), std::string::npos)
      << text;
  expectGood(kTwoStages, sch);

  Schedule negative(parsePrim(kTwoStages));
  negative.storageAlign(negative.getBlock("B"), 0, -2, 8, 4);  // 30 -> 36
  EXPECT_NE(ir::printFunction(negative.func()).find("alloc_buffer %b: f32[8, 36]\n"), std::string::npos);
  expectGood(kTwoStages, negative);

  Schedule exact(parsePrim(kTwoStages));
  exact.storageAlign(exact.getBlock("B"), 0, 0, 15, 0);  // 30 is already a multiple of 15
  EXPECT_NE(ir::printFunction(exact.func()).find("alloc_buffer %b: f32[8, 30]\n"), std::string::npos);
  expectGood(kTwoStages, exact);
}

TEST(ScheduleStorage, Refusals) {
  Schedule sch(parsePrim(kTwoStages));
  BlockRV b = sch.getBlock("B"), c = sch.getBlock("C");
  expectScheduleError(
      [&] { sch.setScope(c, 0, ir::StorageScope::shared); },
      "set_scope: %c is a parameter of the function; only intermediate buffers can be changed");
  expectScheduleError([&] { sch.storageAlign(c, 0, 0, 32, 1); },
                      "storage_align: %c is a parameter of the function");
  expectScheduleError([&] { sch.setScope(b, 1, ir::StorageScope::shared); },
                      "set_scope: write index 1 is out of range: block \"B\" has 1 write region(s)");
  expectScheduleError([&] { sch.storageAlign(b, 0, 1, 32, 1); },
                      "storage_align is supported on the second-innermost axis only");
  expectScheduleError([&] { sch.storageAlign(b, 0, -1, 32, 1); },
                      "storage_align is supported on the second-innermost axis only");
  expectScheduleError([&] { sch.storageAlign(b, 0, -3, 32, 1); },
                      "storage_align: axis -3 is out of range for %b of rank 2");
  expectScheduleError([&] { sch.storageAlign(b, 0, 2, 32, 1); },
                      "storage_align: axis 2 is out of range for %b of rank 2");
  expectScheduleError([&] { sch.storageAlign(b, 0, 0, 0, 0); }, "factor must be positive, not 0");
  expectScheduleError([&] { sch.storageAlign(b, 0, 0, 8, 8); }, "offset must be in [0, factor), not 8");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"set_scope", {ir::TraceRef{b.name}, 0, "register"}, {}, {}, {}});
      },
      "set_scope: unknown storage scope \"register\"");
  expectScheduleError(
      [&] {
        sch.apply(
            ir::TraceInst{"storage_align", {ir::TraceRef{b.name}, 0}, {{"axis", 0}, {"factor", 8}}, {}, {}});
      },
      "storage_align: missing keyword argument 'offset'");
}

}  // namespace
