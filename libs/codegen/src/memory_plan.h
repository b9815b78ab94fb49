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

#include "mlcc/ir/expr.h"

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

// A memory plan for sizes that depend on symbolic dimensions (i64
// expressions of them), valid for every value of the dimensions (>= 0).
//
// Scaled (the usual case, a symbolic batch): when every symbolic size is a
// constant c_i times one product U of dimensions (`n`, or `n * m`), the
// static plan (planMemory) of the sizes c_i, with offsets multiplied by U,
// is valid for every U; tensors of constant size get their own static plan
// after it. `offsets` and `workspace_bytes` are then expressions.
//
// Otherwise stacked: tensors are placed in order of first use, each just
// above every tensor already placed whose live range intersects its own
// (no first-fit into gaps, whose sizes would depend on the dimensions; a
// chain of tensors does not reuse memory). The offsets are computed when
// the sizes are known, in `order`:
//   offset[i] = max(0, max over j in below[i] of offset[j] + sizes[j])
//   workspace = max over i of offset[i] + sizes[i]
// (kept as this recurrence: written out as expressions, the nested maxima
// would grow exponentially with the number of tensors).
struct LiveSymbolicTensor {
  ir::PrimExpr bytes;
  int first = 0, last = 0;
};
struct SymbolicMemoryPlan {
  std::vector<ir::PrimExpr> sizes;         // per tensor: its bytes rounded up to the alignment
  std::vector<std::vector<size_t>> below;  // per tensor: the earlier-placed tensors it goes above
  std::vector<size_t> order;               // placement order
  ir::PrimExpr sum_bytes;                  // all tensors' bytes (no reuse)
  // Scaled plans: the offsets and the workspace size (else empty / null).
  std::vector<ir::PrimExpr> offsets;
  ir::PrimExpr workspace_bytes;
};
SymbolicMemoryPlan planSymbolicMemory(const std::vector<LiveSymbolicTensor>& tensors,
                                      uint64_t alignment = 64);

// The value of an i64 expression of symbolic dimensions for the given
// values (throws mlcc::Error when it does not fold to a constant).
int64_t evalDims(const ir::PrimExpr& e, const std::vector<const ir::VarNode*>& dims,
                 const std::vector<int64_t>& values);

// A symbolic plan evaluated for the given values of its dimensions.
MemoryPlan evaluateMemoryPlan(const SymbolicMemoryPlan& plan, const std::vector<const ir::VarNode*>& dims,
                              const std::vector<int64_t>& values);

}  // namespace mlcc::codegen
