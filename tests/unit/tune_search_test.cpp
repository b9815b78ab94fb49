// The tuner's machinery, deterministically: task extraction, the search
// space (every candidate replays and means what the unscheduled function
// means), and the search loop with a synthetic measurement source: budget,
// database records, resume without measuring twice, shards, and
// applyDatabase reproducing the same module byte for byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/tune/search_space.h"
#include "mlcc/tune/task.h"
#include "mlcc/tune/tuner.h"
#include "schedule_check.h"
#include "testlib.h"

namespace mlcc::tune {
namespace {

using test::fixture;

// A graph calling @mm twice and @mm_copy (the same program under other
// names) once, @mm2 (another matmul) and @rowsum (whose schedule samples
// nothing: no task to tune).
ir::Module tasksModule() {
  std::string mm = fixture("matmul_64.ir");
  mm = mm.substr(mm.find("prim @"));
  std::string copy = mm;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"@mm", "@mm_copy"}, {"%A", "%P"}, {"%i", "%ii"}})
    for (size_t p = 0; (p = copy.find(from, p)) != std::string::npos; p += to.size())
      copy.replace(p, from.size(), to);
  std::string mm2 = mm;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"@mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64])",
                                            "@mm2(%A: f32[32, 64], %B: f32[64, 16], %C: f32[32, 16])"},
        {"%i in 0..64", "%i in 0..32"},
        {"%j in 0..64", "%j in 0..16"},
        {"spatial(64, %i)", "spatial(32, %i)"},
        {"spatial(64, %j)", "spatial(16, %j)"}}) {
    const size_t p = mm2.find(from);
    if (p == std::string::npos) throw std::runtime_error("matmul_64.ir changed: no '" + from + "'");
    mm2.replace(p, from.size(), to);
  }
  // 30 columns: no multiple of a vector, so the reduction rule does not
  // split (and sample) its row reduction for the vector's partial sums.
  std::string rowsum = fixture("row_sum.ir");
  rowsum = rowsum.substr(rowsum.find("prim @"));
  for (auto [from, to] : {std::pair<std::string, std::string>{"f32[16, 32]", "f32[16, 30]"},
                          {"0..32", "0..30"},
                          {"reduce(32,", "reduce(30,"}}) {
    const size_t p = rowsum.find(from);
    if (p == std::string::npos) throw std::runtime_error("row_sum.ir changed: no '" + from + "'");
    rowsum.replace(p, from.size(), to);
  }
  const std::string graph =
      R"(graph @main(%a: f32[64, 64], %b: f32[64, 64], %r: f32[16, 30], %a2: f32[32, 64], %b2: f32[64, 16]) -> (f32[64, 64], f32[16], f32[32, 16]) {
  dataflow {
    %c: f32[64, 64] = call_tir @mm(%a, %b)
    %d: f32[64, 64] = call_tir @mm(%c, %b)
    %e: f32[64, 64] = call_tir @mm_copy(%d, %b)
    %s: f32[16] = call_tir @rowsum(%r)
    %f: f32[32, 16] = call_tir @mm2(%a2, %b2)
  }
  return (%e, %s, %f)
}
)";
  return ir::parseModule("mlcc.ir 1\n" + graph + mm + copy + rowsum + mm2, "two_tasks.ir");
}

target::Target cpu() { return target::Target::parse("llvm -num-cores=2"); }

// A synthetic time: 100 us, plus 10 for each perfect tile whose innermost
// factor is not 4, plus 1 per factor of the outermost level: the search
// should find better than the default rules' decisions.
double syntheticUs(const ir::Trace& t) {
  double us = 100;
  for (const auto& inst : t.insts)
    if (inst.name == "sample_perfect_tile") {
      const auto f = inst.decision->asInts();
      if (f.back() != 4) us += 10;
      us += static_cast<double>(f.front());
    }
  return us;
}

TuneOptions syntheticOptions(int trials, uint64_t seed = 7) {
  TuneOptions o;
  o.target = cpu();
  o.trials = trials;
  o.seed = seed;
  o.batch = 8;
  o.patience = 100;
  o.measure = [](const Task&, const std::vector<ir::PrimFunc>& funcs) {
    std::vector<Measurement> out;
    for (const auto& f : funcs) {
      const double us = syntheticUs(f.trace);
      out.push_back({RecordStatus::ok, {us, us * 1.01, us * 0.99}, ""});
    }
    return out;
  };
  return o;
}

struct TempDb {
  std::string path;
  explicit TempDb(const std::string& name) : path(testing::TempDir() + "/" + name) {
    std::filesystem::remove(path);
  }
  ~TempDb() { std::filesystem::remove(path); }
};

TEST(TuneTasks, SamePrograms) {
  const ir::Module m = tasksModule();
  const std::vector<Task> tasks = extractTasks(m);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].funcs, (std::vector<std::string>{"mm", "mm_copy"}));
  EXPECT_EQ(tasks[0].calls, 3);
  EXPECT_EQ(tasks[0].flops, 2.0 * 64 * 64 * 64);
  EXPECT_EQ(tasks[0].key, workloadKey(*m.findPrim("mm_copy")));
  EXPECT_EQ(tasks[0].key.size(), 16u);
  EXPECT_EQ(tasks[1].funcs, (std::vector<std::string>{"rowsum"}));
  EXPECT_EQ(tasks[1].calls, 1);
  EXPECT_EQ(tasks[2].funcs, (std::vector<std::string>{"mm2"}));
  EXPECT_EQ(tasks[2].flops, 2.0 * 32 * 16 * 64);
  EXPECT_NE(tasks[0].key, tasks[1].key);
  EXPECT_NE(tasks[0].key, tasks[2].key);
  EXPECT_TRUE(tasks[0].skip.empty());
  // A scheduled function is not a task to tune.
  ir::Module scheduled = m;
  schedule::applyDefaultRules(scheduled, cpu());
  EXPECT_EQ(extractTasks(scheduled)[0].skip, "already scheduled");
}

TEST(TuneTasks, SymbolicShapesAreNotTuned) {
  const ir::Module m = test::parseVerified(R"(prim @scale(%x: f32[n, 8], %y: f32[n, 8]) {
  for %i in 0..n {
    for %j in 0..8 {
      block "y" (%vi = spatial(n, %i), %vj = spatial(8, %j)) {
        reads(%x[%vi, %vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %x[%vi, %vj] * 2.0
      }
    }
  }
})");
  EXPECT_EQ(extractTasks(m).at(0).skip, "symbolic shapes");
}

TEST(TuneSearchSpace, CandidatesReplayAndKeepTheMeaning) {
  const ir::Module m = test::parseVerified(fixture("matmul_64.ir"));
  const ir::PrimFunc& mm = *m.findPrim("mm");
  const SearchSpace space = SearchSpace::fromRules(mm, cpu());
  EXPECT_GT(space.decisions(), 0);
  // The design's own decisions are the default rules' schedule.
  const auto initial = space.initial();
  ASSERT_TRUE(initial);
  EXPECT_TRUE(ir::structuralEqual(initial->func, schedule::scheduleWithRules(mm, cpu())->func));
  std::mt19937_64 rng(3);
  std::set<std::string> texts{initial->text};
  int mutants = 0;
  for (int i = 0; i < 12; ++i) {
    auto c = space.mutate(initial->trace, rng);
    if (!c) continue;
    ++mutants;
    texts.insert(c->text);
    EXPECT_EQ(c->text, ir::printTrace(c->func.trace));
    test::expectSameMeaning(mm, c->func, 1e-4);
    // A candidate's trace replays to itself.
    EXPECT_TRUE(ir::structuralEqual(schedule::replayTrace(mm, c->trace), c->func));
  }
  EXPECT_GE(mutants, 8);
  EXPECT_GE(texts.size(), 5u);  // mutations change decisions
  for (int i = 0; i < 4; ++i) {
    auto c = space.sample(rng);
    ASSERT_TRUE(c);
    test::expectSameMeaning(mm, c->func, 1e-4);
  }
}

TEST(TuneSearchSpace, MutatedTilesStayPerfect) {
  const ir::Module m = test::parseVerified(fixture("matmul_64.ir"));
  const SearchSpace space = SearchSpace::fromRules(*m.findPrim("mm"), cpu());
  std::mt19937_64 rng(11);
  auto c = space.initial();
  for (int i = 0; i < 30 && c; ++i) {
    auto next = space.mutate(c->trace, rng);
    if (!next) continue;
    c = next;
    for (const auto& inst : c->trace.insts)
      if (inst.name == "sample_perfect_tile") {
        int64_t product = 1;
        for (int64_t f : inst.decision->asInts()) product *= f;
        EXPECT_EQ(product, 64) << c->text;
      }
  }
}

TEST(TuneSearchSpace, RefusesASpaceWithNothingToSearch) {
  const ir::Module m = test::parseVerified(fixture("matmul_64.ir"));
  const SearchSpace s = SearchSpace::fromTrace(*m.findPrim("mm"), {});
  EXPECT_EQ(s.decisions(), 0);
}

TEST(Tuner, SpendsTheBudgetAndFindsBetterThanTheDefault) {
  TempDb file("tune_budget.db");
  Database db = Database::open(file.path);
  const ir::Module m = tasksModule();
  const TuneReport r = tuneModule(m, db, syntheticOptions(48));
  EXPECT_EQ(r.trials, 48);
  EXPECT_EQ(db.size(), 48u);
  ASSERT_EQ(r.tasks.size(), 3u);
  EXPECT_NE(r.tasks[1].skip.find("samples nothing to search"), std::string::npos) << r.tasks[1].skip;
  EXPECT_EQ(r.tasks[1].trials, 0);
  int sum = 0;
  for (const auto& t : r.tasks) {
    if (!t.skip.empty()) continue;
    sum += t.trials;
    EXPECT_GT(t.trials, 0) << "every task gets a warm-up round";
    EXPECT_GT(t.default_us, 0);
    EXPECT_LE(t.best_us, t.default_us);
  }
  EXPECT_EQ(sum, 48);
  // The matmul's default has 10 tiles with other innermost factors; the
  // search must find a faster one.
  EXPECT_LT(r.tasks[0].best_us, r.tasks[0].default_us);
  // No trace was measured twice.
  std::set<std::string> texts;
  for (const auto& t : extractTasks(m))
    for (const auto& rec : db.records(t.key, cpu().str()))
      EXPECT_TRUE(texts.insert(ir::printTrace(rec.trace)).second);
}

TEST(Tuner, PatienceStopsTasksThatDoNotImprove) {
  const ir::Module m = tasksModule();
  TuneOptions o = syntheticOptions(200);
  o.measure = [](const Task&, const std::vector<ir::PrimFunc>& funcs) {
    return std::vector<Measurement>(funcs.size(), {RecordStatus::ok, {100.0}, ""});  // nothing is better
  };
  o.patience = 2;
  TempDb a("tune_patience.db");
  Database da = Database::open(a.path);
  const TuneReport stopped = tuneModule(m, da, o);
  // The warm-up round, then two rounds without a better time, per task.
  EXPECT_EQ(stopped.trials, 2 * 3 * o.batch);
  o.patience = 0;  // never stop: the whole budget
  TempDb b("tune_no_patience.db");
  Database db = Database::open(b.path);
  EXPECT_EQ(tuneModule(m, db, o).trials, 200);
}

TEST(Tuner, ResumesWithoutMeasuringTwice) {
  TempDb file("tune_resume.db");
  const ir::Module m = tasksModule();
  std::set<std::string> measured;
  TuneOptions o = syntheticOptions(24);
  auto inner = o.measure;
  o.measure = [&](const Task& t, const std::vector<ir::PrimFunc>& funcs) {
    for (const auto& f : funcs) EXPECT_TRUE(measured.insert(t.key + ir::printTrace(f.trace)).second);
    return inner(t, funcs);
  };
  {
    Database db = Database::open(file.path);
    tuneModule(m, db, o);
  }
  Database db = Database::open(file.path);
  EXPECT_EQ(db.size(), 24u);
  const TuneReport r = tuneModule(m, db, o);  // the same seed: it would propose the same traces again
  EXPECT_EQ(r.trials, 24);
  EXPECT_EQ(Database::read(file.path).size(), 48u);
  EXPECT_EQ(measured.size(), 48u);
}

TEST(Tuner, ShardsSplitTheTasks) {
  const ir::Module m = tasksModule();
  std::set<std::string> seen;
  for (int shard = 0; shard < 2; ++shard) {
    TempDb file("tune_shard.db");
    Database db = Database::open(file.path);
    TuneOptions o = syntheticOptions(16);
    o.shard = shard;
    o.shards = 2;
    const TuneReport r = tuneModule(m, db, o);
    int tuned = 0;
    for (const auto& t : r.tasks)
      if (t.skip.empty()) {
        ++tuned;
        EXPECT_TRUE(seen.insert(t.key).second) << "a task in two shards";
      } else if (t.funcs[0] != "rowsum") {
        EXPECT_EQ(t.skip, "in another shard");
      }
    EXPECT_EQ(tuned, 1);
  }
  EXPECT_EQ(seen.size(), 2u);
  Database db = Database::open(testing::TempDir() + "/tune_shard_bad.db");
  TuneOptions bad = syntheticOptions(4);
  bad.shard = 2;
  bad.shards = 2;
  EXPECT_THROW(tuneModule(m, db, bad), Error);
}

TEST(Tuner, ApplyReplaysTheBestRecordIdentically) {
  TempDb file("tune_apply.db");
  const ir::Module m = tasksModule();
  {
    Database db = Database::open(file.path);
    tuneModule(m, db, syntheticOptions(32));
  }
  const Database db = Database::read(file.path);
  ir::Module a = m, b = m;
  const auto applied = applyDatabase(a, db, cpu());
  applyDatabase(b, db, cpu());
  EXPECT_EQ(applied, (std::vector<std::string>{"mm", "mm_copy", "mm2"}));
  EXPECT_EQ(ir::printModule(a), ir::printModule(b));
  // Each function has the best record's schedule, and its meaning.
  for (const auto& t : extractTasks(m)) {
    const auto best = db.best(t.key, cpu().str());
    if (t.funcs[0] == "rowsum") {
      EXPECT_FALSE(best);
      continue;
    }
    ASSERT_TRUE(best);
    for (const auto& name : t.funcs) {
      EXPECT_EQ(ir::printTrace(a.findPrim(name)->trace), ir::printTrace(best->trace));
      test::expectSameMeaning(*m.findPrim(name), *a.findPrim(name), 1e-4);
    }
  }
  // Another target's records are not used.
  ir::Module c = m;
  EXPECT_TRUE(applyDatabase(c, db, target::Target::parse("llvm -num-cores=1")).empty());
}

TEST(Tuner, FailedCandidatesNeverWin) {
  TempDb file("tune_failed.db");
  const ir::Module m = tasksModule();
  TuneOptions o = syntheticOptions(24);
  int n = 0;
  o.measure = [&](const Task&, const std::vector<ir::PrimFunc>& funcs) {
    std::vector<Measurement> out;
    for (const auto& f : funcs) {
      // Every third candidate fails (after the defaults), as a crash would.
      if (n++ % 3 == 2)
        out.push_back({RecordStatus::crash, {}, "worker killed by signal 11 (SIGSEGV)"});
      else
        out.push_back({RecordStatus::ok, {syntheticUs(f.trace)}, ""});
    }
    return out;
  };
  Database db = Database::open(file.path);
  tuneModule(m, db, o);
  for (const auto& t : extractTasks(m)) {
    const auto best = db.best(t.key, cpu().str());
    if (t.funcs[0] == "rowsum") continue;
    ASSERT_TRUE(best);
    EXPECT_EQ(best->status, RecordStatus::ok);
  }
}

}  // namespace
}  // namespace mlcc::tune
