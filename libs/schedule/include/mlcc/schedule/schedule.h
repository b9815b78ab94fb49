// Schedules: transformations of a prim func's loop nests that keep its
// meaning, each recorded as an instruction of the function's trace (as TVM's
// tir.Schedule). The same program, transformed into a faster equivalent one.
//
//   Schedule sch(func);                       // func: an unscheduled (or partly scheduled) prim func
//   BlockRV c = sch.getBlock("dense");
//   auto loops = sch.getLoops(c);             // outermost first
//   auto tiles = sch.samplePerfectTile(loops[1], 2, 16);
//   auto ij = sch.split(loops[1], {tiles[0], tiles[1]});
//   sch.vectorize(ij[1]);
//   ir::PrimFunc out = sch.func();            // with out.trace recording all of the above
//
// Random variables (RVs) are the names of trace variables: a BlockRV names a
// block (blocks are found by their unique name), a LoopRV a loop (found by
// its loop variable), an ExprRV an integer (a sampled decision). They stay
// valid until a primitive removes what they refer to (a split loop, an
// inlined block); using them afterwards is a schedule error.
//
// Every primitive checks that it is legal and otherwise throws ScheduleError
// naming the function, the block or loop and the reason; no primitive
// produces a program with a different meaning. After each primitive the
// function is re-verified (a failure there is an internal error).
//
// Replaying `func.trace` on the unscheduled function reproduces `func`
// exactly (replayTrace); the same trace with other decisions replays to a
// different, still correct, program.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::schedule {

struct BlockRV {
  std::string name;  // the trace variable, e.g. "b0"
};
struct LoopRV {
  std::string name;  // e.g. "l1"
};
struct ExprRV {
  std::string name;  // e.g. "v2"
};

// A split factor: a literal, a sampled integer, or inferred (nullopt; at
// most one per split) from the loop's extent.
using Factor = std::optional<std::variant<int64_t, ExprRV>>;

// A schedule error. Its message names the function and the offending block
// or loop, e.g. `in prim @dense: cannot vectorize loop %k0: it carries a
// reduction of block "dense"`.
class ScheduleError : public mlcc::Error {
 public:
  using mlcc::Error::Error;
};

class ScheduleState;

class Schedule {
 public:
  // `seed` drives the sampling instructions (deterministic for a seed).
  explicit Schedule(ir::PrimFunc func, uint64_t seed = 0);
  ~Schedule();
  Schedule(Schedule&&) noexcept;
  Schedule& operator=(Schedule&&) noexcept;

  // The current function; its trace holds every instruction applied so far
  // (after any trace the input function already had).
  const ir::PrimFunc& func() const;

  // Applies one trace instruction: how replay and schedule scripts run, and
  // what every method below does. When `inst.outputs` is given, the outputs
  // take those names (their count must match); otherwise fresh names are
  // made. A sampling instruction with a `decision` uses it (after checking
  // it is valid); without one it samples and records its decision.
  // Returns the names of the outputs.
  std::vector<std::string> apply(const ir::TraceInst& inst);

  // The value of a sampled integer.
  int64_t get(const ExprRV& v) const;
  // The loop variable a LoopRV refers to now (for tests and rules).
  ir::Var loopVar(const LoopRV& loop) const;

  // --- navigation (get.cpp) ------------------------------------------------
  BlockRV getBlock(const std::string& name);
  // The loops above the block, outermost first (up to an enclosing block).
  std::vector<LoopRV> getLoops(const BlockRV& block);
  // The blocks nested directly under a loop (or, for none, the function's
  // top-level blocks), in program order.
  std::vector<BlockRV> getChildBlocks(const std::optional<LoopRV>& loop);
  // Blocks in the same scope that write a buffer this block reads / that
  // read a buffer this block writes, in program order.
  std::vector<BlockRV> getProducers(const BlockRV& block);
  std::vector<BlockRV> getConsumers(const BlockRV& block);

  // --- sampling (sampling.cpp) ------------------------------------------
  // n factors whose product is the loop's (constant) extent, the innermost
  // at most max_innermost_factor. Decision: the list of factors.
  std::vector<ExprRV> samplePerfectTile(const LoopRV& loop, int n, int64_t max_innermost_factor);
  // One of `candidates` with the given probabilities. Decision: the index.
  ExprRV sampleCategorical(const std::vector<int64_t>& candidates, const std::vector<double>& probs);
  // A loop to compute_at the block under, or the root (the result is a
  // LoopRV bound to "root": compute_at to it leaves the block where it is).
  // Decision: the index into the candidate loops, -1 for root.
  LoopRV sampleComputeLocation(const BlockRV& block);

  // --- loop transformations (loop_split.cpp, loop_fuse.cpp, loop_reorder.cpp)
  // Splits a loop into len(factors) nested loops, outermost first. A
  // non-divisible extent gets a predicate on the blocks below.
  std::vector<LoopRV> split(const LoopRV& loop, const std::vector<Factor>& factors);
  // Fuses perfectly nested consecutive loops (outermost first) into one.
  LoopRV fuse(const std::vector<LoopRV>& loops);
  // Puts the given loops (of one perfect nest) in this order, in the
  // positions they occupied.
  void reorder(const std::vector<LoopRV>& loops);
  // A new serial loop of extent 1 around a block or a loop
  // (add_unit_loop.cpp); returns it.
  LoopRV addUnitLoop(const BlockRV& block);
  LoopRV addUnitLoop(const LoopRV& loop);

  // --- loop kinds and annotations (loop_kind.cpp, annotate.cpp) ---------
  void parallel(const LoopRV& loop);
  void vectorize(const LoopRV& loop);
  void unroll(const LoopRV& loop);
  // thread_tag: blockIdx.x|y|z, threadIdx.x|y|z, vthread.
  void bind(const LoopRV& loop, const std::string& thread_tag);
  void annotate(const LoopRV& loop, const std::string& key, const ir::AttrValue& value);
  void annotate(const BlockRV& block, const std::string& key, const ir::AttrValue& value);
  void unannotate(const LoopRV& loop, const std::string& key);
  void unannotate(const BlockRV& block, const std::string& key);

  // --- compute location (compute_at.cpp, compute_inline.cpp) -----------
  // Moves a producer block under `loop` of its consumers, computing only the
  // region the consumers need at each iteration.
  void computeAt(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops = false);
  // Moves a consumer block under `loop` of its producer.
  void reverseComputeAt(const BlockRV& block, const LoopRV& loop, bool preserve_unit_loops = false);
  // Replaces the reads of an injective block's output by its expression.
  void computeInline(const BlockRV& block);
  // Folds an injective consumer into its single producer.
  void reverseComputeInline(const BlockRV& block);

  // --- caches and storage (cache.cpp, storage.cpp) ---------------------------
  // A block that copies the block's read buffer `read_index` into a new
  // buffer of `scope` that the block then reads instead. Returns the copy.
  BlockRV cacheRead(const BlockRV& block, int read_index, ir::StorageScope scope);
  // The block writes a new buffer of `scope` instead, and a new block
  // copies it to the original. Returns the copy.
  BlockRV cacheWrite(const BlockRV& block, int write_index, ir::StorageScope scope);
  // Changes the storage scope of an intermediate buffer the block writes.
  void setScope(const BlockRV& block, int write_index, ir::StorageScope scope);
  // Pads axis `axis` of the block's write buffer `write_index` so that its
  // stride is factor * k + offset (avoids shared-memory bank conflicts).
  void storageAlign(const BlockRV& block, int write_index, int axis, int64_t factor, int64_t offset);

  // --- reductions (reduction.cpp) ----------------------------------------
  // Moves the block's init into a new block above `loop`. Returns it.
  BlockRV decomposeReduction(const BlockRV& block, const LoopRV& loop);
  // Factors the reduction over `loop` into a new block (returned) that
  // reduces into an intermediate with `loop` as a spatial axis at position
  // factor_axis, and the original block reduces that intermediate.
  BlockRV rfactor(const LoopRV& loop, int factor_axis);

  // --- layout (layout.cpp) ---------------------------------------------------
  // Re-indexes a buffer the block accesses (`buffer` names it) by an index
  // map: `from` are fresh variables, one per dimension, `to` the new indices
  // in terms of them (e.g. from [o, i] to [o / 16, i, o % 16]). An
  // intermediate buffer is rewritten in place; a parameter gets a
  // layout-converted copy made by a new block.
  void transformLayout(const BlockRV& block, const std::string& buffer, const std::vector<ir::Var>& from,
                       const std::vector<ir::PrimExpr>& to);

  // Pads the block's spatial iteration variables up to multiples of
  // `factors` (one per variable, 1: unchanged; pad_einsum.cpp): the block
  // writes a padded copy of its output, cropped after it, and reads
  // zero-padded copies of the inputs it could read past their end.
  void padEinsum(const BlockRV& block, const std::vector<int64_t>& factors);

  // --- tensorization (blockize.cpp, tensorize.cpp) ---------------------------
  // Wraps the perfect nest under `loop` (loops around one block) in a new
  // opaque block whose regions are the tile the nest touches. Returns it.
  BlockRV blockize(const LoopRV& loop);
  // Replaces the nest under `loop` (or inside a block blockize made) by a
  // call of the registered tensor intrinsic `intrin` (tensor_intrin.h),
  // after checking that the nest computes what the intrinsic describes.
  void tensorize(const LoopRV& loop, const std::string& intrin);
  void tensorize(const BlockRV& block, const std::string& intrin);

  // Internal state, for the primitives' implementations.
  ScheduleState& state() { return *state_; }

 private:
  std::unique_ptr<ScheduleState> state_;
};

// Replays a trace on an unscheduled prim func. Decisions recorded in the
// trace are used; missing ones are sampled with `seed`.
ir::PrimFunc replayTrace(const ir::PrimFunc& unscheduled, const ir::Trace& trace, uint64_t seed = 0);

// The names of the schedule instructions this build knows, sorted.
std::vector<std::string> instructionNames();

}  // namespace mlcc::schedule
