// reorder: puts the given loops in the given order (outermost first), in the
// positions they occupied.
//
//   reorder([%l3, %l1])     for %i { for %j { for %k { B } } }
//                           -> for %k { for %j { for %i { B } } }
//
// The loops lie on one chain of perfectly nested loops: from the outermost
// to the innermost given loop each loop's body is exactly the next loop (other
// loops in between stay in place; no sibling statements, no block). Each
// loop keeps its kind and annotations. Refused when a loop's extent would use
// a loop below it, when a moved loop feeds an opaque iteration variable, or
// when a store below the loops is outside a block. Blocks are assumed to follow
// TensorIR's rules: instances with different spatial values are independent,
// and the order of a reduction's iterations changes only the rounding.
#include <algorithm>

#include "loops.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;

std::vector<RVValue> applyReorder(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  std::vector<Var> vars = args.distinctLoops(0, "reorder");

  // The innermost given loop: the one with the longest path. Every given loop
  // must be on its path.
  std::vector<StmtPath> paths;
  size_t inner = 0;
  for (const auto& v : vars) {
    paths.push_back(*findLoop(s.func.body, v.get()));
    if (paths.back().nodes.size() > paths[inner].nodes.size()) inner = paths.size() - 1;
  }
  const StmtPath& path = paths[inner];
  std::vector<size_t> depth;  // of each given loop on `path`
  for (size_t i = 0; i < vars.size(); ++i) {
    const size_t d = paths[i].nodes.size() - 1;
    if (path.nodes[d] != paths[i].target())
      s.fail("cannot reorder " + ScheduleState::describe(vars[i]) + " and " +
             ScheduleState::describe(vars[inner]) + ": they are not nested in one another");
    depth.push_back(d);
  }
  const size_t top = *std::min_element(depth.begin(), depth.end());
  const size_t bottom = path.nodes.size() - 1;

  // The chain from the outermost to the innermost given loop.
  std::vector<const ForNode*> chain;
  for (size_t d = top; d < bottom; ++d) {
    const auto* f = path.nodes[d]->as<ForNode>();
    if (const auto* b = path.nodes[d]->as<BlockNode>())
      s.fail("cannot reorder " + ScheduleState::describe(vars[inner]) + ": " + ScheduleState::describe(*b) +
             " lies between the loops");
    if (!f || f->body != path.nodes[d + 1])
      s.fail("cannot reorder: the body of " + ScheduleState::describe((f ? f : chain.back())->loop_var) +
             " is not exactly the next loop (the loops must be perfectly nested)");
    chain.push_back(f);
  }
  chain.push_back(path.target()->as<ForNode>());

  // The new chain: the given loops, in the given order, take the positions
  // the given loops occupied.
  std::vector<size_t> positions;
  for (size_t d : depth) positions.push_back(d - top);
  std::sort(positions.begin(), positions.end());
  std::vector<const ForNode*> order = chain;
  for (size_t i = 0; i < vars.size(); ++i) order[positions[i]] = path.nodes[depth[i]]->as<ForNode>();

  for (size_t p = 0; p < order.size(); ++p)
    for (size_t q = p; q < order.size(); ++q)
      if (usesVar(order[p]->extent, order[q]->loop_var.get()))
        s.fail("cannot reorder: the extent of " + ScheduleState::describe(order[p]->loop_var) +
               " depends on " + ScheduleState::describe(order[q]->loop_var) + ", which would be inside it");

  checkOnlyBlocks(s, *chain.back(), "reorder the loops");
  forEachBlock(chain.back()->body, [&](const BlockNode& b, const StmtPath& p) {
    if (enclosingBlock(p)) return;  // inside another block: sees no loop of the chain
    for (const auto& iv : b.iter_vars)
      for (const auto& v : vars)
        if (iv.kind == IterKind::opaque && usesVar(iv.binding, v.get()))
          s.fail("cannot reorder " + ScheduleState::describe(v) +
                 ": it is bound to the opaque iteration variable %" + iv.var->name + " of " +
                 ScheduleState::describe(b));
  });

  Stmt body = chain.back()->body;
  for (size_t p = order.size(); p-- > 0;) {
    ForParts f(*order[p]);
    f.body = body;
    body = f.build();
  }
  s.setBody(replaceAt(path, top, body));
  return {};
}

void Schedule::reorder(const std::vector<LoopRV>& loops) { apply(makeInst("reorder", {refs(loops)})); }

}  // namespace mlcc::schedule
