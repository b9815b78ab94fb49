// Writing an imported model: the weights file first, then the IR naming it
// relative to the IR file's directory, each atomically (a failure leaves
// neither a partial file nor a changed existing one); see ir/module_io.h.
#include <filesystem>

#include "mlcc/frontend/onnx.h"
#include "mlcc/ir/module_io.h"

namespace mlcc::frontend {

void writeImportedModel(ImportedModel& model, const std::string& ir_path, std::string weights_path,
                        const std::string& default_stem) {
  const bool keep_absolute = std::filesystem::path(weights_path).is_absolute();
  if (weights_path.empty()) weights_path = ir::defaultWeightsPath(ir_path, default_stem);
  model.module.weight_files.clear();
  ir::writeModuleWithWeights(model.module, ir_path, weights_path, model.weights, keep_absolute);
}

}  // namespace mlcc::frontend
