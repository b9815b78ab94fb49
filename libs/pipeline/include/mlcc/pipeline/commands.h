// The `mlcc-pipeline run` and `mlcc-pipeline verify` commands, after
// CLI11 has parsed their options: load the pipeline (with --set overrides,
// the tools next to mlcc-pipeline), then write and run the Ninja build, or
// print its shell commands, or verify it stage by stage.
#pragma once

#include <string>
#include <vector>

#include "mlcc/pipeline/verify.h"

namespace mlcc::pipeline {

// What `run` and `verify` share.
struct CommandOptions {
  std::string pipeline;           // the YAML file
  std::string input;              // the model the first stage reads
  std::string build_dir;          // "": MODEL's stem + "." + the pipeline's name
  std::vector<std::string> sets;  // --set NAME=VALUE
  bool verbose = false, quiet = false;
};

// `run` (`dry_run`: print the shell commands instead). Returns the exit code;
// a usage error throws CLI::ValidationError, bad input mlcc::Error.
int runCommand(const CommandOptions& options, bool dry_run);

// `verify`: --data NAME=FILE.npy and --dim NAME=SIZE arguments fill
// `verify`'s data and dims; prints the report (JSON with `json`). Returns 1
// when a stage changed the answer.
int verifyCommand(const CommandOptions& options, VerifyOptions verify,
                  const std::vector<std::string>& data_args, const std::vector<std::string>& dim_args,
                  bool json);

}  // namespace mlcc::pipeline
