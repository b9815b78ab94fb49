// A row-major GEMM step (abi.h's MLCC_ABI_CUDA_GEMM) as the column-major
// cuBLAS call that computes it: C^T = B^T A^T, i.e. the operands swapped.
//   matmul: out[m, n] = a[m, k] b[k, n]   -> sgemm(N, N, n, m, k, b (ld n), a (ld k), out (ld n))
//   dense:  out[m, n] = a[m, k] b[n, k]^T -> sgemm(T, N, n, m, k, b (ld k), a (ld k), out (ld n))
// with strides of one matrix per batch (cublasSgemmStridedBatched).
// Header-only so that the tests check it against a reference GEMM on the CPU.
#pragma once

#include <cstdint>

namespace mlcc::rt {

struct CublasGemm {
  bool trans_first = false;     // cuBLAS's transa, of the first operand (the step's b)
  int64_t m = 0, n = 0, k = 0;  // cuBLAS's (column-major) sizes
  int64_t ld_first = 0, ld_second = 0, ld_out = 0;
  int64_t stride_first = 0, stride_second = 0, stride_out = 0;
  int64_t batch = 1;
};

// `first` is the step's b, `second` its a.
inline CublasGemm cublasGemmOf(int64_t batch, int64_t m, int64_t n, int64_t k, bool dense) {
  CublasGemm g;
  g.trans_first = dense;
  g.m = n;
  g.n = m;
  g.k = k;
  g.ld_first = dense ? k : n;
  g.ld_second = k;
  g.ld_out = n;
  g.stride_first = k * n;
  g.stride_second = m * k;
  g.stride_out = m * n;
  g.batch = batch;
  return g;
}

}  // namespace mlcc::rt
