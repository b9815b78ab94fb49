// Whether a scheduled prim func can run on a GPU (the cuda target): every
// computation lies in a kernel, thread extents and shared memory respect
// the target's limits, and no thread-bound loop carries a reduction (but one
// across the threads of an axis, combined in shared memory).
//
//   verifyGpuFunc(func, target::Target::parse("cuda"));   // throws mlcc::Error
//
// A kernel is a loop nest under an outermost loop bound to a thread axis;
// loops outside kernels are host loops. The rules checked, each reported
// with the offending block or loop:
//  - every block is under a loop bound to blockIdx.* and one bound to
//    threadIdx.*; blockIdx loops are not nested in threadIdx loops;
//  - threadIdx.* and vthread loops have constant extents (blockIdx ones may
//    be symbolic), within CUDA's per-axis limits; within a kernel a thread
//    axis has one extent wherever it is bound (loops bound to the same axis,
//    nested or not, are the same hardware index), and the product of the
//    threadIdx extents is at most target::Target::max_threads_per_block;
//  - no thread-bound loop feeds a reduce iteration variable of a block
//    (threads run in parallel), except a reduction across threads
//    (matchCrossThreadReduction, below): a threadIdx loop whose body is the
//    block, run by every thread of the block (not under an if or a block
//    predicate, not inside a loop bound to the same axis); a scratch of one
//    element per thread for it counts as shared memory. A reduction block that writes a buffer outside
//    `local` depends on every thread axis its kernel binds (with extent
//    > 1): on the GPU every thread runs every block of its kernel, and
//    threads updating the same element would race;
//  - no thread block of a kernel reads or writes an element of a global
//    buffer that another thread block of it writes (threadBlockRace,
//    gpu_races.h: nothing orders thread blocks);
//  - no two threads of a thread block store to one element of a global or
//    shared buffer in one statement (threadStoreRace, gpu_races.h: which
//    value stays would be chance); the code generator puts a barrier
//    between two blocks that store to one buffer;
//  - a loop bound to the axis of an enclosing loop passes
//    nestedThreadLoopProblem (below): on the GPU the two are the same
//    index, so nothing under the inner one may use the outer one;
//  - the shared memory a kernel needs is at most
//    target::Target::max_shared_memory_bytes: for a block-level `shared`
//    buffer its declared size; for a function-level one (as cache_read and
//    set_scope make them, full-size) the box one thread block uses at a
//    time, as code generation declares it (buffer_boxes.h); the scratch of
//    its reductions across threads;
//  - `local` buffers (per thread) are used by one kernel only;
//  - a kernel with a step of a scan (a block with an opaque iteration
//    variable) is one thread block: its steps wait for each other at
//    barriers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/stmt.h"
#include "mlcc/schedule/reduction_form.h"
#include "mlcc/schedule/rules.h"

namespace mlcc::schedule {

// Throws mlcc::Error ("in prim @f: block \"dense\" ...") on the first
// violation.
void verifyGpuFunc(const ir::PrimFunc& func, const target::Target& target);

// Why `inner`, bound to the thread axis `outer` (which encloses it) binds
// too, cannot be run by outer's threads together, or "" when it can: as in
// the MLC course's cooperative fetch, where every thread of the block
// copies its share of a shared tile that all of them then read. The
// interpreter runs the nest serially (each iteration of `outer` runs the
// whole of `inner`), the GPU runs iteration t of `inner` in thread t; the
// two agree when `inner` computes the same thing at every iteration of
// `outer` and nothing else under `outer` changes what it reads or writes:
//  - the two loops have the same constant extent;
//  - between them there are only loops and sequences (no block, no if),
//    with extents that do not use outer's variable;
//  - nothing under `inner` uses outer's variable;
//  - the blocks under `inner` write only shared buffers, which the code
//    generator's barriers order against their readers, and nothing under
//    `outer` outside `inner` writes a buffer `inner` reads or writes.
std::string nestedThreadLoopProblem(const ir::ForNode& outer, const ir::ForNode& inner);

// A reduction across the threads of an axis, as TVM's cross-thread
// reduction: a loop bound to threadIdx.* whose body is one block reducing
// over it (`for %t in 0..T threadIdx.x { block { s = s + x[%t] } }`, the
// second half of an rfactor). The interpreter runs the loop serially; on
// the GPU each thread computes its term (the block's value at its index,
// the identity of the operation where the block's predicate is false),
// the threads of the axis combine their terms in shared memory, and the
// result is stored once: by the thread of index 0 (a local buffer: by every
// thread, into its own copy), after the init where the other reduce
// iteration variables are 0. The same as the serial loop but for the order
// of the combination (floating-point rounding). The form:
//  - the loop's body is one block, allocating nothing, of ReductionForm;
//  - the loop feeds reduce iteration variables of the block, no spatial
//    one, and has a constant extent;
//  - with an init, which stores the element reduced into without reading it,
//    each reduce variable it feeds is bound to the loop variable itself
//    (the init then runs before the first term) and the block's predicate
//    does not depend on the loop (the step runs for every thread or none).
struct CrossThreadReduction {
  const ir::BlockNode* block;
  ReductionForm form;
  // The conjuncts of the block's predicate that do not depend on the loop:
  // where one is false the step stores nothing.
  std::vector<ir::PrimExpr> step_guard;
  // The reduce iteration variables the loop does not feed: the init runs
  // where they are all 0.
  std::vector<ir::Var> other_reduce;
};
// `loop`'s reduction across threads, or nullopt with `why` ("its body is
// not one block", ...). Does not look at the loop's kind nor at what
// encloses it.
std::optional<CrossThreadReduction> matchCrossThreadReduction(const ir::ForNode& loop, std::string& why);
// The dtype such a reduction combines its terms in (its scratch's): float
// for f16 and bf16 (computed as float, as all their arithmetic is), else
// the reduced buffer's.
ir::DType crossThreadScratchDType(ir::DType reduced);

// The parts of a block predicate (its bindings substituted) that bound a
// non-negative sum of loop variables, `%f * 224 + %t < 576` after a fuse and
// a split: the sum and the range [0, extent) it takes, within its bounds
// under `az`. Box computations (this check's shared memory sizes, the cuda
// code generator's buffer boxes) treat such a sum as one variable over that
// range, as tight as the predicate makes it.
struct PredicateBound {
  ir::PrimExpr part;
  int64_t extent;
};
std::vector<PredicateBound> predicateBounds(const ir::PrimExpr& predicate, const ir::Analyzer& az);
// (ir::replaceBoundedPart puts such a variable in a binding.)

}  // namespace mlcc::schedule
