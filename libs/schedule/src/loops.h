// Helpers shared by the loop primitives (split, fuse, reorder, loop kinds):
// the ranges of the loops around a statement, rewriting a loop body after
// its loop variables changed, and the checks on the blocks under a loop.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/stmt.h"
#include "tree.h"

namespace mlcc::schedule {

class ScheduleState;

using VarMap = std::vector<std::pair<ir::Var, ir::PrimExpr>>;

// An Analyzer knowing the ranges of the loops and block iteration variables
// on path.nodes[0 .. depth) (the context of path.nodes[depth]).
ir::Analyzer contextAnalyzer(const StmtPath& path, size_t depth);

// `s` with the variables of `vars` substituted, and the bindings and
// predicates of the blocks in it simplified with `az` (plus the ranges of the
// loops inside `s`). Only the blocks reachable without entering another block
// are touched: their insides cannot see loop variables from outside.
ir::Stmt substituteLoopVars(const ir::Stmt& s, const VarMap& vars, ir::Analyzer az);

// `s` with each block directly under it (not nested in another block)
// replaced by fn(block).
ir::Stmt mapChildBlocks(const ir::Stmt& s, const std::function<ir::Stmt(const ir::BlockNode&)>& fn);

// The blocks under a loop, not nested in another block, in program order.
std::vector<const ir::BlockNode*> blocksUnder(const ir::ForNode& loop);

// The first store under `s` that is not inside a block, or nullptr.
const ir::StoreNode* storeOutsideBlocks(const ir::Stmt& s);

// Fails unless the blocks under `loop` can be reasoned about: every store
// under the loop is inside a block. `action` is for the message, e.g.
// "vectorize loop %j" (-> "cannot vectorize loop %j: loop %j has a store...").
void checkOnlyBlocks(const ScheduleState& s, const ir::ForNode& loop, const std::string& action);

// The loop's kind as written in the IR: "parallel", "thread_binding(threadIdx.x)".
std::string kindText(const ir::ForNode& loop);

// A loop nest as blockize and tensorize take it: loops, each the only
// statement in the one above, around one block whose body is one store and
// which has no nested block.
struct PerfectNest {
  std::vector<const ir::ForNode*> loops;  // outermost first; may be empty
  const ir::BlockNode* block = nullptr;
  const ir::StoreNode* store = nullptr;
};
// The perfect nest starting at `s`, or nullopt with the reason in `why`.
std::optional<PerfectNest> perfectNest(const ir::Stmt& s, std::string* why);

// Product of two i64 extents, folded when constant; fails on overflow.
ir::PrimExpr mulExtent(const ScheduleState& s, const ir::PrimExpr& a, const ir::PrimExpr& b);

}  // namespace mlcc::schedule
