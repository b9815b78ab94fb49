// Fuzz target: the pipeline YAML loader (libs/pipeline loadPipeline, as
// `mlcc-pipeline run` calls it), then the Ninja file and the --dry-run shell
// commands of an accepted pipeline. The mlcc tools are stand-ins (empty
// executables in a scratch directory) and `--check-args` is off, so no
// process is started.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/pipeline/build.h"
#include "mlcc/pipeline/pipeline.h"

namespace {

std::string toolDir() {
  std::string dir = mlcc::fuzz::scratchDir() + "/bin";
  mkdir(dir.c_str(), 0755);
  for (const std::string& tool : mlcc::pipeline::mlccToolNames()) {
    std::string path = mlcc::fuzz::writeScratch("bin/" + tool, nullptr, 0);
    chmod(path.c_str(), 0755);
  }
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string tool_dir = toolDir();
  const std::string path = mlcc::fuzz::writeScratch("pipeline.yaml", data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::pipeline::LoadOptions options;
    options.input = mlcc::fuzz::scratchDir() + "/model.onnx";
    options.build_dir = mlcc::fuzz::scratchDir() + "/build";
    options.tool_dir = tool_dir;
    options.check_args = false;
    mlcc::pipeline::Pipeline p = mlcc::pipeline::loadPipeline(path, options);
    mlcc::pipeline::BuildOptions build;
    build.input = options.input;
    build.build_dir = options.build_dir;
    build.self_exe = tool_dir + "/mlcc-pipeline";
    (void)mlcc::pipeline::ninjaFile(p, build);
    (void)mlcc::pipeline::shellCommands(p, build, "build");
    for (size_t i = 0; i < p.stages.size(); ++i) {
      (void)mlcc::pipeline::stageCommand(p.stages[i], "in", "out");
      (void)mlcc::pipeline::stageOutputPath(p, build, i);
    }
  });
  return 0;
}
