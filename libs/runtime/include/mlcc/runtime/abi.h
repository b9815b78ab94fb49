/* The contract between code mlcc-codegen generates (model.o) and the
 * runtime linked next to it into model.so (libs/runtime). Not public:
 * applications use include/mlcc/runtime.h.
 *
 * model.o defines one symbol, `mlcc_abi_model_v1`, describing the model;
 * the generated code calls the mlcc_rt_* functions below. Kernels (prim
 * funcs) have the signature
 *     void kernel(void* const* args, mlcc_rt_context* ctx)
 * where args holds one pointer per parameter buffer, then the value of each
 * symbolic dimension of the prim func (`n` of `%x: f32[n, 784]`; those that
 * are whole dimensions of its parameters, in order of first appearance) as
 * an int64 >= 0 stored in the slot (`(void*)(intptr_t)n`), then one pointer
 * per scratch buffer (its static allocations too large for the stack).
 * and the compiled graph entry
 *     int entry(const void* const* inputs, void* const* outputs,
 *               void* workspace, const int64_t* dims, mlcc_rt_context* ctx)
 * calls them in order with pointers into the inputs, the outputs, the
 * embedded weights and the workspace (the static memory plan: intermediates
 * at fixed offsets, reused by liveness). It returns 0, or -1 after
 * mlcc_rt_set_error.
 *
 * Symbolic dimensions (a model compiled without --shape, `f32[n, 784]`):
 * num_dims > 0; dims[k] is the value of dimension k for this run. An input
 * dimension that is symbolic dimension k is stored as -1 - k in the input's
 * shape (every input dimension is a constant or one dimension); output
 * dimensions that depend on dims are stored as -1, and shapes(dims, ...)
 * gives all outputs' dimensions (concatenated, in order) and the workspace
 * size for those values; the workspace offsets are computed in the entry.
 * Static models have num_dims = 0, shapes = NULL, and their entry ignores
 * dims.
 *
 * Functions (ABI version 3): a module of prim funcs only (or one prim func
 * chosen with mlcc-codegen --entry) compiles to a model without a graph
 * entry (entry = NULL, no inputs, outputs or kernels) whose `functions`
 * table describes each prim func as a model of its own, looked up by name
 * (mlcc_model_load_function). Its inputs are the parameters the prim func
 * reads (loads from) or does not write, its outputs those it writes, each
 * in parameter order and named after the parameter (ir::paramUses); a
 * parameter both read and written is an input and an output of the same
 * name, and the entry copies the input into the output before the call.
 * It has one kernel (the prim func), its scratch buffers as its workspace,
 * and the prim func's symbolic dimensions (each a whole dimension of an
 * input) as its dims. Function models have no functions of their own; a
 * model with a graph entry has none (num_functions = 0): a model has a
 * graph entry or functions, never both.
 */
#ifndef MLCC_RUNTIME_ABI_H
#define MLCC_RUNTIME_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLCC_ABI_VERSION 3

typedef struct mlcc_rt_context mlcc_rt_context;

typedef struct {
  const char* name;
  int32_t dtype; /* mlcc_dtype */
  int32_t ndim;
  const int64_t* shape;
} mlcc_abi_tensor;

typedef struct {
  const char* name;
  double flops_per_call;
} mlcc_abi_kernel;

typedef struct mlcc_abi_model mlcc_abi_model;

typedef struct {
  const char* name;            /* the prim func */
  const mlcc_abi_model* model; /* the prim func as a model (no functions of its own) */
} mlcc_abi_function;

struct mlcc_abi_model {
  uint32_t abi_version; /* MLCC_ABI_VERSION */
  int32_t num_inputs;
  int32_t num_outputs;
  int32_t num_kernels;
  const mlcc_abi_tensor* inputs;
  const mlcc_abi_tensor* outputs;
  const mlcc_abi_kernel* kernels; /* indexed by the kernel ids the entry reports */
  uint64_t workspace_bytes;       /* the memory plan; 64-byte aligned (static models) */
  /* the graph entry; NULL for a model of functions */
  int (*entry)(const void* const* inputs, void* const* outputs, void* workspace, const int64_t* dims,
               mlcc_rt_context* ctx);
  int32_t num_dims;             /* symbolic dimensions; 0 for a static model */
  const char* const* dim_names; /* their names */
  void (*shapes)(const int64_t* dims, int64_t* output_dims, uint64_t* workspace_bytes);
  int32_t num_functions;              /* the prim funcs compiled as functions; 0 with a graph entry */
  const mlcc_abi_function* functions; /* in module order */
};

/* The model, defined by model.o (const data); the runtime reads it at load. */
extern const mlcc_abi_model mlcc_abi_model_v1;

/* Runs fn(closure, begin, end) over [0, n) split into chunks on the thread
 * pool of ctx's model; returns when all are done. Nested calls (from inside
 * a chunk) run serially. Generated code outlines `parallel` loops into fn. */
void mlcc_rt_parallel_for(mlcc_rt_context* ctx, int64_t n,
                          void (*fn)(void* closure, int64_t begin, int64_t end), void* closure);

/* Profiling hooks around each kernel call of the entry (cheap when off). */
int64_t mlcc_rt_kernel_begin(mlcc_rt_context* ctx, int32_t kernel_id);
void mlcc_rt_kernel_end(mlcc_rt_context* ctx, int32_t kernel_id, int64_t begin_token);

void mlcc_rt_set_error(mlcc_rt_context* ctx, const char* message);

/* A bounds-checked access (mlcc-codegen --bounds-check) out of bounds:
 * `access` names the function, block, kind and buffer ("prim func @f,
 * block \"b\": store to %y"); index and shape have `rank` values. Sets the
 * run's error (the first one wins) as mlcc_rt_set_error does. */
void mlcc_rt_bounds_error(mlcc_rt_context* ctx, const char* access, int32_t rank, const int64_t* index,
                          const int64_t* shape);

/* Library kernels for call_extern (pipelines/patterns/blas.yaml), on f32
 * row-major data: out[M, N] = x[M, K] * w[N, K]^T (+ bias[N]) (then relu). */
void mlcc_rt_blas_dense(mlcc_rt_context* ctx, const float* x, const float* w, const float* bias, float* out,
                        int64_t M, int64_t N, int64_t K, int32_t relu);
/* out[B, M, N] = a[B, M, K] * b[B, K, N] (+ bias[N]) (then relu) (B = 1
 * for plain matmul). */
void mlcc_rt_blas_matmul(mlcc_rt_context* ctx, const float* a, const float* b, const float* bias, float* out,
                         int64_t B, int64_t M, int64_t N, int64_t K, int32_t relu);

#ifdef __cplusplus
}
#endif

#endif /* MLCC_RUNTIME_ABI_H */
