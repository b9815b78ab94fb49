/* A hand-written model.o for the runtime and link tests (link.sh), written
 * against the generated-code ABI (libs/runtime/include/mlcc/runtime/abi.h)
 * the way mlcc-codegen's output is:
 *   h = relu(x @ W^T + b)     kernel 0, BLAS dense with its epilogue (into the workspace)
 *   y = h * 2 + 1             kernel 1, a parallel loop over rows with a nested
 *                             parallel loop over columns (runs serially)
 *   h (output)                kernel 2, a copy of the workspace buffer
 * x: f32[M, K]; W: f32[N, K] and b: f32[N] are embedded constants from
 * weights.h, which the test generates (with M, N, K) next to the saved .npy.
 * A NaN in x[0, 0] makes the entry fail through mlcc_rt_set_error.
 * -DTINY_ABI_VERSION=n overrides the ABI version (a mismatch test). */
#include <string.h>

#include "mlcc/runtime/abi.h"
#include "weights.h" /* TINY_M, TINY_N, TINY_K, tiny_w, tiny_b */

#ifndef TINY_ABI_VERSION
#define TINY_ABI_VERSION MLCC_ABI_VERSION
#endif

typedef struct {
  const float* h;
  float* y;
  int64_t row;
} ScaleClosure;

static void scaleCols(void* closure, int64_t begin, int64_t end) {
  const ScaleClosure* c = (const ScaleClosure*)closure;
  for (int64_t j = begin; j < end; ++j) c->y[c->row * TINY_N + j] = c->h[c->row * TINY_N + j] * 2.0f + 1.0f;
}

typedef struct {
  const float* h;
  float* y;
  mlcc_rt_context* ctx;
} RowsClosure;

static void scaleRows(void* closure, int64_t begin, int64_t end) {
  const RowsClosure* r = (const RowsClosure*)closure;
  for (int64_t i = begin; i < end; ++i) {
    ScaleClosure c = {r->h, r->y, i};
    mlcc_rt_parallel_for(r->ctx, TINY_N, scaleCols, &c); /* nested: serial */
  }
}

static int entry(const void* const* inputs, void* const* outputs, void* workspace, const int64_t* dims,
                 mlcc_rt_context* ctx) {
  (void)dims; /* a static model */
  const float* x = (const float*)inputs[0];
  float* y = (float*)outputs[0];
  float* h_out = (float*)outputs[1];
  float* h = (float*)workspace;
  if (x[0] != x[0]) {
    mlcc_rt_set_error(ctx, "tiny model: x[0, 0] is NaN");
    return -1;
  }
  int64_t t = mlcc_rt_kernel_begin(ctx, 0);
  mlcc_rt_blas_dense(ctx, x, tiny_w, tiny_b, h, TINY_M, TINY_N, TINY_K, 1);
  mlcc_rt_kernel_end(ctx, 0, t);

  t = mlcc_rt_kernel_begin(ctx, 1);
  RowsClosure rows = {h, y, ctx};
  mlcc_rt_parallel_for(ctx, TINY_M, scaleRows, &rows);
  mlcc_rt_kernel_end(ctx, 1, t);

  t = mlcc_rt_kernel_begin(ctx, 2);
  memcpy(h_out, h, sizeof(float) * TINY_M * TINY_N);
  mlcc_rt_kernel_end(ctx, 2, t);
  return 0;
}

static const int64_t x_shape[] = {TINY_M, TINY_K};
static const int64_t y_shape[] = {TINY_M, TINY_N};
static const mlcc_abi_tensor inputs[] = {{"x", 0 /* MLCC_F32 */, 2, x_shape}};
static const mlcc_abi_tensor outputs[] = {{"y", 0, 2, y_shape}, {"h", 0, 2, y_shape}};
static const mlcc_abi_kernel kernels[] = {
    {"dense_relu", 2.0 * TINY_M* TINY_N* TINY_K},
    {"scale_add", 2.0 * TINY_M* TINY_N},
    {"copy_h", 0.0},
};

const mlcc_abi_model mlcc_abi_model_v1 = {
    TINY_ABI_VERSION,
    1,
    2,
    3,
    inputs,
    outputs,
    kernels,
    (sizeof(float) * TINY_M * TINY_N + 63) / 64 * 64,
    entry,
    0,
    NULL,
    NULL,
    0, /* a graph entry: no functions */
    NULL,
};
