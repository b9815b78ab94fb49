// The tuning loop: tasks, their search spaces and what the database already
// knows; a warm-up round per task (the default rules' schedule, its mutants
// and fresh samples), then rounds of evolutionary search for the task the
// scheduler picks, until the trial or time budget is spent or every task
// stops improving. Each measured batch is appended to the database and
// trains the cost model.
#include "mlcc/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <unordered_set>

#include "mlcc/ir/printer.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/tune/cost_model.h"
#include "mlcc/tune/features.h"
#include "mlcc/tune/search_space.h"
#include "mlcc/tune/task.h"

namespace mlcc::tune {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Search: parents kept per task, candidates bred per round and generation,
// the share of a batch picked at random rather than by the model (epsilon
// greedy), the cap of a candidate's score (speedup over the default).
constexpr size_t kParents = 8;
constexpr int kPopulation = 96;
constexpr int kGenerations = 2;
constexpr double kEpsilon = 0.2;
constexpr double kMaxScore = 16;
// Task scheduler (Ansor): weight of the recent (backward) gradient against
// the optimistic one; runners (worker sets with a task's reference) kept.
constexpr double kAlpha = 0.2;
constexpr size_t kLiveRunners = 3;
// A candidate this many times slower than the task's best in its checked
// run is not timed further.
constexpr double kGiveUpFactor = 10;

struct Measured {
  Candidate cand;
  double us;
};

struct TaskState {
  Task task;
  std::optional<SearchSpace> space;
  std::unordered_set<std::string> seen;  // traces measured (this run or in the database)
  std::vector<Measured> parents;         // the fastest ok candidates, fastest first
  std::string default_text;              // the trace of the design's own decisions (the default rules')
  double default_us = 0, best_us = kInf;
  int trials = 0, rounds = 0, stale_rounds = 0;
  double last_gain = 0;  // best_us improvement of the last round, per trial
  bool done = false;
  std::string skip;
};

// Higher score first, then the earlier index (deterministic; std::sort
// rather than std::stable_sort, whose temporary buffer clang flags).
bool byScore(const std::vector<double>& scores, size_t a, size_t b) {
  return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
}

std::string fmtUs(double us) {
  char b[32];
  if (us >= 1000)
    std::snprintf(b, sizeof b, "%.2f ms", us / 1000);
  else
    std::snprintf(b, sizeof b, "%.1f us", us);
  return b;
}

class Tuner {
 public:
  Tuner(const ir::Module& m, Database& db, const TuneOptions& o)
      : db_(db), o_(o), rng_(o.seed), model_(o.seed) {
    target_text_ = o.target.str();
    std::vector<Task> tasks = extractTasks(m);
    // Shards split the tasks that have something to tune, in task order.
    int tunable = 0;
    for (auto& task : tasks) {
      TaskState s;
      s.task = std::move(task);
      s.skip = s.task.skip;
      if (s.skip.empty()) initSpace(s);
      if (s.skip.empty() && tunable++ % o.shards != o.shard) s.skip = "in another shard";
      if (s.skip.empty()) loadRecords(s);
      states_.push_back(std::move(s));
    }
  }

  TuneReport run() {
    start_ = std::chrono::steady_clock::now();
    auto budget_left = [&] {
      return trials_ < o_.trials && (o_.time_budget_s <= 0 || elapsed() < o_.time_budget_s);
    };
    // Warm-up: one round per task, in task order, each at most its share of
    // the budget (so that every task gets its default schedule timed).
    size_t waiting = 0;
    for (const auto& s : states_) waiting += s.skip.empty();
    for (size_t i = 0; i < states_.size() && budget_left(); ++i)
      if (states_[i].skip.empty())
        round(i, static_cast<int>(std::max<size_t>(1, (o_.trials - trials_) / waiting--)));
    while (budget_left()) {
      auto next = pickTask();
      if (!next) break;
      round(*next, o_.batch);
    }
    TuneReport r;
    r.trials = trials_;
    r.seconds = elapsed();
    for (const auto& s : states_)
      r.tasks.push_back({s.task.key, s.task.funcs, s.task.calls, s.task.flops, s.trials, s.default_us,
                         std::isfinite(s.best_us) ? s.best_us : 0, s.skip});
    return r;
  }

 private:
  void initSpace(TaskState& s) {
    try {
      const ir::ScheduleScript::Block* script = nullptr;
      if (o_.spaces)
        for (const auto& b : o_.spaces->blocks)
          for (const auto& f : s.task.funcs)
            if (b.func == f) script = &b;
      s.space = script ? SearchSpace::fromTrace(s.task.func, script->trace)
                       : SearchSpace::fromRules(s.task.func, o_.target);
      if (s.space->decisions() == 0) s.skip = "its schedule samples nothing to search";
    } catch (const Error& e) {
      s.skip = e.what();
    }
  }

  // What the database knows: the traces already measured, the fastest as
  // parents, the default's time.
  void loadRecords(TaskState& s) {
    if (const auto initial = s.space->initial(o_.seed)) s.default_text = initial->text;
    for (const TuningRecord& r : db_.records(s.task.key, target_text_)) {
      const std::string text = ir::printTrace(r.trace);
      s.seen.insert(text);
      if (text == s.default_text && r.status == RecordStatus::ok) s.default_us = r.medianUs();
      if (r.status != RecordStatus::ok) continue;
      if (auto c = s.space->replay(r.trace)) addParent(s, {std::move(*c), r.medianUs()});
    }
  }

  void addParent(TaskState& s, Measured m) {
    s.best_us = std::min(s.best_us, m.us);
    // After those as fast, so the order is that of arrival among equals.
    auto at = std::upper_bound(s.parents.begin(), s.parents.end(), m.us,
                               [](double us, const Measured& p) { return us < p.us; });
    s.parents.insert(at, std::move(m));
    if (s.parents.size() > kParents) s.parents.resize(kParents);
  }

  // Ansor's task scheduler: the task whose next trials are expected to cut
  // the estimated end-to-end latency (calls x best time) most.
  std::optional<size_t> pickTask() const {
    std::optional<size_t> best;
    double best_gain = -1;
    for (size_t i = 0; i < states_.size(); ++i) {
      const TaskState& s = states_[i];
      if (!s.skip.empty() || s.done || !std::isfinite(s.best_us)) continue;
      const double optimistic = s.best_us / std::max(1, s.trials);
      const double gain = s.task.calls * (kAlpha * s.last_gain + (1 - kAlpha) * optimistic);
      if (gain > best_gain) {
        best_gain = gain;
        best = i;
      }
    }
    return best;
  }

  double endToEndUs() const {
    double total = 0;
    for (const auto& s : states_)
      if (std::isfinite(s.best_us)) total += s.task.calls * s.best_us;
    return total;
  }

  // The candidates of one round: the default's decisions first (once), then
  // bred from the parents (mutations, and fresh samples), ranked by the
  // cost model once it is trained; a share picked at random.
  std::vector<Candidate> propose(TaskState& s, int count) {
    std::vector<Candidate> out;
    std::unordered_set<std::string> taken;
    auto fresh = [&](const Candidate& c) { return !s.seen.count(c.text) && !taken.count(c.text); };
    if (s.rounds == 0)
      if (auto c = s.space->initial(o_.seed); c && fresh(*c)) {
        taken.insert(c->text);
        out.push_back(std::move(*c));
      }
    std::vector<Candidate> pool;
    auto breed = [&](const std::vector<const ir::Trace*>& from, int n) {
      for (int tries = 0; static_cast<int>(pool.size()) < n && tries < n * 4; ++tries) {
        std::optional<Candidate> c;
        if (from.empty() || std::uniform_real_distribution<double>(0, 1)(rng_) < 0.1) {
          c = s.space->sample(rng_);
        } else {
          // Parents earlier in the list (faster) are picked more often.
          const size_t k = std::min<size_t>(
              from.size() - 1,
              static_cast<size_t>(std::abs(std::normal_distribution<double>(0, from.size() / 2.0)(rng_))));
          c = s.space->mutate(*from[k], rng_);
          if (c && std::uniform_real_distribution<double>(0, 1)(rng_) < 0.3)
            c = s.space->mutate(c->trace, rng_);
        }
        if (c && fresh(*c)) {
          taken.insert(c->text);
          pool.push_back(std::move(*c));
        }
      }
    };
    std::vector<const ir::Trace*> parents;
    for (const auto& p : s.parents) parents.push_back(&p.cand.trace);
    if (parents.empty() && !out.empty()) parents.push_back(&out.front().trace);
    breed(parents, kPopulation);
    std::vector<double> scores(pool.size(), 0);
    if (model_.trained()) {
      for (int g = 1; g < kGenerations; ++g) {
        scores = predict(pool);
        // The better half breeds the next generation.
        std::vector<size_t> order(pool.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return byScore(scores, a, b); });
        std::vector<ir::Trace> elite;
        for (size_t i = 0; i < order.size() / 2; ++i) elite.push_back(pool[order[i]].trace);
        std::vector<const ir::Trace*> from;
        for (const auto& t : elite) from.push_back(&t);
        breed(from, static_cast<int>(pool.size()) + kPopulation / 2);
      }
      scores = predict(pool);
    }
    std::vector<size_t> order(pool.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (model_.trained())
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return byScore(scores, a, b); });
    else
      std::shuffle(order.begin(), order.end(), rng_);
    const int by_model = model_.trained() ? static_cast<int>(count * (1 - kEpsilon)) : count;
    std::vector<bool> used(pool.size(), false);
    for (size_t i = 0; i < order.size() && static_cast<int>(out.size()) < by_model; ++i) {
      used[order[i]] = true;
      out.push_back(pool[order[i]]);
    }
    std::vector<size_t> rest;
    for (size_t i = 0; i < pool.size(); ++i)
      if (!used[i]) rest.push_back(i);
    std::shuffle(rest.begin(), rest.end(), rng_);
    for (size_t i = 0; i < rest.size() && static_cast<int>(out.size()) < count; ++i)
      out.push_back(pool[rest[i]]);
    return out;
  }

  std::vector<double> predict(const std::vector<Candidate>& cands) {
    std::vector<std::vector<float>> f;
    for (const auto& c : cands) f.push_back(extractFeatures(c.func, o_.target.cpu));
    return model_.predict(f);
  }

  Runner& runnerFor(TaskState& s) {
    for (auto it = runners_.begin(); it != runners_.end(); ++it)
      if (it->first == s.task.key) {
        runners_.splice(runners_.begin(), runners_, it);
        return *runners_.front().second;
      }
    if (runners_.size() >= kLiveRunners) runners_.pop_back();
    RunnerOptions ro = o_.runner;
    ro.num_threads = o_.target.num_cores;
    ro.mcpu = o_.target.mcpu;
    ro.mattr = o_.target.mattr;
    ro.seed = o_.seed;
    auto runner = std::make_unique<Runner>(ro);
    runner->setReference(s.task.func);
    runners_.emplace_front(s.task.key, std::move(runner));
    return *runners_.front().second;
  }

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void round(size_t index, int max_count) {
    TaskState& s = states_[index];
    const int count = std::min({o_.batch, max_count, o_.trials - trials_});
    std::vector<Candidate> cands = propose(s, count);
    ++s.rounds;
    if (cands.empty()) {
      s.done = true;  // the space is exhausted
      log("@" + s.task.funcs[0] + ": no new candidates; done");
      return;
    }
    std::vector<ir::PrimFunc> funcs;
    for (auto& c : cands) {
      c.func.name = s.task.func.name;
      funcs.push_back(c.func);
    }
    std::vector<Measurement> results;
    if (o_.measure) {
      results = o_.measure(s.task, funcs);
    } else {
      try {
        results = runnerFor(s).measure(funcs, std::isfinite(s.best_us) ? kGiveUpFactor * s.best_us : 0);
      } catch (const Error& e) {
        s.skip = std::string("its reference does not run: ") + e.what();
        log("@" + s.task.funcs[0] + ": not tuned: " + s.skip);
        return;
      }
    }
    if (results.size() != cands.size())
      throw Error("internal error: the runner measured " + std::to_string(results.size()) + " of " +
                  std::to_string(cands.size()) + " candidates");
    const double before = s.best_us;
    std::vector<std::vector<float>> features;
    std::vector<double> us;
    for (size_t i = 0; i < cands.size(); ++i) {
      const Measurement& m = results.at(i);
      TuningRecord r;
      r.workload = s.task.key;
      r.target = target_text_;
      r.func = s.task.funcs[0];
      r.trace = cands[i].trace;
      r.status = m.status;
      r.run_us = m.run_us;
      r.flops = s.task.flops;
      r.error = m.error;
      db_.append(r);
      s.seen.insert(cands[i].text);
      ++s.trials;
      ++trials_;
      features.push_back(extractFeatures(cands[i].func, o_.target.cpu));
      us.push_back(r.medianUs());
      if (m.status != RecordStatus::ok) {
        log("@" + s.task.funcs[0] + ": candidate " + statusName(m.status) + ": " + m.error);
        continue;
      }
      if (cands[i].text == s.default_text) s.default_us = r.medianUs();
      addParent(s, {cands[i], r.medianUs()});
    }
    // Scores: speedup over the default schedule (or over the first ok
    // candidate), so that tasks of any size train one model.
    const double base = s.default_us > 0 ? s.default_us : s.best_us;
    std::vector<double> scores;
    for (double t : us)
      scores.push_back(std::isfinite(t) && std::isfinite(base) ? std::min(kMaxScore, base / t) : 0);
    model_.update(features, scores);

    s.last_gain = std::isfinite(before) && s.best_us < before ? (before - s.best_us) / cands.size() : 0;
    s.stale_rounds = std::isfinite(before) && s.best_us >= before ? s.stale_rounds + 1 : 0;
    if (o_.patience > 0 && s.stale_rounds >= o_.patience) {
      s.done = true;
      log("@" + s.task.funcs[0] + ": no better schedule in " + std::to_string(o_.patience) + " rounds; done");
    }
    report(s);
  }

  void report(const TaskState& s) {
    const double elapsed_s = elapsed(), e2e = endToEndUs();
    // The curve starts once every task to tune has a time (after the
    // warm-up rounds): before, the estimate would leave tasks out.
    bool all_timed = true;
    for (const auto& t : states_) all_timed = all_timed && (!t.skip.empty() || std::isfinite(t.best_us));
    if (o_.curve && all_timed) o_.curve(trials_, elapsed_s, e2e);
    if (!o_.progress) return;
    size_t task_no = 0, tuned = 0;
    for (size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].skip.empty()) continue;
      ++tuned;
      if (&states_[i] == &s) task_no = tuned;
    }
    char line[512];
    const double gflops = std::isfinite(s.best_us) && s.task.flops > 0 ? s.task.flops / s.best_us / 1e3 : 0;
    const double speedup = s.default_us > 0 && std::isfinite(s.best_us) ? s.default_us / s.best_us : 1;
    const double left = trials_ > 0 ? elapsed_s / trials_ * (o_.trials - trials_) : 0;
    std::snprintf(line, sizeof line,
                  "task %zu/%zu @%s: %d trials, best %s (%.1f GFLOPS, %.2fx default); %d/%d trials, est. %s "
                  "end to end, %.0f s left",
                  task_no, tuned, s.task.funcs[0].c_str(), s.trials, fmtUs(s.best_us).c_str(), gflops,
                  speedup, trials_, o_.trials, fmtUs(e2e).c_str(), left);
    o_.progress(line);
  }

  void log(const std::string& msg) const {
    if (o_.log) o_.log(msg);
  }

  Database& db_;
  const TuneOptions& o_;
  std::string target_text_;
  std::mt19937_64 rng_;
  CostModel model_;
  std::vector<TaskState> states_;
  std::chrono::steady_clock::time_point start_;
  std::list<std::pair<std::string, std::unique_ptr<Runner>>> runners_;  // most recently used first
  int trials_ = 0;
};

}  // namespace

TuneReport tuneModule(const ir::Module& m, Database& db, const TuneOptions& options) {
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards)
    throw Error("shard " + std::to_string(options.shard) + "/" + std::to_string(options.shards) +
                " is not valid");
  return Tuner(m, db, options).run();
}

std::vector<std::string> applyDatabase(ir::Module& m, const Database& db, const target::Target& target,
                                       const std::function<void(const std::string&)>& log) {
  std::vector<std::string> applied;
  const std::string target_text = target.str();
  for (auto& fn : m.functions) {
    auto* f = std::get_if<ir::PrimFunc>(&fn);
    if (!f || !f->trace.empty()) continue;
    const auto best = db.best(workloadKey(*f), target_text);
    if (!best) continue;
    try {
      *f = schedule::replayTrace(*f, best->trace);
      applied.push_back(f->name);
    } catch (const Error& e) {
      if (log)
        log("@" + f->name + ": the database's best schedule does not replay (" + e.what() +
            "); left to the default rules");
    }
  }
  return applied;
}

}  // namespace mlcc::tune
