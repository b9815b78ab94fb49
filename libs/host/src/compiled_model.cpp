// CompiledModel: dlopen + dlsym of the runtime.h functions of a model.so.
#include "mlcc/host/compiled_model.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "mlcc/host/elf.h"
#include "mlcc/host/model_checksum.h"
#include "mlcc/runtime.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::host {

namespace {

// The C ABI, resolved from the .so.
struct Api {
  decltype(&mlcc_model_load) load;
  decltype(&mlcc_model_free) free;
  decltype(&mlcc_model_num_inputs) num_inputs;
  decltype(&mlcc_model_num_outputs) num_outputs;
  decltype(&mlcc_model_input_info) input_info;
  decltype(&mlcc_model_output_info) output_info;
  decltype(&mlcc_model_run) run;
  decltype(&mlcc_model_set_input_shape) set_input_shape;
  decltype(&mlcc_model_set_threads) set_threads;
  decltype(&mlcc_model_get_threads) get_threads;
  // Absent from model.so files linked before it (which keep denormals).
  decltype(&mlcc_model_set_flush_denormals) set_flush_denormals;
  decltype(&mlcc_model_enable_profiling) enable_profiling;
  decltype(&mlcc_model_num_kernels) num_kernels;
  decltype(&mlcc_model_kernel_profile) kernel_profile;
  decltype(&mlcc_last_error) last_error;
  // Absent from model.so files linked before functions (all with a graph entry).
  decltype(&mlcc_model_num_functions) num_functions;
  decltype(&mlcc_model_function_name) function_name;
  decltype(&mlcc_model_load_function) load_function;
  decltype(&mlcc_model_input_dim_name) input_dim_name;
  // Absent from model.so files linked before CUDA models (all CPU models).
  decltype(&mlcc_model_device) device;
  decltype(&mlcc_model_last_device_ns) last_device_ns;
};

// "@a, @b, @c"
std::string functionList(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "@" : ", @") + n;
  return list;
}

}  // namespace

std::string typeText(ir::DType dtype, const std::vector<int64_t>& shape) {
  std::string s = std::string(ir::dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string typeText(const TensorSpec& t) {
  std::string s = std::string(ir::dtypeName(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + (i < t.dims.size() && !t.dims[i].empty() ? t.dims[i] : std::to_string(t.shape[i]));
  return s + "]";
}

bool isElfFile(const std::string& path) { return readElfInfo(path).elf; }

struct CompiledModel::Impl {
  std::string path;
  void* handle = nullptr;
  Api api{};
  mlcc_model* model = nullptr;
  std::vector<std::string> functions;
  std::string function;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::vector<std::string>> input_dims;  // TensorSpec::dims of the inputs
  std::vector<bool> symbolic_inputs;                 // inputs with symbolic dimensions
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;

  Error error(const std::string& message) const { return Error(SourceLoc{path, 0, 0}, message); }
  // inputs and outputs from the model's infos.
  void readInfos() {
    auto infos = [&](int n, auto info, std::vector<TensorSpec>& out) {
      out.clear();
      for (int i = 0; i < n; ++i) {
        mlcc_tensor_info t;
        if (info(model, i, &t) != 0) throw apiError("tensor info");
        // mlcc_dtype codes are the DType enumerators' values (ir::dtypeAbiCode).
        static_assert(static_cast<int>(ir::DType::u8) == MLCC_U8 &&
                      static_cast<int>(ir::DType::f64) == MLCC_F64 &&
                      static_cast<int>(ir::DType::u32) == MLCC_U32);
        out.push_back(
            {t.name, static_cast<ir::DType>(t.dtype), std::vector<int64_t>(t.shape, t.shape + t.ndim), {}});
      }
    };
    infos(api.num_inputs(model), api.input_info, inputs);
    infos(api.num_outputs(model), api.output_info, outputs);
    for (size_t i = 0; i < inputs.size() && i < input_dims.size(); ++i) inputs[i].dims = input_dims[i];
  }
  Error apiError(const std::string& what) const { return error(what + ": " + api.last_error()); }
};

CompiledModel::CompiledModel(const std::string& path, const std::string& function)
    : impl_(std::make_unique<Impl>()) {
  auto& I = *impl_;
  I.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw I.error("no such file");
  const ElfInfo elf = readElfInfo(path);
  if (!elf.elf) throw I.error("not a compiled model (not an ELF shared library)");
  if (elf.type == kElfRelocatable)
    throw I.error("an object file, not a compiled model: link it first (mlcc-link model.o -o model.so)");
  // A truncated or damaged library would crash dlopen or run corrupted code.
  verifyModelChecksum(path);
  // A path without '/' would be looked up in the library search path.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  I.handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!I.handle) {
    const char* e = dlerror();
    throw I.error(std::string("cannot load the shared library: ") + (e ? e : "unknown error"));
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(I.handle, name));
    if (!fn) {
      dlclose(I.handle);
      I.handle = nullptr;
      throw I.error(std::string("not an mlcc model (no ") + name + "; make one with mlcc-link)");
    }
  };
  sym(I.api.load, "mlcc_model_load");
  sym(I.api.free, "mlcc_model_free");
  sym(I.api.num_inputs, "mlcc_model_num_inputs");
  sym(I.api.num_outputs, "mlcc_model_num_outputs");
  sym(I.api.input_info, "mlcc_model_input_info");
  sym(I.api.output_info, "mlcc_model_output_info");
  sym(I.api.run, "mlcc_model_run");
  // Optional: model.so files from before symbolic dimensions (all static) lack it.
  I.api.set_input_shape =
      reinterpret_cast<decltype(I.api.set_input_shape)>(dlsym(I.handle, "mlcc_model_set_input_shape"));
  sym(I.api.set_threads, "mlcc_model_set_threads");
  sym(I.api.get_threads, "mlcc_model_get_threads");
  sym(I.api.enable_profiling, "mlcc_model_enable_profiling");
  sym(I.api.num_kernels, "mlcc_model_num_kernels");
  sym(I.api.kernel_profile, "mlcc_model_kernel_profile");
  sym(I.api.last_error, "mlcc_last_error");
  auto optional = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(I.handle, name));
  };
  optional(I.api.num_functions, "mlcc_model_num_functions");
  optional(I.api.function_name, "mlcc_model_function_name");
  optional(I.api.load_function, "mlcc_model_load_function");
  optional(I.api.input_dim_name, "mlcc_model_input_dim_name");
  optional(I.api.device, "mlcc_model_device");
  optional(I.api.set_flush_denormals, "mlcc_model_set_flush_denormals");
  optional(I.api.last_device_ns, "mlcc_model_last_device_ns");
  auto fail = [&](const Error& e) {
    dlclose(I.handle);
    I.handle = nullptr;
    throw e;
  };
  if (I.api.num_functions && I.api.function_name && I.api.load_function) {
    const int n = I.api.num_functions();
    if (n < 0) fail(I.apiError("cannot load the model"));
    for (int i = 0; i < n; ++i) {
      const char* name = I.api.function_name(i);
      if (!name) fail(I.apiError("cannot load the model"));
      I.functions.push_back(name);
    }
  }
  if (!function.empty() && std::find(I.functions.begin(), I.functions.end(), function) == I.functions.end())
    fail(I.error("no function @" + function +
                 (I.functions.empty()
                      ? ": the model has a graph entry and no functions (mlcc-codegen --entry " + function +
                            " compiles a prim func alone as one)"
                      : "; the model's functions: " + functionList(I.functions))));
  if (function.empty() && I.functions.size() > 1)
    fail(I.error("no graph entry but " + std::to_string(I.functions.size()) + " functions (prim funcs): " +
                 functionList(I.functions) + "; choose one (mlcc-run --entry NAME)"));
  I.function = !function.empty() ? function : I.functions.size() == 1 ? I.functions[0] : "";
  I.model = I.function.empty() ? I.api.load() : I.api.load_function(I.function.c_str());
  if (!I.model) fail(I.apiError("cannot load the model"));
  try {
    I.readInfos();
    for (size_t i = 0; i < I.inputs.size(); ++i) {
      const auto& shape = I.inputs[i].shape;
      I.symbolic_inputs.push_back(std::find(shape.begin(), shape.end(), -1) != shape.end());
      std::vector<std::string> names(shape.size());
      for (size_t d = 0; d < shape.size() && I.api.input_dim_name; ++d)
        if (const char* n = I.api.input_dim_name(I.model, static_cast<int>(i), static_cast<int>(d)))
          names[d] = n;
      I.input_dims.push_back(std::move(names));
    }
    I.readInfos();
  } catch (...) {
    I.api.free(I.model);
    dlclose(I.handle);
    throw;
  }
  I.in_ptrs.resize(I.inputs.size());
  I.out_ptrs.resize(I.outputs.size());
}

CompiledModel::~CompiledModel() {
  if (!impl_) return;
  if (impl_->model) impl_->api.free(impl_->model);
  if (impl_->handle) dlclose(impl_->handle);
}

const std::vector<std::string>& CompiledModel::functions() const { return impl_->functions; }
const std::string& CompiledModel::function() const { return impl_->function; }

const std::vector<TensorSpec>& CompiledModel::inputs() const { return impl_->inputs; }
const std::vector<TensorSpec>& CompiledModel::outputs() const { return impl_->outputs; }

bool CompiledModel::hasSymbolicInputs() const {
  const auto& s = impl_->symbolic_inputs;
  return std::find(s.begin(), s.end(), true) != s.end();
}

void CompiledModel::setInputShapes(const std::vector<ir::Tensor>& inputs) {
  auto& I = *impl_;
  if (inputs.size() != I.inputs.size())
    throw Error("the model takes " + std::to_string(I.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!I.symbolic_inputs[i] || !I.api.set_input_shape) continue;
    const auto& shape = inputs[i].shape();
    if (I.api.set_input_shape(I.model, static_cast<int>(i), static_cast<int>(shape.size()), shape.data()) !=
        0)
      throw Error(I.api.last_error());
  }
  I.readInfos();
}

void CompiledModel::setInputShape(size_t index, const std::vector<int64_t>& shape) {
  auto& I = *impl_;
  if (index >= I.inputs.size())
    throw Error("input index " + std::to_string(index) + " out of range: the model takes " +
                std::to_string(I.inputs.size()) + " inputs");
  if (!I.symbolic_inputs[index] || !I.api.set_input_shape) return;
  if (I.api.set_input_shape(I.model, static_cast<int>(index), static_cast<int>(shape.size()), shape.data()) !=
      0)
    throw Error(I.api.last_error());
  I.readInfos();
}

int CompiledModel::threads() const { return impl_->api.get_threads(impl_->model); }

void CompiledModel::setThreads(int n) {
  if (impl_->api.set_threads(impl_->model, n) != 0) throw Error(impl_->api.last_error());
}

void CompiledModel::setFlushDenormals(bool on) {
  if (!impl_->api.set_flush_denormals) {
    if (on)
      throw impl_->error(
          "this model.so cannot flush denormals (linked before mlcc_model_set_flush_denormals)");
    return;
  }
  if (impl_->api.set_flush_denormals(impl_->model, on ? 1 : 0) != 0) throw Error(impl_->api.last_error());
}

int CompiledModel::device() const { return impl_->api.device ? impl_->api.device(impl_->model) : -1; }

double CompiledModel::lastDeviceMs() const {
  const int64_t ns = impl_->api.last_device_ns ? impl_->api.last_device_ns(impl_->model) : -1;
  return ns < 0 ? -1 : static_cast<double>(ns) / 1e6;
}

void CompiledModel::enableProfiling(bool on) {
  if (impl_->api.enable_profiling(impl_->model, on ? 1 : 0) != 0) throw impl_->apiError("profiling");
}

std::vector<KernelProfile> CompiledModel::profile() const {
  std::vector<KernelProfile> r;
  const int n = impl_->api.num_kernels(impl_->model);
  for (int i = 0; i < n; ++i) {
    mlcc_kernel_profile p;
    if (impl_->api.kernel_profile(impl_->model, i, &p) != 0) throw impl_->apiError("kernel profile");
    r.push_back({p.name ? p.name : "", p.calls, p.total_ns, p.flops_per_call});
  }
  return r;
}

std::vector<ir::Tensor> CompiledModel::makeOutputs() const {
  std::vector<ir::Tensor> outs;
  for (const auto& o : impl_->outputs) outs.push_back(ir::Tensor::zeros(o.dtype, o.shape));
  return outs;
}

void CompiledModel::checkInputs(const std::vector<ir::Tensor>& inputs) const {
  const auto& specs = impl_->inputs;
  if (inputs.size() != specs.size())
    throw Error("the model takes " + std::to_string(specs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < specs.size(); ++i)
    if (inputs[i].dtype() != specs[i].dtype || inputs[i].shape() != specs[i].shape)
      throw Error("input '" + specs[i].name + "': expected " + typeText(specs[i].dtype, specs[i].shape) +
                  ", got " + typeText(inputs[i].dtype(), inputs[i].shape()));
}

void CompiledModel::run(const std::vector<ir::Tensor>& inputs, std::vector<ir::Tensor>& outputs) {
  auto& I = *impl_;
  for (size_t i = 0; i < I.in_ptrs.size(); ++i) I.in_ptrs[i] = inputs[i].bytes();
  for (size_t i = 0; i < I.out_ptrs.size(); ++i) I.out_ptrs[i] = outputs[i].mutableBytes();
  if (I.api.run(I.model, I.in_ptrs.data(), I.out_ptrs.data()) != 0) throw I.apiError("run failed");
}

std::vector<ir::Tensor> CompiledModel::run(const std::vector<ir::Tensor>& inputs) {
  if (hasSymbolicInputs()) setInputShapes(inputs);
  checkInputs(inputs);
  auto outs = makeOutputs();
  run(inputs, outs);
  return outs;
}

BenchStats summarizeTimes(std::vector<double> ms) {
  BenchStats s;
  s.runs = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  s.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  s.min_ms = ms.front();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / static_cast<double>(n);
  return s;
}

RunTimes timeRuns(CompiledModel& model, const std::vector<ir::Tensor>& inputs,
                  std::vector<ir::Tensor>& outputs, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) model.run(inputs, outputs);
  RunTimes t;
  t.wall_ms.reserve(runs);
  const bool on_device = model.device() >= 0;
  if (on_device) t.device_ms.reserve(runs);
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    model.run(inputs, outputs);
    auto t1 = std::chrono::steady_clock::now();
    t.wall_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (on_device) t.device_ms.push_back(model.lastDeviceMs());
  }
  return t;
}

}  // namespace mlcc::host
