// Analyses of a prim func's function-level allocations for the code
// generators (analyzeAllocs, one walk of the function for both): which are
// written before they are read, and which live in a box per iteration of one
// loop.
//
// Written before read: the allocations written before they are read,
// element by element, in every execution. A fresh allocation is
// zero-filled by the IR's semantics; for these the zeros can never be
// observed, so a code generator may leave them out (a 4.8 MB intermediate
// of a fused convolution was memset on every call).
//
// A read is covered when some store to the same buffer runs before it, for
// the same iteration of the loops enclosing both, and writes a box of
// elements that holds everything the read touches:
//   - the store is in an earlier statement of the sequence where the two
//     diverge (a producer nest before its consumer, at the top level or
//     under a shared tile loop after compute_at);
//   - nothing between that point and the store can skip it: no `if`, no
//     block `init`, no block predicate but one that only keeps the block's
//     store inside its buffer (each conjunct `index < c`, c >= that
//     dimension's extent, or `index >= 0`: a split that does not divide a
//     dimension), every loop of constant extent >= 1;
//   - along each buffer dimension its index is the shared loops' part plus
//     a dense sum of its own loops (coefficients 1, e1, e1*e2, ...: every
//     point of [0, span) once), no loop of its own in two dimensions;
//   - the read's index minus the shared part lies in [0, span) for every
//     value of the read's own loops.
// Indices are taken through block bindings down to loop variables and
// simplified with the loops' ranges. Anything else (a symbolic extent in
// the writer's own loops, a non-linear index, a read in a binding) counts
// as not covered: the buffer stays zero-filled.
//
// Compactable: an allocation written before read whose accesses all
// sit under one loop (the deepest loop around every one of them), each
// within [base, base + extent) along every dimension for an iteration of that
// loop, with the same base (an expression of that loop's and outer loops'
// variables) for all: no value crosses iterations of the loop, so the
// allocation can be a buffer of the box's shape per iteration (a fused
// convolution's output tile instead of its whole output). Only boxes of at
// most kMaxCompactBytes, smaller than the buffer (any box, for a buffer of
// symbolic shape: a dynamic batch's intermediates).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

inline constexpr int64_t kMaxCompactBytes = 64 * 1024;

struct AllocBox {
  Var loop;                    // the loop variable of the loop it lives under
  std::vector<PrimExpr> base;  // per dimension, in loop variables
  std::vector<int64_t> extent;
};

struct AllocAnalysis {
  // The buffers of f.allocs whose every read is covered.
  std::unordered_set<const BufferNode*> written_before_read;
  // Those that can live in a box per iteration of a loop, with their boxes.
  std::unordered_map<const BufferNode*, AllocBox> boxes;
};
AllocAnalysis analyzeAllocs(const PrimFunc& f);

}  // namespace mlcc::ir
