// IR file input and output for the transforming tools (see module_io.h).
#include "mlcc/transform/module_io.h"

#include <algorithm>
#include <filesystem>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ir/weights.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/safetensors.h"

namespace mlcc::transform {

namespace fs = std::filesystem;

ir::Module readModule(const std::string& path) {
  ops::installIrHooks();
  ir::SourceMap map;
  ir::Module m = ir::parseModuleFile(path, &map);
  ir::verifyModule(m, &map);
  return m;
}

namespace {

std::string outputDir(const std::string& output_path) {
  return isStdStream(output_path) ? std::string(".") : directoryOf(output_path);
}

std::string relativeTo(const std::string& file, const std::string& dir) {
  return fs::absolute(file)
      .lexically_normal()
      .lexically_proximate(fs::absolute(dir).lexically_normal())
      .string();
}

}  // namespace

void rebaseWeightPaths(ir::Module& m, const std::string& output_path) {
  std::string out_dir = outputDir(output_path);
  for (auto& w : m.weight_files)
    if (!fs::path(w).is_absolute()) w = relativeTo(resolvePath(m.base_dir, w), out_dir);
  m.base_dir = out_dir;
}

void writeModule(ir::Module& m, const std::string& output_path, const NewWeights* new_weights) {
  rebaseWeightPaths(m, output_path);
  if (new_weights && !new_weights->tensors.empty()) {
    std::string stem = isStdStream(output_path) ? "model" : fs::path(output_path).stem().string();
    std::string name = stem + ".safetensors";
    if (std::find(m.weight_files.begin(), m.weight_files.end(), name) != m.weight_files.end())
      name = stem + ".new.safetensors";
    std::vector<SafetensorsTensorToWrite> tensors;
    for (const auto& [tname, t] : new_weights->tensors)
      tensors.push_back({tname, std::string(ir::safetensorsName(t.dtype())), t.shape(),
                         std::span<const std::byte>(t.bytes(), t.nbytes())});
    writeSafetensors(resolvePath(m.base_dir, name), tensors, {{"format", "mlcc"}});
    m.weight_files.push_back(name);
  }
  writeOutputAtomic(output_path, ir::printModule(m));
}

}  // namespace mlcc::transform
