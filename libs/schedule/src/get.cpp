// Navigation instructions: get_block, get_loops, get_child_blocks,
// get_producers, get_consumers. They change nothing; they bind random
// variables to the blocks and loops the other primitives take.
#include <algorithm>

#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// The blocks in the same scope as `name` (the same enclosing block, or the
// function's top level), in program order.
std::vector<const BlockNode*> scopeBlocks(const ScheduleState& s, const std::string& name) {
  auto path = findBlock(s.func.body, name);
  const BlockNode* scope = enclosingBlock(*path);
  std::vector<const BlockNode*> out;
  forEachBlock(s.func.body, [&](const BlockNode& b, const StmtPath& p) {
    if (enclosingBlock(p) == scope) out.push_back(&b);
  });
  return out;
}

bool intersects(const std::vector<Buffer>& a, const std::vector<Buffer>& b) {
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  return false;
}

std::vector<RVValue> related(const ScheduleState& s, const InstArgs& args, bool producers) {
  args.expectCount(1);
  args.allowAttrs({});
  std::string name = args.block(0);
  const BlockNode& self = s.block(name);
  std::vector<RVValue> out;
  for (const BlockNode* b : scopeBlocks(s, name)) {
    if (b == &self) continue;
    bool rel = producers ? intersects(writeBuffers(*b), readBuffers(self))
                         : intersects(writeBuffers(self), readBuffers(*b));
    if (rel) out.push_back(BlockHandle{b->name});
  }
  return out;
}

}  // namespace

std::vector<RVValue> applyGetBlock(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  std::string name = args.string(0);
  s.block(name);
  return {BlockHandle{name}};
}

std::vector<RVValue> applyGetLoops(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(1);
  args.allowAttrs({});
  auto path = findBlock(s.func.body, args.block(0));
  std::vector<RVValue> out;
  for (const ForNode* f : loopsAbove(*path)) out.push_back(LoopHandle{f->loop_var});
  return out;
}

std::vector<RVValue> applyGetChildBlocks(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.allowAttrs({});
  if (args.size() > 1) args.fail("takes at most one argument (a loop)");
  Stmt under = s.func.body;
  if (args.size() == 1) {
    Var v = args.loop(0, /*allow_root=*/true);
    if (v) under = findLoop(s.func.body, v.get())->target();
  }
  std::vector<RVValue> out;
  for (const BlockNode* b : childBlocks(under)) out.push_back(BlockHandle{b->name});
  return out;
}

std::vector<RVValue> applyGetProducers(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return related(s, args, true);
}

std::vector<RVValue> applyGetConsumers(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  return related(s, args, false);
}

// --- Schedule methods ----------------------------------------------------------

BlockRV Schedule::getBlock(const std::string& name) {
  return BlockRV{apply(makeInst("get_block", {name}))[0]};
}

std::vector<LoopRV> Schedule::getLoops(const BlockRV& block) {
  return asRVs<LoopRV>(apply(makeInst("get_loops", {ref(block)})));
}

std::vector<BlockRV> Schedule::getChildBlocks(const std::optional<LoopRV>& loop) {
  std::vector<AttrValue> inputs;
  if (loop) inputs.push_back(ref(*loop));
  return asRVs<BlockRV>(apply(makeInst("get_child_blocks", std::move(inputs))));
}

std::vector<BlockRV> Schedule::getProducers(const BlockRV& block) {
  return asRVs<BlockRV>(apply(makeInst("get_producers", {ref(block)})));
}

std::vector<BlockRV> Schedule::getConsumers(const BlockRV& block) {
  return asRVs<BlockRV>(apply(makeInst("get_consumers", {ref(block)})));
}

}  // namespace mlcc::schedule
