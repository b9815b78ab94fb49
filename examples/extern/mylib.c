/* A user library for mlcc's call_extern (include/mlcc/extern.h), as the MLC
 * course's `env.linear` registered with register_func: mylib.yaml declares
 * these functions and dispatches the matching op groups to them.
 *
 *   cc -O2 -fPIC -shared -I../../include mylib.c -o libmylib.so
 */
#include <mlcc/extern.h>

/* y[n, m] = x[n, k] . w[m, k]^T + b[m], then max(y, 0) with `relu`. */
static int linear(const mlcc_extern_tensor* args, int32_t num_args, int relu) {
  if (num_args != 4) return 1;
  const mlcc_extern_tensor *x = &args[0], *w = &args[1], *b = &args[2], *y = &args[3];
  for (int i = 0; i < 4; ++i)
    if (args[i].dtype != MLCC_F32) return 2;
  const int64_t n = x->shape[0], k = x->shape[1], m = w->shape[0];
  const float *xd = (const float*)x->data, *wd = (const float*)w->data, *bd = (const float*)b->data;
  float* yd = (float*)y->data;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = bd[j];
      for (int64_t p = 0; p < k; ++p) acc += xd[i * k + p] * wd[j * k + p];
      yd[i * m + j] = relu && acc < 0.0f ? 0.0f : acc;
    }
  return 0;
}

int mylib_linear(const mlcc_extern_tensor* args, int32_t num_args) { return linear(args, num_args, 0); }

int mylib_linear_relu(const mlcc_extern_tensor* args, int32_t num_args) {
  return linear(args, num_args, 1);
}
