// The JIT's own implementations of the runtime functions (see jit_runtime.h).
#include "llvm/jit_runtime.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <thread>

namespace mlcc::codegen {

namespace {

thread_local bool in_parallel = false;

using ChunkFn = void (*)(void*, int64_t, int64_t);

// [0, n) in `chunks` nearly equal parts; part 0 runs on the calling thread.
// Nested calls (from inside a chunk) run serially.
void parallelFor(void* ctx, int64_t n, ChunkFn fn, void* closure) {
  if (n <= 0) return;
  const int threads = static_cast<JitContext*>(ctx)->num_threads;
  const int64_t chunks = std::min<int64_t>(n, threads);
  if (in_parallel || chunks <= 1) {
    fn(closure, 0, n);
    return;
  }
  auto range = [&](int64_t c) { return std::pair<int64_t, int64_t>{n * c / chunks, n * (c + 1) / chunks}; };
  auto run = [&](int64_t c) {
    in_parallel = true;
    auto [lo, hi] = range(c);
    fn(closure, lo, hi);
    in_parallel = false;
  };
  std::vector<std::thread> pool;
  for (int64_t c = 1; c < chunks; ++c) pool.emplace_back(run, c);
  run(0);
  for (auto& t : pool) t.join();
}

std::mutex error_mutex;

void setError(void* ctx, const char* message) {
  std::lock_guard<std::mutex> lock(error_mutex);
  auto* c = static_cast<JitContext*>(ctx);
  if (c->error.empty()) c->error = message;
}

}  // namespace

std::vector<std::pair<const char*, void*>> jitRuntimeSymbols() {
  return {{"mlcc_rt_parallel_for", reinterpret_cast<void*>(&parallelFor)},
          {"mlcc_rt_set_error", reinterpret_cast<void*>(&setError)}};
}

}  // namespace mlcc::codegen
