// Helpers shared by the cache, storage and reduction primitives (cache.cpp,
// storage.cpp, reduction.cpp): storage scope arguments, fresh block and
// buffer names, where a block's top-level loop nest is, which blocks touch
// a buffer, the loads and stores of a statement, copy nests, and replacing a
// buffer node throughout a function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

// "global", "shared" or "local"; fails (naming the instruction) otherwise.
ir::StorageScope parseScope(const InstArgs& args, const std::string& text);

// The path to block `name`, which must be in the function's top-level scope
// (not nested in another block); fails otherwise.
StmtPath topLevelBlockPath(const ScheduleState& s, const InstArgs& args, const std::string& name);

// The index in path.nodes of the function's top-level statement that
// contains the target (the outermost loop of its nest).
size_t topLevelIndex(const StmtPath& path);

// The root with path.nodes[index] replaced by `before; node; after` (either
// may be null).
ir::Stmt insertAround(const StmtPath& path, size_t index, const ir::Stmt& before, const ir::Stmt& after);

// `base`, or `base_1`, `base_2`, ... : a name no block / no buffer of the
// function has yet.
std::string uniqueBlockName(const ir::PrimFunc& f, const std::string& base);
std::string uniqueBufferName(const ir::PrimFunc& f, const std::string& base);

bool isParam(const ir::PrimFunc& f, const ir::Buffer& b);
// Whether `b` is allocated by the function or by one of its blocks.
bool isAllocated(const ir::PrimFunc& f, const ir::Buffer& b);

// A load or store of a statement (nested blocks included).
struct Access {
  ir::Buffer buffer;
  std::vector<ir::PrimExpr> indices;
  bool is_store;
};
std::vector<Access> accessesIn(const ir::Stmt& s);

// Whether block `b` reads / writes `buf`, by its regions or its statements.
bool blockReads(const ir::BlockNode& b, const ir::Buffer& buf);
bool blockWrites(const ir::BlockNode& b, const ir::Buffer& buf);

// The first block under `root` other than `except` that reads (or, with
// `writes`, writes) `buf`; nullptr if none.
const ir::BlockNode* otherBlockAccessing(const ir::Stmt& root, const ir::BlockNode* except,
                                         const ir::Buffer& buf, bool writes);

// Whether two index lists are provably equal element by element.
bool sameIndices(const std::vector<ir::PrimExpr>& a, const std::vector<ir::PrimExpr>& b);

// A loop nest `for <loop>0 .. for <loop>N { block name (v0, .., vN) { ... } }` over
// `extents`, the block's iteration variables bound 1:1 to the loops; `make`
// gives the block's read and write regions and its statement from the
// variables (v0, .., vN).
struct ElementBlock {
  ir::BufferRegion read, write;
  ir::Stmt body;
};
ir::Stmt elementNest(const std::string& name, const std::vector<ir::PrimExpr>& extents,
                     const std::string& loop,
                     const std::function<ElementBlock(const std::vector<ir::Var>& v)>& make);

// A loop nest `for ax0 .. for axN { block name { dst[dst_min + v] = src[src_min + v] } }`
// over a box with the given extents, its block's iteration variables bound
// 1:1 to the loops.
ir::Stmt copyNest(const std::string& name, const ir::Buffer& src, const std::vector<ir::PrimExpr>& src_min,
                  const ir::Buffer& dst, const std::vector<ir::PrimExpr>& dst_min,
                  const std::vector<ir::PrimExpr>& extents);

// Replaces buffer `from` by `to` everywhere in the function: accesses,
// regions, block and function allocations.
void replaceBuffer(ir::PrimFunc& f, const ir::Buffer& from, const ir::Buffer& to);

}  // namespace mlcc::schedule
