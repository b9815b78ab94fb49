/* The C ABI of a compiled mlcc model (model.so, made by mlcc-link).
 *
 * A C or C++ program needs only this header and the model.so: link it
 * (cc app.c ./model.so) or dlopen it and look these symbols up. The weights
 * are embedded in model.so; nothing else is read at load time.
 *
 *   mlcc_model* m = mlcc_model_load();
 *   if (!m) { fprintf(stderr, "%s\n", mlcc_last_error()); return 1; }
 *   mlcc_tensor_info in;
 *   mlcc_model_input_info(m, 0, &in);            // name, dtype, shape
 *   const void* inputs[] = {x};                  // dense row-major buffers
 *   void* outputs[] = {y};
 *   if (mlcc_model_run(m, inputs, outputs) != 0) ...
 *   mlcc_model_free(m);
 *
 * Symbolic dimensions (a model compiled from IR with `f32[n, 784]`): the
 * infos show -1 for each dimension not known yet. Set the actual shape of
 * every input with such dimensions before running (that may allocate; runs
 * with the same shapes do not); the infos then give the bound shapes,
 * outputs included:
 *   int64_t shape[] = {8, 784};
 *   mlcc_model_set_input_shape(m, 0, 2, shape);
 *   mlcc_model_output_info(m, 0, &out);          // out.shape = {8, 10}
 *
 * A model.so compiled from prim funcs only (mlcc-codegen on a module
 * without a graph function, or --entry PRIM) has no graph entry but
 * functions: each prim func, loaded by name as a model of its own whose
 * inputs are the buffers it reads (or does not write) and whose outputs are
 * the buffers it writes, in parameter order (a buffer both read and written
 * is an input and an output of the same name; the output starts as a copy
 * of the input, and may be the same buffer). All the functions below work
 * on it:
 *   for (int i = 0; i < mlcc_model_num_functions(); ++i)
 *     puts(mlcc_model_function_name(i));
 *   mlcc_model* mm = mlcc_model_load_function("mm");
 *
 * Functions returning int give 0 on success and -1 on error, with the
 * message in mlcc_last_error() (per thread). A model may be run from one
 * thread at a time; several models may be loaded at once.
 */
#ifndef MLCC_RUNTIME_H
#define MLCC_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlcc_model mlcc_model;

typedef enum {
  MLCC_F32 = 0,
  MLCC_F16 = 1,
  MLCC_BF16 = 2,
  MLCC_I8 = 3,
  MLCC_I32 = 4,
  MLCC_I64 = 5,
  MLCC_BOOL = 6,
  MLCC_U8 = 7,
  MLCC_F64 = 8,
  MLCC_I16 = 9,
  MLCC_U16 = 10,
  MLCC_U32 = 11
} mlcc_dtype;

typedef struct {
  const char* name; /* the graph input/output name */
  mlcc_dtype dtype;
  int32_t ndim;
  const int64_t* shape; /* ndim dimensions (-1: symbolic, not set yet); valid until the next
                           mlcc_model_set_input_shape or the model is freed */
} mlcc_tensor_info;

typedef struct {
  const char* name; /* the prim func (or library kernel) */
  int64_t calls;    /* since profiling was enabled */
  int64_t total_ns;
  double flops_per_call; /* 0 when unknown */
} mlcc_kernel_profile;

/* Loads the model of this shared library (allocates its workspace and
 * starts its thread pool): its graph entry, or without one its only
 * function. NULL on error (also for a model of several functions and no
 * graph entry: the message lists them). */
mlcc_model* mlcc_model_load(void);
void mlcc_model_free(mlcc_model* m);

/* The functions (prim funcs) of this shared library: how many (0 for a
 * model with a graph entry), the name of function `index` (NULL when out of
 * range), and function `name` loaded as a model (NULL on error: an unknown
 * name gets a message listing the functions). */
int mlcc_model_num_functions(void);
const char* mlcc_model_function_name(int index);
mlcc_model* mlcc_model_load_function(const char* name);

int mlcc_model_num_inputs(const mlcc_model* m);
int mlcc_model_num_outputs(const mlcc_model* m);
int mlcc_model_input_info(const mlcc_model* m, int index, mlcc_tensor_info* out);
int mlcc_model_output_info(const mlcc_model* m, int index, mlcc_tensor_info* out);
/* The name of the symbolic dimension that dimension `dim` of input `index`
 * is ("n" of f32[n, 784]); NULL for a constant dimension (and on error). */
const char* mlcc_model_input_dim_name(const mlcc_model* m, int index, int dim);

/* Sets the shape of input `index` (ndim dimensions): its symbolic
 * dimensions take these values, every other dimension must match. Input
 * and output infos then show the dimensions it binds. Grows the workspace
 * when the new shapes need more. For a static model, the shape must be the
 * input's. */
int mlcc_model_set_input_shape(mlcc_model* m, int index, int ndim, const int64_t* shape);

/* Runs the model: inputs[i] / outputs[i] point to dense row-major buffers
 * of the sizes the infos give (owned by the caller). No allocation. Fails
 * while a symbolic dimension is not set. */
int mlcc_model_run(mlcc_model* m, const void* const* inputs, void* const* outputs);

/* Threads for parallel loops (default: the machine's cores); n >= 1. */
int mlcc_model_set_threads(mlcc_model* m, int n);
int mlcc_model_get_threads(const mlcc_model* m);

/* Whether a run flushes denormal floats (magnitudes below 1.2e-38 in f32,
 * 2.2e-308 in f64) to zero, on x86 (MXCSR's FTZ and DAZ, set for the run on
 * the calling thread and the pool's threads, then restored), as TensorFlow
 * does: an operation on a denormal costs about 100 cycles there, and a
 * softmax's tiny probabilities made Swin-T's attention 30x slower. Default
 * on; 0 keeps IEEE denormals (the reference interpreter's results to the
 * last bit). */
int mlcc_model_set_flush_denormals(mlcc_model* m, int on);

/* Per-kernel timing of later runs (off by default; enabling resets it). */
int mlcc_model_enable_profiling(mlcc_model* m, int on);
int mlcc_model_num_kernels(const mlcc_model* m);
int mlcc_model_kernel_profile(const mlcc_model* m, int index, mlcc_kernel_profile* out);

/* The last error on this thread ("" when none). */
const char* mlcc_last_error(void);

/* CUDA models (mlcc-codegen --target cuda). mlcc_model_load loads the CUDA
 * driver (libcuda.so.1) at run time, on device $MLCC_CUDA_DEVICE (default
 * 0), uploads the weights once and allocates the device memory; without a
 * driver or a device it returns NULL ("no CUDA driver ..."). mlcc_model_run
 * copies the host inputs in and the outputs back. The device the model runs
 * on, or -1 for a CPU model: */
int mlcc_model_device(const mlcc_model* m);
/* Runs a CUDA model on device buffers (CUdeviceptr values cast to
 * pointers, in the device's primary context, as PyTorch or CuPy allocate
 * them), with no copies; returns when the kernels are done. -1 for a CPU
 * model.
 * A run with the same buffers as the run before it (always the case for
 * mlcc_model_run, whose device buffers are the model's own) replays the
 * model's kernels as a CUDA graph, captured once per set of buffers: one
 * launch instead of one per kernel. MLCC_CUDA_GRAPHS=0 turns that off;
 * profiling runs launch the kernels one by one. */
int mlcc_model_run_device(mlcc_model* m, const void* const* inputs, void* const* outputs);
/* The time the last run took on the device, in nanoseconds: from its first
 * kernel to the end of its last (cuBLAS calls, copies between buffers and
 * the gaps between launches included; mlcc_model_run's copies of the host
 * inputs and outputs excluded), measured with CUDA events. -1 for a CPU
 * model, before the first run, and after a failed one. With profiling
 * enabled, each kernel's time is the span between the CUDA events around
 * its launches, the launches not synchronized. */
int64_t mlcc_model_last_device_ns(const mlcc_model* m);

#ifdef __cplusplus
}
#endif

#endif /* MLCC_RUNTIME_H */
