// The runtime linked into model.so (libs/runtime): the thread pool behind
// mlcc_rt_parallel_for (coverage, static chunks, the caller's share, nested
// loops, many calls), the profiling hooks, and the BLAS kernels against a
// naive reference on shapes that run on one thread and split over the pool.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "cublas_call.h"  // libs/runtime/src: the cuBLAS call of a GEMM step
#include "model_state.h"  // libs/runtime/src: mlcc_rt_context, ThreadPool

namespace {

using mlcc::rt::ThreadPool;

struct Coverage {
  std::vector<std::atomic<int>> hits;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
  explicit Coverage(int64_t n) : hits(n) {}
};

void countChunk(void* closure, int64_t begin, int64_t end) {
  auto* c = static_cast<Coverage*>(closure);
  for (int64_t i = begin; i < end; ++i) c->hits[i]++;
  std::lock_guard<std::mutex> lk(c->mu);
  c->chunks.push_back({begin, end});
  c->threads.push_back(std::this_thread::get_id());
}

TEST(ThreadPool, CoversEveryIndexOnceInPieces) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 100, 1001}) {
      Coverage c(n);
      pool.parallelFor(n, countChunk, &c);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.hits[i].load(), 1) << "threads " << threads << " n " << n;
      const int64_t pieces = threads == 1 || n <= 1
                                 ? std::min<int64_t>(n, 1)
                                 : std::min<int64_t>(threads * ThreadPool::kPiecesPerThread, n);
      EXPECT_EQ(static_cast<int64_t>(c.chunks.size()), pieces) << "threads " << threads << " n " << n;
      for (auto [b, e] : c.chunks) EXPECT_LE(e - b, (n + pieces - 1) / std::max<int64_t>(pieces, 1) + 1);
    }
  }
}

// A worker stuck in its piece (a vCPU taken away) does not keep its share:
// the caller takes every other piece, where static chunks would leave half
// of them to the stuck thread (the wait below would then give up).
struct Stuck {
  std::thread::id caller;
  std::atomic<int> by_caller{0}, total{0};
  std::atomic<bool> gave_up{false};
};

void stuckPiece(void* closure, int64_t begin, int64_t end) {
  auto* s = static_cast<Stuck*>(closure);
  if (std::this_thread::get_id() == s->caller) {
    s->by_caller += static_cast<int>(end - begin);
  } else {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (s->by_caller.load() < 7 && !s->gave_up.load())
      if (std::chrono::steady_clock::now() > limit) s->gave_up.store(true);
  }
  s->total += static_cast<int>(end - begin);
}

TEST(ThreadPool, AStuckWorkerLeavesItsShareToTheCaller) {
  ThreadPool pool(2);
  for (int round = 0; round < 20; ++round) {
    Stuck s;
    s.caller = std::this_thread::get_id();
    pool.parallelFor(8, stuckPiece, &s);  // 8 pieces of one index
    EXPECT_EQ(s.total.load(), 8);
    EXPECT_GE(s.by_caller.load(), 7);
    EXPECT_FALSE(s.gave_up.load());
  }
}

// Each thread takes the pieces of its home range first (at 2 threads the
// caller the first half, the worker the second), so that a thread that
// keeps up runs the same part of a loop on every call: with the caller held
// in its first piece until the worker has run four, the worker runs its own
// pieces 4-7, starting at 4 (taken in turn, it would start at 1).
struct Home {
  std::thread::id caller;
  std::atomic<int> worker_pieces{0};
  std::mutex mu;
  std::vector<int64_t> worker_order;
};

void homePiece(void* closure, int64_t begin, int64_t) {
  auto* h = static_cast<Home*>(closure);
  if (std::this_thread::get_id() == h->caller) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (begin == 0 && h->worker_pieces.load() < 4 && std::chrono::steady_clock::now() < limit) {
    }
    return;
  }
  std::lock_guard<std::mutex> lk(h->mu);
  h->worker_order.push_back(begin);
  h->worker_pieces++;
}

TEST(ThreadPool, EachThreadTakesItsHomePiecesFirst) {
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    Home h;
    h.caller = std::this_thread::get_id();
    pool.parallelFor(8, homePiece, &h);  // 8 pieces of one index: 0-3 the caller's, 4-7 the worker's
    ASSERT_GE(h.worker_order.size(), 4u);
    EXPECT_EQ(h.worker_order[0], 4);
    std::vector<int64_t> own(h.worker_order.begin(), h.worker_order.begin() + 4);
    EXPECT_EQ(own, (std::vector<int64_t>{4, 5, 6, 7}));
  }
}

struct Nested {
  ThreadPool* pool;
  std::atomic<int64_t> total{0};
  std::atomic<bool> other_thread{false};
};

void innerChunk(void* closure, int64_t begin, int64_t end) {
  static_cast<std::atomic<int64_t>*>(closure)->fetch_add(end - begin);
}

void outerChunk(void* closure, int64_t begin, int64_t end) {
  auto* n = static_cast<Nested*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    std::atomic<int64_t> inner{0};
    const auto me = std::this_thread::get_id();
    struct Probe {
      std::atomic<int64_t>* count;
      std::thread::id caller;
      std::atomic<bool>* other;
    } probe{&inner, me, &n->other_thread};
    n->pool->parallelFor(
        50,
        [](void* c, int64_t b, int64_t e) {
          auto* p = static_cast<Probe*>(c);
          if (std::this_thread::get_id() != p->caller) p->other->store(true);
          p->count->fetch_add(e - b);
        },
        &probe);
    n->total += inner.load();
  }
}

// The CPUs each piece's thread may run on (see the test below).
struct Affinity {
  std::mutex mu;
  std::vector<std::pair<std::thread::id, int>> cpus_allowed;  // per piece: its thread, the CPUs it may run on
};

void affinityPiece(void* closure, int64_t, int64_t) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));  // so that the worker takes pieces too
  auto* a = static_cast<Affinity*>(closure);
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::lock_guard<std::mutex> lk(a->mu);
  a->cpus_allowed.push_back({std::this_thread::get_id(), CPU_COUNT(&set)});
}

// The caller's affinity is left alone; a worker keeps off the CPU the
// caller started it from (where there is another), so that the two never
// end up sharing one.
TEST(ThreadPool, TheWorkerKeepsOffTheCallersCpu) {
  cpu_set_t process;
  ASSERT_EQ(sched_getaffinity(0, sizeof process, &process), 0);
  const int total = CPU_COUNT(&process);
  ThreadPool pool(2);
  Affinity a;
  for (int rep = 0; rep < 5; ++rep) pool.parallelFor(8, affinityPiece, &a);
  ASSERT_EQ(a.cpus_allowed.size(), 5u * 8u);
  bool worker_ran = false;
  for (const auto& [thread, n] : a.cpus_allowed) {
    if (thread == std::this_thread::get_id()) {
      EXPECT_EQ(n, total);
    } else {
      worker_ran = true;
      EXPECT_EQ(n, total > 1 ? total - 1 : total);
    }
  }
  EXPECT_TRUE(worker_ran);
}

TEST(ThreadPool, NestedLoopsRunSeriallyOnTheCallingThread) {
  ThreadPool pool(3);
  Nested n;
  n.pool = &pool;
  pool.parallelFor(9, outerChunk, &n);
  EXPECT_EQ(n.total.load(), 9 * 50);
  EXPECT_FALSE(n.other_thread.load());
}

TEST(ThreadPool, ManyCallsAndSleepingWorkers) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int i = 0; i < 20000; ++i) pool.parallelFor(4, innerChunk, &sum);
  EXPECT_EQ(sum.load(), 20000 * 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers go to sleep
  pool.parallelFor(1000, innerChunk, &sum);
  EXPECT_EQ(sum.load(), 20000 * 4 + 1000);
}

// A loop whose serial runs take under ParallelChoice::kMinParallelNs runs
// serially after its first kSamples runs (one chunk, [0, n), on the
// caller); one of 8 pieces of 1 ms each runs on the pool. Every index once
// either way.
void sleepyChunk(void* closure, int64_t begin, int64_t end) {
  std::this_thread::sleep_for(std::chrono::milliseconds(end - begin));
  countChunk(closure, begin, end);
}

TEST(ParallelChoice, ShortLoopsRunSeriallyLongOnesOnThePool) {
  using mlcc::rt::ParallelChoice;
  ThreadPool pool(2);
  auto choice = std::make_unique<ParallelChoice>();
  Coverage tiny(8), slow(8);
  for (int call = 0; call < ParallelChoice::kSamples + 5; ++call) {
    tiny.chunks.clear();
    slow.chunks.clear();
    choice->run(pool, 8, countChunk, &tiny);
    choice->run(pool, 8, sleepyChunk, &slow);
    ASSERT_EQ(tiny.chunks, (std::vector<std::pair<int64_t, int64_t>>{{0, 8}})) << "call " << call;
    if (call < ParallelChoice::kSamples)
      EXPECT_EQ(slow.chunks.size(), 1u) << "call " << call << ": measured serially";
    else
      EXPECT_GT(slow.chunks.size(), 1u) << "call " << call << ": on the pool";
  }
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(tiny.hits[i].load(), ParallelChoice::kSamples + 5) << i;
    EXPECT_EQ(slow.hits[i].load(), ParallelChoice::kSamples + 5) << i;
  }
  // Another iteration count of the same body is measured on its own: 2^16
  // atomic increments take longer than kMinParallelNs.
  Coverage big(1 << 16);
  for (int call = 0; call <= ParallelChoice::kSamples; ++call) choice->run(pool, 1 << 16, countChunk, &big);
  EXPECT_EQ(big.chunks.size(),
            static_cast<size_t>(ParallelChoice::kSamples) + 2 * ThreadPool::kPiecesPerThread);
}

std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Context {
  mlcc_rt_context ctx;
  explicit Context(int threads) { ctx.pool = std::make_unique<ThreadPool>(threads); }
};

void expectNear(const std::vector<float>& got, const std::vector<double>& want, int64_t K) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = 1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(K, 1))) * 10;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
}

TEST(Blas, DenseWithBiasAndReluOnOneThreadAndSplit) {
  struct Shape {
    int64_t M, N, K;
  };
  // Small (one thread), split by columns (N >= M), split by rows, K = 0, N % 16 != 0.
  for (Shape s :
       {Shape{4, 8, 16}, Shape{3, 300, 400}, Shape{300, 20, 100}, Shape{5, 7, 0}, Shape{64, 129, 77}}) {
    for (int threads : {1, 3}) {
      for (int relu : {0, 1}) {
        for (bool with_bias : {false, true}) {
          Context c(threads);
          auto x = randomVector(s.M * s.K, 1), w = randomVector(s.N * s.K, 2), b = randomVector(s.N, 3);
          std::vector<float> out(s.M * s.N, 123.0f);
          mlcc_rt_blas_dense(&c.ctx, x.data(), w.data(), with_bias ? b.data() : nullptr, out.data(), s.M, s.N,
                             s.K, relu);
          std::vector<double> want(s.M * s.N);
          for (int64_t i = 0; i < s.M; ++i)
            for (int64_t j = 0; j < s.N; ++j) {
              double acc = with_bias ? b[j] : 0.0;
              for (int64_t k = 0; k < s.K; ++k) acc += static_cast<double>(x[i * s.K + k]) * w[j * s.K + k];
              want[i * s.N + j] = relu ? std::max(acc, 0.0) : acc;
            }
          SCOPED_TRACE(::testing::Message() << s.M << "x" << s.N << "x" << s.K << " threads " << threads
                                            << " relu " << relu << " bias " << with_bias);
          expectNear(out, want, s.K);
        }
      }
    }
  }
}

TEST(Blas, BatchedMatmul) {
  for (int64_t B : {1, 2, 5}) {
    for (int threads : {1, 2}) {
      for (bool with_bias : {false, true}) {
        for (bool relu : {false, true}) {
          const int64_t M = 33, N = 70, K = 120;
          Context c(threads);
          auto a = randomVector(B * M * K, 4), b = randomVector(B * K * N, 5), bias = randomVector(N, 6);
          std::vector<float> out(B * M * N);
          mlcc_rt_blas_matmul(&c.ctx, a.data(), b.data(), with_bias ? bias.data() : nullptr, out.data(), B, M,
                              N, K, relu ? 1 : 0);
          std::vector<double> want(B * M * N);
          for (int64_t t = 0; t < B; ++t)
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double acc = with_bias ? bias[j] : 0.0;
                for (int64_t k = 0; k < K; ++k)
                  acc += static_cast<double>(a[(t * M + i) * K + k]) * b[(t * K + k) * N + j];
                want[(t * M + i) * N + j] = relu ? std::max(acc, 0.0) : acc;
              }
          SCOPED_TRACE(::testing::Message()
                       << "B " << B << " threads " << threads << " bias " << with_bias << " relu " << relu);
          expectNear(out, want, K);
        }
      }
    }
  }
}

TEST(Profiling, HooksCountOnlyWhenOn) {
  Context c(1);
  c.ctx.stats.resize(2);
  int64_t t = mlcc_rt_kernel_begin(&c.ctx, 0);
  EXPECT_EQ(t, 0);
  mlcc_rt_kernel_end(&c.ctx, 0, t);
  EXPECT_EQ(c.ctx.stats[0].calls, 0);
  c.ctx.profiling = true;
  for (int i = 0; i < 3; ++i) {
    t = mlcc_rt_kernel_begin(&c.ctx, 1);
    EXPECT_NE(t, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    mlcc_rt_kernel_end(&c.ctx, 1, t);
  }
  EXPECT_EQ(c.ctx.stats[1].calls, 3);
  EXPECT_GE(c.ctx.stats[1].total_ns, 300000);
  EXPECT_EQ(c.ctx.stats[0].calls, 0);
  mlcc_rt_kernel_end(&c.ctx, 7, mlcc_rt_kernel_begin(&c.ctx, 7));  // out of range: ignored
}

TEST(Errors, FirstErrorOfARunWins) {
  Context c(1);
  mlcc_rt_set_error(&c.ctx, "first");
  mlcc_rt_set_error(&c.ctx, "second");
  EXPECT_EQ(c.ctx.error, "first");
}

}  // namespace

// The cuBLAS call a row-major GEMM step becomes (cublas_call.h), run by a
// column-major SGEMM with cuBLAS's semantics (C = op(A) * B, each matrix
// column-major with its leading dimension, one matrix per stride), gives the
// row-major product: matmul a[b, m, k] b[b, k, n] and dense a[m, k] w[n, k]^T.
TEST(CublasCall, ComputesTheRowMajorProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  struct Case {
    int64_t batch, m, n, k;
    bool dense;
  };
  for (const Case& c : {Case{1, 3, 5, 4, false}, Case{2, 4, 3, 6, false}, Case{1, 7, 2, 5, true},
                        Case{1, 1, 9, 3, true}, Case{3, 2, 2, 1, false}}) {
    SCOPED_TRACE(std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                 std::to_string(c.k) + (c.dense ? " dense" : " matmul"));
    std::vector<float> a(c.batch * c.m * c.k), b(c.batch * c.k * c.n), out(c.batch * c.m * c.n, -99);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    const mlcc::rt::CublasGemm g = mlcc::rt::cublasGemmOf(c.batch, c.m, c.n, c.k, c.dense);
    // cuBLAS: C[g.m x g.n] = op(first)[g.m x g.k] * second[g.k x g.n], column-major.
    for (int64_t p = 0; p < g.batch; ++p)
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < g.k; ++l) {
            const float* first = b.data() + p * g.stride_first;
            const float* second = a.data() + p * g.stride_second;
            float f = g.trans_first ? first[l + i * g.ld_first] : first[i + l * g.ld_first];
            sum += f * second[l + j * g.ld_second];
          }
          out[p * g.stride_out + i + j * g.ld_out] = static_cast<float>(sum);
        }
    for (int64_t p = 0; p < c.batch; ++p)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double want = 0;
          for (int64_t l = 0; l < c.k; ++l)
            want += a[(p * c.m + i) * c.k + l] * (c.dense ? b[j * c.k + l] : b[(p * c.k + l) * c.n + j]);
          EXPECT_NEAR(out[(p * c.m + i) * c.n + j], want, 1e-5) << "[" << p << ", " << i << ", " << j << "]";
        }
  }
}
