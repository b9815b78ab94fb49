// Buffer accesses of a kernel: row-major element addresses, typed loads and
// stores with alias scopes (every buffer of a kernel is its own memory: the
// parameters never overlap each other or the allocations), and storage for
// function allocs and block alloc_buffers: up to 64 KiB on the stack, else
// scratch buffers passed by the caller (function allocs, see KernelInfo;
// those of symbolic shape too) or calloc'd memory (block alloc_buffers, or
// without KernelInfo). Storage is zeroed, as the IR defines it, except a
// function alloc whose every read follows a write of the same elements
// (mlcc/ir/alloc_analysis.h), where the zeros could not be seen, and a
// compacted one (a box per loop iteration, rewrite_accesses.cpp), which
// goes on the stack of the function that runs its loop. Dimensions are
// constants or the kernel's symbolic dimensions.
//
// Alignment: only the natural alignment of the element type is assumed
// (parameters come from the caller, which need not align them).
//
// With bounds checks (LLVMOptions::bounds_check), each access first compares
// every index with its dimension (unsigned, so negative ones fail too); a
// failing access is skipped (a load gives 0) after mlcc_rt_bounds_error
// records the function, block, buffer, indices and shape for the run's error.
#include <llvm/IR/CFG.h>
#include <llvm/IR/MDBuilder.h>

#include "llvm/emitter.h"

namespace mlcc::codegen {

namespace {

// Stack storage up to this size.
constexpr uint64_t kMaxStackBytes = 64 * 1024;

void walkBlocks(const ir::Stmt& s, const std::function<void(const ir::BlockNode&)>& fn) {
  if (!s) return;
  switch (s->kind) {
    case ir::StmtKind::For: walkBlocks(s->as<ir::ForNode>()->body, fn); break;
    case ir::StmtKind::Seq:
      for (const auto& x : s->as<ir::SeqNode>()->stmts) walkBlocks(x, fn);
      break;
    case ir::StmtKind::If:
      walkBlocks(s->as<ir::IfNode>()->then_case, fn);
      walkBlocks(s->as<ir::IfNode>()->else_case, fn);
      break;
    case ir::StmtKind::Block: {
      auto* blk = s->as<ir::BlockNode>();
      fn(*blk);
      walkBlocks(blk->init, fn);
      walkBlocks(blk->body, fn);
      break;
    }
    case ir::StmtKind::Store: break;
  }
}

llvm::Type* memType(llvm::LLVMContext& c, ir::DType t) {
  switch (t) {
    case ir::DType::f32: return llvm::Type::getFloatTy(c);
    case ir::DType::f64: return llvm::Type::getDoubleTy(c);
    case ir::DType::f16:
    case ir::DType::bf16:
    case ir::DType::i16:
    case ir::DType::u16: return llvm::Type::getInt16Ty(c);
    case ir::DType::i8:
    case ir::DType::u8:
    case ir::DType::boolean: return llvm::Type::getInt8Ty(c);
    case ir::DType::i32:
    case ir::DType::u32: return llvm::Type::getInt32Ty(c);
    case ir::DType::i64: return llvm::Type::getInt64Ty(c);
  }
  return nullptr;
}

}  // namespace

void KernelEmitter::collectBuffers(const ir::Stmt& body) {
  for (const auto& p : func.params) all_buffers_.push_back(p.get());
  for (const auto& a : func.allocs) {  // a compacted one as its box's buffer
    auto it = alloc_plan.compacted.find(a.get());
    all_buffers_.push_back(it == alloc_plan.compacted.end() ? a.get() : it->second.get());
  }
  walkBlocks(body, [&](const ir::BlockNode& blk) {
    for (const auto& a : blk.alloc_buffers) all_buffers_.push_back(a.get());
  });
  llvm::MDBuilder mdb(ctx);
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain(symbol);
  for (auto* buf : all_buffers_) scopes_.push_back(mdb.createAnonymousAliasScope(domain, buf->name));
  for (size_t i = 0; i < all_buffers_.size(); ++i) {
    std::vector<llvm::Metadata*> others;
    for (size_t j = 0; j < scopes_.size(); ++j)
      if (j != i) others.push_back(scopes_[j]);
    BufferBinding& bb = buffers[all_buffers_[i]];
    bb.scope = llvm::MDNode::get(ctx, {scopes_[i]});
    bb.noalias = llvm::MDNode::get(ctx, others);
  }
}

namespace {

// The element's address; `done` is set to the block after the access when
// it is bounds-checked (KernelEmitter::checkBounds), else to null.
llvm::Value* elementAddress(KernelEmitter& e, const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices,
                            const BufferBinding& bb, const char* what, llvm::BasicBlock*& done) {
  if (!bb.base) e.fail("buffer %" + buf->name + " is used outside of its block");
  if (indices.size() != buf->shape.size()) e.fail("wrong number of indices for buffer %" + buf->name);
  llvm::Type* i64 = e.b.getInt64Ty();
  std::vector<llvm::Value*> index, shape;
  for (size_t d = 0; d < indices.size(); ++d) {
    llvm::Value* i = e.expr(indices[d]);
    if (i->getType() != i64) i = e.b.CreateSExt(i, i64);
    index.push_back(i);
    // A constant dimension, or one of the symbolic dimensions (kernel arguments).
    shape.push_back(e.cast(e.expr(buf->shape[d]), buf->shape[d]->dtype, ir::DType::i64));
  }
  done = e.checkBounds(buf, index, shape, what);
  llvm::Value* off = nullptr;
  for (size_t d = 0; d < index.size(); ++d)
    off = off ? e.b.CreateAdd(e.b.CreateMul(off, shape[d], "", false, true), index[d], "", false, true)
              : index[d];
  if (!off) off = e.b.getInt64(0);
  return e.b.CreateInBoundsGEP(memType(e.ctx, buf->dtype), bb.base, off);
}

void tagAccess(llvm::Instruction* inst, const BufferBinding& bb) {
  inst->setMetadata(llvm::LLVMContext::MD_alias_scope, bb.scope);
  inst->setMetadata(llvm::LLVMContext::MD_noalias, bb.noalias);
}

}  // namespace

llvm::BasicBlock* KernelEmitter::checkBounds(const ir::Buffer& buf, const std::vector<llvm::Value*>& index,
                                             const std::vector<llvm::Value*>& shape, const char* what) {
  if (!bounds_check || index.empty()) return nullptr;
  llvm::Value* ok = b.getTrue();
  for (size_t d = 0; d < index.size(); ++d) ok = b.CreateAnd(ok, b.CreateICmpULT(index[d], shape[d]));
  auto* bad_bb = llvm::BasicBlock::Create(ctx, "oob." + buf->name, fn);
  auto* access_bb = llvm::BasicBlock::Create(ctx, "inbounds." + buf->name, fn);
  auto* done_bb = llvm::BasicBlock::Create(ctx, "access." + buf->name, fn);
  b.CreateCondBr(ok, access_bb, bad_bb, llvm::MDBuilder(ctx).createBranchWeights(1 << 20, 1));
  b.SetInsertPoint(bad_bb);
  llvm::Type* arr = llvm::ArrayType::get(b.getInt64Ty(), index.size());
  llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
  llvm::Value* index_arr = eb.CreateAlloca(arr, nullptr, "oob.index");
  llvm::Value* shape_arr = eb.CreateAlloca(arr, nullptr, "oob.shape");
  for (size_t d = 0; d < index.size(); ++d) {
    b.CreateStore(index[d], b.CreateConstInBoundsGEP2_64(arr, index_arr, 0, d));
    b.CreateStore(shape[d], b.CreateConstInBoundsGEP2_64(arr, shape_arr, 0, d));
  }
  std::string access = "prim func @" + func.name;
  if (!block_name.empty()) access += ", block \"" + block_name + "\"";
  access += std::string(": ") + what + " %" + buf->name;
  b.CreateCall(runtimeFunction(mod, "mlcc_rt_bounds_error"),
               {rt_ctx, b.CreateGlobalStringPtr(access), b.getInt32(static_cast<int32_t>(index.size())),
                index_arr, shape_arr});
  b.CreateBr(done_bb);
  b.SetInsertPoint(access_bb);
  return done_bb;
}

llvm::Value* KernelEmitter::load(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices) {
  const BufferBinding& bb = buffers.at(buf.get());
  llvm::BasicBlock* done = nullptr;
  llvm::Value* p = elementAddress(*this, buf, indices, bb, "load from", done);
  auto* raw = b.CreateAlignedLoad(memType(ctx, buf->dtype), p, llvm::Align(ir::dtypeBytes(buf->dtype)));
  tagAccess(raw, bb);
  llvm::Value* v = raw;
  if (done) {  // out of bounds: 0
    llvm::BasicBlock* loaded = b.GetInsertBlock();
    b.CreateBr(done);
    b.SetInsertPoint(done);
    llvm::PHINode* phi = b.CreatePHI(raw->getType(), 2);
    phi->addIncoming(raw, loaded);
    // The failing path is the block that branched to `done` besides `loaded`.
    for (llvm::BasicBlock* pred : llvm::predecessors(done))
      if (pred != loaded) phi->addIncoming(llvm::Constant::getNullValue(raw->getType()), pred);
    v = phi;
  }
  switch (buf->dtype) {
    case ir::DType::f16: return f16BitsToFloat(v);
    case ir::DType::bf16: return bf16BitsToFloat(v);
    case ir::DType::boolean: return b.CreateICmpNE(v, b.getInt8(0));
    default: return v;
  }
}

void KernelEmitter::store(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices, llvm::Value* v) {
  const BufferBinding& bb = buffers.at(buf.get());
  llvm::BasicBlock* done = nullptr;
  llvm::Value* p = elementAddress(*this, buf, indices, bb, "store to", done);
  switch (buf->dtype) {
    case ir::DType::f16: v = floatToF16Bits(v); break;
    case ir::DType::bf16: v = floatToBF16Bits(v); break;
    case ir::DType::boolean: v = b.CreateZExt(v, b.getInt8Ty()); break;
    default: break;
  }
  auto* st = b.CreateAlignedStore(v, p, llvm::Align(ir::dtypeBytes(buf->dtype)));
  tagAccess(st, bb);
  if (done) {
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
}

void KernelEmitter::allocate(const ir::Buffer& buf, std::vector<llvm::Value*>& to_free, bool function_level,
                             bool zero) {
  BufferBinding& bb = buffers[buf.get()];
  uint64_t n = 1;
  bool is_static = true;
  for (const auto& d : buf->shape) {
    int64_t v;
    if (ir::asConstInt(d, &v))
      n *= static_cast<uint64_t>(v);
    else
      is_static = false;  // its size is known when the kernel runs
  }
  const uint64_t bytes = n * ir::dtypeBytes(buf->dtype);
  if (is_static && bytes <= kMaxStackBytes) {
    llvm::IRBuilder<> eb(entry, entry->getFirstInsertionPt());
    auto* a = eb.CreateAlloca(b.getInt8Ty(), eb.getInt64(bytes == 0 ? 1 : bytes), buf->name);
    a->setAlignment(llvm::Align(64));
    if (zero) b.CreateMemSet(a, b.getInt8(0), bytes, llvm::MaybeAlign(64));
    bb.base = a;
    return;
  }
  auto elements = [&] {
    llvm::Value* count = b.getInt64(1);
    for (const auto& d : buf->shape)
      count = b.CreateMul(count, cast(expr(d), d->dtype, ir::DType::i64), "", false, true);
    return count;
  };
  if (function_level && info) {
    const size_t slot = func.params.size() + dims.size() + info->scratch_bytes.size();
    ir::PrimExpr size = ir::makeInt(static_cast<int64_t>(bytes));
    if (!is_static) {
      size = ir::makeInt(ir::dtypeBytes(buf->dtype));
      for (const auto& d : buf->shape) size = ir::makeBinary(ir::BinaryOp::Mul, size, d);
    }
    info->scratch_bytes.push_back(size);
    auto* p = b.CreateAlignedLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), args, slot),
                                  llvm::Align(8), buf->name);
    p->setMetadata(llvm::LLVMContext::MD_nonnull, llvm::MDNode::get(ctx, {}));
    p->setMetadata(llvm::LLVMContext::MD_align,
                   llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(b.getInt64(64))}));
    if (zero) {
      llvm::Value* size =
          is_static ? b.getInt64(bytes) : b.CreateMul(elements(), b.getInt64(ir::dtypeBytes(buf->dtype)));
      b.CreateMemSet(p, b.getInt8(0), size, llvm::MaybeAlign(64));
    }
    bb.base = p;
    return;
  }
  llvm::Type* i64 = b.getInt64Ty();
  llvm::FunctionCallee calloc = mod.getOrInsertFunction("calloc", b.getPtrTy(), i64, i64);
  llvm::Value* p = b.CreateCall(calloc, {elements(), b.getInt64(ir::dtypeBytes(buf->dtype))}, buf->name);
  bb.base = p;
  to_free.push_back(p);
}

void KernelEmitter::freeAll(const std::vector<llvm::Value*>& to_free) {
  llvm::FunctionCallee free_fn = mod.getOrInsertFunction("free", b.getVoidTy(), b.getPtrTy());
  for (auto* p : to_free) b.CreateCall(free_fn, {p});
}

}  // namespace mlcc::codegen
