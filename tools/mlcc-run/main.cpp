// mlcc-run: run an IR file (any stage) through the reference interpreter, or
// a compiled model.so through its C ABI (libs/host), on .npy inputs (or
// deterministic random ones, the same for both) and write or summarize the
// outputs; for model.so also benchmark (--bench, --json) and profile.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>

#include "mlcc/host/compiled_model.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/tensor_npy.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"

namespace {

std::string typeText(const mlcc::interp::InputSpec& s) {
  return mlcc::ir::printType(mlcc::ir::Type::tensor(s.dtype, s.shape));
}

// A file name for an output: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize(const std::string& name) {
  std::string r;
  for (char c : name)
    r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  if (r.empty() || r == "." || r == "..") r = "_" + r;
  return r;
}

std::string summary(const mlcc::interp::NamedTensor& o) {
  const auto& t = o.tensor;
  std::string s = o.name + ": " + std::string(mlcc::ir::dtypeName(t.dtype())) + "[";
  for (int i = 0; i < t.rank(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
  s += "]";
  const int64_t n = t.numel();
  s += " = [";
  char buf[64];
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", t.at(i));
    s += buf;
  }
  s += n > 6 ? ", ...]" : "]";
  double sum = 0, amax = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.at(i);
    sum += v;
    amax = std::max(amax, std::fabs(v));
  }
  std::snprintf(buf, sizeof buf, "  mean=%.6g absmax=%.6g", n ? sum / static_cast<double>(n) : 0.0, amax);
  return s + buf;
}

// An input from a .npy file, as a tensor of the file's dtype; `expected` (the
// input's type) is named when the dtype is not an mlcc one.
mlcc::ir::Tensor readInputTensor(const std::string& name, const std::string& file_path,
                                 const std::string& expected) {
  return mlcc::ir::readNpyTensor(file_path, "input '" + name + "' (expected " + expected + ")");
}

// A usage error only found once the model is loaded (mlcc-run exits 2).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Binds `--input FILE.npy` (no NAME=) to the entry's only input: `inputs`
// are those it can bind (name, type), `entry` names the function or model.
// More or fewer than one is a usage error that lists them.
void bindUnnamedInput(const std::string& file_path,
                      const std::vector<std::pair<std::string, std::string>>& inputs,
                      const std::string& entry, std::map<std::string, std::string>& given) {
  if (inputs.size() != 1) {
    std::string list;
    for (const auto& [name, type] : inputs) list += (list.empty() ? "" : ", ") + name + ": " + type;
    throw UsageError("--input " + file_path + " without NAME= needs a single input, but " + entry +
                     " takes " + std::to_string(inputs.size()) + ": " + (list.empty() ? "(none)" : list) +
                     "; give each as --input NAME=FILE.npy");
  }
  given.emplace(inputs[0].first, file_path);
}

// Writes each output as DIR/<name>.npy, all or none (AtomicFileSet), or
// prints a summary of each. Two outputs whose names sanitize to the same file
// are an error (before anything is written).
void emitOutputs(const std::vector<mlcc::interp::NamedTensor>& outs, const std::string& out_dir, bool quiet,
                 bool verbose) {
  if (!out_dir.empty()) {
    std::map<std::string, std::string> owner;  // file name -> output name
    for (const auto& o : outs) {
      const std::string file = sanitize(o.name) + ".npy";
      if (auto [it, fresh] = owner.emplace(file, o.name); !fresh)
        throw mlcc::Error(mlcc::SourceLoc{"--output-dir", 0, 0},
                          "outputs '" + it->second + "' and '" + o.name + "' would both be written to " +
                              (std::filesystem::path(out_dir) / file).string() +
                              " (characters outside [A-Za-z0-9_.-] become '_'); nothing was written");
    }
    std::filesystem::create_directories(out_dir);
    mlcc::AtomicFileSet files;
    std::vector<std::string> paths;
    for (const auto& o : outs) {
      paths.push_back((std::filesystem::path(out_dir) / (sanitize(o.name) + ".npy")).string());
      mlcc::ir::writeNpyTensor(files.add(paths.back()), o.tensor);  // bf16 (no numpy dtype) as f32
    }
    files.commit();
    if (verbose)
      for (const auto& p : paths) std::cerr << "wrote " << p << "\n";
  } else if (!quiet) {
    for (const auto& o : outs) std::cout << summary(o) << "\n";
  }
}

// What mlcc-run does with a compiled model besides running it.
struct CompiledOptions {
  int bench = 0;   // timed runs (0: one run)
  int warmup = 3;  // untimed runs before them
  int threads = 0;
  bool json = false, profile = false;
};

// The --profile table: each kernel's calls, total time, share of the runs'
// time and GFLOPS (when the kernel's flop count is known); on stderr with --json.
void printProfile(std::FILE* out, const std::vector<mlcc::host::KernelProfile>& prof, double run_ms) {
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

// Runs a compiled model.so: inputs by name (or random), optional benchmark
// and profile, outputs written or summarized.
void runCompiled(const std::string& path, std::map<std::string, std::string> given,
                 const std::string& unnamed, bool random_missing, uint64_t seed, const CompiledOptions& opt,
                 const std::string& out_dir, bool quiet, bool verbose) {
  mlcc::host::CompiledModel model(path);
  const mlcc::SourceLoc file{path, 0, 0};
  const auto& specs = model.inputs();
  std::string expected;
  for (const auto& s : specs)
    expected += (expected.empty() ? "" : ", ") + s.name + ": " + mlcc::host::typeText(s.dtype, s.shape);
  if (!unnamed.empty()) {
    std::vector<std::pair<std::string, std::string>> inputs;
    for (const auto& s : specs) inputs.emplace_back(s.name, mlcc::host::typeText(s.dtype, s.shape));
    bindUnnamedInput(unnamed, inputs, "the model", given);
  }
  if (expected.empty()) expected = "(none)";
  for (const auto& [name, file_path] : given)
    if (std::none_of(specs.begin(), specs.end(), [&](auto& s) { return s.name == name; }))
      throw mlcc::Error(file, "unknown input '" + name + "'; the model takes: " + expected);
  std::vector<mlcc::ir::Tensor> inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string type = mlcc::host::typeText(specs[i].dtype, specs[i].shape);
    if (auto it = given.find(specs[i].name); it != given.end()) {
      inputs.push_back(readInputTensor(specs[i].name, it->second, type));
    } else if (given.empty() || random_missing) {
      std::vector<int64_t> shape = specs[i].shape;  // symbolic dimensions: 1
      for (auto& d : shape) d = d < 0 ? 1 : d;
      inputs.push_back(mlcc::interp::randomInput(specs[i].dtype, shape, seed, i));
      if (verbose) std::cerr << "random input " << specs[i].name << "\n";
    } else {
      throw mlcc::Error(file,
                        "missing input '" + specs[i].name + "' (" + type +
                            "); give it with --input, or use --random-inputs; the model takes: " + expected);
    }
  }
  try {
    if (model.hasSymbolicInputs()) model.setInputShapes(inputs);
    model.checkInputs(inputs);
  } catch (const mlcc::Error& e) {
    throw mlcc::Error(file, e.message());
  }
  if (opt.threads > 0) model.setThreads(opt.threads);
  auto outs = model.makeOutputs();
  const int runs = std::max(1, opt.bench);
  if (opt.bench > 0) mlcc::host::timeRuns(model, inputs, outs, opt.warmup, 0);
  if (opt.profile) model.enableProfiling(true);
  const std::vector<double> ms = mlcc::host::timeRuns(model, inputs, outs, 0, runs);
  const auto stats = mlcc::host::summarizeTimes(ms);
  if (verbose)
    std::cerr << "ran " << path << " in " << stats.median_ms << " ms (" << model.threads() << " threads)\n";

  std::vector<mlcc::interp::NamedTensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named.push_back({model.outputs()[i].name, std::move(outs[i])});
  emitOutputs(named, out_dir, quiet || opt.json, verbose);
  if (opt.json) {
    std::printf("{\"median_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, \"runs\": %d, \"threads\": %d}\n",
                stats.median_ms, stats.min_ms, stats.mean_ms, stats.runs, model.threads());
  } else if (opt.bench > 0) {
    std::printf("bench: %d runs, %d thread%s: median %.3f ms, min %.3f ms, mean %.3f ms\n", stats.runs,
                model.threads(), model.threads() == 1 ? "" : "s", stats.median_ms, stats.min_ms,
                stats.mean_ms);
  }
  if (opt.profile) {
    double total = 0;
    for (double v : ms) total += v;
    printProfile(opt.json ? stderr : stdout, model.profile(), total);  // stdout stays JSON
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-run: run a model's IR (any stage) through the reference interpreter, or a compiled model.so.",
      "mlcc-run"};
  app.footer(R"(Examples:
  mlcc-run lowered.ir --input x=x.npy --output-dir out/   # writes out/<output name>.npy
  mlcc-run model.so --input x.npy --output-dir out/       # no NAME=: the model's only input
  mlcc-run model.ir                                       # random inputs (--seed), prints a summary
  mlcc-run model.ir --dim n=8 --seed 3 -v                 # symbolic dim n = 8 for random inputs; timing
  mlcc-run kernels.ir --entry mm --input A=a.npy --input B=b.npy --output-dir out/   # one prim func
  mlcc-run model.so --input x=x.npy --output-dir out/    # a compiled model (mlcc-link), same outputs
  mlcc-run model.so --bench 50 --threads 1 --json        # {"median_ms": ..., "min_ms", "mean_ms", "runs", "threads"}
  mlcc-run model.so --bench 20 --profile                 # per-kernel calls, total ms, share of the run, GFLOPS
Inputs are .npy files (f32, f16, i8, i32, i64, bool). Without any --input every input is random:
floats normal(0, 1), integers in [0, 10); --random-inputs fills only the missing ones. The random
inputs of a model.so are those of its IR for the same --seed. --input FILE.npy (no NAME=) binds the
entry's only input (of a prim func: the only buffer it does not write); when the entry has several
inputs, or none, that is a usage error listing them: exit 2, found once the IR or model.so is
loaded (so a bad file is still exit 1). --bench, --warmup, --json, --threads and --profile apply
to compiled models only.)");
  std::string path;
  std::vector<std::string> input_args, dim_args;
  std::string out_dir, entry;
  uint64_t seed = 0;
  bool quiet = false, verbose = false, random_missing = false;
  app.add_option("input", path, "IR file ('-' for stdin) or compiled model.so")->required();
  app.add_option(
      "--input", input_args,
      "NAME=FILE.npy: an input of the entry function (repeatable); FILE.npy alone: its only input");
  app.add_option("--output-dir", out_dir, "Write each output as DIR/<output name>.npy");
  app.add_option("--seed", seed, "Seed of the random inputs (default 0)");
  app.add_option("--entry", entry, "Function to run (default: @main, or the single entry function)");
  app.add_option("--dim", dim_args, "NAME=SIZE: a symbolic dimension's size for random inputs (default 1)");
  app.add_flag("--random-inputs", random_missing, "Fill inputs not given with --input randomly");
  CompiledOptions copt;
  app.add_option("--bench", copt.bench, "model.so: time N runs after --warmup untimed ones")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", copt.warmup, "model.so: untimed runs before --bench's (default 3)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", copt.threads, "model.so: threads for parallel loops (default: all cores)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", copt.json,
               "model.so: print the timing as JSON (median_ms, min_ms, mean_ms, runs, threads)");
  app.add_flag("--profile", copt.profile, "model.so: print each kernel's calls, time, share and GFLOPS");
  app.add_flag("-q,--quiet", quiet, "Print nothing but errors");
  app.add_flag("-v,--verbose", verbose, "Print the inputs used and how long the run took");

  auto body = [&]() -> int {
    std::map<std::string, std::string> given;
    std::string unnamed;  // --input FILE.npy: the entry's only input
    for (const auto& a : input_args) {
      auto eq = a.find('=');
      if (eq == std::string::npos && !a.empty()) {
        if (!unnamed.empty() || input_args.size() > 1) {
          std::cerr << "mlcc-run: --input " << a
                    << " without NAME= is the only input; with several, give each as NAME=FILE.npy\n";
          return 2;
        }
        unnamed = a;
        continue;
      }
      if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
        std::cerr << "mlcc-run: --input takes NAME=FILE.npy, got '" << a << "'\n";
        return 2;
      }
      if (!given.emplace(a.substr(0, eq), a.substr(eq + 1)).second) {
        std::cerr << "mlcc-run: input '" << a.substr(0, eq) << "' given twice\n";
        return 2;
      }
    }
    std::map<std::string, int64_t> dims;
    for (const auto& a : dim_args) {
      auto eq = a.find('=');
      char* end = nullptr;
      long long v = eq == std::string::npos ? -1 : std::strtoll(a.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || v < 0 || !end || *end) {
        std::cerr << "mlcc-run: --dim takes NAME=SIZE, got '" << a << "'\n";
        return 2;
      }
      dims[a.substr(0, eq)] = v;
    }

    if (path != "-" && (mlcc::host::isElfFile(path) || path.ends_with(".so"))) {
      if (!entry.empty() || !dims.empty()) {
        std::cerr << "mlcc-run: --entry and --dim apply to IR files, not to a compiled model\n";
        return 2;
      }
      runCompiled(path, given, unnamed, random_missing, seed, copt, out_dir, quiet, verbose);
      return 0;
    }
    if (copt.bench || copt.json || copt.threads || copt.profile || app.count("--warmup")) {
      std::cerr << "mlcc-run: --bench, --warmup, --json, --threads and --profile apply to compiled models "
                   "(model.so from mlcc-link), not to IR files\n";
      return 2;
    }
    mlcc::ops::installIrHooks();
    mlcc::ir::SourceMap map;
    mlcc::ir::Module m = mlcc::ir::parseModuleFile(path, &map);
    mlcc::ir::verifyModule(m, &map);
    mlcc::interp::Interpreter interp(m);
    const mlcc::SourceLoc file{mlcc::displayName(path), 0, 0};
    try {
      if (entry.empty()) entry = interp.defaultEntry();
      auto specs = interp.inputs(entry);
      std::string expected;
      for (const auto& s : specs) expected += (expected.empty() ? "" : ", ") + s.name + ": " + typeText(s);
      if (!unnamed.empty()) {
        std::vector<std::pair<std::string, std::string>> inputs;  // of a prim func: the buffers it only reads
        for (const auto& s : specs)
          if (!m.findPrim(entry) || !interp.isWrittenParam(entry, s.name))
            inputs.emplace_back(s.name, typeText(s));
        bindUnnamedInput(unnamed, inputs, "@" + entry, given);
      }
      std::vector<mlcc::interp::NamedTensor> inputs;
      for (const auto& [name, file_path] : given) {
        auto it = std::find_if(specs.begin(), specs.end(), [&](auto& s) { return s.name == name; });
        if (it == specs.end())
          throw mlcc::Error("unknown input '" + name + "'; @" + entry +
                            " takes: " + (expected.empty() ? "(none)" : expected));
        inputs.push_back({name, readInputTensor(name, file_path, typeText(*it))});
      }
      const bool all_random = given.empty();
      for (size_t i = 0; i < specs.size(); ++i) {
        if (given.count(specs[i].name)) continue;
        if (!all_random && !random_missing && m.findPrim(entry) &&
            interp.isWrittenParam(entry, specs[i].name))
          continue;  // an output that is also read: starts as zeros
        if (!all_random && !random_missing)
          throw mlcc::Error("missing input '" + specs[i].name + "' (" + typeText(specs[i]) +
                            "); give it with --input, or use --random-inputs; @" + entry +
                            " takes: " + expected);
        std::vector<int64_t> shape;
        try {
          shape = mlcc::interp::concreteShape(specs[i], dims);
        } catch (const mlcc::Error& e) {
          throw mlcc::Error(e.message() + "; give it with --input");
        }
        inputs.push_back({specs[i].name, mlcc::interp::randomInput(specs[i].dtype, shape, seed, i)});
        if (verbose) std::cerr << "random input " << specs[i].name << "\n";
      }
      auto t0 = std::chrono::steady_clock::now();
      auto outs = interp.run(entry, inputs);
      auto t1 = std::chrono::steady_clock::now();
      if (verbose)
        std::cerr << "ran @" << entry << " in " << std::chrono::duration<double, std::milli>(t1 - t0).count()
                  << " ms\n";
      emitOutputs(outs, out_dir, quiet, verbose);
    } catch (const mlcc::Error& e) {
      if (!e.loc().file.empty()) throw;
      throw mlcc::Error(file, e.message());
    }
    return 0;
  };
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    try {
      return body();
    } catch (const UsageError& e) {
      std::cerr << "mlcc-run: " << e.what() << "\n";
      return 2;
    }
  });
}
