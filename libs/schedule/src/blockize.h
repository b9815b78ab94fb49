// The block blockize puts around a loop nest, shared with tensorize.
#pragma once

#include <string>

#include "loops.h"
#include "state.h"

namespace mlcc::schedule {

// An opaque block (no iteration variables) named `name` whose body is the
// nest starting at `root`, with the regions of nest.block (its reads, then
// its writes) widened over the nest's loops: a region the loops move in a
// way the bounds analysis cannot follow becomes the whole dimension.
ir::Stmt blockAround(const ir::Stmt& root, const PerfectNest& nest, const std::string& name);

}  // namespace mlcc::schedule
