// mlcc-import: ONNX model to graph IR plus a safetensors weights file.
#include <CLI/CLI.hpp>
#include <filesystem>

#include "mlcc/frontend/onnx.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"

int main(int argc, char** argv) {
  CLI::App app{"mlcc-import: import an ONNX model (opsets 7 to 21) as mlcc graph IR plus weights.",
               "mlcc-import"};
  app.footer(R"(Examples:
  mlcc-import model.onnx -o model.ir                 # also writes model.safetensors beside model.ir
  mlcc-import model.onnx -o out/m.ir --weights w/m.safetensors
  mlcc-import model.onnx --shape input=1x3x224x224 -o model.ir   # bind dynamic dims
  mlcc-import model.onnx --bind axes=axes.npy -o model.ir        # input 'axes' becomes a constant
  mlcc-import model.onnx | mlcc-inspect --summary    # IR on stdout, weights in ./model.safetensors)");
  std::string input, output = "-", weights;
  std::vector<std::string> shapes, binds;
  bool quiet = false;
  app.add_option("input", input, "ONNX model file ('-' or none: stdin)");
  app.add_option("-o,--output", output, "IR output file ('-': stdout)");
  app.add_option("--weights", weights, "Weights file (default: the output with extension .safetensors)");
  app.add_option("--shape", shapes, "Bind an input's shape: NAME=1x3x224x224 (repeatable)");
  app.add_option(
      "--bind", binds,
      "Bind an input's value: NAME=FILE.npy makes the input a constant, as axes, pads or shapes that "
      "must be known at import need (repeatable)");
  app.add_flag("-q,--quiet", quiet, "No progress output");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    mlcc::frontend::OnnxImportOptions opts;
    for (const auto& s : shapes) opts.input_shapes.insert(mlcc::frontend::parseShapeBinding(s));
    for (const auto& b : binds)
      if (!opts.input_values.insert(mlcc::frontend::parseValueBinding(b)).second)
        throw mlcc::Error("--bind " + b.substr(0, b.find('=')) + " is given twice");
    std::string path = input.empty() ? "-" : input;
    auto model = mlcc::frontend::importOnnxFile(path, opts);
    std::string stem = mlcc::isStdStream(path) ? "model" : std::filesystem::path(path).stem().string();
    mlcc::frontend::writeImportedModel(model, output, weights, stem);
    return 0;
  });
}
