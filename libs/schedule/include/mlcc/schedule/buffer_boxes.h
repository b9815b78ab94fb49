// The box of elements of each function-level shared and local buffer a
// kernel touches at a time, so that code generation can declare it
// compacted: per thread block for shared buffers, per thread for local
// ones. The loops bound to blockIdx, and the serial loops enclosing every
// access of the buffer (the outer reduction loop whose steps refill a
// shared tile), are fixed; the other loops run over their ranges, and so do
// the threadIdx loops for shared buffers (the threads of a block share it)
// but not for local ones. verifyGpuFunc (gpu_check.h) sizes shared memory
// by these boxes, as the cuda code generator declares them.
//
// Loops bound to one thread axis are the same hardware index: the boxes
// are expressed in one variable per axis (`thread_vars`), with every loop
// bound to it replaced by it. A box is base + [0, extent) per dimension,
// with constant extents; where the accesses' boxes do not differ by
// constants (or cannot be bounded) a dimension keeps its declared extent
// with base 0.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

struct BufferBox {
  std::vector<ir::PrimExpr> base;  // per dimension, in fixed loops' and thread_vars' variables
  std::vector<int64_t> extent;
  // The innermost fixed serial loop (null: none): the box is reused by its
  // iterations, which touch disjoint elements of the buffer when
  // `iterations_disjoint` (the base moves by at least the extent along some
  // dimension, for it and every other fixed serial loop). A buffer that may
  // be read before it is written is then zero-filled at the start of each
  // of its iterations, as the IR's fresh buffer would be.
  const ir::ForNode* zero_loop = nullptr;
  bool iterations_disjoint = true;
};

struct BufferBoxes {
  std::map<std::string, ir::Var> thread_vars;                  // "threadIdx.x" -> its variable
  std::unordered_map<const ir::BufferNode*, BufferBox> boxes;  // the buffers the kernel uses
};

// The boxes of f's function-level shared and local buffers in the kernel
// rooted at `root` (a thread-bound loop at the top of f). Throws
// mlcc::Error for a buffer of symbolic shape whose box is not constant.
BufferBoxes computeBufferBoxes(const ir::PrimFunc& f, const ir::Stmt& root);

}  // namespace mlcc::schedule
