// mlcc-run on a model.so: its C ABI, with benchmarks and a per-kernel
// profile (see run.h).
#include <cstdio>
#include <iostream>

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

}  // namespace

void runCompiledFile(const RunOptions& o, const InputRequest& request) {
  host::CompiledModel model(o.path);
  const SourceLoc file{o.path, 0, 0};
  std::vector<ir::Tensor> inputs;
  try {
    for (auto& t : bindInputs(modelInputSlots(model), request, "the model"))
      inputs.push_back(std::move(t.tensor));
    if (model.hasSymbolicInputs()) model.setInputShapes(inputs);
    model.checkInputs(inputs);
  } catch (const Error& e) {
    if (!e.loc().file.empty()) throw;  // a .npy file's error
    throw Error(file, e.message());
  }
  if (o.threads > 0) model.setThreads(o.threads);
  auto outs = model.makeOutputs();
  const int runs = std::max(1, o.bench);
  if (o.bench > 0) host::timeRuns(model, inputs, outs, o.warmup, 0);
  if (o.profile) model.enableProfiling(true);
  const std::vector<double> ms = host::timeRuns(model, inputs, outs, 0, runs);
  const auto stats = host::summarizeTimes(ms);
  if (o.verbose)
    std::cerr << "ran " << o.path << " in " << stats.median_ms << " ms (" << model.threads() << " threads)\n";

  std::vector<interp::NamedTensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named.push_back({model.outputs()[i].name, std::move(outs[i])});
  emitOutputs(named, o.out_dir, o.quiet || o.json, o.verbose);
  if (o.json) {
    std::printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"runs\": %d, \"threads\": %d}\n",
                stats.median_ms, stats.min_ms, stats.mean_ms, stats.runs, model.threads());
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
