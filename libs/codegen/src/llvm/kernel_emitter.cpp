// One prim func as an LLVM kernel `void @sym(ptr noalias %args, ptr %ctx)`:
// parameters, symbolic dimensions (kernelDims) and scratch buffers (see
// KernelInfo) are loaded from args,
// function allocs are allocated (zeroed, unless every read of one follows a
// write: emit_buffer.cpp) on entry and freed on exit, or, compacted to a box
// per iteration of one loop (rewrite_accesses.cpp), on the stack where that
// loop runs; reductions' register tiles are accumulated in stack arrays
// across their reduction loops (register_tiles.cpp); statements become
// control flow. Loops
// run over [0, extent): serial loops plainly, `unrolled` loops with llvm.loop.unroll.full, `vectorized` loops
// with llvm.loop.vectorize.enable (the loop vectorizer then emits vector code with a scalar tail; small
// register-tile vectors are handled differently, see kMaxTileLanes), and
// `parallel` loops are outlined (emit_parallel.cpp). Blocks bind their
// iteration variables, skip when the `where` predicate is false, allocate
// their alloc_buffers (zeroed per execution) and run `init` when every
// reduce iteration variable is 0, exactly as the interpreter does.
#include "llvm/kernel_emitter.h"

#include <algorithm>
#include <climits>

#include "llvm/emitter.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

KernelEmitter::KernelEmitter(llvm::Module& m, const ir::PrimFunc& f)
    : mod(m), ctx(m.getContext()), b(m.getContext()), func(f) {}

void KernelEmitter::fail(const std::string& message) const {
  std::string where = "prim func @" + func.name;
  if (!block_name.empty()) where += ", block " + block_name;
  throw Error(where + ": " + message);
}

llvm::Function* KernelEmitter::emit(const std::string& sym, KernelInfo* kernel_info) {
  symbol = sym;
  info = kernel_info;
  llvm::Type* ptr = b.getPtrTy();
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false);
  if (mod.getFunction(symbol)) fail("symbol @" + symbol + " is defined twice");
  fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, symbol, mod);
  fn->setDoesNotThrow();
  fn->addParamAttr(0, llvm::Attribute::NoAlias);
  fn->addParamAttr(0, llvm::Attribute::NoCapture);
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  args = fn->getArg(0);
  args->setName("args");
  rt_ctx = fn->getArg(1);
  rt_ctx->setName("ctx");
  entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);

  const ir::Stmt body = peelMaskedTails(
      promoteRegisterTiles(resolveIndexDivisions(planAllocations(func, &alloc_plan), !bounds_check),
                           &alloc_plan),
      alloc_plan);
  collectBuffers(body);
  // Symbolic dimensions: int64 values in the slots after the parameters.
  dims = kernelDims(func);
  for (size_t k = 0; k < dims.size(); ++k) {
    const ir::VarNode* v = dims[k];
    if (v->dtype != ir::DType::i64) fail("symbolic dimension '" + v->name + "' is not i64");
    auto* value =
        b.CreateAlignedLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(ptr, args, func.params.size() + k),
                            llvm::Align(8), v->name);
    // Dimensions are never negative (JitKernel and the entry check them).
    value->setMetadata(llvm::LLVMContext::MD_range,
                       llvm::MDNode::get(ctx, {llvm::ConstantAsMetadata::get(b.getInt64(0)),
                                               llvm::ConstantAsMetadata::get(b.getInt64(INT64_MAX))}));
    vars[v] = value;
  }
  for (size_t i = 0; i < func.params.size(); ++i) {
    const ir::Buffer& p = func.params[i];
    BufferBinding& bb = buffers[p.get()];
    if (bb.base) fail("buffer %" + p->name + " is passed twice");
    auto* base =
        b.CreateAlignedLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, args, i), llvm::Align(8), p->name);
    base->setMetadata(llvm::LLVMContext::MD_nonnull, llvm::MDNode::get(ctx, {}));
    bb.base = base;
  }
  std::vector<llvm::Value*> to_free;
  for (const auto& a : func.allocs)
    if (!alloc_plan.compacted.count(a.get()))
      allocate(a, to_free, true, !alloc_plan.written_before_read.count(a.get()));
  stmt(body);
  freeAll(to_free);
  b.CreateRetVoid();
  return fn;
}

void KernelEmitter::stmt(const ir::Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case ir::StmtKind::For: loop(*s->as<ir::ForNode>()); return;
    case ir::StmtKind::Block: block(*s->as<ir::BlockNode>()); return;
    case ir::StmtKind::Seq:
      for (const auto& x : s->as<ir::SeqNode>()->stmts) stmt(x);
      return;
    case ir::StmtKind::Store: {
      auto* st = s->as<ir::StoreNode>();
      store(st->buffer, st->indices, expr(st->value));
      return;
    }
    case ir::StmtKind::If: {
      auto* i = s->as<ir::IfNode>();
      llvm::Value* c = expr(i->cond);
      auto* then_bb = llvm::BasicBlock::Create(ctx, "then", fn);
      auto* else_bb = i->else_case ? llvm::BasicBlock::Create(ctx, "else", fn) : nullptr;
      auto* done = llvm::BasicBlock::Create(ctx, "endif", fn);
      b.CreateCondBr(c, then_bb, else_bb ? else_bb : done);
      b.SetInsertPoint(then_bb);
      stmt(i->then_case);
      b.CreateBr(done);
      if (else_bb) {
        b.SetInsertPoint(else_bb);
        stmt(i->else_case);
        b.CreateBr(done);
      }
      b.SetInsertPoint(done);
      return;
    }
  }
}

void KernelEmitter::countedLoop(llvm::Value* begin, llvm::Value* end, const ir::Var& var,
                                const ir::Stmt& body, const std::vector<llvm::Metadata*>& md) {
  if (auto it = alloc_plan.per_loop.find(var.get()); it != alloc_plan.per_loop.end()) {
    std::vector<llvm::Value*> none;  // on the stack of the function that runs the loop
    for (const auto& buf : it->second) allocate(buf, none, false, false);
  }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* loop_bb = llvm::BasicBlock::Create(ctx, "loop." + var->name, fn);
  auto* exit_bb = llvm::BasicBlock::Create(ctx, "endloop." + var->name, fn);
  b.CreateCondBr(b.CreateICmpSLT(begin, end), loop_bb, exit_bb);
  b.SetInsertPoint(loop_bb);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, var->name);
  iv->addIncoming(begin, pre);
  auto saved = vars.find(var.get()) != vars.end() ? vars[var.get()] : nullptr;
  vars[var.get()] = iv;
  stmt(body);
  llvm::Value* next = b.CreateAdd(iv, b.getInt64(1), var->name + ".next", true, true);
  iv->addIncoming(next, b.GetInsertBlock());
  auto* br = b.CreateCondBr(b.CreateICmpSLT(next, end), loop_bb, exit_bb);
  std::vector<llvm::Metadata*> ops{nullptr};
  ops.insert(ops.end(), md.begin(), md.end());
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, ops);
  id->replaceOperandWith(0, id);
  br->setMetadata(llvm::LLVMContext::MD_loop, id);
  b.SetInsertPoint(exit_bb);
  if (saved)
    vars[var.get()] = saved;
  else
    vars.erase(var.get());
}

namespace {

// A vectorized loop of small constant extent (the vector of a register
// tile: 28, 16, 14, 8 or 7 lanes) that the loop vectorizer would handle badly:
// left to itself it picks a width wider than such a loop (16 lanes for 14
// iterations) and runs it all in the scalar tail, and a masked vector
// (tail folding) keeps the register tile's accumulators in memory (LICM
// does not promote masked loads and stores), as do gathers for strided
// accesses. So: a power-of-two extent whose accesses are all contiguous
// (unit_stride.cpp, at most kMaxTileLanes) is one vector of exactly that
// width; any other such loop (up to kMaxUnrolledTileLanes) that updates a reduction (a register tile) is
// fully unrolled, and the SLP vectorizer forms the vectors from straight-line code whose accumulators stay
// in registers (register_tiles.cpp). (Other loops, e.g. a transpose's, stay with the loop vectorizer:
// unrolled, their index arithmetic would run per element.) ResNet-18 (1 thread): 249 ms with the loop
// vectorizer's choice, 109 ms.
constexpr int64_t kMaxUnrolledTileLanes = 32;

}  // namespace

void KernelEmitter::loop(const ir::ForNode& f) {
  auto flag = [&](const char* name, llvm::Metadata* value = nullptr) -> llvm::Metadata* {
    std::vector<llvm::Metadata*> ops{llvm::MDString::get(ctx, name)};
    if (value) ops.push_back(value);
    return llvm::MDNode::get(ctx, ops);
  };
  std::vector<llvm::Metadata*> md;
  switch (f.loop_kind) {
    case ir::LoopKind::thread_binding:
      fail("loop " + f.loop_var->name + " is bound to " + f.thread_tag +
           ": cuda-scheduled function: compile with the cuda target");
    case ir::LoopKind::parallel: parallelLoop(f); return;
    case ir::LoopKind::vectorized:
      if (callsScalarMath(f.body)) break;  // a forced vectorization would only fail, with a warning
      if (int64_t extent;
          ir::asConstInt(f.extent, &extent) && extent > 1 && extent <= kMaxUnrolledTileLanes) {
        if (extent <= kMaxTileLanes && (extent & (extent - 1)) == 0 && contiguousAlongLoop(f)) {
          md.push_back(flag("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(b.getTrue())));
          md.push_back(flag("llvm.loop.vectorize.width", llvm::ConstantAsMetadata::get(b.getInt32(extent))));
          md.push_back(flag("llvm.loop.unroll.disable"));
          break;
        }
        if (updatesReduction(f)) {
          md.push_back(flag("llvm.loop.unroll.full"));
          break;
        }
      }
      // Not fully unrolled first: the loop vectorizer handles predicated
      // bodies (masked loads/stores) that straight-line code would leave scalar.
      md.push_back(flag("llvm.loop.vectorize.enable", llvm::ConstantAsMetadata::get(b.getTrue())));
      md.push_back(flag("llvm.loop.unroll.disable"));
      break;
    case ir::LoopKind::unrolled: md.push_back(flag("llvm.loop.unroll.full")); break;
    case ir::LoopKind::serial: break;
  }
  llvm::Value* extent = cast(expr(f.extent), f.extent->dtype, ir::DType::i64);
  const int64_t outer_lanes = vector_lanes;
  if (f.loop_kind == ir::LoopKind::vectorized) {
    int64_t lanes = 0;
    vector_lanes = ir::asConstInt(f.extent, &lanes) ? lanes : INT64_MAX;
  }
  countedLoop(b.getInt64(0), extent, f.loop_var, f.body, md);
  vector_lanes = outer_lanes;
}

void KernelEmitter::block(const ir::BlockNode& blk) {
  const std::string outer_name = block_name;
  block_name = blk.name;
  if (auto it = blk.attrs.find("tensor_intrin"); it != blk.attrs.end() && it->second.isString()) {
    tensorIntrinCall(blk, it->second.asString());
    block_name = outer_name;
    return;
  }
  // Bindings are evaluated in the enclosing scope, then bound.
  std::vector<llvm::Value*> values;
  for (const auto& iv : blk.iter_vars) values.push_back(expr(iv.binding));
  for (size_t i = 0; i < blk.iter_vars.size(); ++i) vars[blk.iter_vars[i].var.get()] = values[i];

  llvm::BasicBlock* done = nullptr;
  if (blk.predicate) {
    auto* run_bb = llvm::BasicBlock::Create(ctx, "block." + blk.name, fn);
    done = llvm::BasicBlock::Create(ctx, "endblock." + blk.name, fn);
    b.CreateCondBr(expr(blk.predicate), run_bb, done);
    b.SetInsertPoint(run_bb);
  }
  std::vector<llvm::Value*> to_free;
  for (const auto& a : blk.alloc_buffers)
    allocate(a, to_free, false, !alloc_plan.written_before_read.count(a.get()));
  if (blk.init) {
    llvm::Value* first = b.getTrue();
    for (size_t i = 0; i < blk.iter_vars.size(); ++i)
      if (blk.iter_vars[i].kind == ir::IterKind::reduce)
        first =
            b.CreateAnd(first, b.CreateICmpEQ(values[i], llvm::ConstantInt::get(values[i]->getType(), 0)));
    auto* init_bb = llvm::BasicBlock::Create(ctx, "init." + blk.name, fn);
    auto* body_bb = llvm::BasicBlock::Create(ctx, "body." + blk.name, fn);
    b.CreateCondBr(first, init_bb, body_bb);
    b.SetInsertPoint(init_bb);
    stmt(blk.init);
    b.CreateBr(body_bb);
    b.SetInsertPoint(body_bb);
  }
  stmt(blk.body);
  freeAll(to_free);
  for (const auto& a : blk.alloc_buffers) buffers[a.get()].base = nullptr;
  if (done) {
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
  for (const auto& iv : blk.iter_vars) vars.erase(iv.var.get());
  block_name = outer_name;
}

std::vector<const ir::VarNode*> kernelDims(const ir::PrimFunc& f) {
  std::vector<const ir::VarNode*> dims;
  for (const auto& p : f.params)
    for (const auto& d : p->shape)
      if (auto* v = d->as<ir::VarNode>(); v && std::find(dims.begin(), dims.end(), v) == dims.end())
        dims.push_back(v);
  return dims;
}

llvm::Function* emitKernel(llvm::Module& mod, const ir::PrimFunc& f, const std::string& symbol,
                           KernelInfo* info, bool bounds_check) {
  if (info) info->scratch_bytes.clear();
  KernelEmitter e(mod, f);
  e.bounds_check = bounds_check;
  return e.emit(symbol, info);
}

}  // namespace mlcc::codegen
