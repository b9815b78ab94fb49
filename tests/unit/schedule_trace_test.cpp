// Trace properties, for 20 seeds on a matmul, a conv with a relu consumer and
// an elementwise chain, each scheduled with sampling instructions
// (sample_perfect_tile + split, sample_categorical for an unroll annotation,
// sample_compute_location + compute_at) and deterministic primitives:
//   - the scheduled function keeps the meaning of the unscheduled one;
//   - printing and re-parsing it gives the same function, trace included;
//   - replaying its trace on the unscheduled function reproduces it exactly;
//   - changing any one sampled decision to another valid value replays to a
//     different program with the same meaning.
#include <gtest/gtest.h>

#include <functional>
#include <set>

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

constexpr int kSeeds = 20;

const std::string kMatmul = fixture("schedule_trace/matmul.ir");

const std::string kConv = fixture("schedule_trace/conv.ir");

const std::string kChain = fixture("schedule_trace/chain.ir");

void annotateUnroll(Schedule& s, const LoopRV& loop) {
  ExprRV steps = s.sampleCategorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25});
  s.annotate(loop, "pragma_auto_unroll_max_step", ir::TraceRef{steps.name});
}

// Matmul: a 2 x 3 x 2 tiling of i, j, k (sampled), reordered, the outer loop
// parallel, the innermost vectorized, an unroll limit.
void scheduleMatmul(Schedule& s) {
  BlockRV c = s.getBlock("C");
  auto l = s.getLoops(c);
  auto ti = s.samplePerfectTile(l[0], 2, 8);
  auto i = s.split(l[0], {ti[0], ti[1]});
  auto tj = s.samplePerfectTile(l[1], 3, 8);
  auto j = s.split(l[1], {tj[0], tj[1], tj[2]});
  auto tk = s.samplePerfectTile(l[2], 2, 8);
  auto k = s.split(l[2], {tk[0], tk[1]});
  s.reorder({i[0], j[0], j[1], k[0], i[1], k[1], j[2]});
  s.parallel(i[0]);
  s.vectorize(j[2]);
  annotateUnroll(s, i[0]);
}

// Conv + relu: the conv weight packed by output-channel blocks, the relu's
// channel and column loops tiled (sampled), the conv computed at a sampled
// loop of the relu.
void scheduleConv(Schedule& s) {
  BlockRV conv = s.getBlock("conv");
  s.transformLayout(conv, "w", {ir::makeVar("o"), ir::makeVar("i"), ir::makeVar("h"), ir::makeVar("w")},
                    {ir::parseExpr("o / 4"), ir::parseExpr("i"), ir::parseExpr("h"), ir::parseExpr("w"),
                     ir::parseExpr("o % 4")});
  BlockRV relu = s.getBlock("relu");
  auto l = s.getLoops(relu);
  auto tf = s.samplePerfectTile(l[1], 2, 4);
  auto f = s.split(l[1], {tf[0], tf[1]});
  auto tq = s.samplePerfectTile(l[3], 2, 8);
  auto q = s.split(l[3], {tq[0], tq[1]});
  LoopRV at = s.sampleComputeLocation(conv);
  s.computeAt(conv, at);
  annotateUnroll(s, f[0]);
}

// Elementwise chain B -> C -> D: D's columns tiled (sampled), C and B each
// computed at a sampled loop of their consumer.
void scheduleChain(Schedule& s) {
  BlockRV d = s.getBlock("D");
  auto l = s.getLoops(d);
  auto t = s.samplePerfectTile(l[1], 2, 8);
  auto j = s.split(l[1], {t[0], t[1]});
  BlockRV c = s.getBlock("C");
  s.computeAt(c, s.sampleComputeLocation(c));
  BlockRV b = s.getBlock("B");
  s.computeAt(b, s.sampleComputeLocation(b));
  annotateUnroll(s, l[0]);
}

struct Case {
  const char* name;
  std::string text;
  std::function<void(Schedule&)> schedule;
};

const Case kCases[] = {
    {"matmul", kMatmul, scheduleMatmul},
    {"conv", kConv, scheduleConv},
    {"chain", kChain, scheduleChain},
};

bool equalIgnoringTraces(const ir::PrimFunc& a, const ir::PrimFunc& b) {
  return ir::structuralEqual(a, b, ir::StructuralOptions{.compare_traces = false});
}

// Another valid decision for instruction `index` of `trace` (same earlier
// instructions): sampled anew with other seeds until it differs. nullopt
// when no other value turns up (a single valid choice).
std::optional<ir::AttrValue> otherDecision(const ir::PrimFunc& unscheduled, const ir::Trace& trace,
                                           size_t index) {
  const std::string before = ir::printAttrValue(*trace.insts[index].decision);
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    Schedule s(unscheduled, seed * 7919);
    for (size_t i = 0; i < index; ++i) s.apply(trace.insts[i]);
    ir::TraceInst inst = trace.insts[index];
    inst.decision.reset();
    s.apply(inst);
    const ir::AttrValue& sampled = *s.func().trace.insts.back().decision;
    if (ir::printAttrValue(sampled) != before) return sampled;
  }
  return std::nullopt;
}

// Replays `trace` with instruction `index`'s decision replaced. A later
// sampling decision that the change made invalid (a compute location that
// is no longer a candidate) is sampled anew, as a tuner would.
ir::PrimFunc replayMutated(const ir::PrimFunc& unscheduled, const ir::Trace& trace, size_t index,
                           const ir::AttrValue& decision, int* resampled) {
  Schedule s(unscheduled, 12345);
  for (size_t i = 0; i < trace.insts.size(); ++i) {
    ir::TraceInst inst = trace.insts[i];
    if (i == index) inst.decision = decision;
    if (i <= index || !inst.decision) {
      s.apply(inst);
      continue;
    }
    try {
      s.apply(inst);
    } catch (const ScheduleError&) {
      inst.decision.reset();
      s.apply(inst);
      ++*resampled;
    }
  }
  return s.func();
}

TEST(ScheduleTrace, ReplayRoundTripAndMutatedDecisions) {
  for (const Case& c : kCases) {
    const ir::PrimFunc unscheduled = parsePrim(c.text);
    int mutations = 0, resampled = 0;
    for (uint64_t seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE(std::string(c.name) + ", seed " + std::to_string(seed));
      Schedule s(unscheduled, seed);
      c.schedule(s);
      const ir::PrimFunc& scheduled = s.func();
      ASSERT_TRUE(expectSameMeaning(unscheduled, scheduled)) << ir::printFunction(scheduled);

      // Printed and parsed back: the same function, trace included.
      const std::string text = ir::printFunction(scheduled);
      ir::PrimFunc reparsed = parsePrim(text);
      EXPECT_TRUE(ir::structuralEqual(reparsed, scheduled)) << text;
      EXPECT_EQ(ir::printFunction(reparsed), text);

      // Replayed on the unscheduled function: exactly the scheduled one.
      EXPECT_TRUE(ir::structuralEqual(replayTrace(unscheduled, scheduled.trace, seed + 1000), scheduled));
      EXPECT_TRUE(ir::structuralEqual(replayTrace(unscheduled, reparsed.trace), scheduled));

      // Each sampled decision changed alone: a different, equivalent program.
      const ir::Trace& trace = scheduled.trace;
      for (size_t i = 0; i < trace.insts.size(); ++i) {
        if (!trace.insts[i].decision) continue;
        auto other = otherDecision(unscheduled, trace, i);
        if (!other) continue;
        SCOPED_TRACE("decision of instruction " + std::to_string(i) + " (" + trace.insts[i].name + ") -> " +
                     ir::printAttrValue(*other));
        ir::PrimFunc mutated = replayMutated(unscheduled, trace, i, *other, &resampled);
        ++mutations;
        EXPECT_EQ(ir::printAttrValue(*mutated.trace.insts[i].decision), ir::printAttrValue(*other));
        EXPECT_FALSE(equalIgnoringTraces(mutated, scheduled)) << ir::printFunction(mutated);
        EXPECT_TRUE(expectSameMeaning(unscheduled, mutated)) << ir::printFunction(mutated);
        // The mutated trace replays exactly too.
        EXPECT_TRUE(ir::structuralEqual(replayTrace(unscheduled, mutated.trace), mutated));
      }
    }
    // Every case has decisions that can change.
    EXPECT_GT(mutations, kSeeds) << c.name;
    RecordProperty(std::string(c.name) + "_mutations", mutations);
    RecordProperty(std::string(c.name) + "_resampled_later_decisions", resampled);
  }
}

TEST(ScheduleTrace, SameSeedSameSchedule) {
  for (const Case& c : kCases) {
    Schedule a(parsePrim(c.text), 42), b(parsePrim(c.text), 42);
    c.schedule(a);
    c.schedule(b);
    EXPECT_EQ(ir::printFunction(a.func()), ir::printFunction(b.func())) << c.name;
  }
}

TEST(ScheduleTrace, DifferentSeedsExploreDifferentSchedules) {
  for (const Case& c : kCases) {
    std::set<std::string> programs;
    for (uint64_t seed = 0; seed < kSeeds; ++seed) {
      Schedule s(parsePrim(c.text), seed);
      c.schedule(s);
      ir::PrimFunc f = s.func();
      f.trace = {};
      programs.insert(ir::printFunction(f));
    }
    EXPECT_GT(programs.size(), 3u) << c.name;
  }
}

}  // namespace
