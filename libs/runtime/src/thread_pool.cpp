// The runtime's thread pool (see thread_pool.h).
#include "thread_pool.h"

#include <algorithm>

#ifdef __linux__
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLCC_RT_PAUSE() _mm_pause()
#else
#define MLCC_RT_PAUSE() ((void)0)
#endif

namespace mlcc::rt {

namespace {
// Set while a thread runs a piece: nested parallel loops run serially.
thread_local bool t_in_parallel = false;
// Waiting threads spin kSpinIterations pauses, then yield the core (a worker
// kYieldIterations times before it sleeps). Short spins matter when the pool's
// threads share cores with other work: on the loaded 2-core test machine a
// 2000-pause spin made a 2-thread parallel_for cost ~240 us, this ~15 us.
constexpr int kSpinIterations = 64;
constexpr int kYieldIterations = 2000;
}  // namespace

bool ThreadPool::inPiece() { return t_in_parallel; }

ThreadPool::ThreadPool(int threads)
    : threads_(std::max(1, threads)), ranges_(std::make_unique<HomeRange[]>(threads_)) {}

namespace {

// Keeps the calling thread, a new worker, off the CPUs the caller and the
// workers before it run on (`taken`), where any other is allowed. A new
// thread starts on its creator's CPU; the scheduler used to move it away
// after a while (~100 ms seen on a 2-vCPU VM), and, left free after that
// first move, it or the caller later drifted back to share one CPU in
// about a third of fresh processes on a 2-core Xeon: those ran a model at
// 2 threads at 1-thread speed throughout (GoogLeNet 2.4-2.6 ms instead of
// 1.6; 8 of 24 short runs, none of 24 kept apart). The caller's own
// affinity is never changed; a worker that cannot keep up on its CPUs
// leaves its pieces to the others (home ranges, below).
void keepOffTakenCpus(const std::vector<int>& taken) {
#ifdef __linux__
  cpu_set_t elsewhere;
  if (sched_getaffinity(0, sizeof elsewhere, &elsewhere) != 0) return;
  for (int cpu : taken)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_CLR(cpu, &elsewhere);
  if (CPU_COUNT(&elsewhere) > 0) sched_setaffinity(0, sizeof elsewhere, &elsewhere);
#else
  (void)taken;
#endif
}

int currentCpu() {
#ifdef __linux__
  return sched_getcpu();
#else
  return -1;
#endif
}

}  // namespace

bool ThreadPool::startWorkers() {
  if (!workers_.empty()) return true;
  workers_.reserve(threads_ - 1);
  try {
    // Each worker stays off the CPUs of the caller (as it was when the
    // workers started) and of the workers before it, where there are enough.
    std::vector<int> taken = {currentCpu()};
    std::mutex taken_mu;
    for (int i = 1; i < threads_; ++i)
      workers_.emplace_back([this, &taken, &taken_mu, i] {
        {
          std::lock_guard<std::mutex> lk(taken_mu);
          keepOffTakenCpus(taken);
          taken.push_back(currentCpu());
        }
        workerLoop(i);
      });
    // Each worker's first touch of its thread-local state allocates it (a
    // model is a dlopen'ed library): let that happen now, not in a later
    // run, which must not allocate.
    while (started_.load(std::memory_order_acquire) != threads_ - 1) std::this_thread::yield();
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

void ThreadPool::runPieces(uint32_t job, int home) {
  // The pieces this thread ran, counted into done_ once at the end: one
  // write to the shared counter per thread and job, not one per piece (on
  // a 2-core Xeon a loop of 8 tiny pieces took 1.1-1.3 us, 0.4 us serially).
  int finished = 0;
  for (int k = 0; k < threads_; ++k) {
    std::atomic<uint64_t>& ticket = ranges_[(home + k) % threads_].ticket;
    for (uint64_t t = ticket.load(std::memory_order_acquire);;) {
      const uint32_t end = (t >> 16) & 0xffff, next = t & 0xffff;
      // A later job: this one is done (so this thread ran none of its pieces).
      if (static_cast<uint32_t>(t >> 32) != job) return;
      if (next >= end) break;
      // Taking piece `next` keeps the job open until this thread counts it
      // done, so fn_, closure_, n_ and pieces_ stay this job's meanwhile.
      if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire))
        continue;
      const int64_t begin = n_ * next / pieces_, stop = n_ * (next + 1) / pieces_;
      t_in_parallel = true;
      if (begin < stop) fn_(closure_, begin, stop);
      t_in_parallel = false;
      ++finished;
      t = ticket.load(std::memory_order_acquire);
    }
  }
  if (finished > 0) done_.fetch_add(finished, std::memory_order_release);
}

void ThreadPool::parallelFor(int64_t n, ChunkFn fn, void* closure) {
  if (n <= 0) return;
  if (t_in_parallel || threads_ == 1 || n == 1 || !startWorkers()) {
    fn(closure, 0, n);
    return;
  }
  fn_ = fn;
  closure_ = closure;
  float_mode_.store(floatMode(), std::memory_order_relaxed);
  n_ = n;
  const int pieces =
      static_cast<int>(std::min<int64_t>({int64_t{threads_} * kPiecesPerThread, n, int64_t{0xffff}}));
  pieces_ = pieces;
  const uint32_t job = static_cast<uint32_t>(generation_.load(std::memory_order_relaxed) + 1);
  done_.store(0, std::memory_order_relaxed);
  for (int r = 0; r < threads_; ++r) {
    const uint64_t begin = uint64_t(pieces) * r / threads_, end = uint64_t(pieces) * (r + 1) / threads_;
    ranges_[r].ticket.store((uint64_t{job} << 32) | (end << 16) | begin, std::memory_order_release);
  }
  generation_.fetch_add(1);  // seq_cst: ordered against sleepers_ below
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_.notify_all();
  }
  runPieces(job, 0);
  for (int spins = 0; done_.load(std::memory_order_acquire) != pieces; ++spins) {
    if (spins < kSpinIterations)
      MLCC_RT_PAUSE();
    else
      std::this_thread::yield();
  }
}

void ThreadPool::workerLoop(int home) {
  t_in_parallel = false;
  started_.fetch_add(1, std::memory_order_release);
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
    setFloatMode(float_mode_.load(std::memory_order_relaxed));
    runPieces(static_cast<uint32_t>(seen), home);
  }
}

}  // namespace mlcc::rt
