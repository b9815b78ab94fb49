// Measures the machine's fp32 FMA peak: each thread runs independent chains of
// vector fused multiply-adds (enough chains to cover the FMA latency on every
// FMA port), with AVX-512 (16 lanes) and AVX2 (8 lanes) where the CPU has them,
// on 1 thread and on all threads at once. Reports GFLOPS (2 flops per lane per
// FMA) from the median of short timed bursts; the peak is the best of the ISAs. This is the ceiling the
// matmul benchmark compares against.
//
//   fma_peak [--threads N] [--seconds S] [--quick] [--json]
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Independent accumulators: an FMA has a latency of 4-5 cycles and up to two
// issue per cycle, so at least 10 chains are needed to keep both ports busy.
// AVX-512 has 32 vector registers: 16 chains; AVX2 16, so 12 chains and the
// two operands fit (16 spilled: 67 GFLOPS on a Zen 4 core whose AVX2 FMAs
// reach the same 118 as its AVX-512 ones).
constexpr int kChainsAvx512 = 16;
constexpr int kChainsAvx2 = 12;
constexpr long kInnerIters = 1 << 14;  // FMAs per chain between clock reads

template <typename V>
float sumLanes(V v) {
  float lanes[sizeof(V) / sizeof(float)];
  std::memcpy(lanes, &v, sizeof(V));
  float r = 0;
  for (float l : lanes) r += l;
  return r;
}

// Each kernel runs `iters` rounds of its chains' FMAs and returns a value that
// depends on all of them, so the compiler cannot drop any.
__attribute__((target("avx512f"))) float chainsAvx512(long iters) {
  constexpr int kChains = kChainsAvx512;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll kChains
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  return sumLanes(s);
}

__attribute__((target("avx2,fma"))) float chainsAvx2(long iters) {
  constexpr int kChains = kChainsAvx2;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll kChains
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  return sumLanes(s);
}

struct Isa {
  const char* name;
  int lanes;
  int chains;
  float (*kernel)(long);
  bool available;
};

std::atomic<float> g_sink{0};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size();
  return m == 0 ? 0 : m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

// Runs the kernel on `threads` threads at once for about `seconds`, timing
// each burst (~0.1 ms) on its own. On a shared machine a burst that a context
// switch interrupts is slow; the median burst is not. Returns the sum over the
// threads of their median burst rate, in GFLOPS.
double measure(const Isa& isa, int threads, double seconds) {
  isa.kernel(1000);  // warm up: wake the vector units
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> rate(threads, 0);
  std::vector<std::thread> pool;
  const double burst_flops = 2.0 * kInnerIters * isa.chains * isa.lanes;
  auto work = [&](int t) {
    ready.fetch_add(1);
    while (!go.load()) {
    }
    std::vector<double> bursts;
    float sink = 0;
    auto start = Clock::now(), now = start;
    while (std::chrono::duration<double>(now - start).count() < seconds) {
      auto t0 = now;
      sink += isa.kernel(kInnerIters);
      now = Clock::now();
      bursts.push_back(burst_flops / std::chrono::duration<double>(now - t0).count() / 1e9);
    }
    rate[t] = median(std::move(bursts));
    g_sink.store(sink);
  };
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  while (ready.load() < threads) {
  }
  go.store(true);
  for (auto& th : pool) th.join();
  double total = 0;
  for (double r : rate) total += r;
  return total;
}

// The best of `reps` measurements (the peak is a maximum: interference from
// other processes only lowers it).
double best(const Isa& isa, int threads, double seconds, int reps) {
  double b = 0;
  for (int r = 0; r < reps; ++r) b = std::max(b, measure(isa, threads, seconds));
  return b;
}

int usage(const char* msg) {
  std::fprintf(stderr, "fma_peak: %s\nusage: fma_peak [--threads N] [--seconds S] [--quick] [--json]\n", msg);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = std::max(1u, std::thread::hardware_concurrency());
  double seconds = 0.3;
  int reps = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--quick") {
      seconds = 0.05;
      reps = 1;
    } else if ((a == "--threads" || a == "--seconds") && i + 1 < argc) {
      char* end = nullptr;
      double v = std::strtod(argv[++i], &end);
      if (*end != '\0' || v <= 0) return usage(("bad value for " + a).c_str());
      if (a == "--threads")
        threads = int(v);
      else
        seconds = v;
      if (threads < 1) return usage("--threads must be >= 1");
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "fma_peak: the fp32 FMA peak of this machine (independent vector FMA chains).\n"
          "usage: fma_peak [--threads N] [--seconds S] [--quick] [--json]\n"
          "  --threads N   threads of the all-core measurement (default: hardware threads)\n"
          "  --seconds S   duration of one measurement (default 0.3; best of 3)\n"
          "  --quick       one short measurement (0.05 s)\n"
          "  --json        {\"isa\", \"threads\", \"gflops_1\", \"gflops_all\", \"per_isa\": [...]}\n");
      return 0;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }

  __builtin_cpu_init();
  Isa isas[] = {
      {"avx512", 16, kChainsAvx512, chainsAvx512, bool(__builtin_cpu_supports("avx512f"))},
      {"avx2", 8, kChainsAvx2, chainsAvx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")}};
  struct Result {
    const char* isa;
    double one, all;
  };
  std::vector<Result> results;
  for (const Isa& isa : isas) {
    if (!isa.available) continue;
    results.push_back({isa.name, best(isa, 1, seconds, reps), best(isa, threads, seconds, reps)});
  }
  if (results.empty()) {
    std::fprintf(stderr, "fma_peak: this CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }
  // The peak is the best ISA (on some CPUs 512-bit FMAs run as two 256-bit halves).
  Result peak = results[0];
  for (const Result& r : results) {
    if (r.all > peak.all) peak.isa = r.isa;
    peak.one = std::max(peak.one, r.one);
    peak.all = std::max(peak.all, r.all);
  }
  const Result* top = &peak;

  if (json) {
    std::printf("{\"isa\": \"%s\", \"threads\": %d, \"gflops_1\": %.3f, \"gflops_all\": %.3f, \"per_isa\": [",
                top->isa, threads, top->one, top->all);
    for (size_t i = 0; i < results.size(); ++i)
      std::printf("%s{\"isa\": \"%s\", \"gflops_1\": %.3f, \"gflops_all\": %.3f}", i ? ", " : "",
                  results[i].isa, results[i].one, results[i].all);
    std::printf("]}\n");
  } else {
    std::printf("%-8s %12s %12s\n", "isa", "1 thread", "threads");
    for (const Result& r : results) std::printf("%-8s %12.1f %12.1f\n", r.isa, r.one, r.all);
    std::printf("peak: %.1f GFLOPS (1 thread), %.1f GFLOPS (%d threads), %s\n", top->one, top->all, threads,
                top->isa);
  }
  return 0;
}
