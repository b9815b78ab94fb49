/* A hand-written micro-kernel for tensorize (include/mlcc/extern.h):
 * C[4][16] += A[4][64] * B[64][16] on tiles of larger row-major buffers,
 * as gemm_tile.ir describes it. With AVX-512 each row of the C tile is one
 * 16-float register: four accumulators, B's row loaded once per k and A's
 * elements broadcast. Elsewhere, the same sums in plain C.
 *
 *   cc -O2 -march=native -fPIC -shared -Iinclude gemm_tile.c -o libgemm_tile.so */
#include <mlcc/extern.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

void mlcc_gemm_4x16(const mlcc_extern_region* args, int32_t num_args) {
  (void)num_args; /* always 3: A, B, then C */
  const float* a = (const float*)args[0].data;
  const float* b = (const float*)args[1].data;
  float* c = (float*)args[2].data;
  const int64_t lda = args[0].strides[0], ldb = args[1].strides[0], ldc = args[2].strides[0];
#ifdef __AVX512F__
  __m512 acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = _mm512_loadu_ps(c + i * ldc);
  for (int k = 0; k < 64; ++k) {
    const __m512 row = _mm512_loadu_ps(b + k * ldb);
    for (int i = 0; i < 4; ++i) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * lda + k]), row, acc[i]);
  }
  for (int i = 0; i < 4; ++i) _mm512_storeu_ps(c + i * ldc, acc[i]);
#else
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      float sum = c[i * ldc + j];
      for (int k = 0; k < 64; ++k) sum += a[i * lda + k] * b[k * ldb + j];
      c[i * ldc + j] = sum;
    }
#endif
}
