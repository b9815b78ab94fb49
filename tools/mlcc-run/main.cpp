// mlcc-run: run an IR file (any stage) through the reference interpreter on
// .npy inputs (or deterministic random ones) and write or summarize outputs.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/npy.h"
#include "mlcc/support/tool.h"

namespace {

using mlcc::ir::DType;

std::optional<DType> dtypeOfDescr(const std::string& d) {
  static const std::map<std::string, DType> m = {{"<f4", DType::f32}, {"<f2", DType::f16},
                                                 {"|i1", DType::i8},  {"<i4", DType::i32},
                                                 {"<i8", DType::i64}, {"|b1", DType::boolean}};
  auto it = m.find(d);
  if (it == m.end()) return std::nullopt;
  return it->second;
}
std::string descrOf(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::i8: return "|i1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::boolean: return "|b1";
    case DType::bf16: break;
  }
  return "";
}

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlcc-run: run a model's IR (any stage) through the reference interpreter.", "mlcc-run"};
  app.footer(R"(Examples:
  mlcc-run lowered.ir --input x=x.npy --output-dir out/   # writes out/<output name>.npy
  mlcc-run model.ir                                       # random inputs (--seed), prints a summary
  mlcc-run model.ir --dim n=8 --seed 3 -v                 # symbolic dim n = 8 for random inputs; timing
  mlcc-run kernels.ir --entry mm --input A=a.npy --input B=b.npy --output-dir out/   # one prim func
Inputs are .npy files (f32, f16, i8, i32, i64, bool). Without any --input every input is random:
floats normal(0, 1), integers in [0, 10); --random-inputs fills only the missing ones.)");
  std::string path;
  std::vector<std::string> input_args, dim_args;
  std::string out_dir, entry;
  uint64_t seed = 0;
  bool quiet = false, verbose = false, random_missing = false;
  app.add_option("input", path, "IR file ('-' for stdin)")->required();
  app.add_option("--input", input_args, "NAME=FILE.npy: an input of the entry function (repeatable)");
  app.add_option("--output-dir", out_dir, "Write each output as DIR/<output name>.npy");
  app.add_option("--seed", seed, "Seed of the random inputs (default 0)");
  app.add_option("--entry", entry, "Function to run (default: @main, or the single entry function)");
  app.add_option("--dim", dim_args, "NAME=SIZE: a symbolic dimension's size for random inputs (default 1)");
  app.add_flag("--random-inputs", random_missing, "Fill inputs not given with --input randomly");
  app.add_flag("-q,--quiet", quiet, "Print nothing but errors");
  app.add_flag("-v,--verbose", verbose, "Print the inputs used and how long the run took");

  return mlcc::runTool(app, argc, argv, [&]() -> int {
    std::map<std::string, std::string> given;
    for (const auto& a : input_args) {
      auto eq = a.find('=');
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
      std::vector<mlcc::interp::NamedTensor> inputs;
      for (const auto& [name, file_path] : given) {
        auto it = std::find_if(specs.begin(), specs.end(), [&](auto& s) { return s.name == name; });
        if (it == specs.end())
          throw mlcc::Error("unknown input '" + name + "'; @" + entry +
                            " takes: " + (expected.empty() ? "(none)" : expected));
        mlcc::NpyArray a = mlcc::readNpy(file_path);
        auto dt = dtypeOfDescr(a.dtype);
        if (!dt)
          throw mlcc::Error("input '" + name + "' (" + file_path + "): numpy dtype '" + a.dtype +
                            "' is not an mlcc dtype; expected " + typeText(*it));
        inputs.push_back({name, mlcc::ir::Tensor::copyOf(*dt, a.shape, a.data)});
      }
      const bool all_random = given.empty();
      for (size_t i = 0; i < specs.size(); ++i) {
        if (given.count(specs[i].name)) continue;
        if (!all_random && !random_missing)
          throw mlcc::Error("missing input '" + specs[i].name + "' (" + typeText(specs[i]) +
                            "); give it with --input, or use --random-inputs; @" + entry +
                            " takes: " + expected);
        std::vector<int64_t> shape;
        for (const auto& d : specs[i].shape) {
          int64_t c;
          if (mlcc::ir::asConstInt(d, &c)) {
            shape.push_back(c);
          } else if (auto* v = d->as<mlcc::ir::VarNode>()) {
            shape.push_back(dims.count(v->name) ? dims[v->name] : 1);
          } else {
            throw mlcc::Error("input '" + specs[i].name + "': cannot make a random tensor of type " +
                              typeText(specs[i]) + "; give it with --input");
          }
        }
        inputs.push_back(
            {specs[i].name, mlcc::interp::randomTensor(specs[i].dtype, shape, seed * 1000003 + i)});
        if (verbose) std::cerr << "random input " << specs[i].name << "\n";
      }
      auto t0 = std::chrono::steady_clock::now();
      auto outs = interp.run(entry, inputs);
      auto t1 = std::chrono::steady_clock::now();
      if (verbose)
        std::cerr << "ran @" << entry << " in " << std::chrono::duration<double, std::milli>(t1 - t0).count()
                  << " ms\n";
      if (!out_dir.empty()) {
        std::filesystem::create_directories(out_dir);
        for (const auto& o : outs) {
          mlcc::ir::Tensor t = o.tensor;
          if (t.dtype() == DType::bf16) {  // no numpy dtype: written as f32
            mlcc::ir::Tensor f = mlcc::ir::Tensor::zeros(DType::f32, t.shape());
            for (int64_t i = 0; i < t.numel(); ++i) f.set(i, t.at(i));
            t = f;
          }
          mlcc::NpyArray a;
          a.dtype = descrOf(t.dtype());
          a.shape = t.shape();
          a.data.assign(t.bytes(), t.bytes() + t.nbytes());
          std::string p = (std::filesystem::path(out_dir) / (sanitize(o.name) + ".npy")).string();
          mlcc::writeNpy(p, a);
          if (verbose) std::cerr << "wrote " << p << "\n";
        }
      } else if (!quiet) {
        for (const auto& o : outs) std::cout << summary(o) << "\n";
      }
    } catch (const mlcc::Error& e) {
      if (!e.loc().file.empty()) throw;
      throw mlcc::Error(file, e.message());
    }
    return 0;
  });
}
