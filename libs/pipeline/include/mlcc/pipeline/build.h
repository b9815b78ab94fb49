// Running a pipeline: the Ninja file with one edge per stage, the equivalent
// shell commands (--dry-run), and the build itself.
//
// Each edge runs its stage through `mlcc-pipeline exec-stage` (stage_exec.h),
// which keeps an output's timestamp when its bytes did not change; with
// Ninja's `restat` that stops a rebuild at the first stage whose output is
// unchanged. Edges depend on the stage's tool, on the files its options name
// and (discovered at run time) on the weights files its input IR names, so
// new weights re-run the stages that read them.
#pragma once

#include <string>
#include <string_view>

#include "mlcc/pipeline/pipeline.h"

namespace mlcc::pipeline {

struct BuildOptions {
  std::string input;                    // the model: an absolute path
  std::string build_dir;                // absolute
  std::string self_exe;                 // mlcc-pipeline, for exec-stage
  bool verbose = false;                 // ninja -v: print each command
  bool quiet = false;                   // Ninja's output only when it fails
  bool ninja_output_to_stderr = false;  // keep our stdout for a report
};

// The text of build.ninja (paths of outputs relative to the build directory).
std::string ninjaFile(const Pipeline& p, const BuildOptions& options);

// Whether `text` holds a control character (a byte below 0x20, or 0x7f). Such
// text never reaches build.ninja: Ninja has no escape for a newline, so one
// in an argument or a path would end the line and start a rule of the text's
// choosing. The loader refuses them at their YAML key (or option); ninjaFile
// refuses them again.
bool hasControlCharacter(std::string_view text);
// Throws mlcc::Error("WHAT: contains a control character ...") when it does.
void refuseControlCharacters(std::string_view text, const std::string& what);

// Shell commands equivalent to the build, ready to paste: `mkdir -p DIR &&
// cd DIR`, then one command per stage. `build_dir_shown` is the build
// directory as the user typed it.
std::string shellCommands(const Pipeline& p, const BuildOptions& options, const std::string& build_dir_shown);

// Writes DIR/build.ninja (only when its text changed) and runs Ninja in DIR,
// its output going to ours. Returns Ninja's exit code. Throws mlcc::Error
// when Ninja cannot be found.
int runBuild(const Pipeline& p, const BuildOptions& options);

// The output path of stage `index` (absolute) and the input it reads.
std::string stageOutputPath(const Pipeline& p, const BuildOptions& options, size_t index);

}  // namespace mlcc::pipeline
