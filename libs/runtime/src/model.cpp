// include/mlcc/runtime.h over the model the generated model.o describes
// (mlcc_abi_model_v1): load checks the ABI and allocates the workspace and
// the thread pool; run calls the compiled entry. No C++ exception leaves
// these functions: errors become -1/NULL and mlcc_last_error().
#include <cblas.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "model_state.h"

namespace mlcc::rt {

namespace {

thread_local std::string t_last_error;

// The cores this process may run on (its affinity mask), or MLCC_NUM_THREADS.
int defaultThreads() {
  if (const char* env = std::getenv("MLCC_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
  return 1;
}

// Why the ABI description cannot be used, or "" when it can.
std::string checkAbi(const mlcc_abi_model& abi) {
  if (abi.abi_version != MLCC_ABI_VERSION)
    return "model ABI version " + std::to_string(abi.abi_version) + " does not match the runtime's " +
           std::to_string(MLCC_ABI_VERSION) + "; recompile the model with this mlcc";
  if (abi.num_inputs < 0 || abi.num_outputs < 0 || abi.num_kernels < 0 || !abi.entry)
    return "malformed model description (negative counts or no entry)";
  auto tensors = [](const mlcc_abi_tensor* ts, int n) -> std::string {
    if (n > 0 && !ts) return "missing tensor descriptions";
    for (int i = 0; i < n; ++i) {
      if (!ts[i].name) return "a tensor without a name";
      if (ts[i].dtype < MLCC_F32 || ts[i].dtype > MLCC_BOOL)
        return "tensor '" + std::string(ts[i].name) + "' has unknown dtype " + std::to_string(ts[i].dtype);
      if (ts[i].ndim < 0 || (ts[i].ndim > 0 && !ts[i].shape))
        return "tensor '" + std::string(ts[i].name) + "' has a malformed shape";
      for (int d = 0; d < ts[i].ndim; ++d)
        if (ts[i].shape[d] < 0) return "tensor '" + std::string(ts[i].name) + "' has a negative dimension";
    }
    return "";
  };
  if (auto e = tensors(abi.inputs, abi.num_inputs); !e.empty()) return "inputs: " + e;
  if (auto e = tensors(abi.outputs, abi.num_outputs); !e.empty()) return "outputs: " + e;
  if (abi.num_kernels > 0 && !abi.kernels) return "missing kernel descriptions";
  return "";
}

int fail(std::string message) {
  setLastError(std::move(message));
  return -1;
}

}  // namespace

void setLastError(std::string message) { t_last_error = std::move(message); }

}  // namespace mlcc::rt

using mlcc::rt::fail;

extern "C" {

mlcc_model* mlcc_model_load(void) {
  const mlcc_abi_model& abi = mlcc_abi_model_v1;
  if (std::string e = mlcc::rt::checkAbi(abi); !e.empty()) {
    fail("mlcc_model_load: " + e);
    return nullptr;
  }
  mlcc_model* m = nullptr;
  try {
    m = new mlcc_model;
    m->abi = &abi;
    if (abi.workspace_bytes > 0) {
      const size_t bytes = (abi.workspace_bytes + 63) / 64 * 64;
      m->workspace = std::aligned_alloc(64, bytes);
      if (!m->workspace) {
        delete m;
        fail("mlcc_model_load: cannot allocate the " + std::to_string(bytes) + "-byte workspace");
        return nullptr;
      }
      std::memset(m->workspace, 0, bytes);
    }
    m->ctx.stats.resize(abi.num_kernels);
    const int threads = mlcc::rt::defaultThreads();
    m->ctx.pool = std::make_unique<mlcc::rt::ThreadPool>(threads);
    openblas_set_num_threads(1);  // the pool parallelizes GEMMs (blas.cpp)
    return m;
  } catch (const std::exception& e) {
    if (m) {
      std::free(m->workspace);
      delete m;
    }
    fail(std::string("mlcc_model_load: ") + e.what());
    return nullptr;
  }
}

void mlcc_model_free(mlcc_model* m) {
  if (!m) return;
  std::free(m->workspace);
  delete m;
}

int mlcc_model_num_inputs(const mlcc_model* m) { return m ? m->abi->num_inputs : fail("model is NULL"); }
int mlcc_model_num_outputs(const mlcc_model* m) { return m ? m->abi->num_outputs : fail("model is NULL"); }

static int tensorInfo(const mlcc_abi_tensor* ts, int n, int index, const char* what, mlcc_tensor_info* out) {
  if (!out) return fail(std::string(what) + " info: out is NULL");
  if (index < 0 || index >= n)
    return fail(std::string(what) + " index " + std::to_string(index) + " out of range [0, " +
                std::to_string(n) + ")");
  out->name = ts[index].name;
  out->dtype = static_cast<mlcc_dtype>(ts[index].dtype);
  out->ndim = ts[index].ndim;
  out->shape = ts[index].shape;
  return 0;
}

int mlcc_model_input_info(const mlcc_model* m, int index, mlcc_tensor_info* out) {
  if (!m) return fail("model is NULL");
  return tensorInfo(m->abi->inputs, m->abi->num_inputs, index, "input", out);
}

int mlcc_model_output_info(const mlcc_model* m, int index, mlcc_tensor_info* out) {
  if (!m) return fail("model is NULL");
  return tensorInfo(m->abi->outputs, m->abi->num_outputs, index, "output", out);
}

int mlcc_model_run(mlcc_model* m, const void* const* inputs, void* const* outputs) {
  if (!m) return fail("model is NULL");
  if ((m->abi->num_inputs > 0 && !inputs) || (m->abi->num_outputs > 0 && !outputs))
    return fail("mlcc_model_run: inputs or outputs is NULL");
  for (int i = 0; i < m->abi->num_inputs; ++i)
    if (!inputs[i])
      return fail(std::string("mlcc_model_run: input '") + m->abi->inputs[i].name + "' is NULL");
  for (int i = 0; i < m->abi->num_outputs; ++i)
    if (!outputs[i])
      return fail(std::string("mlcc_model_run: output '") + m->abi->outputs[i].name + "' is NULL");
  m->ctx.error.clear();
  const int rc = m->abi->entry(inputs, outputs, m->workspace, &m->ctx);
  if (rc != 0 || !m->ctx.error.empty())
    return fail(m->ctx.error.empty() ? "the model's entry failed (code " + std::to_string(rc) + ")"
                                     : m->ctx.error);
  return 0;
}

int mlcc_model_set_threads(mlcc_model* m, int n) {
  if (!m) return fail("model is NULL");
  if (n < 1) return fail("mlcc_model_set_threads: thread count must be >= 1, got " + std::to_string(n));
  if (m->ctx.pool && n == m->ctx.pool->threads()) return 0;
  try {
    m->ctx.pool.reset();
    m->ctx.pool = std::make_unique<mlcc::rt::ThreadPool>(n);
  } catch (const std::exception& e) {
    return fail(std::string("mlcc_model_set_threads: ") + e.what());
  }
  return 0;
}

int mlcc_model_get_threads(const mlcc_model* m) {
  if (!m) return fail("model is NULL");
  return m->ctx.pool ? m->ctx.pool->threads() : 1;
}

int mlcc_model_enable_profiling(mlcc_model* m, int on) {
  if (!m) return fail("model is NULL");
  for (auto& s : m->ctx.stats) s = {};
  m->ctx.profiling = on != 0;
  return 0;
}

int mlcc_model_num_kernels(const mlcc_model* m) { return m ? m->abi->num_kernels : fail("model is NULL"); }

int mlcc_model_kernel_profile(const mlcc_model* m, int index, mlcc_kernel_profile* out) {
  if (!m) return fail("model is NULL");
  if (!out) return fail("mlcc_model_kernel_profile: out is NULL");
  if (index < 0 || index >= m->abi->num_kernels)
    return fail("kernel index " + std::to_string(index) + " out of range [0, " +
                std::to_string(m->abi->num_kernels) + ")");
  const auto& k = m->abi->kernels[index];
  out->name = k.name ? k.name : "";
  out->calls = m->ctx.stats[index].calls;
  out->total_ns = m->ctx.stats[index].total_ns;
  out->flops_per_call = k.flops_per_call;
  return 0;
}

const char* mlcc_last_error(void) { return mlcc::rt::t_last_error.c_str(); }

}  // extern "C"
