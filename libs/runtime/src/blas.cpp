// The library kernels of call_extern (abi.h): dense and (batched) matmul on
// OpenBLAS's cblas_sgemm, with the bias/relu epilogue fused per block.
//
// OpenBLAS runs single-threaded (model.cpp sets openblas_set_num_threads(1)):
// the parallelism is the model's own thread pool, which splits a GEMM into
// column (or row) blocks, one cblas_sgemm each. Letting OpenBLAS start its
// own threads next to the pool's oversubscribes the cores: its idle threads
// spin, and on this 2-core machine every parallel loop of the model became
// about 100x slower (186 us instead of 1.7 us per mlcc_rt_parallel_for).
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "model_state.h"

namespace {

// C[M, N] = A[M, K] * op(B) (+ bias[N]) (then relu), op(B) = B[N, K]^T
// (trans_b) or B[K, N], split into blocks of `unit` columns (split_n) or rows.
struct Gemm {
  const float* a;
  const float* b;
  float* c;
  int64_t M, N, K;
  bool trans_b;
  const float* bias;
  bool relu;
  bool split_n;
  int64_t unit;
};

void epilogue(const Gemm& g, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  if (!g.bias && !g.relu) return;
  for (int64_t i = i0; i < i1; ++i) {
    float* row = g.c + i * g.N;
    if (g.bias)
      for (int64_t j = j0; j < j1; ++j) row[j] += g.bias[j];
    if (g.relu)
      for (int64_t j = j0; j < j1; ++j) row[j] = std::max(row[j], 0.0f);
  }
}

void sgemm(const Gemm& g, int64_t m, int64_t n, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(g.K), 1.0f, a, static_cast<blasint>(g.K), b,
              static_cast<blasint>(g.trans_b ? g.K : g.N), 0.0f, c, static_cast<blasint>(g.N));
}

void gemmBlocks(void* closure, int64_t u0, int64_t u1) {
  const Gemm& g = *static_cast<const Gemm*>(closure);
  if (g.split_n) {
    const int64_t j0 = u0 * g.unit, j1 = std::min(u1 * g.unit, g.N);
    sgemm(g, g.M, j1 - j0, g.a, g.trans_b ? g.b + j0 * g.K : g.b + j0, g.c + j0);
    epilogue(g, 0, g.M, j0, j1);
  } else {
    const int64_t i0 = u0 * g.unit, i1 = std::min(u1 * g.unit, g.M);
    sgemm(g, i1 - i0, g.N, g.a + i0 * g.K, g.b, g.c + i0 * g.N);
    epilogue(g, i0, i1, 0, g.N);
  }
}

// Below this many multiply-adds a GEMM runs on the calling thread.
constexpr int64_t kSerialMacs = int64_t{1} << 18;

void runGemm(mlcc_rt_context* ctx, Gemm g) {
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {
    std::memset(g.c, 0, sizeof(float) * g.M * g.N);
    epilogue(g, 0, g.M, 0, g.N);
    return;
  }
  g.split_n = g.N >= g.M;
  g.unit = g.split_n ? 16 : 4;
  const int64_t units = ((g.split_n ? g.N : g.M) + g.unit - 1) / g.unit;
  if (g.M * g.N * g.K < kSerialMacs)
    gemmBlocks(&g, 0, units);
  else
    mlcc_rt_parallel_for(ctx, units, gemmBlocks, &g);
}

struct Batched {
  mlcc_rt_context* ctx;
  Gemm g;
  int64_t a_stride, b_stride, c_stride;
};

void batchBlocks(void* closure, int64_t b0, int64_t b1) {
  const Batched& bt = *static_cast<const Batched*>(closure);
  for (int64_t i = b0; i < b1; ++i) {
    Gemm g = bt.g;
    g.a += i * bt.a_stride;
    g.b += i * bt.b_stride;
    g.c += i * bt.c_stride;
    runGemm(bt.ctx, g);  // inside a chunk: its parallel loop runs serially
  }
}

}  // namespace

extern "C" {

void mlcc_rt_blas_dense(mlcc_rt_context* ctx, const float* x, const float* w, const float* bias, float* out,
                        int64_t M, int64_t N, int64_t K, int32_t relu) {
  runGemm(ctx, Gemm{x, w, out, M, N, K, /*trans_b=*/true, bias, relu != 0, false, 1});
}

void mlcc_rt_blas_matmul(mlcc_rt_context* ctx, const float* a, const float* b, const float* bias, float* out,
                         int64_t B, int64_t M, int64_t N, int64_t K, int32_t relu) {
  if (B <= 0) return;
  Batched bt{ctx, Gemm{a, b, out, M, N, K, /*trans_b=*/false, bias, relu != 0, false, 1}, M * K, K * N,
             M * N};
  const int threads = ctx && ctx->pool ? ctx->pool->threads() : 1;
  if (B >= threads && B > 1)
    mlcc_rt_parallel_for(ctx, B, batchBlocks, &bt);
  else
    batchBlocks(&bt, 0, B);
}

}  // extern "C"
