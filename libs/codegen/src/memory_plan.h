// A static memory plan: offsets in one workspace for tensors with known
// sizes and live ranges, reusing the space of tensors that are dead.
//
// Algorithm ("greedy by size, first fit", as TFLite's arena planner): the
// tensors are placed from the largest to the smallest (ties: earlier first
// use, then index); each goes to the lowest offset, a multiple of the
// alignment, where it overlaps no tensor already placed whose live range
// intersects its own. Live ranges are closed intervals of step indices, so a
// tensor last read by step i never shares memory with one step i writes.
// Deterministic; O(n^2) in the number of tensors, fine for graphs.
#pragma once

#include <cstdint>
#include <vector>

namespace mlcc::codegen {

struct LiveTensor {
  uint64_t bytes = 0;  // 0: needs no memory (offset 0)
  int first = 0;       // the step that writes it
  int last = 0;        // the last step that reads it (>= first)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per tensor, multiples of the alignment
  uint64_t workspace_bytes = 0;   // the size the offsets need, a multiple of the alignment
  uint64_t sum_bytes = 0;         // the sum of all tensors' sizes (no reuse)
};

// Throws mlcc::Error on a range with last < first or an alignment that is not
// a power of two.
MemoryPlan planMemory(const std::vector<LiveTensor>& tensors, uint64_t alignment = 64);

}  // namespace mlcc::codegen
