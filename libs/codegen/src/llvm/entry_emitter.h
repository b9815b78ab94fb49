// Internal interface of the parts of the LLVM backend that compile the
// graph entry (or the functions of a module of prim funcs): the embedded
// weights, the entry functions and the model description
// (mlcc_abi_model_v1). (Private: includes LLVM headers.)
#pragma once

#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "entry_plan.h"
#include "mlcc/codegen/llvm.h"

namespace llvm {
class TargetMachine;
}
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

// The entry function (internal)
//   i32 @NAME(ptr inputs, ptr outputs, ptr workspace, ptr dims, ptr ctx)
// running the plan's steps (dims: the values of the plan's symbolic
// dimensions, int64 each); `kernels` holds the function of each kernel id
// (null for library kernels).
llvm::Function* emitEntry(llvm::Module& mod, const EntryPlan& plan,
                          const std::vector<llvm::Function*>& kernels, const EmbeddedWeights& weights,
                          const std::string& name = "mlcc_entry");

// For a plan with symbolic dimensions (emit_dims.cpp), the function (internal)
//   void @NAME(ptr dims, ptr output_dims, ptr workspace_bytes)
// writing every output's dimensions (concatenated, int64) and the
// workspace size (uint64) for the given values of the dimensions.
llvm::Function* emitShapes(llvm::Module& mod, const EntryPlan& plan, const std::string& name = "mlcc_shapes");

// i64 expressions of the plan's dimensions, emitted at the builder's
// insertion point (emit_dims.cpp); `values` points to the dims' int64
// values, loaded once. Throws mlcc::Error for what is not integer
// arithmetic.
class DimExprEmitter {
 public:
  DimExprEmitter(llvm::IRBuilder<>& b, const std::vector<const ir::VarNode*>& dims, llvm::Value* values);
  llvm::Value* operator()(const ir::PrimExpr& e);

 private:
  llvm::IRBuilder<>& b_;
  std::unordered_map<const ir::ExprNode*, llvm::Value*> memo_;
};

// The workspace offsets of a symbolic memory plan (one per tensor) and
// (when workspace_bytes is given) its size, computed from the dims
// (emit_dims.cpp).
std::vector<llvm::Value*> emitWorkspaceOffsets(llvm::IRBuilder<>& b, DimExprEmitter& dim,
                                               const SymbolicMemoryPlan& plan, llvm::Value** workspace_bytes);

// A compiled plan: its entry function and (symbolic plans) its shapes function.
struct CompiledPlan {
  const EntryPlan* plan = nullptr;
  llvm::Function* entry = nullptr;
  llvm::Function* shapes = nullptr;
  llvm::Constant* cuda = nullptr;  // a CUDA model: its mlcc_abi_cuda (entry null)
};

// The global `mlcc_abi_model_v1` of abi.h: the description of the graph
// entry `graph`, or (graph.plan null) of a model without a graph entry
// whose function table describes `functions`, each named after its plan's
// entry (a prim func).
void emitModelInfo(llvm::Module& mod, const CompiledPlan& graph, const std::vector<CompiledPlan>& functions);

// The object (or LLVM IR, assembly) of `mod`, written atomically.
void writeModule(llvm::Module& mod, llvm::TargetMachine& tm, Emit emit, const std::string& output_path);

// compileModule for the cuda target (cuda_model.cpp).
CodegenStats compileCudaModule(const ir::Module& m, const LLVMOptions& opts, Emit emit,
                               const std::string& output_path);

}  // namespace mlcc::codegen
