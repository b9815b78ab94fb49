/* The C ABI of a user library function that a model calls (call_extern).
 *
 * A pattern file declares the function (`externs`, see
 * pipelines/patterns/README or the README's walkthrough) and dispatches op
 * groups to it; fuse-by-pattern copies the declaration into the IR:
 *
 *   extern "mylib.linear_relu"(%x: f32[n, k], %w: f32[m, k], %b: f32[m]) -> f32[n, m]
 *       attrs(library = "libmylib.so", symbol = "mylib_linear_relu")
 *
 * The function has one C signature, destination-passing:
 *
 *   #include <mlcc/extern.h>
 *   int mylib_linear_relu(const mlcc_extern_tensor* args, int32_t num_args);
 *
 * args[0] .. args[num_args - 2] are the operands, in the declaration's
 * order; args[num_args - 1] is the result, which the function writes (its
 * buffer is allocated by the caller and not initialised). Buffers are dense
 * and row-major; shapes are the actual ones (symbolic dimensions bound).
 * Return 0 on success; any other value fails the run (mlcc_model_run
 * returns -1, mlcc_last_error() names the function and the value).
 *
 * The same function runs in the interpreter (mlcc-run, mlcc-pipeline
 * verify; the library is dlopen'ed, an object or archive first linked into a
 * temporary shared library) and in model.so (mlcc-link links the library
 * given on its command line). It may be called from one thread at a time
 * per model; it must not keep the pointers after it returns.
 */
#ifndef MLCC_EXTERN_H
#define MLCC_EXTERN_H

#include <stdint.h>

#include "mlcc/runtime.h" /* mlcc_dtype */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  void* data;           /* the elements; read-only for operands */
  const int64_t* shape; /* ndim dimensions */
  int32_t ndim;
  int32_t dtype; /* an mlcc_dtype */
} mlcc_extern_tensor;

typedef int (*mlcc_extern_fn)(const mlcc_extern_tensor* args, int32_t num_args);

/* Tensor intrinsics: a routine that computes one tile of a loop nest in
 * place of the loops (the schedule primitive `tensorize`; README,
 * "Tensorize"). Its description is a prim func named after the C function
 * (`mlcc-schedule --intrinsics FILE`); the routine is called once per tile:
 *
 *   void mylib_gemm_4x16(const mlcc_extern_region* args, int32_t num_args);
 *
 * args follow the description's parameters: its inputs, then its one
 * output. Each region is a tile of a larger buffer: `data` points at the
 * tile's first element, `shape` is the description parameter's shape and
 * `strides` (in elements, not bytes) step through the enclosing buffer, so
 * rows of a tile are not adjacent in general. The output region holds the
 * current values, which the routine updates as the description's body does
 * (an accumulating description reads them). A routine cannot fail. */
typedef struct {
  void* data;             /* the tile's first element */
  const int64_t* shape;   /* ndim dimensions: the description's */
  const int64_t* strides; /* ndim strides, in elements */
  int32_t ndim;
  int32_t dtype; /* an mlcc_dtype */
} mlcc_extern_region;

typedef void (*mlcc_tensor_intrin_fn)(const mlcc_extern_region* args, int32_t num_args);

#ifdef __cplusplus
}
#endif

#endif /* MLCC_EXTERN_H */
