// Buffer accesses of a prim func that are provably out of bounds (used by
// the verifier, see access_bounds.cpp for what "provably" covers).
#pragma once

#include <optional>
#include <string>

#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

struct OutOfBoundsAccess {
  const void* node = nullptr;        // the StoreNode or LoadNode
  const StmtNode* stmt = nullptr;    // the statement it is in
  const BlockNode* block = nullptr;  // the innermost enclosing block, if any
  std::string message;               // "store to %y[...] is out of bounds: ..."
};

// The first access of `f` (in program order) that some iteration executes
// with an index outside its buffer's dimension, or nullopt. Assumes `f` is
// otherwise well formed (the verifier's other checks passed).
std::optional<OutOfBoundsAccess> findOutOfBoundsAccess(const PrimFunc& f);

}  // namespace mlcc::ir
