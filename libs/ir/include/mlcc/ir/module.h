// The module: graph functions and prim funcs side by side (like TVM's
// IRModule), plus the weights files whose tensors the graph constants name
// and the user library functions that call_extern may call.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "mlcc/ir/graph.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

using Function = std::variant<GraphFunc, PrimFunc>;

// A function of a user's library that call_extern may name, declared at the
// top of the module (after the weights lines):
//
//   extern "mylib.linear_relu"(%x: f32[n, k], %w: f32[m, k], %b: f32[m]) -> f32[n, m]
//       attrs(library = "libmylib.so", symbol = "mylib_linear_relu")
//
// The C function `symbol` of `library` (a shared library, object file or
// archive; relative to the IR file's directory unless absolute) has the
// destination-passing signature of include/mlcc/extern.h: the operands,
// then the result, each as a tensor (data, shape, dtype). Parameter
// dimensions are constants or variables; the result's are expressions of
// the parameters' variables. Pattern files declare these (`externs`), and
// fuse-by-pattern copies the ones it dispatches to into the module.
struct ExternFunc {
  std::string name;              // what call_extern names: "mylib.linear_relu"
  std::vector<GraphVar> params;  // tensor types
  Type ret_type;                 // a tensor type
  std::string symbol;            // the C function
  std::string library;           // the file that defines it
  // A tensor intrinsic (printed `kind = "tensor_intrin"`): called per tile
  // by blocks that `tensorize` marked, with strided regions
  // (mlcc_extern_region) instead of whole tensors; name == symbol.
  bool tensor_intrin = false;
};

// The result type of a call of `f` with operands of types `args`: the
// parameters' dtypes and ranks must match, constant dimensions be equal and
// each dimension variable take one value; nullopt with the reason in `why`.
// The extern named `name` in `externs`, or null.
const ExternFunc* findExtern(const std::vector<ExternFunc>& externs, const std::string& name);

std::optional<Type> externCallType(const ExternFunc& f, const std::vector<Type>& args, std::string* why);

struct Module {
  // Safetensors files, as written in the IR (relative to the IR file's
  // directory unless absolute). Tensor names are unique across them.
  std::vector<std::string> weight_files;
  // User library functions, in text order; names are unique.
  std::vector<ExternFunc> externs;
  // In text order. Function names are unique in a module.
  std::vector<Function> functions;
  // Not printed: the directory weight paths resolve against ("." for stdin).
  std::string base_dir = ".";

  GraphFunc* findGraph(const std::string& name);
  const GraphFunc* findGraph(const std::string& name) const;
  PrimFunc* findPrim(const std::string& name);
  const PrimFunc* findPrim(const std::string& name) const;
  bool hasFunction(const std::string& name) const;
  const ExternFunc* findExtern(const std::string& name) const;
};

const std::string& functionName(const Function& f);

}  // namespace mlcc::ir
