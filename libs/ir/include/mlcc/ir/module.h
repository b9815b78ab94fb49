// The module: graph functions and prim funcs side by side (like TVM's
// IRModule), plus the weights files whose tensors the graph constants name.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "mlcc/ir/graph.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

using Function = std::variant<GraphFunc, PrimFunc>;

struct Module {
  // Safetensors files, as written in the IR (relative to the IR file's
  // directory unless absolute). Tensor names are unique across them.
  std::vector<std::string> weight_files;
  // In text order. Function names are unique in a module.
  std::vector<Function> functions;
  // Not printed: the directory weight paths resolve against ("." for stdin).
  std::string base_dir = ".";

  GraphFunc* findGraph(const std::string& name);
  const GraphFunc* findGraph(const std::string& name) const;
  PrimFunc* findPrim(const std::string& name);
  const PrimFunc* findPrim(const std::string& name) const;
  bool hasFunction(const std::string& name) const;
};

const std::string& functionName(const Function& f);

}  // namespace mlcc::ir
