// Whether each parallel loop of a model is worth the pool's threads,
// measured on this machine as the model runs: the first kSamples calls of
// a loop (its outlined body and iteration count) run serially, timed; from
// then on it runs serially when the fastest of them took under
// kMinParallelNs, on the pool otherwise. The schedule marks a loop parallel
// from its work (the target's parallel grain, in multiply-adds), but what
// that work takes against a fork and join (~0.3-1 us with the workers
// spinning, more when they have to wake) depends on the machine: on a
// 2-core Xeon with twice the FMA throughput per core of the EPYC the grain
// was set on, a transformer's denses of 128-200 Ki multiply-adds (1.5-2 us)
// ran slower at 2 threads than at 1. (Timing the pool's runs as well, to
// take the faster way, chose wrongly: the first runs on the pool come
// right after its workers start.) No allocation per call; loops past
// kSites run on the pool.
#pragma once

#include <array>
#include <cstdint>

#include "thread_pool.h"

namespace mlcc::rt {

class ParallelChoice {
 public:
  static constexpr int kSamples = 3;
  static constexpr int64_t kMinParallelNs = 3000;
  static constexpr size_t kSites = 1024;

  // Runs fn over [0, n) on `pool` or serially, as measured for (fn, n).
  // One call at a time (the pool's caller).
  void run(ThreadPool& pool, int64_t n, ChunkFn fn, void* closure);

 private:
  struct Site {
    ChunkFn fn = nullptr;
    int64_t n = 0;
    int serial_runs = 0;
    int64_t serial_ns = INT64_MAX;  // the fastest
    enum class Way : uint8_t { measuring, serial, pool } way = Way::measuring;
  };
  Site* find(ChunkFn fn, int64_t n);  // null when the table is full
  std::array<Site, kSites> sites_{};
};

}  // namespace mlcc::rt
