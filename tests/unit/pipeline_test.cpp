// Pipelines as the library reads them: variable expansion (a whole
// "${NAME}" argument splits into words, $$ is a dollar), default outputs,
// pass lists in both forms, files named by options as stage inputs, stage
// commands, the Ninja file, and the weights an IR file names.
#include "mlcc/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mlcc/pipeline/build.h"
#include "mlcc/pipeline/stage_exec.h"

namespace fs = std::filesystem;
using namespace mlcc::pipeline;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("mlcc_pipeline_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

LoadOptions options(const TempDir& d) {
  LoadOptions o;
  o.input = (d.path / "m.onnx").string();
  o.build_dir = (d.path / "b").string();
  o.tool_dir = MLCC_BIN_DIR;
  return o;
}

}  // namespace

TEST(Pipeline, ExpandsVariablesAndDefaults) {
  TempDir d;
  d.write("patterns.yaml", "patterns: []\n");
  const std::string yaml = d.write("p.yaml", R"(name: demo
target: llvm -num-cores=2
vars: {extra: [--shape, input=1x4], price: "5$$"}
stages:
  - name: import
    tool: /bin/true
    args: ["${extra}", "at ${price}"]
  - name: fuse
    tool: mlcc-fuse
    passes:
      - canonicalize
      - "fuse-ops{max-depth=3}"
      - fuse-by-pattern: {patterns: "${pipeline_dir}/patterns.yaml"}
  - name: schedule
    tool: mlcc-schedule
    args: [--target, "${target}"]
  - name: codegen
    tool: mlcc-codegen
  - name: link
    tool: mlcc-link
)");
  auto o = options(d);
  o.overrides["extra"] = "--shape input=2x4 -q";
  Pipeline p = loadPipeline(yaml, o);
  ASSERT_EQ(p.stages.size(), 5u);
  EXPECT_EQ(p.target, "llvm -num-cores=2");
  EXPECT_EQ(p.stages[0].args, (std::vector<std::string>{"--shape", "input=2x4", "-q", "at 5$"}));
  o.overrides.erase("extra");
  EXPECT_EQ(loadPipeline(yaml, o).stages[0].args,
            (std::vector<std::string>{"--shape", "input=1x4", "at 5$"}));
  EXPECT_EQ(p.stages[1].passes, "canonicalize,fuse-ops{max-depth=3},fuse-by-pattern{patterns=" +
                                    (d.path / "patterns.yaml").string() + "}");
  EXPECT_EQ(p.stages[1].file_inputs, (std::vector<std::string>{(d.path / "patterns.yaml").string()}));
  EXPECT_EQ(p.stages[2].args, (std::vector<std::string>{"--target", "llvm -num-cores=2"}));
  EXPECT_EQ(p.stages[0].output, "import.ir");
  EXPECT_EQ(p.stages[3].output, "codegen.o");
  EXPECT_EQ(p.stages[4].output, "link.so");
  EXPECT_EQ(p.stages[1].tool_path, (fs::path(MLCC_BIN_DIR) / "mlcc-fuse").lexically_normal().string());
  EXPECT_EQ(stageCommand(p.stages[1], "import.ir", "fuse.ir"),
            (std::vector<std::string>{p.stages[1].tool_path, "import.ir", "-o", "fuse.ir", "--passes",
                                      p.stages[1].passes}));

  BuildOptions b{o.input, o.build_dir, "/bin/mlcc-pipeline"};
  const std::string ninja = ninjaFile(p, b);
  EXPECT_NE(ninja.find("restat = 1"), std::string::npos);
  EXPECT_NE(ninja.find("build fuse.ir: stage import.ir | " + p.stages[1].tool_path + " " +
                       (d.path / "patterns.yaml").string() + "\n"),
            std::string::npos)
      << ninja;
  EXPECT_NE(ninja.find("at 5$$"), std::string::npos) << "a $ in a command is escaped for Ninja";
  EXPECT_NE(ninja.find("default link.so"), std::string::npos);
}

TEST(Pipeline, ErrorsAreLocated) {
  TempDir d;
  const std::string yaml =
      d.write("p.yaml", "name: x\nstages:\n  - name: a\n    tool: mlcc-fuse\n    output: ../a.ir\n");
  try {
    loadPipeline(yaml, options(d));
    FAIL() << "expected an error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.loc().file, yaml);
    EXPECT_EQ(e.loc().line, 5);
    EXPECT_EQ(e.loc().col, 13);
    EXPECT_NE(e.message().find("stages[0].output: a file name in the build directory"), std::string::npos)
        << e.message();
  }
}

TEST(Pipeline, WeightFilesOfAnIrFile) {
  TempDir d;
  const std::string ir = d.write(
      "m.ir", "mlcc.ir 1\nweights \"m.safetensors\"\nweights \"/abs/w.safetensors\"\n\ngraph @main() {\n");
  EXPECT_EQ(weightFilesOf(ir),
            (std::vector<std::string>{(d.path / "m.safetensors").string(), "/abs/w.safetensors"}));
  EXPECT_TRUE(weightFilesOf(d.write("x.onnx", "\x08\x07")).empty());
}
