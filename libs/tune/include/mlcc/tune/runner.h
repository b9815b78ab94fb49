// The builder and runner: measures candidate prim funcs in worker processes
// (`mlcc-tune worker`, reading requests on stdin), so that a candidate that
// crashes, hangs or computes a wrong result costs the tuner nothing but that
// candidate. The workers compile with the same LLVM path as mlcc-codegen (a
// JitKernel), in parallel (`jobs` workers), then time the candidates one at
// a time (only one worker runs while timing).
//
// Before a candidate's time counts it runs once on random inputs (seeded,
// the same for every candidate of a task) and every parameter buffer must
// match the reference's (the task's unscheduled function, compiled with
// bounds checks) within a tolerance; then it is timed: a warm-up call,
// then `repeats` samples, each of as many calls as take `min_sample_ms`
// and each with the buffers at other 64-byte offsets within a page (a
// schedule fast at one placement only must not win on it),
// with the target's thread count. A worker that dies or exceeds `timeout_s`
// is killed and replaced.
//
//   Runner runner({.worker = {"/path/mlcc-tune", "worker"}, .jobs = 2});
//   runner.setReference(task.func);          // throws when the reference cannot run
//   std::vector<Measurement> m = runner.measure(candidates);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "mlcc/tune/database.h"

namespace mlcc::tune {

struct RunnerOptions {
  std::vector<std::string> worker;  // the worker's argv: {exe, "worker"}
  int jobs = 1;                     // worker processes (parallel builds)
  int num_threads = 1;              // threads of the timed runs (the target's cores)
  std::string mcpu, mattr;          // the CPU to compile for (codegen::LLVMOptions)
  double timeout_s = 30;            // per build and per measurement
  int repeats = 5;
  double min_sample_ms = 2;
  uint64_t seed = 0;  // of the random inputs
};

struct Measurement {
  RecordStatus status = RecordStatus::ok;
  std::vector<double> run_us;  // microseconds per call, one per sample (ok only)
  std::string error;           // unless ok
  double build_ms = 0;         // the worker's compile time (0 when it was not built)
};

class Runner {
 public:
  explicit Runner(RunnerOptions options);
  ~Runner();
  // The function whose results candidates must reproduce (the task's
  // unscheduled prim func). Throws mlcc::Error when it cannot be compiled
  // or run (e.g. it reads out of bounds on random inputs, or has symbolic
  // shapes): such a task cannot be tuned.
  void setReference(const ir::PrimFunc& reference);
  // Builds and measures each candidate (scheduled forms of the reference).
  // A candidate whose checked run takes longer than `give_up_us` (> 0) is
  // not timed further: its run_us is that one call (it cannot win, and a
  // schedule 100x slower than the best would spend the time budget).
  std::vector<Measurement> measure(const std::vector<ir::PrimFunc>& candidates, double give_up_us = 0);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The worker's loop (`mlcc-tune worker`): reads requests from `in` until
// EOF, answers on `out`. Returns the exit code.
int workerMain(int in_fd, int out_fd);

}  // namespace mlcc::tune
