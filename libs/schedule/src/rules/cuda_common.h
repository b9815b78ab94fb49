// Helpers shared by the cuda rules (cuda_*.cpp): reading the function being
// scheduled (which blocks there are, the roles of their loops), recording
// the rules' tile sizes as sampling decisions, inlining injective blocks,
// and binding a block's spatial loops to blockIdx.x / threadIdx.x (the
// fallback, also used by the other rules for the blocks they leave).
//
// Rules inspect `sch.func()` freely (that records nothing) and change it
// only through Schedule primitives. A primitive that refuses throws
// ScheduleError and changes nothing, so `tryPrimitive` can attempt one.
// Pointers into `sch.func()` are only valid until the next primitive.
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

// The name of the block a BlockRV refers to.
std::string blockName(Schedule& sch, const BlockRV& block);

// What a loop does for a block: feeds only spatial iteration variables,
// feeds a reduce one, or feeds none.
enum class LoopRole { Spatial, Reduce, Unused };
std::vector<LoopRole> loopRoles(const ir::PrimFunc& f, const std::string& block);

// The function's top-level blocks that are not injective; the anchor of a
// rule when there is exactly one.
std::vector<const ir::BlockNode*> nonInjectiveBlocks(const ir::PrimFunc& f);

// The product of the extents of a block's loops with the given role:
// nullopt when one is not a constant.
std::optional<int64_t> extentOfRole(const ir::PrimFunc& f, const std::string& block, LoopRole role);

// The constant extent of a loop, or nullopt.
std::optional<int64_t> constExtent(const Schedule& sch, const LoopRV& loop);

// --- tile sizes --------------------------------------------------------------

// Split factors for `loop` from the rule's chosen `factors` (all known).
// When the loop's extent is a constant that they multiply to exactly, they
// are recorded as the decision of a sample_perfect_tile on the loop (a
// tuner may mutate it) and its outputs are returned; otherwise the literal
// factors with the outermost inferred (split then guards a non-divisible
// or symbolic extent with a predicate).
std::vector<Factor> tileFactors(Schedule& sch, const LoopRV& loop, const std::vector<int64_t>& factors);

// A sample_categorical over `candidates` (equal probabilities) with the
// decision `chosen` (an index).
ExprRV chooseCategorical(Schedule& sch, const std::vector<int64_t>& candidates, size_t chosen);

// The thread counts a rule may pick (powers of two up to the target's
// limit) and the one for `work` independent elements: the smallest that
// covers it, at most `preferred`.
std::vector<int64_t> threadCandidates(const target::Target& t);
size_t pickThreads(const std::vector<int64_t>& candidates, std::optional<int64_t> work, int64_t preferred);

// Tile factors [outer, ..., inner] for a constant extent: `want[i]` is the
// wished size of level i (i >= 1; level 0 takes the rest). Divisors of the
// extent are preferred, so the tiling is perfect; nullopt when the best
// perfect tiling covers less than half of the wished tile.
std::optional<std::vector<int64_t>> perfectTiles(int64_t extent, const std::vector<int64_t>& want);

// The loops fused (a single loop as is, recording nothing).
LoopRV fuseLoops(Schedule& sch, const std::vector<LoopRV>& loops);

// --- primitives, attempted ---------------------------------------------------

// Runs one primitive call; false when it refused (a refused primitive
// changes and records nothing, so the schedule and its random variables
// stay valid).
bool tryPrimitive(const std::function<void()>& fn);

// Runs `fn` on a copy of the schedule and keeps the result, or returns
// false (nothing changed, nothing recorded) when a primitive refused.
// Random variables of `sch` are not valid in the copy nor afterwards: call
// it holding none.
bool attempt(Schedule& sch, const std::function<void(Schedule&)>& fn);

// compute_inline every injective block whose output is an intermediate
// buffer (not a parameter and not in `keep`), where legal; then
// reverse_compute_inline every injective block into its producer where
// that producer is injective and it is legal. Returns the number of blocks
// inlined.
int inlineInjective(Schedule& sch, const std::vector<ir::Buffer>& keep = {});

// --- binding blocks to the GPU -------------------------------------------------

// Binds a top-level block's own loop nest: its spatial loops (outermost,
// perfectly nested) fused and split by a sampled thread count into
// blockIdx.x / threadIdx.x; reduce loops stay serial inside. With
// `with_consumers`, its injective consumers are first moved under its
// innermost spatial loop (fuseConsumers, their intermediate made local),
// so each thread also computes what depends on its outputs. False when
// the block has no spatial loop or its nest is not of that form.
bool bindBlockFallback(Schedule& sch, const std::string& block, const target::Target& t, bool with_consumers);

// Fuses the loops of `block` below its first `outer` (a unit loop where
// there are none), splits them by `threads` (a predicate where they run
// fewer iterations) and binds the inner part to threadIdx.x.
void splitOverThreads(Schedule& sch, const std::string& block, size_t outer, const ExprRV& threads);

// The injective top-level blocks after `producer` that read what it writes.
std::vector<std::string> injectiveConsumers(const ir::PrimFunc& f, const std::string& producer);

// Moves the injective consumers of `producer` (top-level blocks after it
// reading what it writes) under `loop` with reverse_compute_at, where
// legal; the others stay for bindRemainingBlocks. When all moved and the
// producer's output is an intermediate, it becomes `scope` (local: one
// thread computes and uses each element; shared: one thread block).
// Returns whether all moved.
bool fuseConsumers(Schedule& sch, const std::string& producer, const LoopRV& loop,
                   std::optional<ir::StorageScope> scope = std::nullopt);

// Schedules a reduction block alone in its top-level nest (spatial loops,
// then reduce loops) and its injective consumers:
//  - serial: the spatial loops bound as by bindBlockFallback, each thread
//    reducing its outputs serially, the consumers fused under the thread
//    loop;
//  - split (`split_threads` > 0): one kernel, one output per thread block
//    (a reduction to a scalar: one block). The reduce loops fused and split
//    by that many threads, rfactor gives each thread a partial result in a
//    register, the original block sums the partials across the threads
//    (a reduction across threads, gpu_check.h), and the consumers follow
//    in the same thread block (computed by its first thread; their loops
//    split by the threads, with a predicate). The output becomes local when
//    all consumers moved in.
// False when the nest is not of that form or a primitive refused.
bool scheduleReduction(Schedule& sch, const std::string& block, const target::Target& t,
                       int64_t split_threads);

// The threads that share a reduction of `reduced` elements: powers of two
// from 32 to 256, each thread summing at least 4 elements where possible.
int64_t threadsToReduce(int64_t reduced);

// The threads to split a reduction of `reduced` elements over, for
// `outputs` outputs (0: reduce serially, one thread per output): a split
// when there are few outputs (less than 8192, so fewer threads than a GPU
// keeps busy) and at least 64 elements to reduce per output.
int64_t splitThreadsFor(std::optional<int64_t> outputs, std::optional<int64_t> reduced);

// Binds every top-level block not yet under a thread-bound loop with
// bindBlockFallback. False when one cannot be bound.
bool bindRemainingBlocks(Schedule& sch, const target::Target& t);

// The GEMV and Reduction rules' common end: scheduleReduction of `block`,
// split over threads as splitThreadsFor says for its extents, then
// bindRemainingBlocks.
bool scheduleReductionAndRest(Schedule& sch, const std::string& block, const target::Target& t);

}  // namespace mlcc::schedule::gpu
