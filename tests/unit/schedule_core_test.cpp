// The schedule core: navigation instructions, the trace they record,
// argument errors, and replay.
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

const std::string kTwoStages = fixture("two_stages.ir");

TEST(ScheduleCore, NavigationRecordsTheTrace) {
  Schedule sch(parsePrim(kTwoStages));
  BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(sch.loopVar(loops[0])->name, "i");
  auto producers = sch.getProducers(c);
  ASSERT_EQ(producers.size(), 1u);
  auto consumers = sch.getConsumers(producers[0]);
  ASSERT_EQ(consumers.size(), 1u);
  auto top = sch.getChildBlocks(std::nullopt);
  EXPECT_EQ(top.size(), 2u);
  auto under = sch.getChildBlocks(loops[1]);
  EXPECT_EQ(under.size(), 1u);
  EXPECT_EQ(ir::printTrace(sch.func().trace),
            "trace {\n"
            "  %b0 = get_block(\"C\")\n"
            "  %l1, %l2 = get_loops(%b0)\n"
            "  %b3 = get_producers(%b0)\n"
            "  %b4 = get_consumers(%b3)\n"
            "  %b5, %b6 = get_child_blocks()\n"
            "  %b7 = get_child_blocks(%l2)\n"
            "}\n");
  // Replaying the trace gives the same function, trace included.
  ir::PrimFunc replayed = replayTrace(parsePrim(kTwoStages), sch.func().trace);
  EXPECT_TRUE(ir::structuralEqual(replayed, sch.func()));
}

TEST(ScheduleCore, BadInstructionsAreScheduleErrors) {
  Schedule sch(parsePrim(kTwoStages));
  expectScheduleError([&] { sch.getBlock("nope"); }, "no block \"nope\"");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"frobnicate", {}, {}, {}, {}});
      },
      "unknown schedule instruction 'frobnicate'");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"get_loops", {ir::TraceRef{"b9"}}, {}, {}, {}});
      },
      "%b9 is not defined");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"get_block", {"C"}, {{"x", 1}}, {}, {}});
      },
      "unknown keyword argument 'x'");
  BlockRV b = sch.getBlock("B");
  expectScheduleError(
      [&] {
        sch.apply(ir::TraceInst{"get_loops", {b.name}, {}, {}, {}});
      },
      "must be a block");
  // Failed instructions are not recorded.
  EXPECT_EQ(sch.func().trace.insts.size(), 1u);
}

TEST(ScheduleCore, DuplicateBlockNamesAreRejected) {
  std::string text = kTwoStages;
  text.replace(text.find("block \"C\""), 9, "block \"B\"");
  expectScheduleError([&] { Schedule sch(parsePrim(text)); }, "block names must be unique");
}

}  // namespace
