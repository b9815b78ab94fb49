// The library kernels of call_extern (abi.h): dense and (batched) matmul on
// OpenBLAS's cblas_sgemm, with the bias/relu epilogue run on the model's
// thread pool. OpenBLAS's own thread count follows the model's (model.cpp).
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "model_state.h"

namespace {

struct Epilogue {
  const float* bias;
  float* out;
  int64_t N;
  bool relu;
};

void epilogueRows(void* closure, int64_t begin, int64_t end) {
  const auto& e = *static_cast<const Epilogue*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    float* row = e.out + i * e.N;
    if (e.bias)
      for (int64_t j = 0; j < e.N; ++j) row[j] += e.bias[j];
    if (e.relu)
      for (int64_t j = 0; j < e.N; ++j) row[j] = std::max(row[j], 0.0f);
  }
}

// Rows per parallel chunk below which the epilogue runs on one thread.
constexpr int64_t kSerialEpilogueElements = 1 << 14;

}  // namespace

extern "C" {

void mlcc_rt_blas_dense(mlcc_rt_context* ctx, const float* x, const float* w, const float* bias, float* out,
                        int64_t M, int64_t N, int64_t K, int32_t relu) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    std::memset(out, 0, sizeof(float) * M * N);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(M), static_cast<blasint>(N),
                static_cast<blasint>(K), 1.0f, x, static_cast<blasint>(K), w, static_cast<blasint>(K), 0.0f,
                out, static_cast<blasint>(N));
  }
  if (!bias && !relu) return;
  Epilogue e{bias, out, N, relu != 0};
  if (M * N < kSerialEpilogueElements)
    epilogueRows(&e, 0, M);
  else
    mlcc_rt_parallel_for(ctx, M, epilogueRows, &e);
}

void mlcc_rt_blas_matmul(mlcc_rt_context* ctx, const float* a, const float* b, float* out, int64_t B,
                         int64_t M, int64_t N, int64_t K) {
  if (B <= 0 || M <= 0 || N <= 0) return;
  if (K <= 0) {
    std::memset(out, 0, sizeof(float) * B * M * N);
    return;
  }
  for (int64_t i = 0; i < B; ++i)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(N),
                static_cast<blasint>(K), 1.0f, a + i * M * K, static_cast<blasint>(K), b + i * K * N,
                static_cast<blasint>(N), 0.0f, out + i * M * N, static_cast<blasint>(N));
}

}  // extern "C"
