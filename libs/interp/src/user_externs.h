// Calls of user library functions (ir::ExternFunc, include/mlcc/extern.h)
// from the interpreter. Each library is loaded once per process with
// dlopen; an object file or archive is first linked into a temporary
// shared library with the C++ compiler driver ($CXX, else c++), as
// mlcc-link would link it into model.so.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::interp {

// Runs `decl` on `operands` (their types checked against the declaration)
// and returns the result it writes. Its library path is relative to
// `base_dir` unless absolute. Throws mlcc::Error naming the function for a
// library that cannot be loaded, a missing symbol or a non-zero return.
// The address of decl.symbol in decl.library (relative to `base_dir` unless
// absolute), the library loaded once per process. Throws mlcc::Error
// naming the declaration for a library that cannot be loaded or a missing
// symbol.
void* userSymbol(const ir::ExternFunc& decl, const std::string& base_dir);

ir::Tensor runUserExtern(const ir::ExternFunc& decl, const std::string& base_dir,
                         const std::vector<ir::Tensor>& operands);

}  // namespace mlcc::interp
