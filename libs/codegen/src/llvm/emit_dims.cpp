// Expressions of a model's symbolic dimensions in the compiled entry and the
// shapes function: workspace offsets, tensor sizes, output dimensions and
// the values of the kernels' symbolic dimensions. i64 arithmetic with the
// IR's floor division and modulo; each expression node is emitted once (the
// offsets of the symbolic memory plan share their sub-expressions).
#include "llvm/entry_emitter.h"
#include "llvm/kernel_emitter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

DimExprEmitter::DimExprEmitter(llvm::IRBuilder<>& b, const std::vector<const ir::VarNode*>& dims,
                               llvm::Value* values)
    : b_(b) {
  for (size_t k = 0; k < dims.size(); ++k)
    memo_[dims[k]] =
        b.CreateAlignedLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), values, k),
                            llvm::Align(8), dims[k]->name);
}

llvm::Value* DimExprEmitter::operator()(const ir::PrimExpr& e) {
  if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
  llvm::Value* v = nullptr;
  if (auto* c = e->as<ir::IntImmNode>()) {
    v = b_.getInt64(c->value);
  } else if (auto* bn = e->as<ir::BinaryNode>(); bn && e->dtype == ir::DType::i64) {
    llvm::Value* x = (*this)(bn->a);
    llvm::Value* y = (*this)(bn->b);
    switch (bn->op) {
      case ir::BinaryOp::Add: v = b_.CreateAdd(x, y); break;
      case ir::BinaryOp::Sub: v = b_.CreateSub(x, y); break;
      case ir::BinaryOp::Mul: v = b_.CreateMul(x, y); break;
      case ir::BinaryOp::Div: v = floorDivMod(b_, x, y, false); break;
      case ir::BinaryOp::Mod: v = floorDivMod(b_, x, y, true); break;
      case ir::BinaryOp::Min: v = b_.CreateSelect(b_.CreateICmpSLT(x, y), x, y); break;
      case ir::BinaryOp::Max: v = b_.CreateSelect(b_.CreateICmpSGT(x, y), x, y); break;
      default: break;
    }
  }
  if (!v)
    throw Error("symbolic shapes are not supported by codegen yet where a size is " + ir::printExpr(e) +
                "; import with --shape NAME=DIMS");
  memo_[e.get()] = v;
  return v;
}

std::vector<llvm::Value*> emitWorkspaceOffsets(llvm::IRBuilder<>& b, DimExprEmitter& dim,
                                               const SymbolicMemoryPlan& plan,
                                               llvm::Value** workspace_bytes) {
  if (plan.workspace_bytes) {  // scaled: expressions
    std::vector<llvm::Value*> offsets;
    for (const auto& o : plan.offsets) offsets.push_back(dim(o));
    if (workspace_bytes) *workspace_bytes = dim(plan.workspace_bytes);
    return offsets;
  }
  std::vector<llvm::Value*> sizes, offsets(plan.sizes.size());
  for (const auto& s : plan.sizes) sizes.push_back(dim(s));
  auto max = [&](llvm::Value* x, llvm::Value* y) { return b.CreateSelect(b.CreateICmpUGT(x, y), x, y); };
  llvm::Value* total = b.getInt64(0);
  for (size_t i : plan.order) {
    llvm::Value* offset = b.getInt64(0);
    for (size_t j : plan.below[i]) offset = max(offset, b.CreateAdd(offsets[j], sizes[j]));
    offsets[i] = offset;
    total = max(total, b.CreateAdd(offset, sizes[i]));
  }
  if (workspace_bytes) *workspace_bytes = total;
  return offsets;
}

llvm::Function* emitShapes(llvm::Module& mod, const EntryPlan& plan, const std::string& name) {
  llvm::LLVMContext& c = mod.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(c);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr, ptr}, false);
  auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, mod);
  fn->setDoesNotThrow();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", fn));
  DimExprEmitter dim(b, plan.dims, fn->getArg(0));
  size_t k = 0;
  for (const TensorDesc& t : plan.outputs)
    for (size_t d = 0; d < t.shape.size(); ++d, ++k)
      b.CreateAlignedStore(t.symbolic() ? dim(t.sym_shape[d]) : b.getInt64(t.shape[d]),
                           b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), fn->getArg(1), k), llvm::Align(8));
  llvm::Value* workspace = nullptr;
  emitWorkspaceOffsets(b, dim, plan.sym_memory, &workspace);
  b.CreateAlignedStore(workspace, fn->getArg(2), llvm::Align(8));
  b.CreateRetVoid();
  return fn;
}

}  // namespace mlcc::codegen
