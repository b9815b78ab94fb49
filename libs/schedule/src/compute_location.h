// Helpers shared by the compute-location primitives (compute_at.cpp,
// compute_inline.cpp, sample_compute_location.cpp): where a block sits among
// the top-level loop nests of its scope, which blocks touch which buffers,
// element-wise stores, rebinding a block's predicate, exact index sets, and
// rewriting loads.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/stmt.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule::compute {

// Fails with "<prefix><why>", e.g. `cannot inline block "B": ` + why.
struct Refusal {
  const ScheduleState& s;
  std::string prefix;
  [[noreturn]] void operator()(const std::string& why) const { s.fail(prefix + why); }
};

// An expression or a buffer access for messages, with loop and iteration
// variables written %name as in the IR text (symbolic dimensions bare).
std::string exprText(const ir::PrimExpr& e, const ir::PrimFunc& f);
std::string accessText(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices,
                       const ir::PrimFunc& f);

// --- positions -----------------------------------------------------------------

// The top-level statement of a scope (the function body or the body of the
// enclosing block) that holds a path's target: its index in path.nodes and
// its position among the scope's statements.
struct TopItem {
  size_t depth;
  size_t position;
};
TopItem topItem(const StmtPath& path);
// The position of the function's top-level statement that holds the target
// (nested sequences at the top flattened).
size_t rootPosition(const StmtPath& path);

// A block with its path from the function body, its index in a pre-order
// walk, and the top-level statement of its scope that holds it.
struct PlacedBlock {
  const ir::BlockNode* block;
  StmtPath path;
  size_t order;
  TopItem top;
};

// Every block of the function (pre-order), and those of one scope (the
// function's top level for scope == nullptr, or the blocks directly under a
// block).
std::vector<PlacedBlock> allBlocks(const ir::Stmt& body);
std::vector<PlacedBlock> scopeBlocks(const ir::Stmt& body, const ir::BlockNode* scope);

// Whether `stmt` lies on `path` (the path's target is inside it).
bool isUnder(const StmtPath& path, const ir::Stmt& stmt);

// Whether the loops from path.nodes[top] down to the block form a perfect
// nest holding only the block.
bool aloneInNest(const StmtPath& block_path, size_t top);

// --- buffers -------------------------------------------------------------------

bool reads(const ir::BlockNode& b, const ir::Buffer& buf);
bool writes(const ir::BlockNode& b, const ir::Buffer& buf);
bool isParam(const ir::PrimFunc& f, const ir::Buffer& buf);
// Whether a statement mentions the buffer (loads, stores, regions).
bool usesBuffer(const ir::Stmt& s, const ir::Buffer& buf);
// Removes the allocation of `buf` (function or block level) when nothing
// uses it any more.
void dropAllocIfUnused(ScheduleState& s, const ir::Buffer& buf);

// `e` with every load of `buf` replaced by fn(load indices); the indices are
// rewritten first.
ir::PrimExpr replaceLoads(const ir::PrimExpr& e, const ir::Buffer& buf,
                          const std::function<ir::PrimExpr(const std::vector<ir::PrimExpr>&)>& fn);
// The indices of every load of `buf` in a statement.
std::vector<std::vector<ir::PrimExpr>> loadsOf(const ir::Stmt& s, const ir::Buffer& buf);
// The indices of every store into `buf` in a statement.
std::vector<std::vector<ir::PrimExpr>> storesOf(const ir::Stmt& s, const ir::Buffer& buf);

// `regions` plus `extra`, leaving out those already present.
void addRegions(std::vector<ir::BufferRegion>& regions, const std::vector<ir::BufferRegion>& extra);

// --- blocks --------------------------------------------------------------------

// A block computing one element per iteration: spatial iteration variables
// only, no init, a body that is one store into the one buffer it writes, at
// indices that are distinct iteration variables (each used once) or 0 along
// dimensions of extent 1, over a domain that covers the buffer.
struct ElementwiseStore {
  const ir::StoreNode* store;
  std::vector<int> dim_iter;  // per buffer dimension: the iteration variable, or -1 (index 0)
};
// nullopt and `why` (a predicate phrase: "is a reduction") when it is not.
std::optional<ElementwiseStore> elementwiseStore(const ir::BlockNode& b, const ir::PrimFunc& f,
                                                 std::string* why);

ir::PrimExpr conjunction(const std::vector<ir::PrimExpr>& conds);  // nullptr for none

// The block's `where` predicate for new bindings of its iteration variables
// (new_bindings, one per iteration variable): a conjunct comparing the old
// binding of an iteration variable with a bound free of `old_loops` compares
// the new binding instead; a bound (<, <=, >, >=) on an affine combination
// of loops that are each exactly some iteration variable's binding (a
// non-exact split's `k_0 * 16 + k_1 < n` after rfactor) is rewritten with
// the new bindings in their place; a conjunct that holds on every iteration of `old_loops` is dropped.
// nullopt (and the conjunct in `bad`) for any other.
std::optional<std::vector<ir::PrimExpr>> rebindPredicate(const ir::BlockNode& b,
                                                         const std::vector<const ir::ForNode*>& old_loops,
                                                         const std::vector<ir::PrimExpr>& new_bindings,
                                                         ir::PrimExpr* bad);
// Whether the block's predicate (over `loops`, the loops above it) is true on
// its whole iteration domain: it only cuts off iterations outside the domain,
// as after a non-divisible split.
bool predicateCoversDomain(const ir::BlockNode& b, const std::vector<const ir::ForNode*>& loops);

// Whether two integer expressions are equal for every value of their
// variables (their difference simplifies to 0).
bool provablyEqual(const ir::PrimExpr& a, const ir::PrimExpr& b);

// --- exact index sets ----------------------------------------------------------

// Whether the values of `indices` (one per buffer dimension), as the
// `inner` loops run over their whole ranges and the other variables stay
// fixed, are exactly the box of their bounds: each index is its loop-invariant
// part plus a mixed-radix combination of inner loops (coefficients ±1, ±e1,
// ±e1*e2, ... for constant extents e), and no inner loop appears in two
// indices.
bool exactBox(const std::vector<ir::PrimExpr>& indices, const std::vector<const ir::ForNode*>& inner);

// --- new loop nests ------------------------------------------------------------

// The bindings and loops of a block rebuilt at a new place: per iteration
// variable either a fixed region [min, min + extent) of its domain (a loop
// over the extent, or none when it is 1 and unit loops are not kept) or its
// whole domain. Conditions keep the bindings inside their domains where
// that is not provable.
struct IterRegion {
  ir::PrimExpr min;
  int64_t extent;
};
struct NewNest {
  std::vector<ir::PrimExpr> bindings;    // one per iteration variable
  std::vector<ir::PrimExpr> conditions;  // the new block's predicate
  std::vector<ir::Var> loop_vars;        // outermost first
  std::vector<ir::PrimExpr> extents;
  ir::Analyzer az;  // the loops around the nest and the new loops, bound

  // Adds a condition to the predicate unless it is provable.
  void require(const ir::PrimExpr& cond);
  // The block with the new bindings and predicate, in the new loops.
  ir::Stmt wrap(const ir::BlockNode& b) const;
};
// `regions` has one entry per iteration variable (nullopt: the whole
// domain). `outer` binds the loops that stay around the nest (for proofs).
// The block's own predicate is rebound from `old_loops` (it fails with the
// offending conjunct in `bad` as rebindPredicate does).
std::optional<NewNest> buildNest(const ir::BlockNode& b,
                                 const std::vector<std::optional<IterRegion>>& regions,
                                 bool preserve_unit_loops, ir::Analyzer outer,
                                 const std::vector<const ir::ForNode*>& old_loops, ir::PrimExpr* bad);

// --- compute_at (compute_at.cpp) ----------------------------------------------

// The function body after compute_at(block, loop); fails like compute_at.
ir::Stmt computeAtBody(const ScheduleState& s, const std::string& block, const ir::Var& loop,
                       bool preserve_unit_loops);

}  // namespace mlcc::schedule::compute
