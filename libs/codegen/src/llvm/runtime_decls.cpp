// Declarations of the runtime's functions (libs/runtime/include/mlcc/runtime/abi.h)
// in a module of generated code.
#include <llvm/IR/DerivedTypes.h>

#include "llvm/kernel_emitter.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

llvm::FunctionCallee runtimeFunction(llvm::Module& mod, const std::string& name) {
  llvm::LLVMContext& c = mod.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(c);
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  llvm::Type* i64 = llvm::Type::getInt64Ty(c);
  llvm::Type* vd = llvm::Type::getVoidTy(c);
  llvm::FunctionType* ty = nullptr;
  if (name == "mlcc_rt_parallel_for") {
    ty = llvm::FunctionType::get(vd, {ptr, i64, ptr, ptr}, false);
  } else if (name == "mlcc_rt_kernel_begin") {
    ty = llvm::FunctionType::get(i64, {ptr, i32}, false);
  } else if (name == "mlcc_rt_kernel_end") {
    ty = llvm::FunctionType::get(vd, {ptr, i32, i64}, false);
  } else if (name == "mlcc_rt_set_error") {
    ty = llvm::FunctionType::get(vd, {ptr, ptr}, false);
  } else if (name == "mlcc_rt_extern_failed") {
    ty = llvm::FunctionType::get(vd, {ptr, ptr, i32}, false);
  } else if (name == "mlcc_rt_bounds_error") {
    ty = llvm::FunctionType::get(vd, {ptr, ptr, i32, ptr, ptr}, false);
  } else if (name == "mlcc_rt_blas_dense") {
    ty = llvm::FunctionType::get(vd, {ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i32}, false);
  } else if (name == "mlcc_rt_blas_matmul") {
    ty = llvm::FunctionType::get(vd, {ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, i32}, false);
  } else {
    throw Error("unknown runtime function " + name);
  }
  llvm::FunctionCallee callee = mod.getOrInsertFunction(name, ty);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) fn->setDoesNotThrow();
  return callee;
}

}  // namespace mlcc::codegen
