// The thread pool behind mlcc_rt_parallel_for: threads - 1 workers plus the
// calling thread share [0, n) in pieces taken one at a time (piece p of P is
// [n*p/P, n*(p+1)/P), P = min(n, threads * kPiecesPerThread)). Each thread
// has a home range of the pieces (the caller the first, worker i the
// (i+1)-th) and takes its own first, in order, then the others' that are
// left: a thread that is late or slow (a vCPU the hypervisor took away, a
// worker still waking up) leaves its pieces to the others, so a loop at 2
// threads takes at most about one piece longer than at 1, while a thread
// that keeps up runs the same part of a loop on every call, its data still
// in its core's cache (2 threads, fresh processes alternating with the
// pieces taken in turn: BERT 2.39 -> 2.32 ms, MobileNetV2 3.60 -> 3.55).
// Each worker stays off the CPU the caller ran on when the workers started
// (and the earlier workers' CPUs) where others are allowed: left free, a
// worker and the caller came to share one of 2 vCPUs in about a third of
// fresh processes. The caller's affinity is never changed.
// The caller returns when every piece is done, not when every worker has
// seen the job. No allocation per call. The workers start with the first
// parallel loop (a model whose kernels are all serial never starts them:
// their spinning could only slow its runs down); they spin briefly for the
// next job, then sleep on a condition variable. A call made from inside a
// piece (a nested parallel loop) runs serially on that thread, as every
// call does when the workers could not be started. The workers run a job in
// the caller's floating-point mode (float_mode.h: denormals flushed or not).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "float_mode.h"

namespace mlcc::rt {

using ChunkFn = void (*)(void* closure, int64_t begin, int64_t end);

class ThreadPool {
 public:
  // Pieces per thread: enough for the threads to even out, few enough that
  // a piece stays a contiguous, vectorizable range of tiles.
  static constexpr int kPiecesPerThread = 4;

  explicit ThreadPool(int threads);  // threads >= 1: threads - 1 workers, started when first needed
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Runs fn over [0, n) and returns when every piece is done. One call at a
  // time per pool (a model runs on one thread at a time).
  void parallelFor(int64_t n, ChunkFn fn, void* closure);
  // Starts the workers now if they are not running (parallelFor starts
  // them on its first call): false when they could not be started.
  bool start() { return threads_ == 1 || startWorkers(); }
  // Whether the calling thread is running a piece of a loop (a call from
  // it runs serially).
  static bool inPiece();

 private:
  void workerLoop(int home);
  bool startWorkers();  // false when they could not be started
  void stopWorkers();   // joins every worker
  // Takes and runs pieces of job `job` until none is left: from home range
  // `home` first, then from the following ones.
  void runPieces(uint32_t job, int home);

  int threads_;
  std::vector<std::thread> workers_;
  // The current job, written by the caller before it publishes ticket_.
  ChunkFn fn_ = nullptr;
  void* closure_ = nullptr;
  // The caller's floating-point mode, which the workers take for the job
  // (atomic: a late worker may read it while the next job's caller writes).
  std::atomic<FloatMode> float_mode_{0};
  int64_t n_ = 0;
  int64_t pieces_ = 0;
  // Per thread's home range, on a cache line of its own: the job's number
  // (high 32 bits), the end of the range (16 bits) and the next piece to
  // take (low 16 bits). A thread takes a piece of the job it saw or none,
  // however late it comes.
  struct alignas(64) HomeRange {
    std::atomic<uint64_t> ticket{0};
  };
  std::unique_ptr<HomeRange[]> ranges_;
  // Pieces of the current job finished (the caller spins on it), and the
  // job's number (the workers spin on it): each on a cache line of its own.
  alignas(64) std::atomic<int> done_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<int> started_{0};  // workers that have touched their thread-local state
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace mlcc::rt
