// LLVM's diagnostics for a loop the schedule marks vectorized that its loop
// vectorizer left scalar ("remark: loop not vectorized: <why>" and
// "warning: loop not vectorized: the optimizer was unable to perform the
// requested transformation", both at <unknown>:0:0), said instead once per
// prim func, naming it: the code is right, only slower than scheduled.
#pragma once

#include <llvm/IR/LLVMContext.h>

#include <functional>
#include <string>

namespace mlcc::codegen {

// From now on, ctx's loop-vectorizer diagnostics go to `warn` (one call per
// prim func, with its name and LLVM's reason); `prim_of` maps an LLVM
// function's name (a kernel or a parallel body outlined from it) to its
// prim func's name ("" for none). Every other diagnostic is LLVM's as before.
void reportUnvectorizedLoops(llvm::LLVMContext& ctx, std::function<std::string(const std::string&)> prim_of,
                             std::function<void(const std::string&)> warn);

}  // namespace mlcc::codegen
