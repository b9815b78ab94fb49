// `mlcc-pipeline exec-stage`: runs one stage's command for Ninja and keeps
// the timestamps of outputs whose bytes did not change (the stage's output
// and its sidecar weights file, OUT's stem + .safetensors), so that Ninja's
// restat stops the rebuild there. Any program can be a stage, so this works
// from the outside rather than asking each tool to skip identical writes.
// It also writes a depfile naming the weights files the stage's input IR
// refers to: a stage re-runs when the weights it reads change even if its
// input IR did not.
#pragma once

#include <string>
#include <vector>

namespace mlcc::pipeline {

struct StageExec {
  std::string input;    // the stage's input file
  std::string output;   // the stage's output file
  std::string depfile;  // written after a successful run
  std::vector<std::string> command;
};

// Returns the command's exit code (1 when it succeeded without writing
// `output`).
int execStage(const StageExec& stage);

// The weights files an IR file names (its `weights "..."` lines), resolved
// against the IR file's directory; empty for a file that is not mlcc IR.
std::vector<std::string> weightFilesOf(const std::string& ir_path);

}  // namespace mlcc::pipeline
