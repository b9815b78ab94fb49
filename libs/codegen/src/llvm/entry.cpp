// The compiled graph entry (or a prim func's, compiled as a function of
// model.so): the plan's steps as straight-line code. Kernel
// calls get an array of buffer pointers (inputs, outputs, embedded weights,
// workspace offsets) and are wrapped in the runtime's profiling hooks;
// library kernels are calls of mlcc_rt_blas_*; returned inputs and
// constants are copied into their outputs. No allocation, no dispatch.
// With symbolic dimensions, workspace offsets, copy sizes and the kernels'
// dimension arguments are computed from the dims argument.
#include <llvm/IR/IRBuilder.h>

#include <algorithm>

#include "llvm/entry_emitter.h"
#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

llvm::Function* emitEntry(llvm::Module& mod, const EntryPlan& plan,
                          const std::vector<llvm::Function*>& kernels, const EmbeddedWeights& weights,
                          const std::string& name) {
  llvm::LLVMContext& c = mod.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(c);
  llvm::Type* i8 = llvm::Type::getInt8Ty(c);
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  llvm::Type* i64 = llvm::Type::getInt64Ty(c);
  auto* fty = llvm::FunctionType::get(i32, {ptr, ptr, ptr, ptr, ptr}, false);
  auto* fn = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, mod);
  const char* names[] = {"inputs", "outputs", "workspace", "dims", "ctx"};
  for (unsigned i = 0; i < 5; ++i) fn->getArg(i)->setName(names[i]);
  fn->setDoesNotThrow();
  llvm::Argument* ctx = fn->getArg(4);

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", fn));
  DimExprEmitter dim(b, plan.dims, fn->getArg(3));
  std::vector<llvm::Value*> offsets;
  if (plan.symbolic()) offsets = emitWorkspaceOffsets(b, dim, plan.sym_memory, nullptr);
  // The buffer pointers, loaded once.
  auto loadAll = [&](llvm::Value* array, size_t n, const char* what) {
    std::vector<llvm::Value*> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, array, i),
                               std::string(what) + std::to_string(i)));
    return v;
  };
  std::vector<llvm::Value*> in = loadAll(fn->getArg(0), plan.inputs.size(), "in");
  std::vector<llvm::Value*> out = loadAll(fn->getArg(1), plan.outputs.size(), "out");
  size_t max_args = 1;
  for (const EntryStep& s : plan.steps)
    if (s.kind == EntryStep::Kind::kernel) max_args = std::max(max_args, s.args.size() + s.dims.size());
  llvm::Value* args = b.CreateAlloca(llvm::ArrayType::get(ptr, max_args), nullptr, "args");

  auto where = [&](const Location& l) -> llvm::Value* {
    switch (l.kind) {
      case Location::Kind::input: return in.at(l.index);
      case Location::Kind::output: return out.at(l.index);
      case Location::Kind::constant:
        return b.CreateConstInBoundsGEP1_64(i8, weights.global, weights.offsets.at(l.index));
      case Location::Kind::workspace:
        if (l.sym_tensor >= 0) return b.CreateInBoundsGEP(i8, fn->getArg(2), offsets.at(l.sym_tensor));
        return b.CreateConstInBoundsGEP1_64(i8, fn->getArg(2), l.offset);
    }
    return nullptr;
  };
  auto profiled = [&](int kernel, const std::function<void()>& call) {
    llvm::Value* id = b.getInt32(kernel);
    llvm::Value* token = b.CreateCall(runtimeFunction(mod, "mlcc_rt_kernel_begin"), {ctx, id});
    call();
    b.CreateCall(runtimeFunction(mod, "mlcc_rt_kernel_end"), {ctx, id, token});
  };
  auto i64c = [&](int64_t v) { return llvm::ConstantInt::get(i64, v); };

  for (const EntryStep& s : plan.steps) {
    switch (s.kind) {
      case EntryStep::Kind::kernel: {
        // Parameters, the values of the kernel's symbolic dimensions, scratch buffers.
        auto slot = [&](size_t i) {
          return b.CreateConstInBoundsGEP2_64(llvm::ArrayType::get(ptr, max_args), args, 0, i);
        };
        for (size_t i = 0; i < s.num_params; ++i) b.CreateStore(where(s.args[i]), slot(i));
        for (size_t k = 0; k < s.dims.size(); ++k) b.CreateStore(dim(s.dims[k]), slot(s.num_params + k));
        for (size_t i = s.num_params; i < s.args.size(); ++i)
          b.CreateStore(where(s.args[i]), slot(i + s.dims.size()));
        llvm::Function* k = kernels.at(s.kernel);
        profiled(s.kernel, [&] { b.CreateCall(k, {args, ctx}); });
        break;
      }
      case EntryStep::Kind::blas_dense:
      case EntryStep::Kind::blas_matmul: {
        llvm::Value* bias =
            s.bias ? where(s.args[2]) : llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c));
        llvm::Value* lhs = where(s.args[0]);
        llvm::Value* rhs = where(s.args[1]);
        llvm::Value* y = where(s.args.back());
        llvm::Value* relu = b.getInt32(s.relu ? 1 : 0);
        profiled(s.kernel, [&] {
          if (s.kind == EntryStep::Kind::blas_dense)
            b.CreateCall(runtimeFunction(mod, "mlcc_rt_blas_dense"),
                         {ctx, lhs, rhs, bias, y, i64c(s.M), i64c(s.N), i64c(s.K), relu});
          else
            b.CreateCall(runtimeFunction(mod, "mlcc_rt_blas_matmul"),
                         {ctx, lhs, rhs, bias, y, i64c(s.B), i64c(s.M), i64c(s.N), i64c(s.K), relu});
        });
        break;
      }
      case EntryStep::Kind::user_extern: {
        // An array of mlcc_extern_tensor {data, shape, ndim, dtype}
        // (include/mlcc/extern.h); a non-zero return fails the run.
        llvm::StructType* tensor_ty = llvm::StructType::get(c, {ptr, ptr, i32, i32});
        const size_t n = s.args.size();
        llvm::Value* tensors = b.CreateAlloca(llvm::ArrayType::get(tensor_ty, n), nullptr, "extern_args");
        for (size_t i = 0; i < n; ++i) {
          const TensorDesc& d = s.tensors.at(i);
          auto* shape_ty = llvm::ArrayType::get(i64, d.shape.size());
          llvm::Value* shape = nullptr;
          if (d.symbolic()) {  // the shape of this run, from the dims
            shape = b.CreateAlloca(shape_ty, nullptr, "extern_shape");
            for (size_t k = 0; k < d.sym_shape.size(); ++k)
              b.CreateStore(dim(d.sym_shape[k]), b.CreateConstInBoundsGEP2_64(shape_ty, shape, 0, k));
          } else {
            std::vector<llvm::Constant*> dims;
            for (int64_t v : d.shape) dims.push_back(llvm::ConstantInt::get(i64, v));
            shape = new llvm::GlobalVariable(mod, shape_ty, true, llvm::GlobalValue::PrivateLinkage,
                                             llvm::ConstantArray::get(shape_ty, dims), "extern_shape");
          }
          llvm::Value* slot = b.CreateConstInBoundsGEP2_64(llvm::ArrayType::get(tensor_ty, n), tensors, 0, i);
          b.CreateStore(where(s.args[i]), b.CreateStructGEP(tensor_ty, slot, 0));
          b.CreateStore(shape, b.CreateStructGEP(tensor_ty, slot, 1));
          b.CreateStore(b.getInt32(static_cast<int32_t>(d.shape.size())),
                        b.CreateStructGEP(tensor_ty, slot, 2));
          b.CreateStore(b.getInt32(ir::dtypeAbiCode(d.dtype)), b.CreateStructGEP(tensor_ty, slot, 3));
        }
        llvm::FunctionCallee callee =
            mod.getOrInsertFunction(s.symbol, llvm::FunctionType::get(i32, {ptr, i32}, false));
        llvm::Value* rc = nullptr;
        profiled(s.kernel, [&] {
          rc = b.CreateCall(callee, {tensors, b.getInt32(static_cast<int32_t>(n))});
        });
        llvm::BasicBlock* failed = llvm::BasicBlock::Create(c, "extern_failed", fn);
        llvm::BasicBlock* next = llvm::BasicBlock::Create(c, "extern_ok", fn);
        b.CreateCondBr(b.CreateICmpNE(rc, b.getInt32(0)), failed, next);
        b.SetInsertPoint(failed);
        b.CreateCall(runtimeFunction(mod, "mlcc_rt_extern_failed"),
                     {ctx, b.CreateGlobalStringPtr(s.what), rc});
        b.CreateRet(b.getInt32(-1));
        b.SetInsertPoint(next);
        break;
      }
      case EntryStep::Kind::copy:  // memmove: the caller may pass one buffer as an input and an output
        if (s.sym_bytes)
          b.CreateMemMove(where(s.args[1]), llvm::MaybeAlign(), where(s.args[0]), llvm::MaybeAlign(),
                          dim(s.sym_bytes));
        else if (s.bytes > 0)
          b.CreateMemMove(where(s.args[1]), llvm::MaybeAlign(), where(s.args[0]), llvm::MaybeAlign(),
                          s.bytes);
        break;
    }
  }
  b.CreateRet(b.getInt32(0));
  return fn;
}

}  // namespace mlcc::codegen
