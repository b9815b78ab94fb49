// mlcc-tune: search schedules for a module's prim funcs (evolutionary search
// over schedule traces, a learned cost model, real measurements in worker
// processes), record every measurement in a tuning database, and write the
// module with the best schedules applied (the default rules for the rest).
// `mlcc-tune merge` joins databases; `mlcc-tune worker` is the measuring
// process the tuner starts (not for users).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "mlcc/schedule/rules.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"
#include "mlcc/target/target.h"
#include "mlcc/transform/ir_tool.h"
#include "mlcc/tune/tuner.h"

namespace {

using namespace mlcc;

std::string selfExe() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw Error("cannot find this program's path (/proc/self/exe) to start measuring workers");
  return std::string(path, n);
}

// "I/N" → {I, N}.
std::pair<int, int> parseShard(const std::string& text) {
  int i = -1, n = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &rest) != 2 || n < 1 || i < 0 || i >= n)
    throw CLI::ValidationError("--shard", "'" + text + "' is not I/N with 0 <= I < N");
  return {i, n};
}

std::string fmtMs(double us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", us / 1000);
  return b;
}

void printReport(const tune::TuneReport& r) {
  std::fprintf(stderr, "%-40s %6s %7s %12s %12s %8s\n", "prim func", "calls", "trials", "default ms",
               "best ms", "speedup");
  for (const auto& t : r.tasks) {
    std::string name =
        "@" + t.funcs[0] + (t.funcs.size() > 1 ? " (+" + std::to_string(t.funcs.size() - 1) + ")" : "");
    if (!t.skip.empty()) {
      std::fprintf(stderr, "%-40s %6lld  not tuned: %s\n", name.c_str(), static_cast<long long>(t.calls),
                   t.skip.c_str());
      continue;
    }
    const double speedup = t.default_us > 0 && t.best_us > 0 ? t.default_us / t.best_us : 0;
    std::fprintf(stderr, "%-40s %6lld %7d %12s %12s %7.2fx\n", name.c_str(), static_cast<long long>(t.calls),
                 t.trials, t.default_us > 0 ? fmtMs(t.default_us).c_str() : "-",
                 t.best_us > 0 ? fmtMs(t.best_us).c_str() : "-", speedup);
  }
  std::fprintf(stderr, "%d trials in %.1f s\n", r.trials, r.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "worker") return tune::workerMain(0, 1);
  CLI::App app{
      "mlcc-tune: search fast schedules for the prim funcs of a legalized module (evolutionary search, "
      "an XGBoost cost model, measurements in separate processes), record them in a tuning database, and "
      "write the module with the best schedules applied.",
      "mlcc-tune"};
  app.footer(R"(Examples:
  mlcc-tune lowered.ir --target llvm --db tune.db --trials 1000 -o tuned.ir
  mlcc-tune lowered.ir --target llvm --db tune.db --trials 0 -o tuned.ir       # apply the database only
  mlcc-tune lowered.ir --target "llvm -num-cores=1" --db tune.db --time-budget 600 -o tuned.ir
  mlcc-tune lowered.ir --target llvm --db part0.db --trials 500 --shard 0/2 -o /dev/null   # half the tasks
  mlcc-tune merge part0.db part1.db -o tune.db
  mlcc-tune lowered.ir --target llvm --db tune.db --trials 64 --space dense.sched -o tuned.ir

Each distinct prim func (by structural hash) is a task. Every measured candidate is appended to the
database at once: an interrupted run resumes where it stopped, measuring nothing twice. The output
gets, for each prim func, the fastest schedule in the database for this target (its trace replayed),
and the default rules where there is none. A candidate that crashes, hangs (--timeout) or computes a
different result than the unscheduled function on random inputs is recorded as failed, never used.
--space names a schedule script whose blocks (schedule @func { ... }, with sample_perfect_tile,
sample_categorical, sample_compute_location) are the search spaces of those functions, in place of
the default rules' schedules.)");

  std::string input = "-", output = "-", target_text, db_path, space_path, log_path, shard_text;
  int trials = 0, jobs = 1, batch = 16, patience = 4;
  double time_budget = 0, timeout = 30;
  uint64_t seed = 0;
  bool verbose = false, quiet = false;
  app.add_option("input", input, "IR file: a legalized module ('-' or none: stdin)");
  app.add_option("-o,--output", output, "IR output file ('-': stdout)");
  app.add_option("--target", target_text, "Target, e.g. 'llvm' or 'llvm -num-cores=1' (required)");
  app.add_option("--db", db_path, "The tuning database (JSON lines; created when missing; required)");
  app.add_option("--trials", trials, "Candidates to measure in all (0: only apply the database)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--time-budget", time_budget, "Stop measuring after this many seconds (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "Seed of the search and of the random inputs")->capture_default_str();
  app.add_option("-j,--jobs", jobs, "Worker processes compiling candidates in parallel")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--batch", batch, "Candidates measured per search round")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--patience", patience,
                 "Rounds without a better schedule after which a task stops (0: never; spend every trial)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--timeout", timeout, "Seconds a candidate may take to build or to run before it fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--shard", shard_text,
                 "I/N: tune only every N-th of the tasks with something to tune, from the I-th (0-based); "
                 "merge the databases after");
  app.add_option("--space", space_path,
                 "Schedule script whose blocks are the search spaces of their prim funcs");
  app.add_option("--log", log_path,
                 "Write the tuning curve (trials, seconds, estimated end-to-end ms) as CSV");
  app.add_flag("-v,--verbose", verbose, "Say what happens to each task and each failed candidate");
  app.add_flag("-q,--quiet", quiet, "No progress output and no report");

  CLI::App* merge = app.add_subcommand("merge", "Merge tuning databases into one");
  std::vector<std::string> merge_inputs;
  std::string merge_output;
  merge->add_option("databases", merge_inputs, "Databases to merge")->required();
  merge->add_option("-o,--output", merge_output, "The merged database (written atomically)")->required();

  std::optional<target::Target> target;
  std::pair<int, int> shard{0, 1};
  auto check_args = [&] {
    if (!merge->parsed()) {
      if (target_text.empty()) throw CLI::RequiredError("--target");
      if (db_path.empty()) throw CLI::RequiredError("--db");
    }
    if (!target_text.empty()) target = target::Target::parse(target_text);
    if (target && target->kind != target::Target::Kind::llvm)
      throw Error("--target " + target_text +
                  ": only llvm targets can be tuned yet (CUDA tuning is not supported)");
    if (!shard_text.empty()) shard = parseShard(shard_text);
  };
  return runTool(
      app, argc, argv,
      [&]() -> int {
        if (merge->parsed()) {
          tune::Database::merge(merge_inputs, merge_output);
          return 0;
        }
        std::optional<ir::ScheduleScript> spaces;
        if (!space_path.empty())
          spaces = ir::parseScheduleScript(readInput(space_path), displayName(space_path));
        const bool show_progress = !quiet && isatty(STDERR_FILENO);
        std::ofstream log_file;
        transform::IrToolOptions run;
        run.input = input;
        run.output = output;
        run.invalid_result = "internal error: the tuned module does not verify";
        run.transform = [&](ir::Module& m) {
          tune::Database db = trials > 0 ? tune::Database::open(db_path) : tune::Database::read(db_path);
          if (trials > 0) {
            tune::TuneOptions o;
            o.target = *target;
            o.trials = trials;
            o.time_budget_s = time_budget;
            o.seed = seed;
            o.batch = batch;
            o.patience = patience;
            o.shard = shard.first;
            o.shards = shard.second;
            o.spaces = spaces ? &*spaces : nullptr;
            o.runner.worker = {selfExe(), "worker"};
            o.runner.jobs = jobs;
            o.runner.timeout_s = timeout;
            if (show_progress)
              o.progress = [](const std::string& line) { std::cerr << "\r\x1b[K" << line << std::flush; };
            if (verbose && !quiet)
              o.log = [&](const std::string& msg) {
                if (show_progress) std::cerr << "\r\x1b[K";
                std::cerr << msg << "\n";
              };
            if (!log_path.empty()) {
              log_file.open(log_path);
              if (!log_file) throw Error(log_path + ": cannot open the log for writing");
              log_file << "trials,seconds,end_to_end_ms\n";
              o.curve = [&](int n, double s, double us) {
                log_file << n << "," << s << "," << us / 1000 << std::endl;
              };
            }
            const tune::TuneReport report = tune::tuneModule(m, db, o);
            if (show_progress) std::cerr << "\r\x1b[K";
            if (!quiet) printReport(report);
          }
          const auto applied = tune::applyDatabase(m, db, *target, [&](const std::string& msg) {
            if (!quiet) std::cerr << "mlcc-tune: warning: " << msg << "\n";
          });
          const auto rules = schedule::applyDefaultRules(m, *target, seed);
          if (verbose && !quiet) {
            for (const auto& f : applied) std::cerr << "@" << f << ": tuned (from the database)\n";
            for (const auto& r : rules)
              if (r.rule != "already scheduled") std::cerr << "@" << r.func << ": " << r.rule << "\n";
          }
        };
        return transform::runIrTool(run);
      },
      check_args);
}
