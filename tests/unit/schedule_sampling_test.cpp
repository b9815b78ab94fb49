// Sampling instructions: sample_perfect_tile and sample_categorical record
// their decisions; the same seed gives the same decisions; replaying a trace
// with another valid decision gives a different program with the same
// meaning; an invalid decision is a schedule error.
#include <gtest/gtest.h>

#include <set>

#include "schedule_loops_check.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Tiles the matmul with sampled factors: i and j in 3 parts, k in 2.
Schedule tiledMatmul(uint64_t seed) {
  Schedule sch(parsePrim(kMatmul), seed);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto ti = sch.samplePerfectTile(loops[0], 3, 8);
  auto tj = sch.samplePerfectTile(loops[1], 3, 16);
  auto tk = sch.samplePerfectTile(loops[2], 2, 4);
  auto i = sch.split(loops[0], {ti[0], ti[1], ti[2]});
  auto j = sch.split(loops[1], {tj[0], tj[1], tj[2]});
  auto k = sch.split(loops[2], {tk[0], tk[1]});
  sch.reorder({i[0], j[0], i[1], j[1], k[0], i[2], k[1], j[2]});
  return sch;
}

TEST(ScheduleSampling, PerfectTileRecordsItsDecision) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Schedule sch(parsePrim(kMatmul), seed);
    auto loops = sch.getLoops(sch.getBlock("C"));
    auto t = sch.samplePerfectTile(loops[0], 3, 8);
    ASSERT_EQ(t.size(), 3u);
    const ir::TraceInst& inst = sch.func().trace.insts.back();
    ASSERT_TRUE(inst.decision);
    std::vector<int64_t> d = inst.decision->asInts();
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(product(d), 64);
    EXPECT_LE(d[2], 8);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(sch.get(t[i]), d[i]);
  }
  Schedule sch(parsePrim(kMatmul), 3);
  sch.samplePerfectTile(sch.getLoops(sch.getBlock("C"))[0], 2, 16);
  std::string trace = ir::printTrace(sch.func().trace);
  EXPECT_NE(trace.find("%v4, %v5 = sample_perfect_tile(%l1, max_innermost_factor = 16, n = 2) decision ["),
            std::string::npos)
      << trace;
}

TEST(ScheduleSampling, SameSeedSameDecisions) {
  std::set<std::string> traces;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Schedule a = tiledMatmul(seed), b = tiledMatmul(seed);
    EXPECT_TRUE(ir::structuralEqual(a.func(), b.func()));
    traces.insert(ir::printTrace(a.func().trace));
  }
  EXPECT_GT(traces.size(), 1u) << "different seeds should give different tilings";
}

TEST(ScheduleSampling, TiledMatmulKeepsItsMeaningAndReplays) {
  ir::PrimFunc f = parsePrim(kMatmul);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    Schedule sch = tiledMatmul(seed);
    expectSameMeaning(f, sch.func(), 1e-5);
    EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace, 99), sch.func()));
  }
}

// The trace with the decision of instruction `index` replaced.
ir::Trace withDecision(ir::Trace t, size_t index, ir::AttrValue decision) {
  t.insts.at(index).decision = std::move(decision);
  return t;
}

size_t findInst(const ir::Trace& t, const std::string& name) {
  for (size_t i = 0; i < t.insts.size(); ++i)
    if (t.insts[i].name == name) return i;
  ADD_FAILURE() << "no " << name;
  return 0;
}

TEST(ScheduleSampling, ChangedDecisionsReplayToAnotherCorrectProgram) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch = tiledMatmul(1);
  const ir::Trace& trace = sch.func().trace;
  size_t tile = findInst(trace, "sample_perfect_tile");
  std::vector<int64_t> old = trace.insts[tile].decision->asInts();
  // Valid alternatives for the 3-way tile of i (innermost <= 8).
  for (std::vector<int64_t> d : {std::vector<int64_t>{1, 8, 8}, {64, 1, 1}, {2, 4, 8}, {16, 2, 2}}) {
    if (d == old) continue;
    ir::PrimFunc g = replayTrace(f, withDecision(trace, tile, ir::AttrValue::ints(d)));
    EXPECT_FALSE(ir::structuralEqual(g, sch.func()));
    EXPECT_EQ(g.trace.insts[tile].decision->asInts(), d);
    expectSameMeaning(f, g, 1e-5);
    std::string text = ir::printFunction(g);
    EXPECT_NE(text.find("for %i_2 in 0.." + std::to_string(d[2]) + " "), std::string::npos) << text;
  }
}

TEST(ScheduleSampling, InvalidDecisionsAreScheduleErrors) {
  ir::PrimFunc f = parsePrim(kMatmul);
  Schedule sch = tiledMatmul(2);
  const ir::Trace& trace = sch.func().trace;
  size_t tile = findInst(trace, "sample_perfect_tile");
  auto replay = [&](ir::AttrValue d) { replayTrace(f, withDecision(trace, tile, std::move(d))); };
  expectScheduleError(
      [&] {
        replay(ir::AttrValue::ints({4, 4, 3}));
      },
      "sample_perfect_tile: decision [4, 4, 3] for loop %i (extent 64): the factors multiply to 48, "
      "not 64");
  expectScheduleError([&] { replay(ir::AttrValue::ints({8, 8})); }, "expected a list of 3 integers");
  expectScheduleError(
      [&] {
        replay(ir::AttrValue::ints({1, 4, 16}));
      },
      "the innermost factor exceeds max_innermost_factor = 8");
  expectScheduleError(
      [&] {
        replay(ir::AttrValue::ints({-1, -4, 16}));
      },
      "every factor must be an integer >= 1");
  expectScheduleError([&] { replay(ir::AttrValue(int64_t{3})); }, "expected a list of 3 integers");
}

TEST(ScheduleSampling, PerfectTileErrors) {
  ir::PrimFunc f = parsePrim(kSymbolic);
  Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("relu"));
  expectScheduleError([&] { sch.samplePerfectTile(loops[0], 2, 16); },
                      "cannot sample a perfect tile of loop %i: its extent n is not a constant");
  expectScheduleError([&] { sch.samplePerfectTile(loops[1], 0, 16); }, "n = 0 must be between 1 and 64");
  expectScheduleError([&] { sch.samplePerfectTile(loops[1], 2, 0); },
                      "max_innermost_factor = 0 must be at least 1");
  expectScheduleError([&] { sch.samplePerfectTile(loops[1], 1, 4); },
                      "its extent 8 is one factor, larger than max_innermost_factor = 4");
  auto one = sch.samplePerfectTile(loops[1], 1, 8);
  EXPECT_EQ(sch.get(one[0]), 8);
  // A prime extent: the innermost factor is 1 under a small bound.
  Schedule p(parsePrim(kRowSum), 5);
  auto t = p.samplePerfectTile(p.getLoops(p.getBlock("sum"))[0], 2, 2);  // extent 6
  EXPECT_EQ(p.get(t[0]) * p.get(t[1]), 6);
  EXPECT_LE(p.get(t[1]), 2);
}

TEST(ScheduleSampling, CategoricalRecordsItsIndex) {
  std::map<int64_t, int> counts;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    Schedule sch(parsePrim(kAdd), seed);
    ExprRV v = sch.sampleCategorical({1, 2, 4, 8}, {0.5, 0.25, 0.25, 0.0});
    const ir::TraceInst& inst = sch.func().trace.insts.back();
    ASSERT_TRUE(inst.decision && inst.decision->isInt());
    const int64_t candidates[] = {1, 2, 4, 8};
    EXPECT_EQ(sch.get(v), candidates[inst.decision->asInt()]);
    counts[sch.get(v)]++;
  }
  EXPECT_EQ(counts[8], 0);
  EXPECT_GT(counts[1], 420);
  EXPECT_LT(counts[1], 580);
  EXPECT_GT(counts[2], 180);
  EXPECT_GT(counts[4], 180);

  Schedule sch(parsePrim(kAdd), 1);
  sch.sampleCategorical({1, 2, 4}, {0.5, 0.25, 0.25});
  std::string trace = ir::printTrace(sch.func().trace);
  EXPECT_NE(
      trace.find("%v0 = sample_categorical(candidates = [1, 2, 4], probs = [0.5, 0.25, 0.25]) decision "),
      std::string::npos)
      << trace;
}

TEST(ScheduleSampling, CategoricalDrivesASplitAndAnUnrollAnnotation) {
  ir::PrimFunc f = parsePrim(kRowSum);
  Schedule sch(f, 4);
  auto loops = sch.getLoops(sch.getBlock("sum"));
  ExprRV factor = sch.sampleCategorical({2, 3, 4}, {0.25, 0.25, 0.5});
  ExprRV unroll = sch.sampleCategorical({0, 16, 64}, {0.25, 0.5, 0.25});
  auto k = sch.split(loops[1], {std::nullopt, factor});
  sch.annotate(k[0], "pragma_auto_unroll_max_step", ir::TraceRef{unroll.name});  // the sampled value
  expectSameMeaning(f, sch.func(), 1e-5);
  EXPECT_TRUE(ir::structuralEqual(replayTrace(f, sch.func().trace), sch.func()));
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("attrs(pragma_auto_unroll_max_step = " + std::to_string(sch.get(unroll)) + ")"),
            std::string::npos)
      << text;

  // Every other choice of the factor: a different, still correct program
  // (3 and 4 do not divide 10: predicates).
  size_t first = findInst(sch.func().trace, "sample_categorical");
  for (int64_t d = 0; d < 3; ++d) {
    ir::PrimFunc g = replayTrace(f, withDecision(sch.func().trace, first, ir::AttrValue(d)));
    EXPECT_EQ(ir::structuralEqual(g, sch.func()), d == sch.func().trace.insts[first].decision->asInt());
    expectSameMeaning(f, g, 1e-5);
  }
}

TEST(ScheduleSampling, CategoricalErrors) {
  Schedule sch(parsePrim(kAdd));
  expectScheduleError(
      [&] {
        sch.sampleCategorical({1, 2}, {0.5, 0.25});
      },
      "sample_categorical: the probabilities sum to 0.750000, not 1");
  expectScheduleError(
      [&] {
        sch.sampleCategorical({1, 2}, {1.5, -0.5});
      },
      "probability -0.5 is not a number >= 0");
  expectScheduleError(
      [&] {
        sch.sampleCategorical({1, 2, 3}, {0.5, 0.5});
      },
      "3 candidates but 2 probabilities");
  expectScheduleError([&] { sch.sampleCategorical({}, {}); }, "needs at least one candidate");
  ir::TraceInst inst{"sample_categorical",
                     {},
                     {{"candidates", ir::AttrValue::ints({1, 2})}, {"probs", ir::AttrValue::List{0.5, 0.5}}},
                     {},
                     ir::AttrValue(int64_t{2})};
  expectScheduleError([&] { sch.apply(inst); }, "decision 2 is not an index of the 2 candidates (0 to 1)");
  inst.decision = ir::AttrValue(int64_t{1});
  auto out = sch.apply(inst);
  EXPECT_EQ(sch.get(ExprRV{out[0]}), 2);
}

}  // namespace
