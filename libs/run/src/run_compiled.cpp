// mlcc-run on a model.so: its C ABI (the graph entry, or a function chosen
// with --entry), with benchmarks and a per-kernel profile (see run.h).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "mlcc/host/compiled_model.h"
#include "mlcc/support/diagnostic.h"
#include "outputs.h"
#include "runners.h"

namespace mlcc::run {

namespace {

// The --profile table: each kernel's calls, total time, share of the runs'
// time and GFLOPS (when the kernel's flop count is known); on stderr with --json.
void printProfile(std::FILE* out, const std::vector<host::KernelProfile>& prof, double run_ms) {
  int w = 32;  // the kernel column: as wide as the longest name
  for (const auto& k : prof) w = std::max(w, static_cast<int>(k.name.size()));
  std::fprintf(out, "%-*s %8s %12s %7s %9s\n", w, "kernel", "calls", "total ms", "share", "GFLOPS");
  double kernels_ms = 0;
  for (const auto& k : prof) {
    const double ms = static_cast<double>(k.total_ns) / 1e6;
    kernels_ms += ms;
    char gflops[32] = "-";
    if (k.flops_per_call > 0 && k.total_ns > 0)
      std::snprintf(gflops, sizeof gflops, "%.2f",
                    k.flops_per_call * static_cast<double>(k.calls) / static_cast<double>(k.total_ns));
    std::fprintf(out, "%-*s %8lld %12.3f %6.1f%% %9s\n", w, k.name.c_str(), static_cast<long long>(k.calls),
                 ms, run_ms > 0 ? 100.0 * ms / run_ms : 0.0, gflops);
  }
  std::fprintf(out, "%-*s %8s %12.3f %6.1f%%\n", w, "(all kernels)", "", kernels_ms,
               run_ms > 0 ? 100.0 * kernels_ms / run_ms : 0.0);
  std::fprintf(out, "%-*s %8s %12.3f\n", w, "(runs)", "", run_ms);
}

// The model's inputs in order: the tensors bound, and zeros for a
// function's input that is also an output and was not given (optional
// slots), of that output's shape once the given inputs set the symbolic
// dimensions.
std::vector<ir::Tensor> givenOrZeros(host::CompiledModel& model, const std::vector<InputSlot>& slots,
                                     std::vector<interp::NamedTensor>& bound) {
  std::vector<std::optional<ir::Tensor>> given(slots.size());
  for (auto& t : bound)
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].name == t.name) given[i] = std::move(t.tensor);
  const bool missing = std::any_of(given.begin(), given.end(), [](const auto& t) { return !t; });
  if (missing && model.hasSymbolicInputs())
    for (size_t i = 0; i < given.size(); ++i)
      if (given[i]) model.setInputShape(i, given[i]->shape());
  std::vector<ir::Tensor> inputs;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (given[i]) {
      inputs.push_back(std::move(*given[i]));
      continue;
    }
    const auto& outs = model.outputs();
    auto out = std::find_if(outs.begin(), outs.end(),
                            [&](const host::TensorSpec& t) { return t.name == slots[i].name; });
    if (out == outs.end() || std::find(out->shape.begin(), out->shape.end(), -1) != out->shape.end())
      throw Error("missing input '" + slots[i].name + "' (" + slots[i].type +
                  "): the other inputs do not give its shape; give it with --input");
    inputs.push_back(ir::Tensor::zeros(out->dtype, out->shape));
  }
  return inputs;
}

}  // namespace

void runCompiledFile(const RunOptions& o, const InputRequest& request) {
  host::CompiledModel model(o.path, o.entry);
  const SourceLoc file{o.path, 0, 0};
  std::vector<ir::Tensor> inputs;
  try {
    const std::vector<InputSlot> slots = modelInputSlots(model);
    auto bound = bindInputs(slots, request, model.function().empty() ? "the model" : "@" + model.function());
    inputs = givenOrZeros(model, slots, bound);
    if (model.hasSymbolicInputs()) model.setInputShapes(inputs);
    model.checkInputs(inputs);
  } catch (const Error& e) {
    if (!e.loc().file.empty()) throw;  // a .npy file's error
    throw Error(file, e.message());
  }
  if (o.threads > 0) model.setThreads(o.threads);
  if (o.keep_denormals) model.setFlushDenormals(false);
  auto outs = model.makeOutputs();
  const int runs = std::max(1, o.bench);
  if (o.bench > 0) host::timeRuns(model, inputs, outs, o.warmup, 0);
  if (o.profile) model.enableProfiling(true);
  // A CUDA model is timed on the device (CUDA events around its kernels);
  // the wall-clock times, with the host copies, are reported beside.
  const int device = model.device();
  const host::RunTimes times = host::timeRuns(model, inputs, outs, 0, runs);
  const std::vector<double>& ms = device >= 0 ? times.device_ms : times.wall_ms;
  const auto stats = host::summarizeTimes(ms);
  const auto wall = host::summarizeTimes(times.wall_ms);
  const std::string where = device >= 0 ? "cuda:" + std::to_string(device) : "";
  if (o.verbose)
    std::cerr << "ran " << o.path << (model.function().empty() ? "" : " @" + model.function()) << " in "
              << stats.median_ms << " ms ("
              << (device >= 0 ? "on " + where : std::to_string(model.threads()) + " threads") << ")\n";

  std::vector<interp::NamedTensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named.push_back({model.outputs()[i].name, std::move(outs[i])});
  emitOutputs(named, o.out_dir, o.quiet || o.json, o.verbose);
  if (o.json) {
    std::printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"runs\": %d, \"threads\": %d",
                stats.median_ms, stats.min_ms, stats.mean_ms, stats.runs, model.threads());
    if (device >= 0)
      std::printf(", \"device\": \"%s\", \"wall_median_ms\": %.6f", where.c_str(), wall.median_ms);
    std::printf("}\n");
  } else if (o.bench > 0 && device >= 0) {
    std::printf(
        "bench: %d runs on %s: median %.3f ms, min %.3f ms, mean %.3f ms (CUDA events; wall clock with "
        "the host copies: median %.3f ms)\n",
        stats.runs, where.c_str(), stats.median_ms, stats.min_ms, stats.mean_ms, wall.median_ms);
  } else if (o.bench > 0) {
    std::printf("bench: %d runs, %d thread%s: median %.3f ms, min %.3f ms, mean %.3f ms\n", stats.runs,
                model.threads(), model.threads() == 1 ? "" : "s", stats.median_ms, stats.min_ms,
                stats.mean_ms);
  }
  if (o.profile) {
    double total = 0;
    for (double v : ms) total += v;
    printProfile(o.json ? stderr : stdout, model.profile(), total);  // stdout stays JSON
  }
}

}  // namespace mlcc::run
