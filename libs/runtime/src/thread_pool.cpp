// The runtime's thread pool (see thread_pool.h).
#include "thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLCC_RT_PAUSE() _mm_pause()
#else
#define MLCC_RT_PAUSE() ((void)0)
#endif

namespace mlcc::rt {

namespace {
// Set while a thread runs a chunk: nested parallel loops run serially.
thread_local bool t_in_parallel = false;
// Waiting threads spin kSpinIterations pauses, then yield the core (a worker
// kYieldIterations times before it sleeps). Short spins matter when the pool's
// threads share cores with other work: on the loaded 2-core test machine a
// 2000-pause spin made a 2-thread parallel_for cost ~240 us, this ~15 us.
constexpr int kSpinIterations = 64;
constexpr int kYieldIterations = 2000;
}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {}

bool ThreadPool::startWorkers() {
  if (!workers_.empty()) return true;
  workers_.reserve(threads_ - 1);
  try {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
    return true;
  } catch (...) {  // a thread could not be started: stop those that were, run serially
    stopWorkers();
    workers_.clear();
    stop_.store(false);
    return false;
  }
}

ThreadPool::~ThreadPool() { stopWorkers(); }

void ThreadPool::stopWorkers() {
  stop_.store(true);
  { std::lock_guard<std::mutex> lk(mu_); }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::runChunk(int chunk) {
  const int64_t begin = n_ * chunk / chunks_;
  const int64_t end = n_ * (chunk + 1) / chunks_;
  if (begin < end) fn_(closure_, begin, end);
}

void ThreadPool::parallelFor(int64_t n, ChunkFn fn, void* closure) {
  if (n <= 0) return;
  if (t_in_parallel || threads_ == 1 || n == 1 || !startWorkers()) {
    fn(closure, 0, n);
    return;
  }
  fn_ = fn;
  closure_ = closure;
  n_ = n;
  chunks_ = static_cast<int>(std::min<int64_t>(threads_, n));
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: ordered against sleepers_ below
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_.notify_all();
  }
  t_in_parallel = true;
  runChunk(0);
  t_in_parallel = false;
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations)
      MLCC_RT_PAUSE();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    for (int spins = 0; generation_.load(std::memory_order_acquire) == seen &&
                        !stop_.load(std::memory_order_relaxed) && spins < kSpinIterations + kYieldIterations;
         ++spins) {
      if (spins < kSpinIterations)
        MLCC_RT_PAUSE();
      else
        std::this_thread::yield();
    }
    if (generation_.load() == seen && !stop_.load()) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);  // seq_cst: see parallelFor
      cv_.wait(lk, [&] { return generation_.load() != seen || stop_.load(); });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    if (index < chunks_) {
      t_in_parallel = true;
      runChunk(index);
      t_in_parallel = false;
    }
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace mlcc::rt
