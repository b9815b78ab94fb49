// mlcc-pipeline: run a YAML pipeline of mlcc tools as a Ninja build
// (incremental, every stage's output kept in the build directory), print it
// as shell commands, or verify it stage by stage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "mlcc/pipeline/build.h"
#include "mlcc/pipeline/pipeline.h"
#include "mlcc/pipeline/stage_exec.h"
#include "mlcc/pipeline/verify.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/tool.h"

namespace {

namespace fs = std::filesystem;
using namespace mlcc::pipeline;

// What `run` and `verify` share: the pipeline, the model, the build
// directory and variable overrides.
struct Common {
  std::string pipeline, input, build_dir;
  std::vector<std::string> sets;
  bool verbose = false, quiet = false;

  void addTo(CLI::App* sub) {
    sub->add_option("pipeline", pipeline, "The pipeline YAML file")->required();
    sub->add_option("--input", input, "The model the first stage reads (e.g. model.onnx)")->required();
    sub->add_option(
        "--build-dir", build_dir,
        "Where build.ninja and every stage's output go (default: MODEL's stem + '.' + the pipeline's "
        "name, in the current directory)");
    sub->add_option("--set", sets, "NAME=VALUE: override a pipeline variable (repeatable), e.g. target=llvm");
    sub->add_flag("-v,--verbose", verbose, "Print each stage's full command as it runs");
    sub->add_flag("-q,--quiet", quiet, "No progress lines: only what the stages print, and errors");
  }

  // Loads the pipeline: usage errors exit 2 (returned), bad input throws.
  std::pair<Pipeline, BuildOptions> load() const {
    LoadOptions lo;
    for (const auto& s : sets) {
      auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        throw CLI::ValidationError("--set", "takes NAME=VALUE, got '" + s + "'");
      lo.overrides[s.substr(0, eq)] = s.substr(eq + 1);
    }
    if (!fs::exists(input)) throw mlcc::Error("--input " + input + ": no such file");
    lo.input = fs::absolute(input).lexically_normal().string();
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    lo.tool_dir = ec ? "" : self.parent_path().string();
    if (!build_dir.empty()) lo.build_dir = fs::absolute(build_dir).lexically_normal().string();
    Pipeline p = loadPipeline(pipeline, lo);
    BuildOptions bo;
    bo.input = lo.input;
    bo.build_dir = p.build_dir;
    bo.self_exe = ec ? "mlcc-pipeline" : self.string();
    bo.verbose = verbose;
    bo.quiet = quiet;
    return {p, bo};
  }

  std::string shownBuildDir(const BuildOptions& bo) const {
    return build_dir.empty() ? bo.build_dir : build_dir;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-pipeline: run a YAML pipeline of mlcc tools as an incremental Ninja build, print it as shell "
      "commands, or verify it stage by stage.",
      "mlcc-pipeline"};
  app.footer(R"(Examples:
  mlcc-pipeline run pipelines/cpu-default.yaml --input model.onnx --build-dir build/m \
      --set import_args='--shape input=1x3x224x224'   # build/m/{import,fuse,legalize,schedule}.ir, codegen.o, model.so
  mlcc-pipeline run pipelines/cpu-default.yaml --input model.onnx --build-dir build/m --dry-run   # the shell commands
  mlcc-pipeline verify pipelines/cpu-default.yaml --input model.onnx --build-dir build/m   # which stage changed the answer
A second run with nothing changed does nothing; a changed stage re-runs with the stages after it,
and a stage whose output did not change stops the rebuild there. The YAML format is described in
README.md and artifacts_schema/pipeline.schema.json; a bad pipeline fails at its FILE:LINE:COL
and nothing runs.)");
  app.require_subcommand(1);

  Common run_opts;
  bool dry_run = false;
  CLI::App* run = app.add_subcommand("run", "Write DIR/build.ninja for the pipeline and run Ninja");
  run_opts.addTo(run);
  run->add_flag("--dry-run", dry_run, "Print the equivalent shell commands instead of running anything");

  Common verify_opts;
  VerifyOptions vo;
  std::vector<std::string> data_args, dim_args;
  bool json = false;
  CLI::App* verify = app.add_subcommand(
      "verify",
      "Build, then run every stage's output on the same inputs and compare each with the stage before");
  verify_opts.addTo(verify);
  verify->add_option("--data", data_args,
                     "NAME=FILE.npy: an input of the model (default: random, as mlcc-run's)");
  verify->add_option("--seed", vo.seed, "Seed of the random inputs (default 0)");
  verify->add_option("--dim", dim_args,
                     "NAME=SIZE: a symbolic dimension's size for random inputs (default 1)");
  verify->add_option("--atol", vo.atol, "Absolute tolerance, scaled by max(1, max |reference|)")
      ->capture_default_str();
  verify->add_option("--rtol", vo.rtol, "Relative tolerance")->capture_default_str();
  verify->add_flag("--json", json, "Print the report as JSON (artifacts_schema/verify.schema.json)");

  StageExec exec;
  CLI::App* exec_stage = app.add_subcommand("exec-stage", "Run one stage for Ninja (internal)");
  exec_stage->group("");  // hidden from --help
  exec_stage->add_option("--input", exec.input)->required();
  exec_stage->add_option("--output", exec.output)->required();
  exec_stage->add_option("--depfile", exec.depfile)->required();
  exec_stage->add_option("command", exec.command)->required();

  return mlcc::runTool(app, argc, argv, [&]() -> int {
    if (exec_stage->parsed()) return execStage(exec);

    if (run->parsed()) {
      auto [p, bo] = run_opts.load();
      if (dry_run) {
        std::cout << shellCommands(p, bo, run_opts.shownBuildDir(bo));
        return 0;
      }
      const int rc = runBuild(p, bo);
      if (rc != 0)
        throw mlcc::Error("pipeline " + p.name + ": a stage failed (see above); Ninja exited " +
                          std::to_string(rc));
      if (!run_opts.quiet)
        std::cerr << "mlcc-pipeline: "
                  << (fs::path(run_opts.shownBuildDir(bo)) / p.stages.back().output).string()
                  << " is up to date\n";
      return 0;
    }

    auto [p, bo] = verify_opts.load();
    for (const auto& a : data_args) {
      auto eq = a.find('=');
      if (eq == std::string::npos || eq == 0)
        throw CLI::ValidationError("--data", "takes NAME=FILE.npy, got '" + a + "'");
      vo.data[a.substr(0, eq)] = a.substr(eq + 1);
    }
    for (const auto& a : dim_args) {
      auto eq = a.find('=');
      char* end = nullptr;
      long long v = eq == std::string::npos ? -1 : std::strtoll(a.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || eq == 0 || v < 0 || !end || *end)
        throw CLI::ValidationError("--dim", "takes NAME=SIZE, got '" + a + "'");
      vo.dims[a.substr(0, eq)] = v;
    }
    bo.ninja_output_to_stderr = true;
    const int rc = runBuild(p, bo);
    if (rc != 0)
      throw mlcc::Error("pipeline " + p.name + ": a stage failed (see above); Ninja exited " +
                        std::to_string(rc));
    vo.progress = !verify_opts.quiet && isatty(2);
    const VerifyReport report = verifyStages(p, bo, vo);
    std::cout << (json ? reportJson(report) : formatReport(report));
    return report.first_bad ? 1 : 0;
  });
}
