// Reading and writing IR files for the module-to-module tools (mlcc-fuse,
// mlcc-legalize, mlcc-schedule, ...), so they treat weights alike.
//
// The weights files a module names are referenced, never copied: when the
// output lands in another directory than the input, each relative weights
// path is rewritten relative to the output's directory (absolute paths stay
// absolute). New constants a pass made (PassContext::new_weights) go to a
// sidecar beside the output, `<output stem>.safetensors` (`<stem>.new.safetensors`
// if that name is already one of the module's weights files), which the
// module then names too. Everything is written atomically: weights first,
// then the IR, each by temp file + rename.
#pragma once

#include <string>

#include "mlcc/ir/module.h"
#include "mlcc/transform/pass.h"

namespace mlcc::transform {

// Parses `path` ("-": stdin) and verifies it, with op bindings type-checked
// through the op registry. Errors point into the file.
ir::Module readModule(const std::string& path);

// Rewrites m.weight_files (relative to m.base_dir) to be relative to the
// directory of `output_path` ("."/cwd for stdout) and sets m.base_dir to it.
void rebaseWeightPaths(ir::Module& m, const std::string& output_path);

// rebaseWeightPaths, writes `new_weights` (if any) as a sidecar, then the IR.
void writeModule(ir::Module& m, const std::string& output_path, const NewWeights* new_weights = nullptr);

}  // namespace mlcc::transform
