// Reading and writing a module file (see module_io.h).
#include "mlcc/ir/module_io.h"

#include <filesystem>
#include <span>
#include <system_error>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ir/weights.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/safetensors.h"

namespace mlcc::ir {

namespace fs = std::filesystem;

Module readVerifiedModule(const std::string& path, const OpTypeInfo& op_types, SourceMap* source_map) {
  SourceMap local;
  if (!source_map) source_map = &local;
  Module m = parseModuleFile(path, source_map);
  verifyModule(m, op_types, source_map);
  return m;
}

bool isInlineConstant(DType dtype, const std::vector<int64_t>& shape) {
  std::optional<int64_t> count = checkedElementCount(shape);
  if (!count) return false;
  const int64_t n = *count;
  return n <= 16 || (isInt(dtype) && shape.size() <= 1 && n <= 64);
}

GraphValue inlineConstValue(const Tensor& t) {
  GraphValue v;
  v.kind = ValueKind::Const;
  v.is_inline = true;
  const auto* p = reinterpret_cast<const uint8_t*>(t.bytes());
  v.data.assign(p, p + t.nbytes());
  return v;
}

std::string defaultWeightsPath(const std::string& ir_path, const std::string& default_stem) {
  if (isStdStream(ir_path)) return default_stem + ".safetensors";
  return fs::path(ir_path).replace_extension(".safetensors").string();
}

std::string weightsPathFromIr(const std::string& path, const std::string& ir_path, bool keep_absolute) {
  if (keep_absolute && fs::path(path).is_absolute()) return path;
  std::string ir_dir = isStdStream(ir_path) ? "." : directoryOf(ir_path);
  return fs::absolute(path)
      .lexically_normal()
      .lexically_proximate(fs::absolute(ir_dir).lexically_normal())
      .string();
}

std::vector<std::string> rebaseWeightPaths(Module& module, const std::string& ir_path) {
  std::vector<std::string> absolute;
  for (auto& f : module.weight_files) {
    std::string resolved = resolvePath(module.base_dir, f);
    absolute.push_back(fs::absolute(resolved).lexically_normal().string());
    if (!fs::path(f).is_absolute()) f = weightsPathFromIr(resolved, ir_path, false);
  }
  for (auto& e : module.externs)
    if (!fs::path(e.library).is_absolute())
      e.library = weightsPathFromIr(resolvePath(module.base_dir, e.library), ir_path, false);
  return absolute;
}

void writeModuleWithWeights(Module& module, const std::string& ir_path, const std::string& weights_path,
                            const std::vector<std::pair<std::string, Tensor>>& tensors, bool keep_absolute) {
  // Refused before anything is written: an output over an input, and an IR
  // and its weights file on one path.
  checkOutputPath(ir_path);
  if (!tensors.empty()) {
    checkOutputPath(weights_path);
    std::error_code ec1, ec2;
    if (!isStdStream(ir_path) &&
        fs::weakly_canonical(fs::absolute(ir_path), ec1) ==
            fs::weakly_canonical(fs::absolute(weights_path), ec2) &&
        !ec1 && !ec2)
      throw Error(SourceLoc{ir_path, 0, 0},
                  "the IR and its weights file would be the same file; choose another "
                  "weights path (--weights)");
  }
  if (tensors.empty()) {
    writeOutputAtomic(ir_path, printModule(module));
    return;
  }
  std::vector<SafetensorsTensorToWrite> to_write;
  for (const auto& [name, t] : tensors)
    to_write.push_back({name, std::string(safetensorsName(t.dtype())), t.shape(),
                        std::span<const std::byte>(t.bytes(), t.nbytes())});
  std::string text;
  module.weight_files.push_back(weightsPathFromIr(weights_path, ir_path, keep_absolute));
  try {
    text = printModule(module);
  } catch (...) {
    module.weight_files.pop_back();
    throw;
  }
  writeSafetensors(weights_path, to_write, {{"format", "mlcc"}});
  try {
    writeOutputAtomic(ir_path, text);
  } catch (...) {
    std::error_code ec;
    fs::remove(weights_path, ec);
    throw;
  }
}

}  // namespace mlcc::ir
