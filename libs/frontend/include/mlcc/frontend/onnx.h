// The ONNX importer: an ONNX model (opsets 7 to 21; 1 to 6 for ops unchanged since) to one graph function
// `@main` of the op set (artifacts_schema/ops.md) plus its weights.
//
// - Graph inputs that are not initializers become the parameters, named as in
//   ONNX; the graph outputs are returned (a tuple when several), bound to
//   variables named as the ONNX outputs.
// - Dynamic dimensions (`dim_param`, or no value) become symbolic dimensions
//   (named by the dim_param, else `<input>_d<i>`); `input_shapes` binds them.
// - `input_values` turns graph inputs into constants (TVM's BindParams): an
//   integer input that only feeds axes, pads or shape computations folds away.
// - Initializers, `Constant` nodes and folded shape computations become
//   constants: small ones inline, the others tensors of the weights file
//   (named as their ONNX tensors). External data is read relative to the model.
// - Identity and Dropout are removed; computations on constants are folded
//   with the ops' reference kernels, and shape arithmetic (Shape, Gather,
//   Concat, ... feeding Reshape) is folded symbolically.
// - Unsupported ops are reported all at once: one mlcc::Error listing each op
//   type with its count and first node name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::frontend {

struct OnnxImportOptions {
  // Input name -> concrete shape (binds its symbolic dimensions).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Input name -> its value: the input becomes a constant, not a parameter
  // (the value must have the input's dtype and declared dimensions).
  std::map<std::string, ir::Tensor> input_values;
};

struct ImportedModel {
  ir::Module module;  // weight_files is set by writeImportedModel
  // The tensors the module's `const "name"` bindings refer to, by name.
  std::vector<std::pair<std::string, ir::Tensor>> weights;
};

// Imports an ONNX file. Throws mlcc::Error (naming the file, and the node
// where one is at fault) on a corrupt file or an unsupported model.
ImportedModel importOnnxFile(const std::string& path, const OnnxImportOptions& options = {});

// Imports serialized ModelProto bytes; external data resolves against base_dir.
ImportedModel importOnnxBytes(const std::string& bytes, const std::string& display_name,
                              const std::string& base_dir, const OnnxImportOptions& options = {});

// Writes the weights (when there are any) to `weights_path` and then the IR to
// `ir_path` ("-": stdout), both atomically. The IR names the weights file
// relative to the IR file's directory. An empty `weights_path` means the IR
// path with its extension replaced by `.safetensors` (for stdout:
// `default_stem.safetensors` in the current directory).
void writeImportedModel(ImportedModel& model, const std::string& ir_path, std::string weights_path,
                        const std::string& default_stem = "model");

// Parses `NAME=1x3x224x224` into its name and dims; throws mlcc::Error.
std::pair<std::string, std::vector<int64_t>> parseShapeBinding(const std::string& text);
// Parses `NAME=FILE.npy` and reads the file; throws mlcc::Error naming it.
std::pair<std::string, ir::Tensor> parseValueBinding(const std::string& text);

}  // namespace mlcc::frontend
