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

#define MLCC_ABI_VERSION 4

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

/* CUDA models (ABI version 4; mlcc-codegen --target cuda): entry is NULL
 * and `cuda` describes the work as a table the runtime walks with the CUDA
 * driver (libs/runtime/src/cuda.cpp): the PTX of all kernels, the weights
 * (uploaded once at load), and steps over device buffers: each input and
 * output has one, the workspace is one (the same memory plan), and a
 * constant is an offset into the uploaded weights. */
enum {
  MLCC_ABI_LOC_INPUT = 0,
  MLCC_ABI_LOC_OUTPUT = 1,
  MLCC_ABI_LOC_CONSTANT = 2,
  MLCC_ABI_LOC_WORKSPACE = 3
};
typedef struct {
  int32_t kind;    /* MLCC_ABI_LOC_* */
  int32_t index;   /* input or output index */
  uint64_t offset; /* bytes into the weights or the workspace */
} mlcc_abi_cuda_arg;

enum { MLCC_ABI_CUDA_LAUNCH = 0, MLCC_ABI_CUDA_COPY = 1, MLCC_ABI_CUDA_ZERO = 2, MLCC_ABI_CUDA_GEMM = 3 };
typedef struct {
  int32_t kind;         /* MLCC_ABI_CUDA_* */
  int32_t kernel_id;    /* launch: the kernel (prim func) it belongs to, for profiles */
  const char* function; /* launch: the __global__ function in the PTX */
  uint32_t grid[3], block[3];
  int32_t num_args; /* launch: one device pointer each; copy: source, destination; zero: the buffer */
  const mlcc_abi_cuda_arg* args;
  uint64_t bytes; /* copy, zero */
  /* gemm (cuBLAS, f32, row-major): out[batch, m, n] = a[batch, m, k] b[batch, k, n], or with `dense`
   * out[m, n] = a[m, k] b[n, k]^T; args a, b, out. A bias or relu follows as a launch. */
  int64_t batch, m, n, k;
  int32_t dense;
} mlcc_abi_cuda_step;

typedef struct {
  const char* ptx;  /* NUL-terminated */
  const char* arch; /* "sm_80": the oldest architecture it runs on */
  const void* weights;
  uint64_t weights_bytes;
  int32_t num_steps;
  const mlcc_abi_cuda_step* steps;
} mlcc_abi_cuda;

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
  const mlcc_abi_cuda* cuda;          /* a CUDA model (entry NULL, no functions); NULL for the CPU */
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

/* A user library function (include/mlcc/extern.h) returned `code` != 0;
 * `call` names it ("%y = call_extern \"mylib.f\" (mylib_f)"). Sets the run's
 * error as mlcc_rt_set_error does. */
void mlcc_rt_extern_failed(mlcc_rt_context* ctx, const char* call, int32_t code);

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
