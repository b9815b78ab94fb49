// sample_compute_location(%b): a place to compute_at the block, sampled
// uniformly among the root (leave it where it is) and the candidate loops:
// the loops above its first consumer that enclose all its consumers and at
// which compute_at is legal, outermost first. The decision is the index of
// the chosen candidate, -1 for the root; the output is a LoopRV (bound to the
// root for -1). A recorded decision out of range is an error.
#include "compute_location.h"
#include "mlcc/ir/printer.h"

namespace mlcc::schedule {

using namespace ir;
using namespace compute;

namespace {

std::vector<Var> candidateLoops(const ScheduleState& s, const std::string& name) {
  auto path = findBlock(s.func.body, name);
  const BlockNode& self = *path->target()->as<BlockNode>();
  auto outputs = writeBuffers(self);
  std::vector<PlacedBlock> consumers;
  for (auto& b : scopeBlocks(s.func.body, enclosingBlock(*path))) {
    if (b.block == &self) continue;
    bool consumes = false;
    for (const auto& o : outputs) consumes |= reads(*b.block, o);
    if (consumes) consumers.push_back(std::move(b));
  }
  std::vector<Var> out;
  if (consumers.empty()) return out;
  for (const ForNode* f : loopsAbove(consumers[0].path)) {
    bool encloses = true;
    for (const auto& c : consumers) {
      auto loops = loopsAbove(c.path);
      encloses &= std::find(loops.begin(), loops.end(), f) != loops.end();
    }
    if (!encloses) continue;
    try {
      computeAtBody(s, name, f->loop_var, false);
      out.push_back(f->loop_var);
    } catch (const ScheduleError&) {
      // not a legal place
    }
  }
  return out;
}

}  // namespace

std::vector<RVValue> applySampleComputeLocation(ScheduleState& s, const InstArgs& args,
                                                std::optional<AttrValue>& decision) {
  args.expectCount(1);
  args.allowAttrs({});
  std::string name = args.block(0);
  std::vector<Var> candidates = candidateLoops(s, name);
  const auto n = static_cast<int64_t>(candidates.size());
  int64_t index;
  if (decision) {
    if (!decision->isInt()) args.fail("the decision must be an integer, not " + printAttrValue(*decision));
    index = decision->asInt();
    if (index < -1 || index >= n)
      args.fail("decision " + std::to_string(index) + " is out of range: block \"" + name + "\" has " +
                std::to_string(n) + " candidate loop" + (n == 1 ? "" : "s") +
                " (decisions -1 for the root to " + std::to_string(n - 1) + ")");
  } else {
    index = s.randomIndex(n + 1) - 1;
    decision = AttrValue(index);
  }
  return {LoopHandle{index < 0 ? nullptr : candidates[static_cast<size_t>(index)]}};
}

LoopRV Schedule::sampleComputeLocation(const BlockRV& block) {
  return LoopRV{apply(makeInst("sample_compute_location", {ref(block)}))[0]};
}

}  // namespace mlcc::schedule
