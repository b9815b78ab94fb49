// `parallel` loops: the loop body is outlined into
//   internal void @sym.parN(ptr %closure, i64 %begin, i64 %end)
// that runs the iterations [begin, end), and the loop becomes
//   call @mlcc_rt_parallel_for(ctx, extent, @sym.parN, %closure)
// where the closure (on the caller's stack) holds every variable and buffer
// pointer in scope and the runtime context. Nested parallel loops are
// outlined the same way (the runtime runs nested calls serially).
#include "llvm/emitter.h"
#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

void KernelEmitter::parallelLoop(const ir::ForNode& f) {
  llvm::Value* extent = cast(expr(f.extent), f.extent->dtype, ir::DType::i64);

  // What the body may use: variables, bound buffers, the context.
  std::vector<const ir::VarNode*> cap_vars;
  std::vector<const ir::BufferNode*> cap_bufs;
  std::vector<llvm::Value*> values;
  for (const auto& [v, val] : vars) {
    cap_vars.push_back(v);
    values.push_back(val);
  }
  for (const auto& [buf, bb] : buffers)
    if (bb.base) {
      cap_bufs.push_back(buf);
      values.push_back(bb.base);
    }
  values.push_back(rt_ctx);
  std::vector<llvm::Type*> types;
  for (auto* v : values) types.push_back(v->getType());
  llvm::StructType* closure_ty = llvm::StructType::get(ctx, types);

  llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
  llvm::AllocaInst* closure = eb.CreateAlloca(closure_ty, nullptr, "closure");
  for (size_t i = 0; i < values.size(); ++i)
    b.CreateStore(values[i], b.CreateStructGEP(closure_ty, closure, i));

  // The outlined body.
  llvm::Type* i64 = b.getInt64Ty();
  auto* body_ty = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), i64, i64}, false);
  auto* body_fn = llvm::Function::Create(body_ty, llvm::Function::InternalLinkage,
                                         symbol + ".par" + std::to_string(outlined++), mod);
  body_fn->setDoesNotThrow();
  body_fn->addParamAttr(0, llvm::Attribute::NoAlias);
  body_fn->addParamAttr(0, llvm::Attribute::NoCapture);
  body_fn->addParamAttr(0, llvm::Attribute::ReadOnly);

  llvm::Function* outer_fn = fn;
  llvm::BasicBlock* outer_entry = entry;
  llvm::IRBuilderBase::InsertPoint outer_ip = b.saveIP();
  auto outer_vars = vars;
  auto outer_bufs = buffers;
  llvm::Value* outer_ctx = rt_ctx;

  fn = body_fn;
  entry = llvm::BasicBlock::Create(ctx, "entry", body_fn);
  b.SetInsertPoint(entry);
  llvm::Value* cl = body_fn->getArg(0);
  auto field = [&](size_t i) { return b.CreateLoad(types[i], b.CreateStructGEP(closure_ty, cl, i)); };
  size_t k = 0;
  for (auto* v : cap_vars) vars[v] = field(k++);
  for (auto* buf : cap_bufs) buffers[buf].base = field(k++);
  rt_ctx = field(k++);
  countedLoop(body_fn->getArg(1), body_fn->getArg(2), f.loop_var, f.body, {});
  b.CreateRetVoid();

  fn = outer_fn;
  entry = outer_entry;
  b.restoreIP(outer_ip);
  vars = std::move(outer_vars);
  buffers = std::move(outer_bufs);
  rt_ctx = outer_ctx;

  b.CreateCall(runtimeFunction(mod, "mlcc_rt_parallel_for"), {rt_ctx, extent, body_fn, closure});
}

}  // namespace mlcc::codegen
