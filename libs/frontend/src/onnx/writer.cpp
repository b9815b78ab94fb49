// Writing an imported model: the weights file first, then the IR naming it
// relative to the IR file's directory, each atomically (a failure leaves
// neither a partial file nor a changed existing one).
#include <filesystem>

#include "mlcc/frontend/onnx.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/weights.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/safetensors.h"

namespace mlcc::frontend {

void writeImportedModel(ImportedModel& model, const std::string& ir_path, std::string weights_path,
                        const std::string& default_stem) {
  namespace fs = std::filesystem;
  const bool to_stdout = isStdStream(ir_path);
  const bool keep_absolute = !weights_path.empty() && fs::path(weights_path).is_absolute();
  if (weights_path.empty())
    weights_path = to_stdout ? default_stem + ".safetensors"
                             : fs::path(ir_path).replace_extension(".safetensors").string();
  model.module.weight_files.clear();
  if (!model.weights.empty()) {
    std::vector<SafetensorsTensorToWrite> tensors;
    for (const auto& [name, t] : model.weights)
      tensors.push_back({name, std::string(ir::safetensorsName(t.dtype())), t.shape(),
                         std::span<const std::byte>(t.bytes(), t.nbytes())});
    writeSafetensors(weights_path, tensors, {{"format", "mlcc"}});
    std::string ir_dir = to_stdout ? "." : directoryOf(ir_path);
    std::string ref = weights_path;
    if (!keep_absolute)
      ref = fs::absolute(weights_path)
                .lexically_normal()
                .lexically_proximate(fs::absolute(ir_dir).lexically_normal())
                .string();
    model.module.weight_files.push_back(ref);
  }
  writeOutputAtomic(ir_path, ir::printModule(model.module));
}

}  // namespace mlcc::frontend
