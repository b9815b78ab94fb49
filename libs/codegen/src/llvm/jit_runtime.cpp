// The JIT's own implementations of the runtime functions (see jit_runtime.h):
// parallel_for on a process-wide pool of worker threads (started on first
// use, one fewer than the machine's cores), chunks handed out through an
// atomic counter, the calling thread working too.
#include "llvm/jit_runtime.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "mlcc/runtime/bounds_error.h"

namespace mlcc::codegen {

namespace {

using ChunkFn = void (*)(void*, int64_t, int64_t);

thread_local bool in_parallel = false;

struct Job {
  ChunkFn fn;
  void* closure;
  int64_t n, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> remaining;
  std::mutex mu;
  std::condition_variable done;

  // Runs chunks until none is left; true when this thread finished the last.
  void work() {
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      fn(closure, n * c / chunks, n * (c + 1) / chunks);
      if (remaining.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        done.notify_all();
      }
    }
  }
};

class Pool {
 public:
  Pool() {
    const unsigned workers = std::max(1u, std::thread::hardware_concurrency()) - 1;
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run(const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> serial(run_mu_);  // one top-level loop at a time
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = job;
      ++generation_;
    }
    wake_.notify_all();
    in_parallel = true;
    job->work();
    in_parallel = false;
    std::unique_lock<std::mutex> lock(job->mu);
    job->done.wait(lock, [&] { return job->remaining.load() == 0; });
  }

 private:
  void loop() {
    in_parallel = true;
    uint64_t seen = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      job->work();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_, run_mu_;
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// [0, n) in min(n, threads) nearly equal chunks. Nested calls (from inside
// a chunk) run serially.
void parallelFor(void* ctx, int64_t n, ChunkFn fn, void* closure) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(n, static_cast<JitContext*>(ctx)->num_threads);
  if (in_parallel || chunks <= 1) {
    fn(closure, 0, n);
    return;
  }
  static Pool pool;
  auto job = std::make_shared<Job>();
  job->fn = fn;
  job->closure = closure;
  job->n = n;
  job->chunks = chunks;
  job->remaining = chunks;
  pool.run(job);
}

std::mutex error_mutex;

void setError(void* ctx, const char* message) {
  std::lock_guard<std::mutex> lock(error_mutex);
  auto* c = static_cast<JitContext*>(ctx);
  if (c->error.empty()) c->error = message;
}

void boundsError(void* ctx, const char* access, int32_t rank, const int64_t* index, const int64_t* shape) {
  setError(ctx, mlcc::rt::boundsErrorMessage(access, rank, index, shape).c_str());
}

}  // namespace

std::vector<std::pair<const char*, void*>> jitRuntimeSymbols() {
  return {{"mlcc_rt_parallel_for", reinterpret_cast<void*>(&parallelFor)},
          {"mlcc_rt_set_error", reinterpret_cast<void*>(&setError)},
          {"mlcc_rt_bounds_error", reinterpret_cast<void*>(&boundsError)}};
}

}  // namespace mlcc::codegen
