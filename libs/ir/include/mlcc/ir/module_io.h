// Reading and writing a module file: parse-and-verify, the rule for which
// constants stay inline in the IR, the renaming of weights files for a new
// output directory, and the atomic write of a sidecar weights file plus the
// IR naming it (used by mlcc-import, mlcc-fuse and mlcc-legalize).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlcc/ir/graph.h"
#include "mlcc/ir/module.h"
#include "mlcc/ir/op_type_info.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::ir {

// Parses the IR file at `path` ("-": stdin) and verifies it (op bindings
// with `op_types`: ops::opTypeInfo()), reporting errors at their source
// locations (the map is kept in `source_map` when given).
Module readVerifiedModule(const std::string& path, const OpTypeInfo& op_types,
                          SourceMap* source_map = nullptr);

// Whether a constant of this dtype and shape is written inline in the IR
// (small: at most 16 elements, or an integer vector of at most 64, e.g. a
// shape) rather than as a tensor of a weights file.
bool isInlineConstant(DType dtype, const std::vector<int64_t>& shape);

// The value `const [...]` holding `t` inline.
GraphValue inlineConstValue(const Tensor& t);

// The default weights path of an output IR path: OUT with extension
// .safetensors, or `<default_stem>.safetensors` in the current directory
// when the IR goes to stdout.
std::string defaultWeightsPath(const std::string& ir_path, const std::string& default_stem);

// `path` as the IR at `ir_path` names it: relative to the IR file's
// directory (the current directory for stdout), unless `path` is absolute
// and `keep_absolute` is set.
std::string weightsPathFromIr(const std::string& path, const std::string& ir_path, bool keep_absolute);

// Renames the module's weights files for an IR written to `ir_path`: each
// relative name (relative to module.base_dir) becomes relative to the output's
// directory (see weightsPathFromIr); absolute names stay. The extern
// declarations' library files are renamed the same way. Returns every
// weights file as an absolute, normalized path, in module.weight_files order.
std::vector<std::string> rebaseWeightPaths(Module& module, const std::string& ir_path);

// Writes `tensors` (when there are any) to `weights_path` and appends that
// file to module.weight_files (see weightsPathFromIr), then writes the IR to `ir_path` ("-":
// stdout). Each file is written atomically; when the IR write fails, the
// weights file just written is removed, so a failure leaves neither.
void writeModuleWithWeights(Module& module, const std::string& ir_path, const std::string& weights_path,
                            const std::vector<std::pair<std::string, Tensor>>& tensors,
                            bool keep_absolute = false);

}  // namespace mlcc::ir
