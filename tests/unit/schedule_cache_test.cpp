// Cache and storage primitives: cache_read, cache_write, set_scope,
// storage_align. Each is checked for the loop structure it makes, for
// keeping the function's meaning (interpreter), for trace replay, and for
// its refusals.
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

// A row sum into an intermediate, then a scaling of it.
const std::string kRowSum = fixture("row_sum.ir");

TEST(ScheduleCache, CacheReadAndWriteOfMatmul) {
  Schedule sch(parsePrim(kMatmul));
  BlockRV c = sch.getBlock("C");
  BlockRV a_shared = sch.cacheRead(c, 0, ir::StorageScope::shared);
  BlockRV b_shared = sch.cacheRead(c, 1, ir::StorageScope::shared);
  BlockRV c_local = sch.cacheWrite(c, 0, ir::StorageScope::local);
  EXPECT_EQ(sch.getLoops(a_shared).size(), 2u);
  EXPECT_EQ(sch.getConsumers(b_shared).size(), 1u);
  EXPECT_EQ(sch.getProducers(c_local).size(), 1u);
  expectStructure(sch.func(), fixture("schedule_cache/cache_cache_read_and_write_of_matmul_expected.ir"));
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
  expectScheduled(parsePrim(kMatmul), sch.func());
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
  expectScheduled(parsePrim(kMatmul), sch.func());
}

TEST(ScheduleCache, CachesOfAnIntermediate) {
  Schedule sch(parsePrim(kRowSum));
  BlockRV d = sch.getBlock("D");
  sch.cacheRead(d, 0, ir::StorageScope::local);
  sch.cacheWrite(sch.getBlock("S"), 0, ir::StorageScope::shared);
  expectStructure(sch.func(), fixture("schedule_cache/cache_caches_of_an_intermediate_expected.ir"));
  expectScheduled(parsePrim(kRowSum), sch.func());
}

// A block that writes part of an output: only that part is copied back, so
// the rest keeps its values.
TEST(ScheduleCache, CacheWriteCopiesBackTheWrittenBox) {
  const std::string text = fixture("schedule_cache/cache_cache_write_copies_back_the_written_box.ir");
  Schedule sch(parsePrim(text));
  sch.cacheWrite(sch.getBlock("C"), 0, ir::StorageScope::local);
  expectStructure(sch.func(),
                  fixture("schedule_cache/cache_cache_write_copies_back_the_written_box_expected.ir"));
  expectScheduled(parsePrim(text), sch.func());
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
  expectScheduled(parsePrim(kMatmul), sch.func());
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
  Schedule inplace(parsePrim(fixture("schedule_cache/cache_cache_refusals.ir")));
  expectScheduleError([&] { inplace.cacheRead(inplace.getBlock("inc"), 0, ir::StorageScope::local); },
                      "block \"inc\" also writes %A; cache_read needs a buffer the block only reads");
  expectScheduleError([&] { inplace.cacheWrite(inplace.getBlock("inc"), 0, ir::StorageScope::local); },
                      "block \"inc\" reads %A other than as the accumulator of a reduction with an init");
}

const std::string kSameNest = fixture("schedule_cache/same_nest.ir");

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
  expectScheduled(parsePrim(kSameNest), sch.func());
}

TEST(ScheduleCache, CacheWriteRefusals) {
  Schedule two(parsePrim(fixture("schedule_cache/cache_cache_write_refusals.ir")));
  expectScheduleError([&] { two.cacheWrite(two.getBlock("C1"), 0, ir::StorageScope::local); },
                      "block \"C2\" also writes %C; cache_write needs a buffer only block \"C1\" writes");

  Schedule strided(parsePrim(fixture("schedule_cache/cache_cache_write_refusals_2.ir")));
  expectScheduleError([&] { strided.cacheWrite(strided.getBlock("C"), 0, ir::StorageScope::local); },
                      "the region of %C that block \"C\" writes is not a dense box of its iteration domain");

  Schedule noinit(parsePrim(fixture("schedule_cache/cache_cache_write_refusals_3.ir")));
  expectScheduleError([&] { noinit.cacheWrite(noinit.getBlock("C"), 0, ir::StorageScope::local); },
                      "block \"C\" reads %C other than as the accumulator of a reduction with an init");
}

TEST(ScheduleCache, RefusesNestedBlocks) {
  Schedule sch(parsePrim(fixture("schedule_cache/cache_refuses_nested_blocks.ir")));
  expectScheduleError(
      [&] { sch.cacheRead(sch.getBlock("inner"), 0, ir::StorageScope::local); },
      "block \"inner\" is nested in block \"outer\"; only blocks of the function's top level are "
      "supported");
}

// --- set_scope and storage_align -------------------------------------------------

const std::string kTwoStages = fixture("schedule_cache/two_stages.ir");

TEST(ScheduleStorage, SetScope) {
  Schedule sch(parsePrim(kTwoStages));
  sch.setScope(sch.getBlock("B"), 0, ir::StorageScope::shared);
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("alloc_buffer %b: f32[8, 30] shared\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  set_scope(%b0, 0, \"shared\")\n"), std::string::npos) << text;
  // Every use refers to the new buffer (the verifier would reject a stale one).
  EXPECT_EQ(sch.func().allocs.size(), 1u);
  EXPECT_EQ(sch.func().allocs[0]->scope, ir::StorageScope::shared);
  expectScheduled(parsePrim(kTwoStages), sch.func());
}

TEST(ScheduleStorage, SetScopeOfABlockBuffer) {
  const std::string text = fixture("schedule_cache/storage_set_scope_of_a_block_buffer.ir");
  Schedule sch(parsePrim(text));
  sch.setScope(sch.getBlock("T"), 0, ir::StorageScope::local);
  EXPECT_NE(ir::printFunction(sch.func()).find("alloc_buffer %t: f32[8] local"), std::string::npos);
  expectScheduled(parsePrim(text), sch.func());
}

TEST(ScheduleStorage, StorageAlignPadsTheInnermostDimension) {
  Schedule sch(parsePrim(kTwoStages));
  sch.storageAlign(sch.getBlock("B"), 0, 0, 32, 1);
  std::string text = ir::printFunction(sch.func());
  // 30 -> 33: the smallest s >= 30 with s % 32 == 1.
  EXPECT_NE(text.find("alloc_buffer %b: f32[8, 33]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  storage_align(%b0, 0, axis = 0, factor = 32, offset = 1)\n"), std::string::npos)
      << text;
  expectScheduled(parsePrim(kTwoStages), sch.func());

  Schedule negative(parsePrim(kTwoStages));
  negative.storageAlign(negative.getBlock("B"), 0, -2, 8, 4);  // 30 -> 36
  EXPECT_NE(ir::printFunction(negative.func()).find("alloc_buffer %b: f32[8, 36]\n"), std::string::npos);
  expectScheduled(parsePrim(kTwoStages), negative.func());

  Schedule exact(parsePrim(kTwoStages));
  exact.storageAlign(exact.getBlock("B"), 0, 0, 15, 0);  // 30 is already a multiple of 15
  EXPECT_NE(ir::printFunction(exact.func()).find("alloc_buffer %b: f32[8, 30]\n"), std::string::npos);
  expectScheduled(parsePrim(kTwoStages), exact.func());
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
