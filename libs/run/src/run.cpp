// mlcc-run's command line after CLI11: --input and --dim arguments, the
// options that apply to one kind of file only, then the IR or model.so run
// (see run.h).
#include "mlcc/run/run.h"

#include <iostream>

#include "mlcc/host/compiled_model.h"
#include "runners.h"

namespace mlcc::run {

namespace {

// Parses --input NAME=FILE.npy (or FILE.npy alone) arguments into `request`;
// "" when they are well-formed, else the usage error.
std::string parseInputArgs(const std::vector<std::string>& args, InputRequest& request) {
  for (const auto& a : args) {
    auto eq = a.find('=');
    if (eq == std::string::npos && !a.empty()) {
      if (!request.unnamed.empty() || args.size() > 1)
        return "--input " + a + " without NAME= is the only input; with several, give each as NAME=FILE.npy";
      request.unnamed = a;
      continue;
    }
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      return "--input takes NAME=FILE.npy, got '" + a + "'";
    if (!request.files.emplace(a.substr(0, eq), a.substr(eq + 1)).second)
      return "input '" + a.substr(0, eq) + "' given twice";
  }
  return "";
}

// Parses --dim NAME=SIZE arguments; "" or the usage error.
std::string parseDimArgs(const std::vector<std::string>& args, std::map<std::string, int64_t>& dims) {
  for (const auto& a : args) {
    const auto dim = parseDimArg(a);
    if (!dim) return "--dim takes NAME=SIZE, got '" + a + "'";
    dims[dim->first] = dim->second;
  }
  return "";
}

int usageError(const std::string& message) {
  std::cerr << "mlcc-run: " << message << "\n";
  return 2;
}

}  // namespace

int runModelFile(const RunOptions& o) {
  InputRequest request;
  request.random_missing = o.random_missing;
  request.seed = o.seed;
  request.verbose = o.verbose;
  std::map<std::string, int64_t> dims;
  if (std::string e = parseInputArgs(o.input_args, request); !e.empty()) return usageError(e);
  if (std::string e = parseDimArgs(o.dim_args, dims); !e.empty()) return usageError(e);
  try {
    if (o.path != "-" && (host::isElfFile(o.path) || o.path.ends_with(".so"))) {
      if (!dims.empty()) return usageError("--dim applies to IR files, not to a compiled model");
      runCompiledFile(o, request);
      return 0;
    }
    if (o.bench || o.json || o.threads || o.profile || o.warmup_given)
      return usageError(
          "--bench, --warmup, --json, --threads and --profile apply to compiled models (model.so from "
          "mlcc-link), not to IR files");
    runIrFile(o, request, dims);
    return 0;
  } catch (const UsageError& e) {
    return usageError(e.what());
  }
}

}  // namespace mlcc::run
