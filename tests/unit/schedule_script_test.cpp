// Schedule scripts: parsing (blocks, comments, instruction locations,
// syntax errors), applying them to a module (appending to existing traces),
// and errors located at the script line.
#include <gtest/gtest.h>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/schedule/script.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

const std::string kDense = fixture("dense.ir");

const std::string kAdd = fixture("schedule_script/add.ir");

ir::Module twoFuncs() { return mlcc::test::parseVerified(std::string(kDense) + kAdd); }

const char* kScript = R"(# Pack the weight of @dense.
schedule @dense {
  %b0 = get_block("dense")   # the only block
  %l1, %l2, %l3 = get_loops(%b0)
  transform_layout(%b0, "w", [o, i], [o / 16, i, o % 16])
}

schedule @add {
  %b0 = get_block("add")
}
)";

TEST(ScheduleScript, ParsesBlocksCommentsAndLocations) {
  ir::ScheduleScript s = ir::parseScheduleScript(kScript, "s.sched");
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(s.blocks[0].func, "dense");
  EXPECT_EQ(s.blocks[0].loc.line, 2);
  EXPECT_EQ(s.blocks[0].loc.col, 10);
  ASSERT_EQ(s.blocks[0].trace.insts.size(), 3u);
  ASSERT_EQ(s.blocks[0].inst_locs.size(), 3u);
  EXPECT_EQ(s.blocks[0].inst_locs[1].file, "s.sched");
  EXPECT_EQ(s.blocks[0].inst_locs[1].line, 4);
  EXPECT_EQ(s.blocks[0].inst_locs[1].col, 3);
  EXPECT_EQ(s.blocks[0].trace.insts[1].outputs, (std::vector<std::string>{"l1", "l2", "l3"}));
  EXPECT_EQ(s.blocks[1].func, "add");
  EXPECT_EQ(s.blocks[1].trace.insts.size(), 1u);
  // The instructions print as a trace does.
  EXPECT_EQ(ir::printTrace(s.blocks[0].trace),
            "trace {\n"
            "  %b0 = get_block(\"dense\")\n"
            "  %l1, %l2, %l3 = get_loops(%b0)\n"
            "  transform_layout(%b0, \"w\", [o, i], [o / 16, i, o % 16])\n"
            "}\n");
  // An empty script has no blocks.
  EXPECT_TRUE(ir::parseScheduleScript("# nothing\n", "e.sched").blocks.empty());
}

TEST(ScheduleScript, SyntaxErrorsAreLocated) {
  auto parse = [](const std::string& text) { return [text] { ir::parseScheduleScript(text, "s.sched"); }; };
  EXPECT_EQ(
      errorAt(parse("schedule dense {}\n")),
      "s.sched:1:10: error: expected a function name (@name) after 'schedule', found identifier 'dense'\n"
      "schedule dense {}\n"
      "         ^");
  EXPECT_NE(errorAt(parse("trace {\n}\n")).find("s.sched:1:1: error: expected 'schedule @function { ... }'"),
            std::string::npos);
  EXPECT_NE(
      errorAt(parse("schedule @f {\n  %b0 = get_block(\"x\"\n}\n")).find("s.sched:3:1: error: expected ')'"),
      std::string::npos);
  EXPECT_NE(errorAt(parse("schedule @f {\n  get_loops(%b0)\n}\n"))
                .find("s.sched:2:13: error: undefined trace variable %b0"),
            std::string::npos);
  EXPECT_NE(errorAt(parse("schedule @f {\n  %b0 = get_block(\"x\")\n")).find("s.sched:3:1: error:"),
            std::string::npos);
  // Trace variables are local to their block.
  EXPECT_NE(errorAt(parse("schedule @f {\n  %b0 = get_block(\"x\")\n}\nschedule @g {\n  get_loops(%b0)\n}\n"))
                .find("s.sched:5:13: error: undefined trace variable %b0"),
            std::string::npos);
}

TEST(ScheduleScript, AppliesBlocksToTheirFunctions) {
  ir::Module m = twoFuncs();
  auto done = applyScheduleScript(m, ir::parseScheduleScript(kScript, "s.sched"));
  EXPECT_EQ(done, (std::vector<std::string>{"dense", "add"}));
  ir::verifyModule(m, mlcc::ops::opTypeInfo());

  // The same as scheduling with the Schedule API.
  Schedule sch(parsePrim(kDense));
  BlockRV b = sch.getBlock("dense");
  sch.getLoops(b);
  sch.transformLayout(b, "w", {ir::makeVar("o"), ir::makeVar("i")},
                      {ir::parseExpr("o / 16"), ir::parseExpr("i"), ir::parseExpr("o % 16")});
  EXPECT_TRUE(ir::structuralEqual(*m.findPrim("dense"), sch.func()))
      << ir::printFunction(*m.findPrim("dense"));
  expectSameMeaning(parsePrim(kDense), *m.findPrim("dense"));
  EXPECT_EQ(m.findPrim("add")->trace.insts.size(), 1u);
}

TEST(ScheduleScript, AppendsToAnExistingTraceRenamingClashingVariables) {
  ir::Module m = twoFuncs();
  applyScheduleScript(m,
                      ir::parseScheduleScript("schedule @dense {\n  %b0 = get_block(\"dense\")\n}\n", "a"));
  applyScheduleScript(m, ir::parseScheduleScript(kScript, "s.sched"));
  const ir::PrimFunc& f = *m.findPrim("dense");
  EXPECT_EQ(ir::printTrace(f.trace),
            "trace {\n"
            "  %b0 = get_block(\"dense\")\n"
            "  %b1 = get_block(\"dense\")\n"
            "  %l1, %l2, %l3 = get_loops(%b1)\n"
            "  transform_layout(%b1, \"w\", [o, i], [o / 16, i, o % 16])\n"
            "}\n");
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  // The whole trace replays on the unscheduled function.
  EXPECT_TRUE(ir::structuralEqual(replayTrace(parsePrim(kDense), f.trace), f));
}

TEST(ScheduleScript, ErrorsNameTheScriptLineAndChangeNothing) {
  const ir::Module original = twoFuncs();
  auto apply = [&](const std::string& text) {
    return [text, &original] {
      ir::Module m = original;
      try {
        applyScheduleScript(m, ir::parseScheduleScript(text, "s.sched"));
      } catch (...) {
        EXPECT_TRUE(ir::structuralEqual(m, original)) << "a failed script changed the module";
        throw;
      }
    };
  };
  EXPECT_EQ(errorAt(apply("schedule @add {\n  %b0 = get_block(\"add\")\n}\n"
                          "schedule @dense {\n  %b0 = get_block(\"dense\")\n  %l1 = get_loops(%b0)\n}\n")),
            "s.sched:6:3: error: in prim @dense: get_loops gives 3 outputs, but the trace names 1\n"
            "  %l1 = get_loops(%b0)\n"
            "  ^");
  EXPECT_EQ(errorAt(apply("schedule @dense {\n  %b0 = get_block(\"nope\")\n}\n")),
            "s.sched:2:3: error: in prim @dense: no block \"nope\" (it was removed, or never existed)\n"
            "  %b0 = get_block(\"nope\")\n"
            "  ^");
  EXPECT_NE(errorAt(apply("schedule @dense {\n\n  frobnicate()\n}\n"))
                .find("s.sched:3:3: error: in prim @dense: unknown schedule instruction 'frobnicate'"),
            std::string::npos);
  EXPECT_NE(errorAt(apply("schedule @dense {\n  %b0 = get_block(\"dense\")\n"
                          "  transform_layout(%b0, \"w\", [o, i], [o / 16, i])\n}\n"))
                .find("s.sched:3:3: error: in prim @dense: transform_layout: index variable o must appear"),
            std::string::npos);
  EXPECT_EQ(errorAt(apply("schedule @add {\n}\nschedule @mystery {\n}\n")),
            "s.sched:3:10: error: no prim func @mystery in the module\n"
            "schedule @mystery {\n"
            "         ^");
}

}  // namespace
