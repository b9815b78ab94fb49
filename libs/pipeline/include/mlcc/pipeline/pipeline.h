// Pipelines: a YAML file that names a target and a list of stages, each an
// mlcc tool (or any executable that reads and writes the IR format), which
// mlcc-pipeline turns into a Ninja build (ninja.h) and verifies stage by
// stage (verify.h). The format (schema: artifacts_schema/pipeline.schema.json):
//
//   name: cpu-default
//   target: llvm
//   vars: {opt: "3", import_args: []}       # more ${NAME}s; --set NAME=VALUE overrides
//   stages:
//     - name: import                        # output import.ir (+ import.safetensors)
//       tool: mlcc-import
//       args: ["${import_args}"]            # a list variable: its items (--set: the value's words)
//     - name: fuse
//       tool: mlcc-fuse
//       passes: [canonicalize, {fuse-ops: {max-depth: 6}}]
//     - name: my-pass
//       tool: ./my_pass.py                  # relative to the YAML file; called as TOOL IN -o OUT ARGS
//     - name: link
//       tool: mlcc-link
//       output: model.so
//
// Stage i reads the output of stage i-1 (stage 0 the pipeline's input) and
// writes its output file in the build directory. Every error (YAML syntax,
// an unknown key, tool, pass or option, a bad target, an undefined
// variable, arguments an mlcc tool rejects) throws mlcc::Error at the YAML's FILE:LINE:COL.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mlcc/support/diagnostic.h"

namespace mlcc::pipeline {

struct Stage {
  std::string name;
  std::string tool;       // as written in the YAML, variables expanded
  std::string tool_path;  // the executable: absolute path
  bool is_mlcc_tool = false;
  std::string passes;             // textual pass pipeline for --passes; "" when none
  std::vector<std::string> args;  // variables expanded
  std::string output;             // file name in the build directory
  // Existing files the stage's args and pass options name (a patterns
  // file, a schedule script): absolute; the stage re-runs when they change.
  std::vector<std::string> file_inputs;
  SourceLoc loc;  // the stage in the YAML
};

struct Pipeline {
  std::string path;  // the YAML file
  std::string name, description, target;
  std::map<std::string, std::string> vars;  // the string variables, built-in ones included
  std::string build_dir;                    // absolute
  std::vector<Stage> stages;
};

struct LoadOptions {
  std::string input;  // the model the first stage reads: ${input}
  // ${build_dir}, absolute; empty: INPUT's stem + "." + the pipeline's
  // name, in the current directory.
  std::string build_dir;
  // Where mlcc-* tools are looked up first (the directory of mlcc-pipeline);
  // then PATH.
  std::string tool_dir;
  std::map<std::string, std::string> overrides;  // --set NAME=VALUE (target and vars)
  // Run each mlcc stage's command line through its tool (`--check-args`).
  // Off only where no process may be started (the fuzz target).
  bool check_args = true;
};

// Reads, validates and expands a pipeline file.
Pipeline loadPipeline(const std::string& yaml_path, const LoadOptions& options);

// The command of stage `index`: TOOL IN -o OUT [--passes P] ARGS. `input`
// is the stage's input path, `output` its output path, as they should
// appear on the command line.
std::vector<std::string> stageCommand(const Stage& stage, const std::string& input,
                                      const std::string& output);

// The known mlcc tools a stage may name without a path.
const std::vector<std::string>& mlccToolNames();

}  // namespace mlcc::pipeline
