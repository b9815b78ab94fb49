// Loop kinds: parallel, vectorize, unroll and bind (to a GPU thread axis)
// change how a serial loop runs, not what it computes.
//
//   parallel(%l1)   vectorize(%l2)   unroll(%l3)   bind(%l4, "threadIdx.x")
//
// Only a serial loop changes its kind (re-applying the same kind is an error
// too). unroll takes any serial loop. parallel, vectorize and bind run the
// iterations in any order or at once, so the iterations must be independent:
// every store under the loop is in a block, and in each block directly under
// the loop the loop variable feeds only spatial iteration variables (not a
// reduction) and feeds at least one (otherwise every iteration would redo
// the same block instance), unless the loop has one iteration (a unit loop,
// add_unit_loop.cpp). Blocks are assumed to follow TensorIR's rule that
// instances with different spatial values write different elements.
//
// A threadIdx axis may be bound again inside its loop, as the MLC course's
// cooperative fetch does (the threads of a block each copy a share of a
// shared tile computed under their loop): the inner loop runs in the same
// threads, iteration t in thread t, when gpu_check's
// nestedThreadLoopProblem finds nothing (equal extents, what the inner loop
// runs independent of the outer one and writing only shared buffers). The
// blocks under the inner loop then need not depend on the outer one.
// Other axes are bound at most once on a path from the root.
//
// A loop bound to threadIdx.* may carry a reduction when its body is the
// one block that reduces over it, of gpu_check.h's CrossThreadReduction
// form (`s = s + x[%t]`, as rfactor leaves the sum of partial results): the
// threads then each compute their term and combine them, as TVM's
// cross-thread reduction does.
#include "loops.h"
#include "mlcc/schedule/gpu_check.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// `skip`: blocks run by the threads of a nested loop bound to the same axis.
// `across`: why the loop cannot reduce across threads, added to a refusal
// for carrying a reduction.
void checkIndependentIterations(const ScheduleState& s, const ForNode& loop, const std::string& verb,
                                const std::set<const BlockNode*>& skip = {}, const std::string& across = "") {
  const std::string name = ScheduleState::describe(loop.loop_var);
  checkOnlyBlocks(s, loop, verb + " " + name);
  for (const BlockNode* b : blocksUnder(loop)) {
    if (skip.count(b)) continue;
    bool feeds_spatial = false;
    for (const auto& iv : b->iter_vars) {
      if (!usesVar(iv.binding, loop.loop_var.get())) continue;
      if (iv.kind == IterKind::reduce)
        s.fail("cannot " + verb + " " + name + ": it carries a reduction of " + ScheduleState::describe(*b) +
               " (iteration variable %" + iv.var->name + ")" +
               (across.empty() ? "" : "; it cannot reduce across threads: " + across));
      if (iv.kind == IterKind::opaque)
        s.fail("cannot " + verb + " " + name + ": it is bound to the opaque iteration variable %" +
               iv.var->name + " of " + ScheduleState::describe(*b));
      feeds_spatial = true;
    }
    int64_t extent = 0;
    const bool one_iteration = asConstInt(loop.extent, &extent) && extent == 1;
    if (!feeds_spatial && !one_iteration)
      s.fail("cannot " + verb + " " + name + ": " + ScheduleState::describe(*b) +
             " under it does not depend on it, so every iteration would redo the same writes");
  }
}

// The outermost loops bound to `tag` in `s` (inside blocks too).
void findThreadTag(const Stmt& s, const std::string& tag, std::vector<const ForNode*>& out) {
  if (!s) return;
  if (const auto* f = s->as<ForNode>();
      f && f->loop_kind == LoopKind::thread_binding && f->thread_tag == tag) {
    out.push_back(f);
    return;
  }
  for (const auto& c : children(s)) findThreadTag(c, tag, out);
}

// Binds the loop of `path` to `tag` in a new body; fails where a loop on
// its path is bound to `tag` and cannot share its threads.
Stmt bindLoop(const ScheduleState& s, const StmtPath& path, const std::string& tag) {
  const ForNode& loop = *path.target()->as<ForNode>();
  const std::string name = ScheduleState::describe(loop.loop_var);
  const ForNode* outer = nullptr;  // the nearest enclosing loop bound to the tag
  for (size_t i = 0; i + 1 < path.nodes.size(); ++i)
    if (const auto* f = path.nodes[i]->as<ForNode>();
        f && f->loop_kind == LoopKind::thread_binding && f->thread_tag == tag)
      outer = f;
  std::vector<const ForNode*> inner;
  findThreadTag(loop.body, tag, inner);
  std::set<const BlockNode*> shared_work;
  for (const ForNode* f : inner)
    for (const BlockNode* b : blocksUnder(*f)) shared_work.insert(b);
  // A threadIdx loop may carry the reduction of the one block it runs:
  // its threads then combine their terms (gpu_check.h).
  std::string not_across = "only a threadIdx axis can";
  bool across = false;
  if (tag.rfind("threadIdx.", 0) == 0) across = matchCrossThreadReduction(loop, not_across).has_value();
  if (!across) checkIndependentIterations(s, loop, "bind", shared_work, not_across);
  ForParts p(loop);
  p.loop_kind = LoopKind::thread_binding;
  p.thread_tag = tag;
  Stmt body = replaceAt(path, p.build());
  // The pairs again in the new body (the loop now bound), outer first.
  std::vector<std::pair<const VarNode*, const VarNode*>> pairs;
  if (outer) pairs.push_back({outer->loop_var.get(), loop.loop_var.get()});
  for (const ForNode* f : inner) pairs.push_back({loop.loop_var.get(), f->loop_var.get()});
  for (const auto& [o, i] : pairs) {
    const auto* o_loop = findLoop(body, o)->target()->as<ForNode>();
    const auto* i_loop = findLoop(body, i)->target()->as<ForNode>();
    if (std::string why = nestedThreadLoopProblem(*o_loop, *i_loop); !why.empty())
      s.fail("cannot bind " + name + " to " + tag + ": " + why);
  }
  return body;
}

std::vector<RVValue> setKind(ScheduleState& s, const Var& v, LoopKind kind, const std::string& tag,
                             const std::string& verb) {
  StmtPath path = *findLoop(s.func.body, v.get());
  const ForNode& loop = *path.target()->as<ForNode>();
  const std::string name = ScheduleState::describe(v);
  if (kind == LoopKind::thread_binding && !isValidThreadTag(tag))
    s.fail("cannot bind " + name + " to \"" + tag +
           "\": not a thread axis (blockIdx.x|y|z, threadIdx.x|y|z or vthread)");
  if (loop.loop_kind == kind && loop.thread_tag == tag)
    s.fail("cannot " + verb + " " + name + ": it is already " + kindText(loop));
  if (loop.loop_kind != LoopKind::serial)
    s.fail("cannot " + verb + " " + name + ": it is " + kindText(loop) +
           ", and only serial loops change their kind");
  if (kind == LoopKind::thread_binding) {
    s.setBody(bindLoop(s, path, tag));
    return {};
  }
  if (kind != LoopKind::unrolled) checkIndependentIterations(s, loop, verb);
  ForParts p(loop);
  p.loop_kind = kind;
  s.setBody(replaceAt(path, p.build()));
  return {};
}

// parallel, vectorize and unroll: one loop operand, no attributes.
std::vector<RVValue> applyKindOfOneLoop(ScheduleState& s, const InstArgs& args, LoopKind kind,
                                        const char* inst) {
  args.expectCount(1);
  args.allowAttrs({});
  return setKind(s, args.loop(0), kind, "", inst);
}

}  // namespace

std::vector<RVValue> applyParallel(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return applyKindOfOneLoop(s, args, LoopKind::parallel, "parallelize");
}

std::vector<RVValue> applyVectorize(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return applyKindOfOneLoop(s, args, LoopKind::vectorized, "vectorize");
}

std::vector<RVValue> applyUnroll(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return applyKindOfOneLoop(s, args, LoopKind::unrolled, "unroll");
}

std::vector<RVValue> applyBind(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  Var v = args.loop(0);
  return setKind(s, v, LoopKind::thread_binding, args.string(1), "bind");
}

void Schedule::parallel(const LoopRV& loop) { apply(makeInst("parallel", {ref(loop)})); }
void Schedule::vectorize(const LoopRV& loop) { apply(makeInst("vectorize", {ref(loop)})); }
void Schedule::unroll(const LoopRV& loop) { apply(makeInst("unroll", {ref(loop)})); }
void Schedule::bind(const LoopRV& loop, const std::string& thread_tag) {
  apply(makeInst("bind", {ref(loop), thread_tag}));
}

}  // namespace mlcc::schedule
