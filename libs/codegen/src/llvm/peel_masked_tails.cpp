// peelMaskedTails: a rewrite before emission, invisible in the IR (values are
// unchanged). A loop split past its end (`for %o in 0..94 { for %l in 0..16
// vectorized { block where(%o * 16 + %l < 1500) ... } }`, as the reduction
// rule splits a row that no vector divides) guards every vector with its
// predicate, which LLVM turns into a mask computed and applied on each
// iteration. Where the predicate holds for every iteration but the last of an
// enclosing serial loop of constant extent (8 or more), that loop runs its
// first N - 1 iterations without the predicate and then its last one, as
// written (%o replaced by N - 1). Only predicates inside a vectorized loop
// are dropped (a scalar predicate costs a branch). Softmax over 6 x 1500 x
// 1500 at 1 thread (four such loops a row): 18.3 -> 15.1 ms.
#include "llvm/kernel_emitter.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/stmt_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::codegen {

namespace {

using namespace ir;

// `s` with the predicates of blocks inside a vectorized loop that hold over
// the ranges bound in `az` removed; `dropped` is set when one was.
Stmt dropProvenPredicates(const Stmt& s, Analyzer& az, bool in_vector, bool& dropped) {
  if (const auto* f = s->as<ForNode>()) {
    az.bind(f->loop_var, makeInt(0), f->extent);
    const bool vector = in_vector || f->loop_kind == LoopKind::vectorized;
    Stmt out = mapChildren(s, [&](const Stmt& c) { return dropProvenPredicates(c, az, vector, dropped); });
    az.unbind(f->loop_var);
    return out;
  }
  Stmt out = mapChildren(s, [&](const Stmt& c) { return dropProvenPredicates(c, az, in_vector, dropped); });
  const auto* b = out->as<BlockNode>();
  if (!b || !b->predicate || !in_vector || !az.canProve(b->predicate)) return out;
  dropped = true;
  return makeBlock(b->name, b->iter_vars, b->reads, b->writes, b->body, b->init, nullptr, b->alloc_buffers,
                   b->attrs);
}

// Loops of fewer iterations stay: LLVM unrolled the first 3 of a row of 49
// (4 vectors, Swin-T's windows) and then left one of its loops scalar.
constexpr int64_t kMinPeeledIterations = 8;

// `s` with its peelable loops (see the header comment) peeled, inner ones
// first. Loops whose iterations place compacted storage (AllocPlan::
// per_loop: a tail outside the loop would have none) stay.
Stmt peel(const Stmt& s, const AllocPlan& plan) {
  Stmt out = mapChildren(s, [&](const Stmt& c) { return peel(c, plan); });
  const auto* f = out->as<ForNode>();
  int64_t extent = 0;
  if (!f || !(f->loop_kind == LoopKind::serial || f->loop_kind == LoopKind::unrolled) ||
      !asConstInt(f->extent, &extent) || extent < kMinPeeledIterations ||
      plan.per_loop.count(f->loop_var.get()))
    return out;
  Analyzer az;
  az.bind(f->loop_var, 0, extent - 1);
  bool dropped = false;
  Stmt first = dropProvenPredicates(f->body, az, false, dropped);
  if (!dropped) return out;
  return makeSeq({makeFor(f->loop_var, makeInt(extent - 1), first, f->loop_kind, f->thread_tag, f->attrs),
                  substitute(f->body, {{f->loop_var.get(), makeInt(extent - 1)}})});
}

}  // namespace

Stmt peelMaskedTails(const Stmt& body, const AllocPlan& plan) { return body ? peel(body, plan) : body; }

}  // namespace mlcc::codegen
