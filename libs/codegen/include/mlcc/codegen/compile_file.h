// mlcc-codegen's work after its command line: read and verify an IR file,
// compile it with compileModule (progress on stderr when it is a terminal),
// and with `verbose` print the kernels (or functions), the memory plan, the
// embedded weights and the compile time. Errors without a location are
// reported at the input file.
#pragma once

#include <string>

#include "mlcc/codegen/llvm.h"

namespace mlcc::codegen {

struct CompileFileOptions {
  std::string input = "-";  // "" or "-": stdin
  std::string output;       // "": model.o for an object, stdout for text
  Emit emit = Emit::obj;
  bool verbose = false, quiet = false;
};

// Returns the exit code (0).
int compileFile(const CompileFileOptions& files, LLVMOptions options);

}  // namespace mlcc::codegen
