// The tuner (mlcc-tune): for each task of a module, an evolutionary search
// over its search space guided by the cost model, with real measurements
// (runner.h) recorded in the database (database.h) as they arrive, and a
// task scheduler that gives the trial budget to the task whose improvement
// reduces the estimated end-to-end latency most (Ansor's gradient). Then
// applyDatabase writes the best schedules into the module.
//
//   TuneOptions o;  o.target = Target::parse("llvm"); o.trials = 1000;
//   o.runner.worker = {"/usr/bin/mlcc-tune", "worker"};
//   Database db = Database::open("tune.db");
//   TuneReport r = tuneModule(module, db, o);
//   applyDatabase(module, db, o.target);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/parser.h"
#include "mlcc/target/target.h"
#include "mlcc/tune/database.h"
#include "mlcc/tune/runner.h"
#include "mlcc/tune/task.h"

namespace mlcc::tune {

struct TuneOptions {
  target::Target target;
  int trials = 0;            // measured candidates in all (0: none, apply only)
  double time_budget_s = 0;  // stop after this long (0: no limit)
  uint64_t seed = 0;
  int batch = 16;  // candidates measured per search round
  // Tune the tasks with something to tune whose index among them % shards == shard.
  int shard = 0, shards = 1;
  // Rounds without a better candidate after which a task stops (0: never;
  // the run then spends the whole budget).
  int patience = 4;
  // Hand-written search spaces: schedule-script blocks by prim func name.
  const ir::ScheduleScript* spaces = nullptr;
  RunnerOptions runner;  // worker, jobs; threads, CPU and seed are set from the target and seed
  // Progress: called after each measured batch with a one-line summary.
  std::function<void(const std::string&)> progress;
  // Verbose messages (a task skipped, a candidate failed).
  std::function<void(const std::string&)> log;
  // Replaces the runner (tests: a recorded or synthetic measurement source).
  std::function<std::vector<Measurement>(const Task&, const std::vector<ir::PrimFunc>&)> measure;
  // Tuning curve: called after each batch once every task to tune has been
  // timed (trials so far, seconds since the start, estimated end-to-end us:
  // the sum over tasks of calls x best time).
  std::function<void(int, double, double)> curve;
};

struct TaskReport {
  std::string key;
  std::vector<std::string> funcs;
  int64_t calls = 0;
  double flops = 0;
  int trials = 0;         // measured this run
  double default_us = 0;  // the default rules' schedule (0: not measured)
  double best_us = 0;     // the best in the database (0: none)
  std::string skip;       // why it was not tuned
};

struct TuneReport {
  std::vector<TaskReport> tasks;
  int trials = 0;
  double seconds = 0;
};

TuneReport tuneModule(const ir::Module& m, Database& db, const TuneOptions& options);

// For each unscheduled prim func with an ok record in `db` for `target`:
// replays the best record's trace on it. Returns the names of the functions
// scheduled so (the others are left for the default rules). A record whose
// trace no longer replays is skipped with a message to `log`.
std::vector<std::string> applyDatabase(ir::Module& m, const Database& db, const target::Target& target,
                                       const std::function<void(const std::string&)>& log = {});

}  // namespace mlcc::tune
