// Times OpenBLAS cblas_sgemm on square fp32 matrices (C = A * B, row-major),
// the reference the matmul benchmark compares mlcc's generated matmul against.
// For each size and thread count: one warm-up call, then timed calls until
// both a minimum count and a minimum time are reached; reports the median and
// minimum time and GFLOPS (2 n^3 flops per call, from the median). Spot-checks
// entries of C against a double-precision dot product, so a broken BLAS fails
// instead of reporting a fast wrong answer.
//
//   blas_bench [--sizes 256,512,1024,2048] [--threads 1,all] [--min-time S] [--quick] [--json]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

Buffer alloc(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

struct Result {
  int n, threads, calls;
  double median_ms, min_ms, mean_ms, gflops, max_rel_err;
};

// Largest relative error of 32 sampled entries of C against a float64 dot product.
double spotCheck(const float* a, const float* b, const float* c, int n) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(0, n - 1);
  double worst = 0;
  for (int s = 0; s < 32; ++s) {
    int i = d(rng), j = d(rng);
    double ref = 0, mag = 0;
    for (int k = 0; k < n; ++k) {
      ref += double(a[size_t(i) * n + k]) * b[size_t(k) * n + j];
      mag += std::abs(double(a[size_t(i) * n + k]) * b[size_t(k) * n + j]);
    }
    worst = std::max(worst, std::abs(c[size_t(i) * n + j] - ref) / std::max(mag, 1e-30));
  }
  return worst;
}

Result run(int n, int threads, double min_time, int min_calls) {
  openblas_set_num_threads(threads);
  size_t elems = size_t(n) * n;
  Buffer a = alloc(elems), b = alloc(elems), c = alloc(elems);
  std::mt19937 rng(n);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (size_t i = 0; i < elems; ++i) a[i] = dist(rng), b[i] = dist(rng), c[i] = 0;
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.get(), n, b.get(), n, 0.0f,
                c.get(), n);
  };
  gemm();  // warm-up (thread pool start, page faults)
  std::vector<double> ms;
  auto start = Clock::now();
  while (int(ms.size()) < min_calls ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_time) {
    auto t0 = Clock::now();
    gemm();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (ms.size() >= 1000) break;
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t m = sorted.size();
  double median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  double mean = 0;
  for (double x : ms) mean += x / double(m);
  double flops = 2.0 * double(n) * n * n;
  Result r{n, threads, int(m), median, sorted[0], mean, flops / (median * 1e-3) / 1e9, 0};
  r.max_rel_err = spotCheck(a.get(), b.get(), c.get(), n);
  return r;
}

// Parses "256,512" (and "all" for thread lists, as `all`).
bool parseList(const std::string& text, int all, std::vector<int>& out) {
  out.clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "all" && all > 0) {
      out.push_back(all);
      continue;
    }
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1 << 16) return false;
    out.push_back(int(v));
  }
  return !out.empty();
}

int usage(const std::string& msg) {
  std::fprintf(
      stderr,
      "blas_bench: %s\nusage: blas_bench [--sizes 256,512,1024,2048] [--threads 1,all] [--min-time S] "
      "[--quick] [--json]\n",
      msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int hw = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> sizes = {256, 512, 1024, 2048}, threads = {1, hw};
  double min_time = 1.0;
  int min_calls = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--quick") {
      min_time = 0.05;
      min_calls = 2;
    } else if (a == "--sizes" && i + 1 < argc) {
      if (!parseList(argv[++i], 0, sizes)) return usage("bad --sizes list");
    } else if (a == "--threads" && i + 1 < argc) {
      if (!parseList(argv[++i], hw, threads)) return usage("bad --threads list");
    } else if (a == "--min-time" && i + 1 < argc) {
      char* end = nullptr;
      min_time = std::strtod(argv[++i], &end);
      if (*end != '\0' || min_time < 0) return usage("bad --min-time");
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "blas_bench: OpenBLAS cblas_sgemm GFLOPS on square fp32 matrices.\n"
          "usage: blas_bench [--sizes 256,512,1024,2048] [--threads 1,all] [--min-time S] [--quick] "
          "[--json]\n"
          "  --threads   thread counts ('all': the hardware threads, %d here)\n"
          "  --min-time  seconds of timed calls per measurement (default 1; at least 5 calls)\n"
          "  --quick     0.05 s and 2 calls per measurement\n"
          "  --json      {\"library\", \"config\", \"results\": [{\"n\", \"threads\", \"calls\", "
          "\"median_ms\", \"min_ms\", \"mean_ms\", \"gflops\", \"max_rel_err\"}]}\n",
          hw);
      return 0;
    } else {
      return usage("unknown argument '" + a + "'");
    }
  }

  std::vector<Result> results;
  bool wrong = false;
  for (int n : sizes)
    for (int t : threads) {
      results.push_back(run(n, t, min_time, min_calls));
      if (!(results.back().max_rel_err < 1e-4)) {
        std::fprintf(stderr, "blas_bench: cblas_sgemm n=%d threads=%d is wrong: relative error %g\n", n, t,
                     results.back().max_rel_err);
        wrong = true;
      }
    }

  std::string config;  // openblas_get_config(), trimmed, quotes and backslashes dropped for JSON
  for (const char* p = openblas_get_config(); *p; ++p)
    if (*p != '"' && *p != '\\') config += *p;
  while (!config.empty() && config.back() == ' ') config.pop_back();
  if (json) {
    std::printf("{\"library\": \"openblas\", \"config\": \"%s\", \"results\": [", config.c_str());
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::printf(
          "%s{\"n\": %d, \"threads\": %d, \"calls\": %d, \"median_ms\": %.6f, \"min_ms\": %.6f, "
          "\"mean_ms\": %.6f, \"gflops\": %.3f, \"max_rel_err\": %.3g}",
          i ? ", " : "", r.n, r.threads, r.calls, r.median_ms, r.min_ms, r.mean_ms, r.gflops, r.max_rel_err);
    }
    std::printf("]}\n");
  } else {
    std::printf("OpenBLAS %s\n%6s %8s %8s %12s %12s %10s\n", config.c_str(), "n", "threads", "calls",
                "median ms", "min ms", "GFLOPS");
    for (const Result& r : results)
      std::printf("%6d %8d %8d %12.3f %12.3f %10.1f\n", r.n, r.threads, r.calls, r.median_ms, r.min_ms,
                  r.gflops);
  }
  return wrong ? 1 : 0;
}
