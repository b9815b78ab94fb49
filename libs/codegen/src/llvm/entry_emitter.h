// Internal interface of the parts of the LLVM backend that compile the
// graph entry: the embedded weights, the entry function and the model
// description (mlcc_abi_model_v1). (Private: includes LLVM headers.)
#pragma once

#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <vector>

#include "entry_plan.h"
#include "mlcc/ir/module.h"

namespace mlcc::codegen {

// The constants of `plan`, read from the module's weights files (or inline
// data), laid out at 64-byte aligned offsets in one constant byte array
// `mlcc_weights` (section .rodata.mlcc_weights, 64-byte aligned). Null when
// there are none.
struct EmbeddedWeights {
  llvm::GlobalVariable* global = nullptr;
  std::vector<uint64_t> offsets;  // per constant of the plan
  uint64_t bytes = 0;             // the constants' bytes (without padding)
};
EmbeddedWeights embedWeights(llvm::Module& mod, const ir::Module& m, const EntryPlan& plan);

// The entry function
//   i32 @mlcc_entry(ptr inputs, ptr outputs, ptr workspace, ptr ctx)
// running the plan's steps; `kernels` holds the function of each kernel id
// (null for library kernels).
llvm::Function* emitEntry(llvm::Module& mod, const EntryPlan& plan,
                          const std::vector<llvm::Function*>& kernels, const EmbeddedWeights& weights);

// The global `mlcc_abi_model_v1` of abi.h describing the plan and `entry`.
void emitModelInfo(llvm::Module& mod, const EntryPlan& plan, llvm::Function* entry);

}  // namespace mlcc::codegen
