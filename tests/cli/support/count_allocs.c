/* Checks that running a compiled model allocates nothing: loads a model.so
 * through include/mlcc/runtime.h, runs it once (warm-up), then counts every
 * heap allocation any library makes (this program's malloc & co. interpose
 * glibc's for the whole process, worker threads included) during a few
 * more runs on 1 and 2 threads. Symbolic input dimensions (-1) are set to
 * 5 first. Prints the count; exits 1 if it is not 0, 2 on a usage or load
 * error.
 *   count_allocs MODEL.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mlcc/runtime.h"

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

static volatile int counting;
static long allocations;

static void note(void) {
  if (counting) __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
}
void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  note();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  note();
  void* p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }

static size_t bytesOf(const mlcc_tensor_info* t) {
  static const size_t elem[] = {4, 2, 2, 1, 4, 8, 1, 1, 8}; /* mlcc_dtype order */
  size_t n = elem[t->dtype];
  for (int d = 0; d < t->ndim; ++d) n *= (size_t)t->shape[d];
  return n;
}

/* p_NAME: the model's NAME, typed from its declaration in runtime.h. */
#define SYM(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lib, #name)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: count_allocs MODEL.so\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "count_allocs: %s\n", dlerror());
    return 2;
  }
  SYM(mlcc_model_load);
  SYM(mlcc_model_num_inputs);
  SYM(mlcc_model_num_outputs);
  SYM(mlcc_model_input_info);
  SYM(mlcc_model_output_info);
  SYM(mlcc_model_run);
  SYM(mlcc_model_set_threads);
  SYM(mlcc_model_set_input_shape);
  SYM(mlcc_last_error);
  if (!p_mlcc_model_load || !p_mlcc_model_run || !p_mlcc_model_set_threads) {
    fprintf(stderr, "count_allocs: %s is not an mlcc model\n", argv[1]);
    return 2;
  }
  /* Loading allocates (the workspace, the thread pool): seeing it proves
   * the counting reaches the model's libraries. */
  counting = 1;
  mlcc_model* m = p_mlcc_model_load();
  counting = 0;
  if (!m) {
    fprintf(stderr, "count_allocs: %s\n", p_mlcc_last_error());
    return 2;
  }
  if (allocations == 0) {
    fprintf(stderr, "count_allocs: saw no allocation while loading; the counting does not work here\n");
    return 2;
  }
  printf("load: %ld allocation(s)\n", allocations);
  allocations = 0;
  int ni = p_mlcc_model_num_inputs(m), no = p_mlcc_model_num_outputs(m);
  for (int i = 0; i < ni && p_mlcc_model_set_input_shape; ++i) {
    mlcc_tensor_info t;
    p_mlcc_model_input_info(m, i, &t);
    int64_t shape[16];
    int symbolic = 0;
    for (int d = 0; d < t.ndim && d < 16; ++d) {
      shape[d] = t.shape[d] < 0 ? 5 : t.shape[d];
      symbolic |= t.shape[d] < 0;
    }
    if (symbolic && p_mlcc_model_set_input_shape(m, i, t.ndim, shape) != 0) {
      fprintf(stderr, "count_allocs: %s\n", p_mlcc_last_error());
      return 2;
    }
  }
  void** in = calloc((size_t)ni, sizeof(void*));
  void** out = calloc((size_t)no, sizeof(void*));
  for (int i = 0; i < ni; ++i) {
    mlcc_tensor_info t;
    p_mlcc_model_input_info(m, i, &t);
    in[i] = calloc(1, bytesOf(&t) + 1);
  }
  for (int i = 0; i < no; ++i) {
    mlcc_tensor_info t;
    p_mlcc_model_output_info(m, i, &t);
    out[i] = calloc(1, bytesOf(&t) + 1);
  }
  long total = 0;
  for (int threads = 1; threads <= 2; ++threads) {
    if (p_mlcc_model_set_threads(m, threads) != 0 || p_mlcc_model_run(m, (const void* const*)in, out) != 0) {
      fprintf(stderr, "count_allocs: %s\n", p_mlcc_last_error());
      return 2;
    }
    counting = 1;
    for (int r = 0; r < 3; ++r) p_mlcc_model_run(m, (const void* const*)in, out);
    counting = 0;
    printf("%d thread(s): %ld allocation(s) in 3 runs\n", threads, allocations);
    total += allocations;
    allocations = 0;
  }
  return total == 0 ? 0 : 1;
}
