// include/mlcc/runtime.h over the model the generated model.o describes
// (mlcc_abi_model_v1): load checks the ABI and allocates the workspace and
// the thread pool; run calls the compiled entry. A model of prim funcs
// without a graph entry loads each function by name as a model of its own
// (abi.h's function table). Models with symbolic
// dimensions get them from mlcc_model_set_input_shape, which asks the
// model's shapes function for the output shapes and the workspace size
// (the workspace only grows). No C++ exception leaves
// these functions: errors become -1/NULL and mlcc_last_error().
#include <cblas.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "float_mode.h"
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

// Why model description `abi` (the graph entry's, or a function's) cannot
// be used, or "" when it can.
std::string checkModel(const mlcc_abi_model& abi) {
  if (abi.num_inputs < 0 || abi.num_outputs < 0 || abi.num_kernels < 0 || (!abi.entry == !abi.cuda))
    return "malformed model description (negative counts, or not one of an entry and a CUDA table)";
  if (abi.cuda && (abi.num_dims != 0 || !abi.cuda->ptx || !abi.cuda->arch || abi.cuda->num_steps < 0 ||
                   (abi.cuda->num_steps > 0 && !abi.cuda->steps)))
    return "malformed model description (CUDA table)";
  if (abi.num_dims < 0 || (abi.num_dims > 0 && (!abi.shapes || !abi.dim_names)))
    return "malformed model description (symbolic dimensions without names or shapes function)";
  // min_dim: -num_dims for inputs (-1 - k: symbolic dimension k), -1 for outputs of symbolic models.
  auto tensors = [](const mlcc_abi_tensor* ts, int n, int64_t min_dim) -> std::string {
    if (n > 0 && !ts) return "missing tensor descriptions";
    for (int i = 0; i < n; ++i) {
      if (!ts[i].name) return "a tensor without a name";
      if (ts[i].dtype < MLCC_F32 || ts[i].dtype > MLCC_U32)
        return "tensor '" + std::string(ts[i].name) + "' has unknown dtype " + std::to_string(ts[i].dtype);
      if (ts[i].ndim < 0 || (ts[i].ndim > 0 && !ts[i].shape))
        return "tensor '" + std::string(ts[i].name) + "' has a malformed shape";
      for (int d = 0; d < ts[i].ndim; ++d)
        if (ts[i].shape[d] < min_dim)
          return "tensor '" + std::string(ts[i].name) + "' has a negative dimension";
    }
    return "";
  };
  if (auto e = tensors(abi.inputs, abi.num_inputs, -abi.num_dims); !e.empty()) return "inputs: " + e;
  if (auto e = tensors(abi.outputs, abi.num_outputs, abi.num_dims > 0 ? -1 : 0); !e.empty())
    return "outputs: " + e;
  if (abi.num_kernels > 0 && !abi.kernels) return "missing kernel descriptions";
  return "";
}

// Why the ABI description cannot be used, or "" when it can: the version,
// the graph entry's model, the functions' models.
std::string checkAbi(const mlcc_abi_model& abi) {
  if (abi.abi_version != MLCC_ABI_VERSION)
    return "model ABI version " + std::to_string(abi.abi_version) + " does not match the runtime's " +
           std::to_string(MLCC_ABI_VERSION) + "; recompile the model with this mlcc";
  if (abi.num_functions < 0 || (abi.num_functions > 0 && !abi.functions))
    return "malformed model description (function table)";
  const bool graph = abi.entry || abi.cuda;
  if (!graph == (abi.num_functions == 0))
    return "malformed model description (a graph entry or functions are needed, not both)";
  if (graph)
    if (auto e = checkModel(abi); !e.empty()) return e;
  for (int i = 0; i < abi.num_functions; ++i) {
    const mlcc_abi_function& f = abi.functions[i];
    if (!f.name || !f.model) return "malformed model description (a function without a name or model)";
    const std::string who = "function '" + std::string(f.name) + "': ";
    if (f.model->abi_version != MLCC_ABI_VERSION || f.model->num_functions != 0)
      return who + "malformed description";
    if (auto e = checkModel(*f.model); !e.empty()) return who + e;
  }
  return "";
}

// checkAbi of this library's model, once.
const std::string& abiError() {
  static const std::string e = checkAbi(mlcc_abi_model_v1);
  return e;
}

// "a, b, c": the names of this library's functions.
std::string functionList() {
  const mlcc_abi_model& abi = mlcc_abi_model_v1;
  std::string list;
  for (int i = 0; i < abi.num_functions; ++i) list += (i ? ", " : "") + std::string(abi.functions[i].name);
  return list;
}

int fail(std::string message) {
  setLastError(std::move(message));
  return -1;
}

// A zeroed, 64-byte aligned workspace of at least `bytes` (0: none).
bool allocateWorkspace(mlcc_model* m, uint64_t bytes) {
  std::free(m->workspace);
  m->workspace = nullptr;
  m->workspace_bytes = 0;
  if (bytes == 0) return true;
  const size_t size = (bytes + 63) / 64 * 64;
  m->workspace = std::aligned_alloc(64, size);
  if (!m->workspace) return false;
  std::memset(m->workspace, 0, size);
  m->workspace_bytes = size;
  return true;
}

// Input shapes from the dims (-1 where not set); once all are set, output
// shapes and the workspace they need (grown when larger).
int bindShapes(mlcc_model* m, const char* who) {
  const mlcc_abi_model& abi = *m->abi;
  for (int i = 0; i < abi.num_inputs; ++i)
    for (int d = 0; d < abi.inputs[i].ndim; ++d) {
      const int64_t s = abi.inputs[i].shape[d];
      m->input_shapes[i][d] = s >= 0 ? s : m->dims[-1 - s];
    }
  for (int64_t v : m->dims)
    if (v < 0) return 0;
  std::vector<int64_t> out_dims;
  for (int i = 0; i < abi.num_outputs; ++i) out_dims.resize(out_dims.size() + abi.outputs[i].ndim);
  uint64_t bytes = 0;
  abi.shapes(m->dims.data(), out_dims.data(), &bytes);
  size_t k = 0;
  for (auto& shape : m->output_shapes)
    for (auto& d : shape) d = out_dims[k++];
  if (bytes > m->workspace_bytes && !allocateWorkspace(m, bytes))
    return fail(std::string(who) + ": cannot allocate the " + std::to_string(bytes) + "-byte workspace");
  return 0;
}

// A loaded model of description `abi` (checked); `who` names the caller in errors.
mlcc_model* loadModel(const mlcc_abi_model& abi, const char* who) {
  mlcc_model* m = nullptr;
  try {
    m = new mlcc_model;
    m->abi = &abi;
    if (!allocateWorkspace(m, abi.workspace_bytes)) {
      delete m;
      fail(std::string(who) + ": cannot allocate the " + std::to_string(abi.workspace_bytes) +
           "-byte workspace");
      return nullptr;
    }
    m->dims.assign(abi.num_dims, -1);
    for (int i = 0; i < abi.num_inputs; ++i)
      m->input_shapes.emplace_back(abi.inputs[i].shape, abi.inputs[i].shape + abi.inputs[i].ndim);
    for (int i = 0; i < abi.num_outputs; ++i)
      m->output_shapes.emplace_back(abi.outputs[i].shape, abi.outputs[i].shape + abi.outputs[i].ndim);
    for (auto& shape : m->output_shapes)
      for (auto& d : shape) d = d < 0 ? -1 : d;
    if (abi.num_dims > 0) bindShapes(m, who);
    m->ctx.stats.resize(abi.num_kernels);
    if (abi.cuda) {
      if (std::string e = cudaLoad(m); !e.empty()) {
        cudaFree(m->cuda);
        std::free(m->workspace);
        delete m;
        fail(std::string(who) + ": cannot load the CUDA model: " + e);
        return nullptr;
      }
    }
    const int threads = defaultThreads();
    m->ctx.pool = std::make_unique<ThreadPool>(threads);
    openblas_set_num_threads(1);  // the pool parallelizes GEMMs (blas.cpp)
    return m;
  } catch (const std::exception& e) {
    if (m) {
      std::free(m->workspace);
      delete m;
    }
    fail(std::string(who) + ": " + e.what());
    return nullptr;
  }
}

}  // namespace

void setLastError(std::string message) { t_last_error = std::move(message); }

}  // namespace mlcc::rt

using mlcc::rt::cudaFree;
using mlcc::rt::cudaLoad;
using mlcc::rt::fail;

extern "C" {

mlcc_model* mlcc_model_load(void) {
  const mlcc_abi_model& abi = mlcc_abi_model_v1;
  if (const std::string& e = mlcc::rt::abiError(); !e.empty()) {
    fail("mlcc_model_load: " + e);
    return nullptr;
  }
  if (abi.entry || abi.cuda) return mlcc::rt::loadModel(abi, "mlcc_model_load");
  if (abi.num_functions == 1) return mlcc::rt::loadModel(*abi.functions[0].model, "mlcc_model_load");
  fail("mlcc_model_load: the model has no graph entry but " + std::to_string(abi.num_functions) +
       " functions (prim funcs): " + mlcc::rt::functionList() + "; load one with mlcc_model_load_function");
  return nullptr;
}

int mlcc_model_num_functions(void) {
  if (const std::string& e = mlcc::rt::abiError(); !e.empty()) return fail("mlcc_model_num_functions: " + e);
  return mlcc_abi_model_v1.num_functions;
}

const char* mlcc_model_function_name(int index) {
  const mlcc_abi_model& abi = mlcc_abi_model_v1;
  if (const std::string& e = mlcc::rt::abiError(); !e.empty()) {
    fail("mlcc_model_function_name: " + e);
    return nullptr;
  }
  if (index < 0 || index >= abi.num_functions) {
    fail("mlcc_model_function_name: function index " + std::to_string(index) + " out of range [0, " +
         std::to_string(abi.num_functions) + ")");
    return nullptr;
  }
  return abi.functions[index].name;
}

mlcc_model* mlcc_model_load_function(const char* name) {
  const char* who = "mlcc_model_load_function";
  const mlcc_abi_model& abi = mlcc_abi_model_v1;
  if (const std::string& e = mlcc::rt::abiError(); !e.empty()) {
    fail(std::string(who) + ": " + e);
    return nullptr;
  }
  if (!name) {
    fail(std::string(who) + ": name is NULL");
    return nullptr;
  }
  for (int i = 0; i < abi.num_functions; ++i)
    if (std::strcmp(abi.functions[i].name, name) == 0)
      return mlcc::rt::loadModel(*abi.functions[i].model, who);
  fail(std::string(who) + ": no function '" + name + "'; " +
       (abi.num_functions == 0 ? std::string("the model has a graph entry and no functions")
                               : "the model's functions: " + mlcc::rt::functionList()));
  return nullptr;
}

void mlcc_model_free(mlcc_model* m) {
  if (!m) return;
  mlcc::rt::cudaFree(m->cuda);
  std::free(m->workspace);
  delete m;
}

int mlcc_model_num_inputs(const mlcc_model* m) { return m ? m->abi->num_inputs : fail("model is NULL"); }
int mlcc_model_num_outputs(const mlcc_model* m) { return m ? m->abi->num_outputs : fail("model is NULL"); }

static int tensorInfo(const mlcc_abi_tensor* ts, const std::vector<std::vector<int64_t>>& shapes, int n,
                      int index, const char* what, mlcc_tensor_info* out) {
  if (!out) return fail(std::string(what) + " info: out is NULL");
  if (index < 0 || index >= n)
    return fail(std::string(what) + " index " + std::to_string(index) + " out of range [0, " +
                std::to_string(n) + ")");
  out->name = ts[index].name;
  out->dtype = static_cast<mlcc_dtype>(ts[index].dtype);
  out->ndim = ts[index].ndim;
  out->shape = shapes[index].data();
  return 0;
}

int mlcc_model_input_info(const mlcc_model* m, int index, mlcc_tensor_info* out) {
  if (!m) return fail("model is NULL");
  return tensorInfo(m->abi->inputs, m->input_shapes, m->abi->num_inputs, index, "input", out);
}

int mlcc_model_output_info(const mlcc_model* m, int index, mlcc_tensor_info* out) {
  if (!m) return fail("model is NULL");
  return tensorInfo(m->abi->outputs, m->output_shapes, m->abi->num_outputs, index, "output", out);
}

const char* mlcc_model_input_dim_name(const mlcc_model* m, int index, int dim) {
  if (!m) {
    fail("model is NULL");
    return nullptr;
  }
  const mlcc_abi_model& abi = *m->abi;
  if (index < 0 || index >= abi.num_inputs || dim < 0 || dim >= abi.inputs[index].ndim) {
    fail("mlcc_model_input_dim_name: no dimension " + std::to_string(dim) + " of input " +
         std::to_string(index));
    return nullptr;
  }
  const int64_t s = abi.inputs[index].shape[dim];
  return s < 0 ? abi.dim_names[-1 - s] : nullptr;
}

int mlcc_model_set_input_shape(mlcc_model* m, int index, int ndim, const int64_t* shape) {
  const char* who = "mlcc_model_set_input_shape";
  if (!m) return fail("model is NULL");
  const mlcc_abi_model& abi = *m->abi;
  if (index < 0 || index >= abi.num_inputs)
    return fail(std::string(who) + ": input index " + std::to_string(index) + " out of range [0, " +
                std::to_string(abi.num_inputs) + ")");
  const mlcc_abi_tensor& t = abi.inputs[index];
  auto shapeText = [](const int64_t* s, int n) {
    std::string r = "[";
    for (int d = 0; d < n; ++d) r += (d ? ", " : "") + (s[d] < 0 ? std::string("?") : std::to_string(s[d]));
    return r + "]";
  };
  if (ndim != t.ndim || (ndim > 0 && !shape))
    return fail(std::string(who) + ": input '" + t.name + "' has " + std::to_string(t.ndim) + " dimensions " +
                shapeText(t.shape, t.ndim) + ", got " + std::to_string(ndim));
  std::vector<int64_t> dims = m->dims;
  std::vector<char> set(dims.size(), 0);
  for (int d = 0; d < ndim; ++d) {
    const int64_t want = t.shape[d];
    if (shape[d] < 0 || (want >= 0 && shape[d] != want) ||
        (want < 0 && set[-1 - want] && dims[-1 - want] != shape[d]))
      return fail(std::string(who) + ": input '" + t.name + "' has shape " + shapeText(t.shape, t.ndim) +
                  ", got " + shapeText(shape, ndim));
    if (want < 0) {
      dims[-1 - want] = shape[d];
      set[-1 - want] = 1;
    }
  }
  m->dims = std::move(dims);
  return mlcc::rt::bindShapes(m, who);
}

static int runModel(mlcc_model* m, const void* const* inputs, void* const* outputs, bool device_pointers) {
  if (!m) return fail("model is NULL");
  if ((m->abi->num_inputs > 0 && !inputs) || (m->abi->num_outputs > 0 && !outputs))
    return fail("mlcc_model_run: inputs or outputs is NULL");
  for (int i = 0; i < m->abi->num_inputs; ++i)
    if (!inputs[i])
      return fail(std::string("mlcc_model_run: input '") + m->abi->inputs[i].name + "' is NULL");
  for (int i = 0; i < m->abi->num_outputs; ++i)
    if (!outputs[i])
      return fail(std::string("mlcc_model_run: output '") + m->abi->outputs[i].name + "' is NULL");
  for (size_t k = 0; k < m->dims.size(); ++k)
    if (m->dims[k] < 0)
      return fail(std::string("mlcc_model_run: symbolic dimension '") + m->abi->dim_names[k] +
                  "' is not set: give the input shapes with mlcc_model_set_input_shape first");
  m->ctx.error.clear();
  if (m->cuda) {
    if (std::string e = mlcc::rt::cudaRun(m, inputs, outputs, device_pointers); !e.empty()) return fail(e);
    return 0;
  }
  if (device_pointers) return fail("mlcc_model_run_device: the model runs on the CPU, not on a CUDA device");
  const mlcc::rt::FloatMode caller = mlcc::rt::floatMode();
  if (m->flush_denormals) mlcc::rt::setFloatMode(mlcc::rt::flushDenormals(caller));
  const int rc = m->abi->entry(inputs, outputs, m->workspace, m->dims.data(), &m->ctx);
  mlcc::rt::setFloatMode(caller);
  if (rc != 0 || !m->ctx.error.empty())
    return fail(m->ctx.error.empty() ? "the model's entry failed (code " + std::to_string(rc) + ")"
                                     : m->ctx.error);
  return 0;
}

int mlcc_model_run(mlcc_model* m, const void* const* inputs, void* const* outputs) {
  return runModel(m, inputs, outputs, false);
}

int mlcc_model_run_device(mlcc_model* m, const void* const* inputs, void* const* outputs) {
  return runModel(m, inputs, outputs, true);
}

int mlcc_model_device(const mlcc_model* m) { return m ? mlcc::rt::cudaDevice(m) : fail("model is NULL"); }

int64_t mlcc_model_last_device_ns(const mlcc_model* m) {
  return m ? mlcc::rt::cudaLastDeviceNs(m) : fail("model is NULL");
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

int mlcc_model_set_flush_denormals(mlcc_model* m, int on) {
  if (!m) return fail("model is NULL");
  m->flush_denormals = on != 0;
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
