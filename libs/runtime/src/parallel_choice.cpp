// Serial or parallel, per loop, by measurement (see parallel_choice.h).
#include "parallel_choice.h"

#include <algorithm>
#include <functional>

#include "model_state.h"

namespace mlcc::rt {

ParallelChoice::Site* ParallelChoice::find(ChunkFn fn, int64_t n) {
  const size_t h = std::hash<const void*>()(reinterpret_cast<const void*>(fn)) ^ std::hash<int64_t>()(n) * 31;
  for (size_t probe = 0; probe < kSites; ++probe) {  // open addressing, linear probing
    Site& s = sites_[(h + probe) % kSites];
    if (s.fn == fn && s.n == n) return &s;
    if (!s.fn) {
      s.fn = fn;
      s.n = n;
      return &s;
    }
  }
  return nullptr;
}

void ParallelChoice::run(ThreadPool& pool, int64_t n, ChunkFn fn, void* closure) {
  // A loop inside another's piece runs serially (and may run on a worker:
  // the table is the caller's alone).
  Site* s = pool.threads() > 1 && n > 1 && !ThreadPool::inPiece() ? find(fn, n) : nullptr;
  if (!s || s->way == Site::Way::pool) return pool.parallelFor(n, fn, closure);
  if (s->way == Site::Way::serial) return fn(closure, 0, n);
  // The workers start with the first loop that may need them, as they
  // would without the measuring: a model allocates nothing after its first run.
  pool.start();
  const int64_t begin = nowNs();
  fn(closure, 0, n);
  s->serial_ns = std::min(s->serial_ns, nowNs() - begin);
  if (++s->serial_runs == kSamples)
    s->way = s->serial_ns < kMinParallelNs ? Site::Way::serial : Site::Way::pool;
}

}  // namespace mlcc::rt
