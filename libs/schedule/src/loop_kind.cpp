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
// instances with different spatial values write different elements. A
// thread tag is bound at most once on a path from the root.
#include "loops.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

void checkIndependentIterations(const ScheduleState& s, const ForNode& loop, const std::string& verb) {
  const std::string name = ScheduleState::describe(loop.loop_var);
  checkOnlyBlocks(s, loop, verb + " " + name);
  for (const BlockNode* b : blocksUnder(loop)) {
    bool feeds_spatial = false;
    for (const auto& iv : b->iter_vars) {
      if (!usesVar(iv.binding, loop.loop_var.get())) continue;
      if (iv.kind == IterKind::reduce)
        s.fail("cannot " + verb + " " + name + ": it carries a reduction of " + ScheduleState::describe(*b) +
               " (iteration variable %" + iv.var->name + ")");
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

// The first loop bound to `tag` in `s` (inside blocks too), or nullptr.
const ForNode* findThreadTag(const Stmt& s, const std::string& tag) {
  if (!s) return nullptr;
  if (const auto* f = s->as<ForNode>(); f && f->loop_kind == LoopKind::thread_binding && f->thread_tag == tag)
    return f;
  for (const auto& c : children(s))
    if (const auto* f = findThreadTag(c, tag)) return f;
  return nullptr;
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
    const ForNode* other = findThreadTag(loop.body, tag);
    for (size_t i = 0; !other && i + 1 < path.nodes.size(); ++i) {
      const auto* f = path.nodes[i]->as<ForNode>();
      if (f && f->loop_kind == LoopKind::thread_binding && f->thread_tag == tag) other = f;
    }
    if (other)
      s.fail("cannot bind " + name + " to " + tag + ": " + ScheduleState::describe(other->loop_var) +
             " on the same path is already bound to it");
  }
  if (kind != LoopKind::unrolled) checkIndependentIterations(s, loop, verb);
  ForParts p(loop);
  p.loop_kind = kind;
  p.thread_tag = tag;
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
