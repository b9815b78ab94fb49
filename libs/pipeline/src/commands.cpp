// The `run` and `verify` commands of mlcc-pipeline (see commands.h).
#include "mlcc/pipeline/commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "mlcc/pipeline/build.h"
#include "mlcc/pipeline/pipeline.h"
#include "mlcc/run/input_binding.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::pipeline {

namespace fs = std::filesystem;

namespace {

// Loads the pipeline: a usage error throws CLI::ValidationError, bad input mlcc::Error.
std::pair<Pipeline, BuildOptions> load(const CommandOptions& o) {
  LoadOptions lo;
  for (const auto& s : o.sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CLI::ValidationError("--set", "takes NAME=VALUE, got '" + s + "'");
    lo.overrides[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::error_code ec;
  if (!fs::exists(o.input, ec)) throw Error("--input " + o.input + ": no such file");
  lo.input = fs::absolute(o.input).lexically_normal().string();
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  lo.tool_dir = ec ? "" : self.parent_path().string();
  if (!o.build_dir.empty()) lo.build_dir = fs::absolute(o.build_dir).lexically_normal().string();
  Pipeline p = loadPipeline(o.pipeline, lo);
  BuildOptions bo;
  bo.input = lo.input;
  bo.build_dir = p.build_dir;
  bo.self_exe = ec ? "mlcc-pipeline" : self.string();
  bo.verbose = o.verbose;
  bo.quiet = o.quiet;
  return {p, bo};
}

// The build directory as the user named it.
std::string shownBuildDir(const CommandOptions& o, const BuildOptions& bo) {
  return o.build_dir.empty() ? bo.build_dir : o.build_dir;
}

// Runs the Ninja build; a failed stage is an error.
void build(const Pipeline& p, const BuildOptions& bo) {
  const int rc = runBuild(p, bo);
  if (rc != 0)
    throw Error("pipeline " + p.name + ": a stage failed (see above); Ninja exited " + std::to_string(rc));
}

}  // namespace

int runCommand(const CommandOptions& o, bool dry_run) {
  auto [p, bo] = load(o);
  if (dry_run) {
    std::cout << shellCommands(p, bo, shownBuildDir(o, bo));
    return 0;
  }
  build(p, bo);
  if (!o.quiet)
    std::cerr << "mlcc-pipeline: " << (fs::path(shownBuildDir(o, bo)) / p.stages.back().output).string()
              << " is up to date\n";
  return 0;
}

int verifyCommand(const CommandOptions& o, VerifyOptions vo, const std::vector<std::string>& data_args,
                  const std::vector<std::string>& dim_args, bool json) {
  auto [p, bo] = load(o);
  for (const auto& a : data_args) {
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CLI::ValidationError("--data", "takes NAME=FILE.npy, got '" + a + "'");
    vo.data[a.substr(0, eq)] = a.substr(eq + 1);
  }
  for (const auto& a : dim_args) {
    const auto dim = run::parseDimArg(a);
    if (!dim) throw CLI::ValidationError("--dim", "takes NAME=SIZE, got '" + a + "'");
    vo.dims[dim->first] = dim->second;
  }
  bo.ninja_output_to_stderr = true;
  build(p, bo);
  vo.progress = !o.quiet && isatty(2);
  const VerifyReport report = verifyStages(p, bo, vo);
  std::cout << (json ? reportJson(report) : formatReport(report));
  return report.first_bad ? 1 : 0;
}

}  // namespace mlcc::pipeline
