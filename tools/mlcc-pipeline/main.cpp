// mlcc-pipeline: run a YAML pipeline of mlcc tools as a Ninja build
// (incremental, every stage's output kept in the build directory), print it
// as shell commands, or verify it stage by stage.
#include <CLI/CLI.hpp>

#include "mlcc/pipeline/commands.h"
#include "mlcc/pipeline/stage_exec.h"
#include "mlcc/support/tool.h"

namespace {

using namespace mlcc::pipeline;

// The options of `run` and `verify`.
void addCommandOptions(CLI::App* sub, CommandOptions& o) {
  sub->add_option("pipeline", o.pipeline, "The pipeline YAML file")->required();
  sub->add_option("--input", o.input, "The model the first stage reads (e.g. model.onnx)")->required();
  sub->add_option(
      "--build-dir", o.build_dir,
      "Where build.ninja and every stage's output go (default: MODEL's stem + '.' + the pipeline's "
      "name, in the current directory)");
  sub->add_option("--set", o.sets, "NAME=VALUE: override a pipeline variable (repeatable), e.g. target=llvm");
  sub->add_flag("-v,--verbose", o.verbose, "Print each stage's full command as it runs");
  sub->add_flag("-q,--quiet", o.quiet, "No progress lines: only what the stages print, and errors");
}

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

  CommandOptions run_opts;
  bool dry_run = false;
  CLI::App* run = app.add_subcommand("run", "Write DIR/build.ninja for the pipeline and run Ninja");
  addCommandOptions(run, run_opts);
  run->add_flag("--dry-run", dry_run, "Print the equivalent shell commands instead of running anything");

  CommandOptions verify_opts;
  VerifyOptions vo;
  std::vector<std::string> data_args, dim_args;
  bool json = false;
  CLI::App* verify = app.add_subcommand(
      "verify",
      "Build, then run every stage's output on the same inputs and compare each with the stage before");
  addCommandOptions(verify, verify_opts);
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

    if (run->parsed()) return runCommand(run_opts, dry_run);
    return verifyCommand(verify_opts, vo, data_args, dim_args, json);
  });
}
