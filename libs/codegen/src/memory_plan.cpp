// Greedy-by-size, first-fit placement of live ranges in one workspace (see
// memory_plan.h).
#include "memory_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

uint64_t alignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

bool liveTogether(const LiveTensor& a, const LiveTensor& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

MemoryPlan planMemory(const std::vector<LiveTensor>& tensors, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw Error("memory plan: alignment " + std::to_string(alignment) + " is not a power of two");
  MemoryPlan plan;
  plan.offsets.assign(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].last < tensors[i].first)
      throw Error("memory plan: tensor " + std::to_string(i) + " is last used (step " +
                  std::to_string(tensors[i].last) + ") before it is written (step " +
                  std::to_string(tensors[i].first) + ")");
    plan.sum_bytes += tensors[i].bytes;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (tensors[a].bytes != tensors[b].bytes) return tensors[a].bytes > tensors[b].bytes;
    return tensors[a].first < tensors[b].first;
  });
  // The placed tensors, as [offset, end) intervals, kept sorted by offset.
  struct Placed {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const LiveTensor& t = tensors[i];
    if (t.bytes == 0) continue;
    const uint64_t size = alignUp(t.bytes, alignment);
    uint64_t offset = 0;
    for (const Placed& p : placed) {  // by increasing offset: the first gap that fits
      if (!liveTogether(tensors[p.index], t)) continue;
      if (p.begin >= offset + size) break;
      offset = std::max(offset, alignUp(p.end, alignment));
    }
    plan.offsets[i] = offset;
    plan.workspace_bytes = std::max(plan.workspace_bytes, offset + size);
    Placed np{offset, offset + t.bytes, i};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), np,
                                   [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
                  np);
  }
  return plan;
}

}  // namespace mlcc::codegen
