// The thread pool behind mlcc_rt_parallel_for: threads - 1 workers plus the
// calling thread, static chunking of [0, n) (chunk c of T is
// [n*c/T, n*(c+1)/T)), no allocation per call. The workers start with the
// first parallel loop (a model whose kernels are all serial never starts
// them: their spinning could only slow its runs down); they spin briefly
// for the next job, then sleep on a condition variable. A call made from
// inside a chunk (a nested parallel loop) runs serially on that thread, as
// every call does when the workers could not be started.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace mlcc::rt {

using ChunkFn = void (*)(void* closure, int64_t begin, int64_t end);

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1: threads - 1 workers, started when first needed
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Runs fn over [0, n) and returns when every chunk is done. One call at a
  // time per pool (a model runs on one thread at a time).
  void parallelFor(int64_t n, ChunkFn fn, void* closure);

 private:
  void workerLoop(int index);
  bool startWorkers();  // false when they could not be started
  void stopWorkers();   // joins every worker
  void runChunk(int chunk);

  int threads_;
  std::vector<std::thread> workers_;
  // The current job, written by the caller before it bumps generation_.
  ChunkFn fn_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int chunks_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers that have not finished the job
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace mlcc::rt
