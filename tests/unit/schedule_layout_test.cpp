// transform_layout: packing parameters through a copy block, re-indexing
// intermediates in place, the printed result, meaning, trace round trip and
// replay, and the refusals of maps that may not be one-to-one.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <vector>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

const std::string kDense = fixture("dense.ir");

const std::string kConv = fixture("schedule_layout/conv.ir");

// An intermediate %b written by "B", read elementwise by "C" and a row at a
// time (a region with a range) by "S".
const std::string kIntermediate = fixture("schedule_layout/intermediate.ir");

const std::string kSymbolic = fixture("schedule_layout/symbolic.ir");

std::vector<ir::Var> vars(const std::vector<std::string>& names) {
  std::vector<ir::Var> out;
  for (const std::string& n : names) out.push_back(ir::makeVar(n));
  return out;
}

// New indices from their text ("o / 16"): parseExpr makes its own
// variables, which the schedule matches with the index variables by name.
std::vector<ir::PrimExpr> exprs(const std::vector<std::string>& texts) {
  std::vector<ir::PrimExpr> out;
  for (const std::string& t : texts) out.push_back(ir::parseExpr(t));
  return out;
}

// The function printed, without the "mlcc.ir 1" module header.
std::string print(const ir::PrimFunc& f) { return ir::printFunction(f); }

// What print() gives for the function of fixture NAME (its text after the
// header line).
std::string printed(const std::string& name) { return fixture(name).substr(1); }

// One transform_layout of a buffer that a block accesses; `check` looks at
// the function printed after it, and the result must keep the meaning.
struct LayoutCase {
  std::string name;
  std::string input;
  std::string block, buffer;
  std::vector<std::string> from, to;  // the index map
  std::function<void(const std::string& text)> check;
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

// The printed function is that of fixture NAME.
std::function<void(const std::string&)> printsAs(const std::string& name) {
  return [=](const std::string& text) { EXPECT_EQ(text, printed(name)); };
}

// The printed function contains each of `parts`.
std::function<void(const std::string&)> printsWith(const std::vector<std::string>& parts) {
  return [=](const std::string& text) {
    for (const std::string& part : parts)
      EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  };
}

class TransformLayout : public testing::TestWithParam<LayoutCase> {};

TEST_P(TransformLayout, Result) {
  const LayoutCase& c = GetParam();
  Schedule sch(parsePrim(c.input));
  BlockRV b = sch.getBlock(c.block);
  sch.transformLayout(b, c.buffer, vars(c.from), exprs(c.to));
  c.check(print(sch.func()));
  expectScheduled(parsePrim(c.input), sch.func());
}

INSTANTIATE_TEST_SUITE_P(
    ScheduleLayout, TransformLayout,
    testing::Values(
        LayoutCase{"PacksADenseWeightThroughACopyBlock",
                   kDense,
                   "dense",
                   "w",
                   {"o", "i"},
                   {"o / 16", "i", "o % 16"},
                   printsAs("schedule_layout/layout_packs_a_dense_weight_through_a_copy_block_expected.ir")},
        LayoutCase{"PacksAConvWeightIntoBlockedChannels",
                   kConv,
                   "conv",
                   "w",
                   {"o", "i", "h", "w"},
                   {"o / 8", "i", "h", "w", "o % 8"},
                   printsWith({"alloc_buffer %w_layout: f32[2, 4, 3, 3, 8]",
                               "%w_layout[%vf / 8, %vc, %vr, %vs, %vf % 8]"})},
        // Transposed and split: [8, 12] -> [12 / 4, 8, 4].
        LayoutCase{"RewritesAnIntermediateInPlace",
                   kIntermediate,
                   "C",
                   "b",
                   {"r", "k"},
                   {"k / 4", "r", "k % 4"},
                   printsAs("schedule_layout/layout_rewrites_an_intermediate_in_place_expected.ir")}),
    [](const testing::TestParamInfo<LayoutCase>& info) { return info.param.name; });

TEST(ScheduleLayout, SymbolicShapesAndPadding) {
  // [n, 40] -> [n / 4, 40, n % 4]: n = 5 leaves padding that is never read.
  Schedule sch(parsePrim(kSymbolic));
  BlockRV g = sch.getBlock("G");
  auto from = vars({"a", "b"});
  sch.transformLayout(g, "x", from, exprs({"a / 4", "b", "a % 4"}));
  // Then, in place, a split that does not divide the extent: 40 -> [3 (padded), 16].
  // (An index variable may share its name with a symbolic dimension.)
  auto from2 = vars({"n", "b", "c"});
  sch.transformLayout(g, "x_layout", from2, exprs({"b / 16", "n", "c", "b % 16"}));
  const std::string text = print(sch.func());
  EXPECT_NE(text.find("alloc_buffer %x_layout: f32[3, (n + 3) / 4, 4, 16]"), std::string::npos) << text;
  for (int64_t n : {1, 4, 5, 9}) expectScheduled(parsePrim(kSymbolic), sch.func(), 1e-6, {{"n", n}});
}

TEST(ScheduleLayout, ScriptSyntaxParsesTheIndexVariables) {
  // The trace text form, as in a schedule script: free names are the index variables.
  std::string text = std::string(kDense);
  text.replace(text.find("{\n  for"), 1,
               "{\n  trace {\n    %b0 = get_block(\"dense\")\n"
               "    transform_layout(%b0, \"w\", [n, k], [k, n / 32, n % 32])\n  }\n");
  ir::PrimFunc traced = parsePrim(text);
  ir::PrimFunc scheduled = replayTrace(parsePrim(kDense), traced.trace);
  EXPECT_NE(print(scheduled).find("alloc_buffer %w_layout: f32[32, 2, 32]"), std::string::npos);
  expectSameMeaning(parsePrim(kDense), scheduled);
}

TEST(ScheduleLayout, RefusesMapsThatMayNotBeOneToOne) {
  Schedule sch(parsePrim(kDense));
  BlockRV b = sch.getBlock("dense");
  auto from = vars({"o", "i"});
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o / 16", "i"}));
      },
      "in prim @dense: transform_layout: index variable o must appear either once as itself "
      "or as the pair o / c, o % c (same c)");
  expectScheduleError(
      [&] { sch.transformLayout(b, "w", from, exprs({"o"})); },
      "index variable i is not used in the new indices, so elements of %w would share a place");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o + i", "i"}));
      },
      "new index o + i is not of a supported form (x, x / c or x % c");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o / 16", "i", "o % 8"}));
      },
      "index variable o must appear either once");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o", "o", "i"}));
      },
      "index variable o must appear either once");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o / 0", "i", "o % 0"}));
      },
      "not of a supported form");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", from, exprs({"o", "q"}));
      },
      "new index q uses q, which is not one of the index variables");
  expectScheduleError([&] { sch.transformLayout(b, "w", vars({"o"}), exprs({"o"})); },
                      "the index map has 1 index variable(s), but %w has rank 2");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "w", vars({"o", "o"}), exprs({"o"}));
      },
      "index variable o is listed twice");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "q", from, exprs({"i", "o"}));
      },
      "block \"dense\" accesses no buffer named \"q\" (it accesses %x, %w, %y)");
  expectScheduleError(
      [&] {
        sch.transformLayout(b, "y", from, exprs({"i", "o"}));
      },
      "cannot transform the layout of parameter %y: block \"dense\" writes it");
  // Refused instructions change nothing and are not recorded.
  EXPECT_TRUE(ir::structuralEqual(sch.func(), replayTrace(parsePrim(kDense), sch.func().trace)));
  EXPECT_EQ(sch.func().trace.insts.size(), 1u);
}

TEST(ScheduleLayout, RefusesAParameterAnotherBlockWrites) {
  // %c is an output written by "C"; a later block reading it cannot get an
  // up-front copy.
  const std::string text = fixture("schedule_layout/layout_refuses_a_parameter_another_block_writes.ir");
  Schedule sch(parsePrim(text));
  BlockRV d = sch.getBlock("D");
  auto from = vars({"x"});
  expectScheduleError(
      [&] {
        sch.transformLayout(d, "c", from, exprs({"x / 4", "x % 4"}));
      },
      "cannot transform the layout of parameter %c: block \"C\" writes it");
  // Its intermediate twin is fine.
  BlockRV c = sch.getBlock("C");
  sch.transformLayout(c, "a", from, exprs({"x / 4", "x % 4"}));
  expectSameMeaning(parsePrim(text), sch.func());
}

TEST(ScheduleLayout, RefusesACopyForANestedBlock) {
  const std::string text = fixture("schedule_layout/layout_refuses_a_copy_for_a_nested_block.ir");
  Schedule sch(parsePrim(text));
  BlockRV inner = sch.getBlock("inner");
  auto from = vars({"x"});
  expectScheduleError(
      [&] {
        sch.transformLayout(inner, "a", from, exprs({"x % 4", "x / 4"}));
      },
      "cannot give block \"inner\" a layout-converted copy of parameter %a: it is nested in "
      "block \"outer\"");
}

}  // namespace
