// CUDA models: the driver API through dlopen, the device buffers and the
// walk over the launch table (see cuda.h and abi.h).
#include "cuda.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "cublas_call.h"
#include "model_state.h"

namespace mlcc::rt {

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;  // CUcontext, CUmodule, CUfunction, CUstream

// The driver functions mlcc uses (the _v2 entry points of cuda.h's macros).
struct Driver {
  void* lib = nullptr;
  std::string problem;
  CUresult (*init)(unsigned);
  CUresult (*device_count)(int*);
  CUresult (*device_get)(int*, int);
  CUresult (*device_name)(char*, int, int);
  CUresult (*device_attribute)(int*, int, int);
  CUresult (*primary_retain)(Handle*, int);
  CUresult (*primary_release)(int);
  CUresult (*ctx_set_current)(Handle);
  CUresult (*module_load_data_ex)(Handle*, const void*, unsigned, int*, void**);
  CUresult (*module_unload)(Handle);
  CUresult (*module_function)(Handle*, Handle, const char*);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void*, size_t, Handle);
  CUresult (*dtoh)(void*, CUdeviceptr, size_t, Handle);
  CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t, Handle);
  CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, Handle);
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle,
                     void**, void**);
  CUresult (*stream_create)(Handle*, unsigned);
  CUresult (*stream_destroy)(Handle);
  CUresult (*stream_sync)(Handle);
  CUresult (*event_create)(Handle*, unsigned);
  CUresult (*event_destroy)(Handle);
  CUresult (*event_record)(Handle, Handle);
  CUresult (*event_elapsed)(float*, Handle, Handle);
  // CUDA graphs (optional: without them every run launches its steps).
  CUresult (*begin_capture)(Handle, int);
  CUresult (*end_capture)(Handle, Handle*);
  CUresult (*graph_instantiate)(Handle*, Handle, unsigned long long);
  CUresult (*graph_launch)(Handle, Handle);
  CUresult (*graph_exec_destroy)(Handle);
  CUresult (*graph_destroy)(Handle);
  CUresult (*error_name)(CUresult, const char**);
  CUresult (*error_string)(CUresult, const char**);
};

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.lib) {
      d.problem = "no CUDA driver (libcuda.so.1 cannot be loaded: the machine has no NVIDIA driver)";
      return;
    }
    auto optional = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.lib, name));
    };
    auto get = [&](auto& fn, const char* name) {
      optional(fn, name);
      if (!fn && d.problem.empty()) d.problem = std::string("the CUDA driver lacks ") + name + " (too old)";
    };
    get(d.init, "cuInit");
    get(d.device_count, "cuDeviceGetCount");
    get(d.device_get, "cuDeviceGet");
    get(d.device_name, "cuDeviceGetName");
    get(d.device_attribute, "cuDeviceGetAttribute");
    get(d.primary_retain, "cuDevicePrimaryCtxRetain");
    get(d.primary_release, "cuDevicePrimaryCtxRelease_v2");
    get(d.ctx_set_current, "cuCtxSetCurrent");
    get(d.module_load_data_ex, "cuModuleLoadDataEx");
    get(d.module_unload, "cuModuleUnload");
    get(d.module_function, "cuModuleGetFunction");
    get(d.mem_alloc, "cuMemAlloc_v2");
    get(d.mem_free, "cuMemFree_v2");
    get(d.htod, "cuMemcpyHtoDAsync_v2");
    get(d.dtoh, "cuMemcpyDtoHAsync_v2");
    get(d.dtod, "cuMemcpyDtoDAsync_v2");
    get(d.memset8, "cuMemsetD8Async");
    get(d.launch, "cuLaunchKernel");
    get(d.stream_create, "cuStreamCreate");
    get(d.stream_destroy, "cuStreamDestroy_v2");
    get(d.stream_sync, "cuStreamSynchronize");
    get(d.event_create, "cuEventCreate");
    get(d.event_destroy, "cuEventDestroy_v2");
    get(d.event_record, "cuEventRecord");
    // cuEventElapsedTime_v2 since CUDA 12.8; the same call before.
    optional(d.event_elapsed, "cuEventElapsedTime_v2");
    if (!d.event_elapsed) get(d.event_elapsed, "cuEventElapsedTime");
    optional(d.begin_capture, "cuStreamBeginCapture_v2");
    optional(d.end_capture, "cuStreamEndCapture");
    optional(d.graph_instantiate, "cuGraphInstantiateWithFlags");
    optional(d.graph_launch, "cuGraphLaunch");
    optional(d.graph_exec_destroy, "cuGraphExecDestroy");
    optional(d.graph_destroy, "cuGraphDestroy");
    get(d.error_name, "cuGetErrorName");
    get(d.error_string, "cuGetErrorString");
    if (d.problem.empty())
      if (CUresult rc = d.init(0)) {
        const char* name = nullptr;
        d.error_name(rc, &name);
        d.problem = std::string("the CUDA driver could not start (cuInit: ") + (name ? name : "?") +
                    "): no usable CUDA device";
      }
  });
  return d;
}

// cuBLAS (for MLCC_ABI_CUDA_GEMM steps), loaded like the driver.
struct Cublas {
  void* lib = nullptr;
  std::string problem;
  int (*create)(Handle*);
  int (*destroy)(Handle);
  int (*set_stream)(Handle, Handle);
  int (*sgemm)(Handle, int, int, int, int, int, const float*, const float*, int, const float*, int,
               const float*, float*, int);
  int (*sgemm_batched)(Handle, int, int, int, int, int, const float*, const float*, int, long long,
                       const float*, int, long long, const float*, float*, int, long long, int);
};

const Cublas& cublas() {
  static Cublas c;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((c.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!c.lib) {
      c.problem = "the model calls cuBLAS, which cannot be loaded (libcublas.so.13 or .12)";
      return;
    }
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(c.lib, name));
      if (!fn && c.problem.empty()) c.problem = std::string("cuBLAS lacks ") + name;
    };
    get(c.create, "cublasCreate_v2");
    get(c.destroy, "cublasDestroy_v2");
    get(c.set_stream, "cublasSetStream_v2");
    get(c.sgemm, "cublasSgemm_v2");
    get(c.sgemm_batched, "cublasSgemmStridedBatched");
  });
  return c;
}

// "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid argument)".
std::string cudaError(const char* call, CUresult rc) {
  const char *name = nullptr, *text = nullptr;
  driver().error_name(rc, &name);
  driver().error_string(rc, &text);
  return std::string(call) + ": " + (name ? name : "error " + std::to_string(rc)) +
         (text ? std::string(" (") + text + ")" : "");
}

uint64_t tensorBytes(const mlcc_abi_tensor& t) {
  // Bytes per element in mlcc_dtype order (f32 f16 bf16 i8 i32 i64 bool u8 f64 i16 u16 u32).
  static const uint64_t size[] = {4, 2, 2, 1, 4, 8, 1, 1, 8, 2, 2, 4};
  static_assert(sizeof size / sizeof size[0] == MLCC_U32 + 1, "a size per mlcc_dtype");
  uint64_t n = size[t.dtype];
  for (int d = 0; d < t.ndim; ++d) n *= static_cast<uint64_t>(t.shape[d]);
  return n;
}

}  // namespace

struct CudaModel {
  int device = 0;
  Handle ctx = nullptr, module = nullptr, stream = nullptr;
  std::vector<Handle> functions;  // per step (launches)
  Handle cublas = nullptr;        // when the model has GEMM steps
  CUdeviceptr weights = 0, workspace = 0;
  std::vector<CUdeviceptr> inputs, outputs;
  std::vector<CUdeviceptr> allocations;
  // A run's device pointers of the inputs and outputs, and of one launch's
  // arguments with their addresses (cuLaunchKernel's kernelParams): sized
  // at load, so that a run allocates nothing.
  std::vector<CUdeviceptr> run_inputs, run_outputs, args;
  std::vector<void*> params;
  // CUDA events (timing enabled), one before each step and one after the
  // last: a run records the first and the last (its device time), a
  // profiled run every one (each step's time, with no synchronization
  // between steps).
  std::vector<Handle> events;
  int64_t last_device_ns = -1;  // the last run's, from the first event to the last
  // Per step: whether it begins a call of its kernel (prim func), which may
  // launch several CUDA kernels (a profile counts calls, not launches).
  std::vector<char> starts_call;
  // The steps captured as a CUDA graph and replayed with one launch, for
  // the buffers they were captured with: a run with the same input and
  // output pointers as the run before it captures them (the first run of
  // each set of pointers launches its steps one by one, which also lets
  // cuBLAS initialize outside a capture). Off with MLCC_CUDA_GRAPHS=0, when
  // profiling, and after a capture failed.
  bool graphs = true;
  Handle graph = nullptr, graph_exec = nullptr;
  std::vector<CUdeviceptr> graph_inputs, graph_outputs;  // the pointers graph_exec uses
  std::vector<CUdeviceptr> last_inputs, last_outputs;    // the previous run's
};

namespace {

void dropGraph(CudaModel& c) {
  const Driver& d = driver();
  if (c.graph_exec) d.graph_exec_destroy(c.graph_exec);
  if (c.graph) d.graph_destroy(c.graph);
  c.graph_exec = c.graph = nullptr;
  c.graph_inputs.clear();
  c.graph_outputs.clear();
}

}  // namespace

void cudaFree(CudaModel* c) {
  if (!c) return;
  const Driver& d = driver();
  if (c->ctx) {
    d.ctx_set_current(c->ctx);
    if (c->stream) d.stream_sync(c->stream);
    for (CUdeviceptr p : c->allocations) d.mem_free(p);
    for (Handle e : c->events)
      if (e) d.event_destroy(e);
    dropGraph(*c);
    if (c->stream) d.stream_destroy(c->stream);
    if (c->module) d.module_unload(c->module);
    if (c->cublas) cublas().destroy(c->cublas);
    d.primary_release(c->device);
  }
  delete c;
}

std::string cudaLoad(mlcc_model* m) {
  const Driver& d = driver();
  if (!d.problem.empty()) return d.problem;
  const mlcc_abi_cuda& abi = *m->abi->cuda;
  int count = 0;
  d.device_count(&count);
  int ordinal = 0;
  if (const char* env = std::getenv("MLCC_CUDA_DEVICE")) ordinal = std::atoi(env);
  if (count == 0) return "no CUDA device";
  if (ordinal < 0 || ordinal >= count)
    return "MLCC_CUDA_DEVICE=" + std::to_string(ordinal) + " but the machine has " + std::to_string(count) +
           " CUDA device(s)";
  auto c = new CudaModel;
  m->cuda = c;
  CUresult rc;
  if ((rc = d.device_get(&c->device, ordinal))) return cudaError("cuDeviceGet", rc);
  int major = 0, minor = 0;
  d.device_attribute(&major, 75, c->device);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  d.device_attribute(&minor, 76, c->device);
  const int need = std::atoi(abi.arch + 3);
  if (major * 10 + minor < need) {
    char name[256] = "?";
    d.device_name(name, sizeof name, c->device);
    return std::string("the model was compiled for ") + abi.arch + " but device " + std::to_string(ordinal) +
           " (" + name + ") is sm_" + std::to_string(major) + std::to_string(minor);
  }
  if ((rc = d.primary_retain(&c->ctx, c->device))) {
    c->ctx = nullptr;
    return cudaError("cuDevicePrimaryCtxRetain", rc);
  }
  d.ctx_set_current(c->ctx);
  char log[8192] = "";
  int opts[] = {5 /* CU_JIT_ERROR_LOG_BUFFER */, 6 /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */};
  void* vals[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log))};
  if ((rc = d.module_load_data_ex(&c->module, abi.ptx, 2, opts, vals))) {
    c->module = nullptr;
    return cudaError("cuModuleLoadDataEx (the model's PTX)", rc) + (log[0] ? std::string(": ") + log : "");
  }
  if ((rc = d.stream_create(&c->stream, 1 /* CU_STREAM_NON_BLOCKING */))) {
    c->stream = nullptr;
    return cudaError("cuStreamCreate", rc);
  }
  for (int i = 0; i < abi.num_steps; ++i)
    if (abi.steps[i].kind == MLCC_ABI_CUDA_GEMM && !c->cublas) {
      const Cublas& b = cublas();
      if (!b.problem.empty()) return b.problem;
      if (int r = b.create(&c->cublas)) {
        c->cublas = nullptr;
        return "cublasCreate failed (status " + std::to_string(r) + ")";
      }
      b.set_stream(c->cublas, c->stream);
    }
  const char* graphs = std::getenv("MLCC_CUDA_GRAPHS");
  c->graphs = d.begin_capture && d.end_capture && d.graph_instantiate && d.graph_launch &&
              d.graph_exec_destroy && d.graph_destroy && !(graphs && std::strcmp(graphs, "0") == 0);
  c->events.assign(abi.num_steps + 1, nullptr);
  for (Handle& e : c->events)
    if ((rc = d.event_create(&e, 0 /* CU_EVENT_DEFAULT: with timing */))) {
      e = nullptr;
      return cudaError("cuEventCreate", rc);
    }
  // A call's steps are consecutive and launch distinct functions (a GEMM
  // step first, then its epilogue): a step of another kernel, or one that
  // repeats the call's first function, begins the next call.
  c->starts_call.assign(abi.num_steps, 0);
  for (int i = 0, first = -1; i < abi.num_steps; ++i) {
    const mlcc_abi_cuda_step& s = abi.steps[i];
    if (s.kind == MLCC_ABI_CUDA_COPY || s.kind == MLCC_ABI_CUDA_ZERO) continue;
    if (first < 0 || s.kernel_id != abi.steps[first].kernel_id ||
        std::strcmp(s.function ? s.function : "",
                    abi.steps[first].function ? abi.steps[first].function : "") == 0) {
      c->starts_call[i] = 1;
      first = i;
    }
  }
  c->functions.assign(abi.num_steps, nullptr);
  for (int i = 0; i < abi.num_steps; ++i) {
    const mlcc_abi_cuda_step& s = abi.steps[i];
    if (s.kind != MLCC_ABI_CUDA_LAUNCH) continue;
    if ((rc = d.module_function(&c->functions[i], c->module, s.function)))
      return cudaError((std::string("cuModuleGetFunction(") + s.function + ")").c_str(), rc);
  }
  auto alloc = [&](uint64_t bytes, CUdeviceptr* out, const std::string& what) -> std::string {
    *out = 0;
    if (bytes == 0) return "";
    if (CUresult r = d.mem_alloc(out, bytes))
      return cudaError(("cuMemAlloc (" + what + ", " + std::to_string(bytes) + " bytes)").c_str(), r);
    c->allocations.push_back(*out);
    return "";
  };
  if (auto e = alloc(abi.weights_bytes, &c->weights, "weights"); !e.empty()) return e;
  if (auto e = alloc(m->abi->workspace_bytes, &c->workspace, "workspace"); !e.empty()) return e;
  int most_args = 0;
  for (int i = 0; i < abi.num_steps; ++i) most_args = std::max(most_args, abi.steps[i].num_args);
  c->args.resize(most_args);
  c->params.resize(most_args);
  for (int k = 0; k < most_args; ++k) c->params[k] = &c->args[k];
  c->run_inputs.resize(m->abi->num_inputs);
  c->run_outputs.resize(m->abi->num_outputs);
  c->inputs.resize(m->abi->num_inputs);
  c->outputs.resize(m->abi->num_outputs);
  for (int i = 0; i < m->abi->num_inputs; ++i)
    if (auto e = alloc(tensorBytes(m->abi->inputs[i]), &c->inputs[i], "input"); !e.empty()) return e;
  for (int i = 0; i < m->abi->num_outputs; ++i)
    if (auto e = alloc(tensorBytes(m->abi->outputs[i]), &c->outputs[i], "output"); !e.empty()) return e;
  if (abi.weights_bytes > 0) {
    if ((rc = d.htod(c->weights, abi.weights, abi.weights_bytes, c->stream)))
      return cudaError("cuMemcpyHtoD (weights)", rc);
    if ((rc = d.stream_sync(c->stream))) return cudaError("cuStreamSynchronize", rc);
  }
  return "";
}

int cudaDevice(const mlcc_model* m) { return m->cuda ? m->cuda->device : -1; }

int64_t cudaLastDeviceNs(const mlcc_model* m) { return m->cuda ? m->cuda->last_device_ns : -1; }

namespace {

// Enqueues the steps on the model's stream for the run's input and output
// buffers (with profiling, an event before each step).
std::string launchSteps(mlcc_model* m, bool profiling) {
  const Driver& d = driver();
  CudaModel& c = *m->cuda;
  const mlcc_abi_model& model = *m->abi;
  const mlcc_abi_cuda& abi = *model.cuda;
  const std::vector<CUdeviceptr>&in = c.run_inputs, &out = c.run_outputs;
  auto where = [&](const mlcc_abi_cuda_arg& a) -> CUdeviceptr {
    switch (a.kind) {
      case MLCC_ABI_LOC_INPUT: return in[a.index];
      case MLCC_ABI_LOC_OUTPUT: return out[a.index];
      case MLCC_ABI_LOC_CONSTANT: return c.weights + a.offset;
      default: return c.workspace + a.offset;
    }
  };
  CUresult rc;
  for (int i = 0; i < abi.num_steps; ++i) {
    const mlcc_abi_cuda_step& s = abi.steps[i];
    if (profiling && i > 0 && (rc = d.event_record(c.events[i], c.stream)))
      return cudaError("cuEventRecord", rc);
    if (s.kind == MLCC_ABI_CUDA_COPY) {
      rc = d.dtod(where(s.args[1]), where(s.args[0]), s.bytes, c.stream);
      if (rc) return cudaError("cuMemcpyDtoD", rc);
      continue;
    }
    if (s.kind == MLCC_ABI_CUDA_ZERO) {
      if ((rc = d.memset8(where(s.args[0]), 0, s.bytes, c.stream))) return cudaError("cuMemsetD8", rc);
      continue;
    }
    if (s.kind == MLCC_ABI_CUDA_GEMM) {
      const CublasGemm g = cublasGemmOf(s.batch, s.m, s.n, s.k, s.dense != 0);
      const float one = 1, zero = 0;
      auto a = reinterpret_cast<const float*>(where(s.args[0]));
      auto b = reinterpret_cast<const float*>(where(s.args[1]));
      auto o = reinterpret_cast<float*>(where(s.args[2]));
      const int op_first = g.trans_first ? 1 /* CUBLAS_OP_T */ : 0;
      int r = g.batch == 1 ? cublas().sgemm(c.cublas, op_first, 0, int(g.m), int(g.n), int(g.k), &one, b,
                                            int(g.ld_first), a, int(g.ld_second), &zero, o, int(g.ld_out))
                           : cublas().sgemm_batched(c.cublas, op_first, 0, int(g.m), int(g.n), int(g.k), &one,
                                                    b, int(g.ld_first), g.stride_first, a, int(g.ld_second),
                                                    g.stride_second, &zero, o, int(g.ld_out), g.stride_out,
                                                    int(g.batch));
      if (r)
        return "cuBLAS sgemm (kernel " + std::string(model.kernels[s.kernel_id].name) + ") failed (status " +
               std::to_string(r) + ")";
      continue;
    }
    for (int k = 0; k < s.num_args; ++k) c.args[k] = where(s.args[k]);
    rc = d.launch(c.functions[i], s.grid[0], s.grid[1], s.grid[2], s.block[0], s.block[1], s.block[2], 0,
                  c.stream, c.params.data(), nullptr);
    if (rc) return cudaError((std::string("cuLaunchKernel (kernel ") + s.function + ")").c_str(), rc);
  }
  return "";
}

// Captures the steps for the run's buffers into c.graph_exec; false (and
// graphs off for the model) when the driver refuses: nothing has run then.
bool captureSteps(mlcc_model* m) {
  const Driver& d = driver();
  CudaModel& c = *m->cuda;
  dropGraph(c);
  if (d.begin_capture(c.stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */)) {
    c.graphs = false;
    return false;
  }
  const std::string launched = launchSteps(m, false);
  Handle graph = nullptr;
  const CUresult ended = d.end_capture(c.stream, &graph);
  c.graph = graph;
  if (!launched.empty() || ended || !graph || d.graph_instantiate(&c.graph_exec, graph, 0)) {
    c.graph_exec = nullptr;
    dropGraph(c);
    c.graphs = false;
    return false;
  }
  c.graph_inputs = c.run_inputs;
  c.graph_outputs = c.run_outputs;
  return true;
}

}  // namespace

std::string cudaRun(mlcc_model* m, const void* const* inputs, void* const* outputs, bool device_pointers) {
  const Driver& d = driver();
  CudaModel& c = *m->cuda;
  const mlcc_abi_model& model = *m->abi;
  const mlcc_abi_cuda& abi = *model.cuda;
  d.ctx_set_current(c.ctx);
  CUresult rc;
  std::vector<CUdeviceptr>&in = c.run_inputs, &out = c.run_outputs;
  for (int i = 0; i < model.num_inputs; ++i) {
    if (device_pointers) {
      in[i] = reinterpret_cast<CUdeviceptr>(inputs[i]);
    } else {
      in[i] = c.inputs[i];
      if ((rc = d.htod(in[i], inputs[i], tensorBytes(model.inputs[i]), c.stream)))
        return cudaError((std::string("cuMemcpyHtoD (input '") + model.inputs[i].name + "')").c_str(), rc);
    }
  }
  for (int i = 0; i < model.num_outputs; ++i)
    out[i] = device_pointers ? reinterpret_cast<CUdeviceptr>(outputs[i]) : c.outputs[i];
  const bool profiling = m->ctx.profiling;
  c.last_device_ns = -1;
  if ((rc = d.event_record(c.events[0], c.stream))) return cudaError("cuEventRecord", rc);
  const bool same_buffers = in == c.last_inputs && out == c.last_outputs;
  c.last_inputs = in;
  c.last_outputs = out;
  bool replay = c.graphs && !profiling && same_buffers;
  if (replay && !(c.graph_exec && in == c.graph_inputs && out == c.graph_outputs)) replay = captureSteps(m);
  if (replay) {
    if ((rc = d.graph_launch(c.graph_exec, c.stream)))
      return cudaError("cuGraphLaunch (the model's steps)", rc);
  } else if (std::string e = launchSteps(m, profiling); !e.empty()) {
    return e;
  }
  if ((rc = d.event_record(c.events[abi.num_steps], c.stream))) return cudaError("cuEventRecord", rc);
  if (!device_pointers)
    for (int i = 0; i < model.num_outputs; ++i)
      if ((rc = d.dtoh(outputs[i], out[i], tensorBytes(model.outputs[i]), c.stream)))
        return cudaError((std::string("cuMemcpyDtoH (output '") + model.outputs[i].name + "')").c_str(), rc);
  if ((rc = d.stream_sync(c.stream))) return cudaError("cuStreamSynchronize (the model's kernels)", rc);
  auto elapsedNs = [&](int from, int to) -> int64_t {
    float ms = 0;
    if (d.event_elapsed(&ms, c.events[from], c.events[to])) return 0;
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  };
  c.last_device_ns = elapsedNs(0, abi.num_steps);
  if (profiling)
    for (int i = 0; i < abi.num_steps; ++i)
      if (abi.steps[i].kernel_id >= 0) {
        auto& st = m->ctx.stats[abi.steps[i].kernel_id];
        st.calls += c.starts_call[i];
        st.total_ns += elapsedNs(i, i + 1);
      }
  return "";
}

}  // namespace mlcc::rt
