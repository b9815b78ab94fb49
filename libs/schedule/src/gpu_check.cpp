// The GPU validity check of scheduled prim funcs (see gpu_check.h).
#include "mlcc/schedule/gpu_check.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "cache_util.h"
#include "gpu_races.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/dtype.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/schedule/buffer_boxes.h"
#include "mlcc/support/diagnostic.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

void forEachVar(const PrimExpr& e, const std::function<void(const VarNode*)>& fn) {
  if (!e) return;
  if (e->kind == ExprKind::Var) fn(static_cast<const VarNode*>(e.get()));
  forEachChild(e, [&](const PrimExpr& x) { forEachVar(x, fn); });
}

bool isThreadIdx(const std::string& tag) { return tag.rfind("threadIdx.", 0) == 0; }
bool isBlockIdx(const std::string& tag) { return tag.rfind("blockIdx.", 0) == 0; }

int64_t tagLimit(const std::string& tag) {
  if (tag == "threadIdx.x" || tag == "threadIdx.y") return 1024;
  if (tag == "threadIdx.z") return 64;
  if (tag == "blockIdx.y" || tag == "blockIdx.z") return 65535;
  if (tag == "blockIdx.x") return (int64_t{1} << 31) - 1;
  return int64_t{1} << 62;  // vthread
}

std::string loopName(const ForNode* f) { return "%" + f->loop_var->name; }

struct Kernel {
  const ForNode* root = nullptr;
  std::string first_block;                     // for messages
  std::map<std::string, const ForNode*> tags;  // thread tag -> a loop bound to it (constant if any is)
  // Reduction blocks writing outside `local`, with the thread axes their
  // outputs depend on.
  std::vector<std::pair<std::string, std::set<std::string>>> reductions;
  Stmt root_stmt;  // the same loop
  // Shared buffers allocated by blocks of the kernel.
  std::vector<Buffer> block_shared;
  // The dtypes of its reductions across threads (a scratch of one element
  // per thread each).
  std::set<DType> reduction_scratch;
  // A block of the kernel that is a step of a scan, if any.
  std::string scan_step;
};

class Checker {
 public:
  Checker(const PrimFunc& f, const target::Target& t) : f_(f), t_(t) {}

  void run() {
    for (const auto& b : f_.allocs) function_allocs_.insert(b.get());
    forEachBlock(f_.body, [&](const BlockNode& b, const StmtPath&) {
      for (const auto& iv : b.iter_vars)
        if (iv.kind == IterKind::opaque && !scan_) scan_ = &b;
    });
    visit(f_.body);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("in prim @" + f_.name + ": " + message);
  }

  std::string kernelName() const {
    return "the kernel at loop " + loopName(kernel_->root) +
           (kernel_->first_block.empty() ? "" : " (block \"" + kernel_->first_block + "\")");
  }

  void visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: visitFor(*s->as<ForNode>(), s); return;
      case StmtKind::Block: visitBlock(*s->as<BlockNode>()); return;
      case StmtKind::Seq:
        for (const auto& c : s->as<SeqNode>()->stmts) visit(c);
        return;
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        ++conditionals_;
        visit(i->then_case);
        visit(i->else_case);
        --conditionals_;
        return;
      }
      case StmtKind::Store:
        if (!kernel_ || blocks_.empty())
          fail("a store to %" + s->as<StoreNode>()->buffer->name + " is outside any GPU kernel");
        return;
    }
  }

  void visitFor(const ForNode& f, const Stmt& stmt) {
    bool starts_kernel = false;
    if (f.loop_kind == LoopKind::thread_binding) {
      if (!kernel_) {
        kernel_.emplace();
        kernel_->root = &f;
        kernel_->root_stmt = stmt;
        starts_kernel = true;
      }
      checkThreadLoop(f);
      for (auto it = thread_loops_.rbegin(); it != thread_loops_.rend(); ++it)
        if ((*it)->thread_tag == f.thread_tag) {
          if (std::string why = nestedThreadLoopProblem(**it, f); !why.empty()) fail(why);
          break;
        }
      thread_loops_.push_back(&f);
    }
    if (kernel_) kernel_loops_.push_back(&f);
    visit(f.body);
    if (kernel_) kernel_loops_.pop_back();
    if (f.loop_kind == LoopKind::thread_binding) thread_loops_.pop_back();
    if (starts_kernel) {
      finishKernel();
      kernel_.reset();
    }
  }

  void checkThreadLoop(const ForNode& f) {
    const std::string& tag = f.thread_tag;
    std::string what = "loop " + loopName(&f) + " bound to " + tag;
    if (isBlockIdx(tag))
      for (const ForNode* outer : thread_loops_)
        if (!isBlockIdx(outer->thread_tag))
          fail(what + " is inside loop " + loopName(outer) + " bound to " + outer->thread_tag +
               " (blockIdx loops must enclose the threadIdx loops of a kernel)");
    int64_t extent;
    if (!asConstInt(f.extent, &extent)) {
      if (!isBlockIdx(tag)) fail(what + " has a non-constant extent (thread extents must be constants)");
      kernel_->tags.emplace(tag, &f);
      return;
    }
    if (extent > tagLimit(tag))
      fail(what + " has extent " + std::to_string(extent) + ", over the limit " +
           std::to_string(tagLimit(tag)) + " of " + tag);
    auto [it, fresh] = kernel_->tags.emplace(tag, &f);
    int64_t before;
    if (fresh) return;
    if (!asConstInt(it->second->extent, &before)) {
      it->second = &f;
    } else if (before != extent) {
      fail(what + " has extent " + std::to_string(extent) + ", but loop " + loopName(it->second) +
           " of the same kernel binds " + tag + " with extent " + std::to_string(before) +
           " (a thread axis has one extent per kernel)");
    }
  }

  // The thread-bound loops an expression (of loop variables and enclosing
  // blocks' iteration variables) depends on.
  std::set<const ForNode*> threadDeps(const PrimExpr& e) const {
    std::set<const ForNode*> out;
    forEachVar(e, [&](const VarNode* v) {
      for (const ForNode* l : thread_loops_)
        if (l->loop_var.get() == v) out.insert(l);
      auto it = deps_.find(v);
      if (it != deps_.end()) out.insert(it->second.begin(), it->second.end());
    });
    return out;
  }

  // The loop bound to threadIdx.* whose body is `b` and over which `b`
  // reduces (a reduction across threads), or null; fails where such a loop
  // cannot reduce across threads or not every thread of the block runs it.
  const ForNode* crossThreadLoop(const BlockNode& b) {
    if (thread_loops_.empty()) return nullptr;
    const ForNode* l = thread_loops_.back();
    if (!isThreadIdx(l->thread_tag) || l->body.get() != static_cast<const StmtNode*>(&b)) return nullptr;
    bool reduces = false;
    for (const auto& iv : b.iter_vars)
      reduces |= iv.kind == IterKind::reduce && usesVar(iv.binding, l->loop_var.get());
    if (!reduces) return nullptr;
    const std::string what = "block \"" + b.name + "\" reduces across the threads of loop " + loopName(l) +
                             " (bound to " + l->thread_tag + ")";
    std::string why;
    std::optional<CrossThreadReduction> r = matchCrossThreadReduction(*l, why);
    if (!r) fail(what + ", which the GPU cannot do: " + why);
    // Its threads combine their terms between barriers: all must get there.
    if (conditionals_ > 0) fail(what + " under an if: every thread of the block must run it");
    for (const BlockNode* outer : blocks_)
      if (outer->predicate)
        fail(what + " under block \"" + outer->name +
             "\", which has a predicate: every thread of the block must run it");
    for (const ForNode* outer : thread_loops_)
      if (outer != l && outer->thread_tag == l->thread_tag)
        fail(what + " inside loop " + loopName(outer) + ", bound to " + l->thread_tag + " too");
    kernel_->reduction_scratch.insert(crossThreadScratchDType(r->form.out->dtype));
    return l;
  }

  void visitBlock(const BlockNode& b) {
    std::string name = "block \"" + b.name + "\"";
    bool has_block = false, has_thread = false;
    for (const ForNode* l : thread_loops_) {
      has_block |= isBlockIdx(l->thread_tag);
      has_thread |= isThreadIdx(l->thread_tag);
    }
    if ((!has_block || !has_thread) && scan_)
      fail("block \"" + scan_->name +
           "\" is a step of a scan (a serial loop over steps, as a recurrent op's time steps legalize to) "
           "outside a GPU kernel: a scan runs in a kernel of one thread block, its step loop inside (as the "
           "cuda Scan rule schedules it)");
    if (!has_block || !has_thread)
      fail(name + " is not inside a GPU kernel: it is not under " +
           std::string(!has_block ? "a loop bound to blockIdx.*" : "a loop bound to threadIdx.*") +
           " (every computation must be bound to GPU blocks and threads; schedule the function for the cuda "
           "target, e.g. with the default rules)");
    if (kernel_->first_block.empty()) kernel_->first_block = b.name;
    for (const auto& iv : b.iter_vars)
      if (iv.kind == IterKind::opaque && kernel_->scan_step.empty()) kernel_->scan_step = b.name;

    // Thread dependencies of the iteration variables.
    std::set<const ForNode*> spatial_deps;
    bool reduction = b.init != nullptr;
    const ForNode* across = crossThreadLoop(b);
    for (const auto& iv : b.iter_vars) {
      auto d = threadDeps(iv.binding);
      if (iv.kind == IterKind::reduce) {
        reduction = true;
        for (const ForNode* l : thread_loops_)  // the outermost one it uses
          if (d.count(l) && l != across)
            fail(name + ": loop " + loopName(l) + " bound to " + l->thread_tag +
                 " carries a reduction (iteration variable %" + iv.var->name +
                 " is reduced over it); bind only spatial loops, or the threadIdx loop whose body is the "
                 "block (a reduction across threads)");
      } else {
        spatial_deps.insert(d.begin(), d.end());
      }
    }
    if (reduction) {
      bool global_write = false;
      for (const auto& w : b.writes) global_write |= w.buffer->scope != StorageScope::local;
      std::set<std::string> covered;
      for (const ForNode* l : spatial_deps) covered.insert(l->thread_tag);
      if (across) covered.insert(across->thread_tag);  // one thread of the axis stores
      if (global_write) kernel_->reductions.push_back({b.name, covered});
    }

    // Local buffers of the function belong to one kernel.
    for (const auto* regions : {&b.reads, &b.writes})
      for (const auto& r : *regions) noteAccess(b, r);
    for (const auto& a : b.alloc_buffers) {
      block_allocs_.insert(a.get());
      if (a->scope == StorageScope::shared) kernel_->block_shared.push_back(a);
    }

    std::vector<const VarNode*> added;
    for (const auto& iv : b.iter_vars) {
      deps_[iv.var.get()] = threadDeps(iv.binding);
      added.push_back(iv.var.get());
    }
    blocks_.push_back(&b);
    visit(b.init);
    visit(b.body);
    blocks_.pop_back();
    for (const auto* v : added) deps_.erase(v);
  }

  void noteAccess(const BlockNode& b, const BufferRegion& r) {
    const BufferNode* buf = r.buffer.get();
    if (block_allocs_.count(buf) || !function_allocs_.count(buf) || buf->scope != StorageScope::local) return;
    auto [it, fresh] = local_kernel_.emplace(buf, kernel_->root);
    if (!fresh && it->second != kernel_->root)
      fail("local buffer %" + buf->name + " is used by block \"" + b.name + "\" in " + kernelName() +
           " and by another kernel (a local buffer lives in the registers of one thread)");
  }

  // Bytes of a block-level shared buffer (its declared size).
  int64_t declaredBytes(const Buffer& buf) const {
    int64_t elems = 1;
    for (size_t d = 0; d < buf->shape.size(); ++d) {
      int64_t extent;
      if (!asConstInt(buf->shape[d], &extent))
        fail("shared buffer %" + buf->name + " used in " + kernelName() +
             " has a size that is not a constant (dimension " + std::to_string(d) + ")");
      elems *= extent;
    }
    return elems * dtypeBytes(buf->dtype);
  }

  void finishKernel() {
    // The steps of a scan wait for each other at barriers: one thread block.
    if (!kernel_->scan_step.empty())
      for (const auto& [tag, loop] : kernel_->tags) {
        int64_t e;
        if (isBlockIdx(tag) && !(asConstInt(loop->extent, &e) && e == 1))
          fail("block \"" + kernel_->scan_step + "\" is a step of a scan in " + kernelName() +
               ", whose loop %" + loop->loop_var->name + " binds " + tag + " with extent " +
               printExpr(loop->extent) +
               ": a scan's steps need all of its threads in one thread block (barriers order the steps)");
      }
    // On the GPU every thread of the kernel runs each block; a reduction
    // must give each of them its own elements.
    for (const auto& [block, covered] : kernel_->reductions)
      for (const auto& [tag, loop] : kernel_->tags) {
        int64_t e;
        if (covered.count(tag) || (asConstInt(loop->extent, &e) && e == 1)) continue;
        fail("block \"" + block + "\" is a reduction that every " + tag + " of " + kernelName() +
             " runs on the same elements (concurrent updates of one element): its output must depend on " +
             tag);
      }
    if (std::optional<std::string> race = threadBlockRace(kernel_->root_stmt))
      fail(kernelName() + ": " + *race);
    if (std::optional<std::string> race = threadStoreRace(kernel_->root_stmt))
      fail(kernelName() + ": " + *race);
    int64_t threads = 1;
    std::string parts;
    for (const auto& [tag, loop] : kernel_->tags) {
      if (!isThreadIdx(tag)) continue;
      int64_t e = 1;
      asConstInt(loop->extent, &e);
      threads *= e;
      parts += (parts.empty() ? "" : " * ") + tag + " " + std::to_string(e);
    }
    if (threads > t_.max_threads_per_block)
      fail(kernelName() + " has " + std::to_string(threads) + " threads per block (" + parts +
           "), over max_threads_per_block " + std::to_string(t_.max_threads_per_block));
    int64_t bytes = 0;
    std::string list;
    auto add = [&](const Buffer& b, int64_t n) {
      bytes += n;
      list += (list.empty() ? "" : ", ") + ("%" + b->name) + " " + std::to_string(n);
    };
    // A function-level shared buffer takes the box one thread block uses,
    // as code generation declares it (buffer_boxes.h).
    BufferBoxes boxes;
    try {
      boxes = computeBufferBoxes(f_, kernel_->root_stmt);
    } catch (const Error& e) {
      fail(kernelName() + ": " + e.what());
    }
    for (const auto& b : f_.allocs) {
      auto it = boxes.boxes.find(b.get());
      if (b->scope != StorageScope::shared || it == boxes.boxes.end()) continue;
      int64_t elems = 1;
      for (int64_t e : it->second.extent) elems *= e;
      add(b, elems * dtypeBytes(b->dtype));
    }
    for (const auto& b : kernel_->block_shared) add(b, declaredBytes(b));
    for (DType t : kernel_->reduction_scratch) {
      bytes += threads * dtypeBytes(t);
      list += (list.empty() ? "" : ", ") +
              ("the " + std::string(dtypeName(t)) + " scratch of reductions across threads ") +
              std::to_string(threads * dtypeBytes(t));
    }
    if (bytes > t_.max_shared_memory_bytes)
      fail(kernelName() + " needs " + std::to_string(bytes) + " bytes of shared memory (" + list +
           "), over max_shared_memory_bytes " + std::to_string(t_.max_shared_memory_bytes));
  }

  const PrimFunc& f_;
  const BlockNode* scan_ = nullptr;  // a block with an opaque iteration variable (a scan's step)
  const target::Target& t_;
  std::optional<Kernel> kernel_;
  std::vector<const ForNode*> thread_loops_;  // enclosing thread-bound loops
  std::vector<const ForNode*> kernel_loops_;  // enclosing loops inside the current kernel
  std::vector<const BlockNode*> blocks_;      // enclosing blocks
  std::unordered_map<const VarNode*, std::set<const ForNode*>> deps_;  // iteration variable -> thread loops
  std::set<const BufferNode*> function_allocs_, block_allocs_;
  std::map<const BufferNode*, const ForNode*> local_kernel_;
  int conditionals_ = 0;  // enclosing ifs
};

// The buffers stores under `s` write and loads under it read (block read
// regions too), and those blocks under it allocate, skipping `skip`.
struct BufferUse {
  std::set<const BufferNode*> reads, writes, allocated;
};

void collectLoadsOf(const PrimExpr& e, std::set<const BufferNode*>& out) {
  if (!e) return;
  if (const auto* l = e->as<LoadNode>()) out.insert(l->buffer.get());
  forEachChild(e, [&](const PrimExpr& x) { collectLoadsOf(x, out); });
}

void collectBufferUse(const Stmt& s, const Stmt& skip, BufferUse& u) {
  if (!s || s == skip) return;
  if (const auto* b = s->as<BlockNode>()) {
    for (const auto& r : b->reads) u.reads.insert(r.buffer.get());
    for (const auto& a : b->alloc_buffers) u.allocated.insert(a.get());
    for (const auto& iv : b->iter_vars) collectLoadsOf(iv.binding, u.reads);
    collectLoadsOf(b->predicate, u.reads);
  } else if (const auto* st = s->as<StoreNode>()) {
    u.writes.insert(st->buffer.get());
    for (const auto& i : st->indices) collectLoadsOf(i, u.reads);
    collectLoadsOf(st->value, u.reads);
  } else if (const auto* i = s->as<IfNode>()) {
    collectLoadsOf(i->cond, u.reads);
  }
  for (const auto& c : children(s)) collectBufferUse(c, skip, u);
}

}  // namespace

std::string nestedThreadLoopProblem(const ForNode& outer, const ForNode& inner) {
  const std::string in = "loop " + loopName(&inner), out = "loop " + loopName(&outer);
  const std::string tag = outer.thread_tag;
  if (!isThreadIdx(tag))
    return in + " is bound to " + tag + " inside " + out +
           ", bound to it too (only a threadIdx axis can be bound "
           "again inside its loop)";
  int64_t eo, ei;
  if (!asConstInt(outer.extent, &eo) || !asConstInt(inner.extent, &ei) || eo != ei)
    return in + " has extent " + printExpr(inner.extent) + ", but " + out + " bound to " + tag +
           " around it has extent " + printExpr(outer.extent) +
           " (its threads run it: the extents must be equal)";
  const std::optional<StmtPath> found = findLoop(outer.body, inner.loop_var.get());
  if (!found) return in + " is not under " + out;
  const std::vector<Stmt>& path = found->nodes;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const Stmt& n = path[i];
    if (const auto* b = n->as<BlockNode>())
      return "block \"" + b->name + "\" lies between " + out + " bound to " + tag + " and " + in;
    if (n->as<IfNode>()) return "an if lies between " + out + " bound to " + tag + " and " + in;
    if (const auto* f = n->as<ForNode>(); f && usesVar(f->extent, outer.loop_var.get()))
      return "the extent of loop " + loopName(f) + " between " + out + " and " + in + " uses " +
             loopName(&outer);
  }
  if (usesVar(inner.body, outer.loop_var.get()))
    return "what " + in + " runs uses " + out + " (bound to " + tag +
           " too): each thread would run another part of it";
  BufferUse under, around;
  collectBufferUse(inner.body, nullptr, under);
  for (const BufferNode* w : under.writes)
    if (w->scope != StorageScope::shared && !under.allocated.count(w))
      return in + " writes " + scopeName(w->scope) + " buffer %" + w->name +
             " (under a loop bound to the same axis, only shared buffers can be written: the threads write "
             "them together and barriers order the readers)";
  collectBufferUse(outer.body, path.back(), around);
  for (const auto* set : {&under.reads, &under.writes})
    for (const BufferNode* b : *set)
      if (around.writes.count(b))
        return "%" + b->name + ", which " + in + " uses, is written under " + out + " outside it";
  return "";
}

std::optional<CrossThreadReduction> matchCrossThreadReduction(const ForNode& loop, std::string& why) {
  const auto* b = loop.body ? loop.body->as<BlockNode>() : nullptr;
  if (!b) {
    why = "its body is not one block";
    return std::nullopt;
  }
  const std::string block = "block \"" + b->name + "\"";
  if (!b->alloc_buffers.empty()) {
    why = block + " allocates buffers";
    return std::nullopt;
  }
  std::string form_why;
  std::optional<ReductionForm> form = matchReductionForm(*b, form_why);
  if (!form) {
    why = block + " " + form_why +
          " (a reduction across threads needs `C[I] = C[I] op f`, op one of + * max min)";
    return std::nullopt;
  }
  const VarNode* v = loop.loop_var.get();
  CrossThreadReduction r{b, *form, {}, {}};
  std::vector<const VarNode*> fed;  // the loop variable and the iteration variables it feeds
  fed.push_back(v);
  for (const auto& iv : b->iter_vars) {
    if (!usesVar(iv.binding, v)) {
      if (iv.kind == IterKind::reduce) r.other_reduce.push_back(iv.var);
      continue;
    }
    if (iv.kind != IterKind::reduce) {
      why = "it feeds " + std::string(iv.kind == IterKind::spatial ? "spatial" : "opaque") +
            " iteration variable %" + iv.var->name + " of " + block;
      return std::nullopt;
    }
    fed.push_back(iv.var.get());
    if (b->init && iv.binding.get() != static_cast<const ExprNode*>(v)) {
      why = "reduce iteration variable %" + iv.var->name + " of " + block + " is bound to " +
            printExpr(iv.binding) + ", not to %" + v->name +
            " itself, and the block has an init (decompose_reduction first)";
      return std::nullopt;
    }
  }
  if (fed.size() == 1) {
    why = block + " does not reduce over it";
    return std::nullopt;
  }
  int64_t extent;
  if (!asConstInt(loop.extent, &extent)) {
    why = "its extent is not a constant";
    return std::nullopt;
  }
  auto usesFed = [&](const PrimExpr& e) {
    return anyOf(e,
                 [&](const PrimExpr& x) { return std::find(fed.begin(), fed.end(), x.get()) != fed.end(); });
  };
  if (b->predicate)
    for (const auto& c : conjuncts(b->predicate)) {
      if (!usesFed(c)) {
        r.step_guard.push_back(c);
      } else if (b->init) {
        why = "the predicate of " + block + " depends on it, and the block has an init";
        return std::nullopt;
      }
    }
  if (b->init) {
    const auto* init = b->init->as<StoreNode>();
    bool reads_out = false;
    if (init)
      for (const auto& a : accessesIn(b->init)) reads_out |= !a.is_store && a.buffer == form->out;
    if (!init || init->buffer != form->out || !sameIndices(init->indices, form->indices) || reads_out ||
        usesFed(init->value)) {
      why = "the init of " + block + " is not one store of the element it reduces into, independent of it";
      return std::nullopt;
    }
  }
  return r;
}

DType crossThreadScratchDType(DType reduced) {
  return reduced == DType::f16 || reduced == DType::bf16 ? DType::f32 : reduced;
}

std::vector<PredicateBound> predicateBounds(const PrimExpr& predicate, const Analyzer& az) {
  std::vector<PredicateBound> out;
  for (const auto& c : conjuncts(predicate)) {
    const auto* cmp = c->as<BinaryNode>();
    int64_t limit;
    if (!cmp || (cmp->op != BinaryOp::LT && cmp->op != BinaryOp::LE) || !cmp->a->as<BinaryNode>() ||
        !asConstInt(cmp->b, &limit))
      continue;
    auto range = az.constBounds(cmp->a);
    if (!range || range->first < 0) continue;
    out.push_back({cmp->a, std::min(limit + (cmp->op == BinaryOp::LE ? 1 : 0), range->second + 1)});
  }
  return out;
}

void verifyGpuFunc(const PrimFunc& func, const target::Target& target) {
  if (target.kind != target::Target::Kind::cuda)
    throw Error("verifyGpuFunc: target " + target.str() + " is not a GPU target");
  Checker(func, target).run();
}

}  // namespace mlcc::schedule
