// A model.so loaded in this process through its C ABI
// (include/mlcc/runtime.h, looked up with dlsym; no other mlcc code in the
// .so is used): its graph entry or one of its functions (prim funcs), its
// inputs and outputs, runs checked against them, thread count, per-kernel
// profiles and timed runs for benchmarks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/dtype.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::host {

struct TensorSpec {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  // Inputs: per dimension, the name of the symbolic dimension it is ("" for
  // a constant one, and for every dimension of outputs).
  std::vector<std::string> dims;
};

// "f32[1, 3, 224, 224]", the spelling of the IR's tensor types.
std::string typeText(ir::DType dtype, const std::vector<int64_t>& shape);
// The same with the names of symbolic dimensions: "f32[n, 784]".
std::string typeText(const TensorSpec& t);

struct KernelProfile {
  std::string name;
  int64_t calls = 0;
  int64_t total_ns = 0;
  double flops_per_call = 0;  // 0 when unknown
};

// Whether the file starts with the ELF magic (a compiled model rather than IR).
bool isElfFile(const std::string& path);

class CompiledModel {
 public:
  // Verifies mlcc-link's checksum (model_checksum.h), dlopens `path` and
  // loads its model: the graph entry, or without one its only function;
  // with `function`, the function (prim func) of that name. Throws
  // mlcc::Error (located at the file) when it is truncated or damaged, not
  // a shared library or not an mlcc model, and, listing the functions, for
  // an unknown `function` or a model of several functions without one.
  explicit CompiledModel(const std::string& path, const std::string& function = "");
  ~CompiledModel();
  CompiledModel(const CompiledModel&) = delete;
  CompiledModel& operator=(const CompiledModel&) = delete;

  // The model's functions (none for a model with a graph entry), and the
  // one loaded ("" for the graph entry). A function's inputs are the
  // buffers it reads (or does not write), its outputs those it writes; one
  // both read and written is an input and an output of the same name.
  const std::vector<std::string>& functions() const;
  const std::string& function() const;

  // The current shapes: -1 for a symbolic dimension not set yet.
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // Whether some input has symbolic dimensions (-1 in the model's shapes).
  bool hasSymbolicInputs() const;
  // Sets the model's symbolic dimensions from the shapes of `inputs` (in
  // the model's input order; those of inputs with symbolic dimensions are
  // given to mlcc_model_set_input_shape); inputs() and outputs() then give
  // the bound shapes. Throws mlcc::Error with the model's message.
  void setInputShapes(const std::vector<ir::Tensor>& inputs);
  // The same for one input (mlcc_model_set_input_shape), when its shape
  // alone is known.
  void setInputShape(size_t index, const std::vector<int64_t>& shape);

  int threads() const;
  void setThreads(int n);
  // mlcc_model_set_flush_denormals (on by default in the model).
  void setFlushDenormals(bool on);

  // The CUDA device the model runs on, or -1 for a CPU model.
  int device() const;
  // A CUDA model's last run on the device (CUDA events around its kernels,
  // host copies excluded; mlcc_model_last_device_ns), or -1.
  double lastDeviceMs() const;

  // Enabling resets the counters.
  void enableProfiling(bool on);
  std::vector<KernelProfile> profile() const;

  // Zero-filled output tensors of the model's output types.
  std::vector<ir::Tensor> makeOutputs() const;
  // Checks `inputs` (in the model's input order) against the input types:
  // "input 'x': expected f32[1, 4], got f32[2, 4]".
  void checkInputs(const std::vector<ir::Tensor>& inputs) const;
  // Runs on checked inputs into outputs from makeOutputs(); no allocation.
  void run(const std::vector<ir::Tensor>& inputs, std::vector<ir::Tensor>& outputs);
  // setInputShapes (symbolic models), checkInputs, makeOutputs and run.
  std::vector<ir::Tensor> run(const std::vector<ir::Tensor>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Benchmark timings of a compiled model.
struct BenchStats {
  int runs = 0;
  double median_ms = 0, min_ms = 0, mean_ms = 0;
};
BenchStats summarizeTimes(std::vector<double> ms);
// The times of benchmark runs, in milliseconds: each run's wall-clock time
// and, for a CUDA model, its device time (CompiledModel::lastDeviceMs).
struct RunTimes {
  std::vector<double> wall_ms, device_ms;
};
// `warmup` untimed runs, then `runs` timed ones.
RunTimes timeRuns(CompiledModel& model, const std::vector<ir::Tensor>& inputs,
                  std::vector<ir::Tensor>& outputs, int warmup, int runs);
}  // namespace mlcc::host
