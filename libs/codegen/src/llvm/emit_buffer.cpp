// Buffer accesses of a kernel: row-major element addresses, typed loads and
// stores with alias scopes (every buffer of a kernel is its own memory: the
// parameters never overlap each other or the allocations), and storage for
// function allocs and block alloc_buffers: up to 64 KiB on the stack, else
// scratch buffers passed by the caller (function allocs, see KernelInfo;
// those of symbolic shape too) or calloc'd memory (block alloc_buffers, or
// without KernelInfo). Dimensions are constants or the kernel's symbolic
// dimensions.
//
// Alignment: only the natural alignment of the element type is assumed
// (parameters come from the caller, which need not align them).
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
    case ir::DType::f16:
    case ir::DType::bf16: return llvm::Type::getInt16Ty(c);
    case ir::DType::i8:
    case ir::DType::boolean: return llvm::Type::getInt8Ty(c);
    case ir::DType::i32: return llvm::Type::getInt32Ty(c);
    case ir::DType::i64: return llvm::Type::getInt64Ty(c);
  }
  return nullptr;
}

}  // namespace

void KernelEmitter::collectBuffers() {
  for (const auto& p : func.params) all_buffers_.push_back(p.get());
  for (const auto& a : func.allocs) all_buffers_.push_back(a.get());
  walkBlocks(func.body, [&](const ir::BlockNode& blk) {
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

llvm::Value* elementAddress(KernelEmitter& e, const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices,
                            const BufferBinding& bb) {
  if (!bb.base) e.fail("buffer %" + buf->name + " is used outside of its block");
  if (indices.size() != buf->shape.size()) e.fail("wrong number of indices for buffer %" + buf->name);
  llvm::Type* i64 = e.b.getInt64Ty();
  llvm::Value* off = nullptr;
  for (size_t d = 0; d < indices.size(); ++d) {
    llvm::Value* i = e.expr(indices[d]);
    if (i->getType() != i64) i = e.b.CreateSExt(i, i64);
    // A constant dimension, or one of the symbolic dimensions (kernel arguments).
    llvm::Value* dim = e.cast(e.expr(buf->shape[d]), buf->shape[d]->dtype, ir::DType::i64);
    off = off ? e.b.CreateAdd(e.b.CreateMul(off, dim, "", false, true), i, "", false, true) : i;
  }
  if (!off) off = e.b.getInt64(0);
  return e.b.CreateInBoundsGEP(memType(e.ctx, buf->dtype), bb.base, off);
}

void tagAccess(llvm::Instruction* inst, const BufferBinding& bb) {
  inst->setMetadata(llvm::LLVMContext::MD_alias_scope, bb.scope);
  inst->setMetadata(llvm::LLVMContext::MD_noalias, bb.noalias);
}

}  // namespace

llvm::Value* KernelEmitter::load(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices) {
  const BufferBinding& bb = buffers.at(buf.get());
  llvm::Value* p = elementAddress(*this, buf, indices, bb);
  auto* raw = b.CreateAlignedLoad(memType(ctx, buf->dtype), p, llvm::Align(ir::dtypeBytes(buf->dtype)));
  tagAccess(raw, bb);
  switch (buf->dtype) {
    case ir::DType::f16: return f16BitsToFloat(raw);
    case ir::DType::bf16: return bf16BitsToFloat(raw);
    case ir::DType::boolean: return b.CreateICmpNE(raw, b.getInt8(0));
    default: return raw;
  }
}

void KernelEmitter::store(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices, llvm::Value* v) {
  const BufferBinding& bb = buffers.at(buf.get());
  llvm::Value* p = elementAddress(*this, buf, indices, bb);
  switch (buf->dtype) {
    case ir::DType::f16: v = floatToF16Bits(v); break;
    case ir::DType::bf16: v = floatToBF16Bits(v); break;
    case ir::DType::boolean: v = b.CreateZExt(v, b.getInt8Ty()); break;
    default: break;
  }
  auto* st = b.CreateAlignedStore(v, p, llvm::Align(ir::dtypeBytes(buf->dtype)));
  tagAccess(st, bb);
}

void KernelEmitter::allocate(const ir::Buffer& buf, std::vector<llvm::Value*>& to_free, bool function_level) {
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
    b.CreateMemSet(a, b.getInt8(0), bytes, llvm::MaybeAlign(64));
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
    if (is_static)
      b.CreateMemSet(p, b.getInt8(0), bytes, llvm::MaybeAlign(64));
    else
      b.CreateMemSet(p, b.getInt8(0), b.CreateMul(elements(), b.getInt64(ir::dtypeBytes(buf->dtype))),
                     llvm::MaybeAlign(64));
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
