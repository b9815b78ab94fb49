// fuse: consecutive, perfectly nested serial loops (each loop's body is
// exactly the next loop), outermost first, become one loop over the product
// of their extents.
//
//   %l5 = fuse([%l1, %l2])        for %i in 0..4 { for %j in 0..8 { B } }
//                                 -> for %i_j_fused in 0..32 { B' }
//
// Below, each old variable is replaced by its digit of the fused one,
// `(%f / stride) % extent` (the outermost without the modulo), simplified.
// The extents may be symbolic but may not use the fused loops' variables.
// The outermost loop's annotations stay on the fused loop. A single loop is
// returned unchanged.
#include "loops.h"
#include "mlcc/ir/builder.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;
using namespace ir::build;

std::vector<RVValue> applyFuse(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  std::vector<Var> vars = args.distinctLoops(0, "fuse");

  StmtPath path = *findLoop(s.func.body, vars[0].get());
  std::vector<const ForNode*> loops{path.target()->as<ForNode>()};
  for (size_t i = 1; i < vars.size(); ++i) {
    const ForNode* outer = loops.back();
    const ForNode* next = outer->body->as<ForNode>();
    if (!next || next->loop_var != vars[i]) {
      s.loop(vars[i]);  // still there?
      s.fail("cannot fuse " + ScheduleState::describe(outer->loop_var) + " and " +
             ScheduleState::describe(vars[i]) + ": the body of " + ScheduleState::describe(outer->loop_var) +
             " is not exactly " + ScheduleState::describe(vars[i]) +
             " (fuse takes directly nested loops, outermost first)");
    }
    loops.push_back(next);
  }
  if (loops.size() == 1) return {LoopHandle{vars[0]}};

  for (size_t i = 0; i < loops.size(); ++i) {
    const ForNode& l = *loops[i];
    if (l.loop_kind != LoopKind::serial)
      s.fail("cannot fuse " + ScheduleState::describe(l.loop_var) + ": it is " + kindText(l) +
             "; fuse loops before changing their kind");
    for (size_t j = 0; j < i; ++j)
      if (usesVar(l.extent, loops[j]->loop_var.get()))
        s.fail("cannot fuse " + ScheduleState::describe(l.loop_var) + ": its extent depends on " +
               ScheduleState::describe(loops[j]->loop_var));
  }

  // The fused loop and each old variable's digit of it.
  std::string name;
  PrimExpr extent = makeInt(1);
  for (const ForNode* l : loops) {
    name += l->loop_var->name + "_";
    extent = mulExtent(s, extent, l->extent);
  }
  Var fused = makeVar(name + "fused");
  Analyzer az = contextAnalyzer(path, path.nodes.size() - 1);
  az.bind(fused, makeInt(0), extent);

  VarMap digits;
  PrimExpr stride = makeInt(1);
  for (size_t i = loops.size(); i-- > 0;) {
    PrimExpr digit = i + 1 == loops.size() ? PrimExpr(fused) : PrimExpr(fused / stride);
    if (i > 0) digit = digit % loops[i]->extent;
    digits.emplace_back(loops[i]->loop_var, az.simplify(digit));
    stride = mulExtent(s, stride, loops[i]->extent);
  }

  Stmt body = substituteLoopVars(loops.back()->body, digits, az);
  s.setBody(replaceAt(path, makeFor(fused, extent, body, LoopKind::serial, {}, loops[0]->attrs)));
  return {LoopHandle{fused}};
}

LoopRV Schedule::fuse(const std::vector<LoopRV>& loops) {
  return LoopRV{apply(makeInst("fuse", {refs(loops)}))[0]};
}

}  // namespace mlcc::schedule
