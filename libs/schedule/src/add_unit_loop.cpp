// add_unit_loop: a new serial loop of extent 1 around a block or a loop
// (TVM's add_unit_loop), so that a block without loops of its own (a
// scalar's block, a whole-buffer reduction after rfactor) can be bound to a
// thread axis or computed at like any other.
//
//   %l3 = add_unit_loop(%b0)     block "b" { ... }  ->  for %b_unit in 0..1 { block "b" { ... } }
//   %l4 = add_unit_loop(%l1)     for %i { ... }     ->  for %i_unit in 0..1 { for %i { ... } }
//
// The new variable is used nowhere, so the program computes the same.
#include "mlcc/ir/builder.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;
using namespace ir::build;

std::vector<RVValue> applyAddUnitLoop(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  StmtPath path;
  std::string base;
  if (args.isBlock(0)) {
    base = args.block(0);
    path = *findBlock(s.func.body, base);
  } else {
    Var loop = args.loop(0);  // reports a missing or wrong argument
    path = *findLoop(s.func.body, loop.get());
    base = loop->name;
  }
  Var unit = makeVar(base + "_unit");
  s.setBody(replaceAt(path, makeFor(unit, makeInt(1), path.target(), LoopKind::serial, {}, {})));
  return {LoopHandle{unit}};
}

LoopRV Schedule::addUnitLoop(const BlockRV& block) {
  return LoopRV{apply(makeInst("add_unit_loop", {ref(block)}))[0]};
}

LoopRV Schedule::addUnitLoop(const LoopRV& loop) {
  return LoopRV{apply(makeInst("add_unit_loop", {ref(loop)}))[0]};
}

}  // namespace mlcc::schedule
