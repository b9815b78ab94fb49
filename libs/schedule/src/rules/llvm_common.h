// Helpers shared by the CPU (llvm) default rules: inspecting the blocks and
// loops a Schedule refers to, choosing tile sizes, recording them as
// sample_perfect_tile decisions, and the common schedule of a loop nest of
// spatial loops (fuse, split by the vector width, vectorize, parallel).
//
// The rules assume the prim funcs legalize makes: each block sits in its own
// loop nest, one loop per iteration variable, bound 1:1 in order
// (`%v0 = spatial(4, %i0)`). simpleNest() checks this; a rule whose anchor
// is not such a block does not apply.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "block_info.h"
#include "mlcc/ir/stmt.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "rule.h"

namespace mlcc::schedule::cpu {

// --- the rules (one file each) ----------------------------------------------
bool applyScanRule(Schedule& sch, const target::Target& target);       // llvm_scan.cpp
bool applyMatmulRule(Schedule& sch, const target::Target& target);     // llvm_matmul.cpp
bool applyGemvRule(Schedule& sch, const target::Target& target);       // llvm_gemv.cpp
bool applyReductionRule(Schedule& sch, const target::Target& target);  // llvm_reduction.cpp
bool applyInjectiveRule(Schedule& sch, const target::Target& target);  // llvm_injective.cpp
bool applyFallbackRule(Schedule& sch, const target::Target& target);   // llvm_fallback.cpp

// Runs `rule` on a copy of the schedule and keeps the copy only when the
// rule applied; a schedule error inside the rule means it does not apply
// (so a rule changes nothing unless it succeeds as a whole).
bool applyAtomically(Schedule& sch, const target::Target& target,
                     bool (*rule)(Schedule&, const target::Target&));

// --- tuning constants ---------------------------------------------------------
// Parallel loops get at least this many iterations per core (when the
// extents allow), for load balance.
inline constexpr int64_t kParallelChunksPerCore = 2;
// The matmul rule's outermost tile level (S0) has at least this many
// iterations even on one core: a convolution's padding is computed per S0
// tile (the rows a tile reads, in cache right before it reads them) only
// when S0 splits rows. With one core, S0 = 2 iterations came from the two
// output-channel blocks of MobileNetV2's stride-2 stem, so its padding went to
// the root as a fused loop: that kernel ran 3.1x slower than the two-core
// schedule run on one thread, and tuning for one core never found it.
inline constexpr int64_t kMinOuterTiles = 4;
// Loop nests with less work than the target's -parallel-grain (default
// 2^17 multiply-adds; history below) stay serial: a parallel loop costs the fork-join
// (~0.6 us) plus moving the data the other core produced into this core's
// cache, which on the 2-core Xeon (KVM) came to ~4-6 us per kernel inside
// a model. Work counts the block's iterations: multiply-adds for a block
// with a reduction (a matmul, a conv, a pooling window, a row sum), elements
// for a spatial nest (an elementwise op, a copy), each worth this many
// multiply-adds. Per kernel inside the models (min of 3x100 profiled runs,
// 1T -> 2T) at the old threshold of 65536 iterations for both: a 66k-MAC
// dense 1.9 -> 7.2 us, 160k-MAC convs 2.9 -> 7.9 and 3.4 -> 8.5 us, 200k-MAC
// matmuls 5.9 -> 12.0 us, a 100k-element copy 4.4 -> 8.2 us, a 60k-element
// global pool 3.9 -> 7.6 us; from ~1M multiply-adds most kernels gain (a
// 1.5M-MAC conv 33 -> 25 us). With 2^20 no model of the bench was slower at
// 2 threads than at 1 (min of 3 alternating rounds, 1T -> 2T ms; old, new:
// Transformer 0.075 -> 0.110, 0.077 -> 0.078; MnasNet 0.69 -> 0.92, 0.68 ->
// 0.69; UNet 0.217 -> 0.284, 0.212 -> 0.212; ConvNeXt 0.051 -> 0.072, 0.051
// -> 0.051; SqueezeNet 0.85 -> 0.99, 0.86 -> 0.87). With the thread pool's
// cheaper start (a worker on its own CPU, pieces by ticket, brief spins),
// 2^18 then 2^17. On the 2-core EPYC, 2T, 64/128/256/512 Ki (alternating
// rounds, relative to 256 Ki): MnasNet 0.83/0.82/1/1.01, U-Net
// 0.75/0.88/1/1.18, Transformer 0.90/0.89/1/0.99, EfficientNet
// 0.94/0.92/1/1.05, BERT 0.96/0.95/1/1.00, ViT 2.04/1.00/1/1.02, CNN,
// ShuffleNet, DenseNet 1.02-1.03/1.03/1/0.99-1.03, 1T unchanged.
inline constexpr int64_t kMultiplyAddsPerElement = 4;
enum class WorkUnit { Elements, MultiplyAdds };
// Register tile: at most this many rows of vectors accumulated at once.
inline constexpr int64_t kMaxRegisterRows = 8;
// Fewer rows than this are padded to more where the rows' extent has no
// divisor this large (llvm_matmul.cpp, padRowsForRegisterTile).
inline constexpr int64_t kMinRegisterRows = 4;
// The vector registers of a target with 512-bit vectors (AVX-512).
inline constexpr int64_t kVectorRegisters = 32;
// A register tile of fewer accumulators than this takes a third dimension
// (llvm_matmul.cpp), up to kMaxAccumulators (of 32 vector registers: the
// rest hold the operands' vectors and a broadcast).
inline constexpr int64_t kMinAccumulators = 12;
inline constexpr int64_t kMaxAccumulators = 24;
// Inner reduction tile (the R1 level of the multi-level tiling).
inline constexpr int64_t kMaxInnerReduce = 16;
// A matmul whose vector operand is packed into panels (llvm_matmul.cpp,
// packVectorOperand) is cache-blocked instead: the reduction by up to
// kPackedReduceBlock (a register tile's 8 rows of 256 floats are 8 KiB, in
// L1 while the panels stream past them), the panels of one reduction block
// that each register tile sweeps within a quarter of L2, and as many rows of
// the other operand per block as fill a quarter of L2, at most 128 KiB
// (packedCacheBlocks; the target's L2, 1 MiB when unknown). The panels then
// stay in L2 while all the row blocks of a parallel tile sweep them (the
// rows' blocks inside the reduction blocks), with room for the rows and the
// output's tiles.
// 1024^3 GEMM on one Xeon core (Sapphire Rapids): 30 -> 115 GFLOPS; 512^3
// 60 -> 127; 2048^3 28 -> 107 (with 1 MiB of panels and 64 rows). On an
// EPYC (Zen 4: 32 KiB L1, 1 MiB L2), 2048^3 with 1 MiB and 64 rows was at
// 80% of the FMA peak (0.91x OpenBLAS), with 512 KiB and 256 rows 87%
// (1.00x); the rows' block matters most (512 KiB / 64 rows 80%, 256 KiB /
// 256 rows 85%, 512 rows 82%; 128-deep panels 74%). 512^3 and 1024^3 are
// unchanged (92%, 88%). On a Xeon (48 KiB L1, 2 MiB L2, 2 FMA-512 units:
// 224 GFLOPS per core), a quarter of L2 (512 rows) ran 2048^3 at 43% of
// the peak (0.68x OpenBLAS); with 1 MiB of panels, 32/64/128/256 KiB of
// rows ran 2048^3 at 122/124-131/120-127/111 GFLOPS and 1024^3 at
// 113/124-133/132-137/-: 128 KiB caps the rows since (2048^3 56-60%,
// 0.84x OpenBLAS; 1024^3 0.90x). On the EPYC that is 128 rows, between
// the 64 (80%) and 256 (85%) measured there. All of the above had each
// panel in L1 while the rows' register tiles swept it; with the register
// tiles outside the panels instead (their rows in L1, the panels from L2),
// the Xeon ran 2048^3 at 123 -> 132 GFLOPS and 1024^3 at 135 -> 141 (1
// thread, medians of 5 alternating rounds; 512^3 152-154 both ways); the
// same sizes here (64 or 128 KiB of rows, 256-1024 KiB of panels, 256- or
// 512-deep) all ran within those medians' noise. All of the above had the
// rows' blocks outside the reduction blocks (each row block fetched every
// panel again from memory); with them inside, the Xeon (242 GFLOPS per
// core that day) ran 2048^3 at 135 -> 158 GFLOPS with 1 MiB of panels and
// 162 with 512 KiB (4 alternating rounds each, one core; 1024^3 and 512^3
// within noise: 158-172 -> 163-172); 256 KiB of panels 164-166, 64 or 256
// KiB of rows 160-164 and 158-160, against 168 for 128; 512-deep 166-170;
// the panels' register tiles outside the rows' (each panel in L1, the
// rows from L2) 142-144, with the rows packed too 130-138.
inline constexpr int64_t kPackedReduceBlock = 256;
// The reduction block's loop of a packed operand is unrolled by this much
// under the register tile (llvm_matmul.cpp). On the Xeon, 1 thread,
// medians of 4 alternating rounds: 1024^3 158 -> 162 (2) -> 166 GFLOPS (4),
// 2048^3 146 -> 152 -> 158.
inline constexpr int64_t kPackedReduceUnroll = 4;
struct PackedCacheBlocks {
  int64_t panel_bytes;  // the panels of one reduction block a sweep reuses (in L2)
  int64_t row_bytes;    // the other operand's rows of one reduction block per sweep (in L2)
};
// The target's L2 per core, 1 MiB when unknown.
inline int64_t l2Bytes(const target::Target& target) {
  return target.cpu.l2_cache_bytes > 0 ? target.cpu.l2_cache_bytes : int64_t{1} << 20;
}
inline PackedCacheBlocks packedCacheBlocks(const target::Target& target) {
  const int64_t l2 = l2Bytes(target);
  return {l2 / 4, std::min<int64_t>(l2 / 4, 128 * 1024)};
}
// Packing copies the operand on every call: only where it is reused over
// at least this many rows of the other operand, and (when its rows are
// already contiguous along the vector) larger than this (smaller ones stay
// in L1 unpacked).
inline constexpr int64_t kMinPackReuse = 32;
inline constexpr int64_t kMinPackBytes = 64 * 1024;
// A matmul-like block whose output vector would index a weight with a
// stride (dense: x[i, k] * w[j, k]) and whose other operand is reused over
// at most this many rows (the batch) gets the rfactor schedule of a GEMV
// (llvm_gemv.cpp): the vector runs along k, contiguous in both operands.
// (A constant weight is packed from 2 rows on instead: convert-layout.)
inline constexpr int64_t kMaxRfactorBatch = 8;
// max_innermost_factor recorded on sample_perfect_tile (a tuner's bound).
inline constexpr int64_t kMaxInnermostFactor = 64;

// --- inspection ------------------------------------------------------------------
// The block a BlockRV refers to now. The reference is into the current
// function: do not keep it across primitives.
const ir::BlockNode& blockNode(Schedule& sch, const BlockRV& b);
// The block's name (a BlockRV is a trace variable, not the block name).
std::string blockName(Schedule& sch, const BlockRV& b);
const ir::ForNode& loopNode(Schedule& sch, const LoopRV& l);
// The loop's constant extent, or nullopt when symbolic.
std::optional<int64_t> constExtent(Schedule& sch, const LoopRV& l);
// The product of the loops' constant extents; -1 when one is not constant.
int64_t productOrUnknown(Schedule& sch, const std::vector<LoopRV>& loops);

// The blocks of a function in program order (pre-order), with their class.
struct Stage {
  std::string name;
  BlockInfo info;
  bool writes_intermediate = false;  // writes only function-level allocs
  bool padding = false;              // see isPadding
};
std::vector<Stage> stagesOf(const ir::PrimFunc& f);
// The store that is block `b`'s body (null when its body is something else),
// and that of block `name` of `f`.
const ir::StoreNode* storeOf(const ir::BlockNode& b);
const ir::StoreNode* storeOfBlock(const ir::PrimFunc& f, const std::string& name);

// The iterations of all blocks of a function (the product of each block's
// iteration extents, summed); -1 when some extent is symbolic.
int64_t functionWork(const ir::PrimFunc& f);

// Whether an injective block pads: its value is a select on a condition of
// its iteration variables alone (`select(%v2 - 1 >= 0 && ..., %x[..], 0.0)`).
// Inlined into a convolution, that condition and the clamped loads would run
// for every multiply-add (TVM's CPU rules do not inline such blocks either);
// the rules compute it per outer tile instead.
bool isPadding(const ir::BlockNode& b);

// Whether a block (by name) sits in a loop nest that binds each of its
// iteration variables, in order, to exactly one loop (and has no others).
bool simpleNest(Schedule& sch, const BlockRV& b);

// The constant step of `index` when `v` grows by one (index(v + 1) -
// index(v), simplified); nullopt when it is not constant.
std::optional<int64_t> stepAlong(const ir::PrimExpr& index, const ir::Var& v);

// The index of the block's output dimension that is innermost in memory:
// the iteration variable stored to the last index of its only write, if it
// is stored there as is; nullopt otherwise.
std::optional<size_t> innermostOutputIter(const ir::BlockNode& b);

// The number of f32 (or the block's dtype) lanes in a vector register.
int vectorLanes(const target::Target& target, ir::DType dtype);

// --- tile sizes ---------------------------------------------------------------------
int64_t largestDivisorAtMost(int64_t n, int64_t limit);
int64_t smallestDivisorAtLeast(int64_t n, int64_t limit);  // n when none
// The inner factor to vectorize an extent by: `lanes` when it divides the
// extent, else the largest power of two dividing it that is at least half a
// vector, else the largest divisor up to `lanes` (1: not worth it).
int64_t vectorFactor(int64_t extent, int64_t lanes);

// sample_perfect_tile on `loop` with `factors` as its decision, then split
// by the sampled values: returns the new loops, outermost first. The
// factors' product must be the loop's extent.
std::vector<LoopRV> tileLoop(Schedule& sch, const LoopRV& loop, const std::vector<int64_t>& factors);

// --- steps ----------------------------------------------------------------------------
// compute_inline every injective block (other than those in `keep`) that
// writes an intermediate buffer, where legal and its consumers'
// expressions stay small, unless a consumer reads it at several positions
// contiguously along its vector (the first pass of a separable resize: it
// stays a stage); repeats until nothing more inlines. Returns the names of
// the blocks inlined.
std::vector<std::string> inlineInjectiveBlocks(Schedule& sch, const std::vector<std::string>& keep = {});

// Tries a primitive: false (nothing changed) when it throws ScheduleError.
// With MLCC_RULES_DEBUG set in the environment, refusals are printed.
void noteRefusal(const ScheduleError& e);
template <class F>
bool attempt(F&& f) {
  try {
    f();
    return true;
  } catch (const ScheduleError& e) {
    noteRefusal(e);
    return false;
  }
}

// When the loops have more than one iteration and `work` (the iterations
// of everything under them, in `unit`; -1: unknown, e.g. symbolic) is at
// least the target's parallel grain (Target::parallel_grain):
// fuses them (perfectly nested, outermost first; the outermost alone when
// they do not fuse) and marks the result parallel. Returns the parallel
// loop, or nullopt when nothing was parallelized.
std::optional<LoopRV> parallelizeLoops(Schedule& sch, const std::vector<LoopRV>& loops, int64_t work,
                                       WorkUnit unit, const target::Target& target);

// Schedules a block alone in a simple nest of spatial loops: fuses the
// constant-extent inner loops, splits by the vector width and vectorizes
// when the innermost loop walks the output's innermost dimension, and
// parallelizes the outer part when large enough. False when the block is
// not in such a nest (nothing changed).
bool scheduleSpatialNest(Schedule& sch, const BlockRV& block, const target::Target& target);

// Layout moves in a spatial nest (llvm_layout_moves.cpp), given its
// constant-extent loops `inner` (innermost last; inner[i] binds the block's
// iteration variable first_iter + i). splitAtPeriods: the innermost loop,
// when the body divides its variable by a chain of two constants or more,
// is split at them and its last part vectorized; vectorizeTranspose: the
// loop that a load is contiguous along, with only short loops inside
// (unrolled), is vectorized. Each returns the loops left outside (to
// parallelize), or nullopt when the nest is not of its shape (and nothing
// was changed).
std::optional<std::vector<LoopRV>> splitAtPeriods(Schedule& sch, const BlockRV& block,
                                                  const std::vector<LoopRV>& inner, size_t first_iter,
                                                  int lanes);
std::optional<std::vector<LoopRV>> vectorizeTranspose(Schedule& sch, const BlockRV& block,
                                                      const std::vector<LoopRV>& inner, size_t first_iter,
                                                      int lanes);

// A reduction block alone in its simple nest (llvm_reduction.cpp): spatial
// loops fused and parallel, the innermost one vectorized (moved inside the
// reduce loops) when it walks the innermost dimension of the output and of
// every input, else the reduction along a contiguous axis rfactor'ed into
// vector partials; the init decomposed out.
void scheduleReductionNest(Schedule& sch, const BlockRV& block, const target::Target& target);

// A block left on its own by a rule: scheduleSpatialNest for an injective
// block, scheduleReductionNest for a reduction (a GEMV-like one too: a
// product summed, as when a broadcast scale was inlined), else its outermost loop
// parallel.
void scheduleStandalone(Schedule& sch, const BlockRV& block, const Stage& stage,
                        const target::Target& target);

// Vectorizes the innermost loop of `block` when it has a constant extent
// > 1 and walks the block's innermost output dimension (and only it);
// otherwise leaves it. Returns whether it vectorized.
bool vectorizeInnermost(Schedule& sch, const BlockRV& block);

// Parallelizes the outermost loop of a block's nest when it is spatial (the
// primitive checks) and has more than one iteration.
bool parallelizeOutermost(Schedule& sch, const BlockRV& block);

// The index in `loops` (the block's, from getLoops) of the outermost loop a
// reduce iteration variable depends on, or nullopt.
std::optional<size_t> firstReduceLoop(Schedule& sch, const BlockRV& block, const std::vector<LoopRV>& loops);

// decompose_reduction of the block: the init right before its first reduce
// loop (TVM's usage), else, where the primitive refuses a reduce loop there,
// before the loop right above it. Where the first reduce loops have extent
// 1 and the init there would write more than `cache_bytes` (> 0) of output,
// it goes right before the first reduce loop that iterates instead (each
// tile zeroed in cache). Returns the init block when it has loops of its own
// (to vectorize); nullopt when it has none, or when all were refused (e.g.
// another block under that loop reads the output).
std::optional<BlockRV> decomposeReduction(Schedule& sch, const BlockRV& block, int64_t cache_bytes = 0);

// The rfactor schedule of llvm_gemv.cpp (the reduction vectorized along
// its innermost loop, contiguous in the operands) of the block `anchor`,
// a GEMV-like block or a small-batch matmul (smallBatchMatmul). False when
// it does not apply (the schedule may have changed: run it on a copy).
bool scheduleRfactorGemv(Schedule& sch, const std::string& anchor, const target::Target& target);
// Whether a matmul-like block is a small-batch dense layer: both operands
// contiguous along the innermost reduce variable, the output's innermost
// dimension indexing one of them (with a stride), the other reused over at
// most kMaxRfactorBatch rows.
bool smallBatchMatmul(const ir::BlockNode& b, const BlockInfo& info);

// The multi-level (SSRSRS) tiling of a matmul-like or GEMV-like block named
// `anchor` with its injective producers inlined and its epilogue moved under
// the outer tile (llvm_matmul.cpp), with a second spatial dimension in the
// register tile (rows of vectors) where one qualifies. False when the block
// is not in a simple nest (nothing changed).
bool scheduleTiledAnchor(Schedule& sch, const std::string& anchor, const target::Target& target);

}  // namespace mlcc::schedule::cpu
