// `parallel` loops: the loop body is outlined into
//   internal void @sym.parN(ptr %closure, i64 %begin, i64 %end)
// that runs the iterations [begin, end), and the loop becomes
//   call @mlcc_rt_parallel_for(ctx, extent, @sym.parN, %closure)
// where the closure (on the caller's stack) holds the variables (symbolic
// dimensions included) and buffer pointers the body uses from outside, and
// the runtime context. Nested parallel loops are
// outlined the same way (the runtime runs nested calls serially).
#include <algorithm>

#include "llvm/emitter.h"
#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

namespace {

// The variables and buffers `s` uses, each once, in order of first use
// (so that the closure's layout, and the generated code, is deterministic).
struct Uses {
  std::vector<const ir::VarNode*> vars;
  std::vector<const ir::BufferNode*> buffers;

  void var(const ir::VarNode* v) {
    if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  }
  void buffer(const ir::BufferNode* b) {
    if (std::find(buffers.begin(), buffers.end(), b) != buffers.end()) return;
    buffers.push_back(b);
    for (const auto& d : b->shape) expr(d);  // its symbolic dimensions index it
  }
  void expr(const ir::PrimExpr& e) {
    if (!e) return;
    switch (e->kind) {
      case ir::ExprKind::Var: var(e->as<ir::VarNode>()); break;
      case ir::ExprKind::Binary:
        expr(e->as<ir::BinaryNode>()->a);
        expr(e->as<ir::BinaryNode>()->b);
        break;
      case ir::ExprKind::Unary: expr(e->as<ir::UnaryNode>()->a); break;
      case ir::ExprKind::Select:
        expr(e->as<ir::SelectNode>()->cond);
        expr(e->as<ir::SelectNode>()->true_value);
        expr(e->as<ir::SelectNode>()->false_value);
        break;
      case ir::ExprKind::Cast: expr(e->as<ir::CastNode>()->value); break;
      case ir::ExprKind::Load:
        buffer(e->as<ir::LoadNode>()->buffer.get());
        for (const auto& i : e->as<ir::LoadNode>()->indices) expr(i);
        break;
      case ir::ExprKind::Call:
        for (const auto& a : e->as<ir::CallNode>()->args) expr(a);
        break;
      case ir::ExprKind::IntImm:
      case ir::ExprKind::FloatImm: break;
    }
  }
  void stmt(const ir::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case ir::StmtKind::For:
        expr(s->as<ir::ForNode>()->extent);
        stmt(s->as<ir::ForNode>()->body);
        break;
      case ir::StmtKind::Seq:
        for (const auto& x : s->as<ir::SeqNode>()->stmts) stmt(x);
        break;
      case ir::StmtKind::If:
        expr(s->as<ir::IfNode>()->cond);
        stmt(s->as<ir::IfNode>()->then_case);
        stmt(s->as<ir::IfNode>()->else_case);
        break;
      case ir::StmtKind::Store:
        buffer(s->as<ir::StoreNode>()->buffer.get());
        for (const auto& i : s->as<ir::StoreNode>()->indices) expr(i);
        expr(s->as<ir::StoreNode>()->value);
        break;
      case ir::StmtKind::Block: {
        auto* blk = s->as<ir::BlockNode>();
        for (const auto& iv : blk->iter_vars) expr(iv.binding);
        expr(blk->predicate);
        for (const auto& a : blk->alloc_buffers)
          for (const auto& d : a->shape) expr(d);
        if (blk->attrs.count("tensor_intrin"))  // its regions are the routine's arguments
          for (const auto* regions : {&blk->reads, &blk->writes})
            for (const auto& r : *regions) {
              buffer(r.buffer.get());
              for (const auto& range : r.region) expr(range.min);
            }
        stmt(blk->init);
        stmt(blk->body);
        break;
      }
    }
  }
};

}  // namespace

void KernelEmitter::parallelLoop(const ir::ForNode& f) {
  llvm::Value* extent = cast(expr(f.extent), f.extent->dtype, ir::DType::i64);

  // What the body uses from outside: variables, buffers, the context.
  Uses uses;
  uses.stmt(f.body);
  std::vector<const ir::VarNode*> cap_vars;
  std::vector<const ir::BufferNode*> cap_bufs;
  std::vector<llvm::Value*> values;
  for (const ir::VarNode* v : uses.vars)
    if (auto it = vars.find(v); it != vars.end()) {
      cap_vars.push_back(v);
      values.push_back(it->second);
    }
  for (const ir::BufferNode* buf : uses.buffers)
    if (auto it = buffers.find(buf); it != buffers.end() && it->second.base) {
      cap_bufs.push_back(buf);
      values.push_back(it->second.base);
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
