// Helpers shared by the cuda rules (cuda_*.cpp): reading the function being
// scheduled (which blocks there are, the roles of their loops), recording
// the rules' tile sizes as sampling decisions, inlining injective blocks,
// and binding a block's spatial loops to blockIdx.x / threadIdx.x (the
// fallback, also used by the other rules for the blocks they leave).
//
// Rules inspect `sch.func()` freely (that records nothing) and change it
// only through Schedule primitives. A primitive that refuses throws
// ScheduleError and changes nothing, so `tryApply` can attempt one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "block_info.h"
#include "mlcc/ir/stmt.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"

namespace mlcc::schedule::gpu {

// --- reading the function ------------------------------------------------------

// The blocks at the function's top level (not nested in another block), in
// program order.
std::vector<const ir::BlockNode*> topLevelBlocks(const ir::PrimFunc& f);
const ir::BlockNode* findBlockNode(const ir::PrimFunc& f, const std::string& name);
// The loops above a block, outermost first (up to an enclosing block).
std::vector<const ir::ForNode*> loopsOf(const ir::PrimFunc& f, const std::string& block);
bool underThreadBinding(const ir::PrimFunc& f, const std::string& block);
// Whether `buf` is a parameter of the function (an input or an output).
bool isParam(const ir::PrimFunc& f, const ir::Buffer& buf);

// What a loop does for a block: feeds only spatial iteration variables,
// feeds a reduce one, or feeds none.
enum class LoopRole { Spatial, Reduce, Unused };
std::vector<LoopRole> loopRoles(const ir::PrimFunc& f, const std::string& block);

// The constant extent of a loop, or nullopt.
std::optional<int64_t> constExtent(const Schedule& sch, const LoopRV& loop);

// --- tile sizes --------------------------------------------------------------

// Splits `loop` by `factors` (all known). When the loop's extent is a
// constant that they multiply to exactly, the factors are recorded as the
// decision of a sample_perfect_tile on the loop (a tuner may mutate it)
// and the split uses its outputs; otherwise the split takes the literal
// factors with the outermost inferred (a predicate guards a non-divisible
// or symbolic extent).
std::vector<LoopRV> splitByTiles(Schedule& sch, const LoopRV& loop, const std::vector<int64_t>& factors);

// A sample_categorical over `candidates` (equal probabilities) with the
// decision `chosen` (an index).
ExprRV chooseCategorical(Schedule& sch, const std::vector<int64_t>& candidates, size_t chosen);

// The thread counts a rule may pick (powers of two up to the target's
// limit) and the one for `work` independent elements: the smallest that
// covers it, at most `preferred`.
std::vector<int64_t> threadCandidates(const Target& t);
size_t pickThreads(const std::vector<int64_t>& candidates, std::optional<int64_t> work, int64_t preferred);

// Tile factors [outer, ..., inner] for a constant extent: `want[i]` is the
// wished size of level i (i >= 1; level 0 takes the rest). Divisors of the
// extent are preferred, so the tiling is perfect; nullopt when the best
// perfect tiling covers less than half of the wished tile.
std::optional<std::vector<int64_t>> perfectTiles(int64_t extent, const std::vector<int64_t>& want);

// --- primitives, attempted ---------------------------------------------------

// Runs `fn` on a copy of the schedule and keeps the result, or returns
// false (nothing changed, nothing recorded) when a primitive refused.
// Random variables of `sch` are not valid in the copy nor afterwards: call
// it holding none.
bool attempt(Schedule& sch, const std::function<void(Schedule&)>& fn);

// compute_inline every injective block whose output is an intermediate
// buffer (not a parameter), where legal; then reverse_compute_inline every
// injective block into its producer where that producer is injective and
// it is legal. Returns the number of blocks inlined.
int inlineInjective(Schedule& sch);

// --- the fallback ------------------------------------------------------------

// Binds a top-level block's own loop nest: its spatial loops (outermost,
// perfectly nested) fused and split by a sampled thread count into
// blockIdx.x / threadIdx.x; reduce loops stay serial inside. False when the
// block has no spatial loop or its nest is not of that form.
bool bindBlockFallback(Schedule& sch, const std::string& block, const Target& t);

// Binds every top-level block not yet under a thread-bound loop with
// bindBlockFallback. False when one cannot be bound.
bool bindRemainingBlocks(Schedule& sch, const Target& t);

}  // namespace mlcc::schedule::gpu
