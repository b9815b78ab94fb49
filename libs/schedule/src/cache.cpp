// Cache primitives: cache_read and cache_write.
//
//   %b2 = cache_read(%b0, 0, "shared")   # block, index into its reads, scope
//   %b3 = cache_write(%b0, 0, "local")   # block, index into its writes, scope
//
// cache_read makes a buffer `<name>_<scope>` (the read buffer's shape and
// dtype; a function allocation) and a copy block (named like the buffer) in
// its own loop nest right before the top-level nest of the block; only that
// block then reads the copy (its loads and regions). cache_write makes the
// block write a new `<name>_<scope>` buffer instead (stores, the reduction's
// own loads, init, regions) and copies the region it writes back to the
// original buffer in a new nest right after the block's top-level nest.
// Both return the copy block, to be moved with compute_at /
// reverse_compute_at.
//
// Assumptions: the block is at the function's top level (not nested in
// another block), and, as everywhere in TensorIR, a block runs every point
// of its iteration domain (cache_write copies back the whole region the
// block's write region spans over that domain). Refused: an index out of
// range, an unknown scope, cache_read of a buffer the block also writes or
// that another block writes inside the same top-level nest, cache_write of
// a buffer another block writes, or that another block reads inside the
// same nest, or that the block reads other than as the accumulator of a
// reduction with an init, or whose written region is not a dense box.
#include <algorithm>
#include <optional>

#include "cache_util.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

struct Box {
  std::vector<PrimExpr> min, extent;
};

struct CacheArgs {
  StmtPath path;
  const BlockNode* block;
  Buffer buffer;
  StorageScope scope;
};

// Reads (block, index, scope) and finds the buffer `regions[index]` names.
CacheArgs readCacheArgs(const ScheduleState& s, const InstArgs& args, bool read) {
  args.expectCount(3);
  args.allowAttrs({});
  std::string name = args.block(0);
  int64_t index = args.integer(1);
  StorageScope scope = parseScope(args, args.string(2));
  StmtPath path = topLevelBlockPath(s, args, name);
  const auto* block = path.target()->as<BlockNode>();
  const auto& regions = read ? block->reads : block->writes;
  if (index < 0 || index >= static_cast<int64_t>(regions.size()))
    args.fail(std::string(read ? "read" : "write") + " index " + std::to_string(index) +
              " is out of range: " + ScheduleState::describe(*block) + " has " +
              std::to_string(regions.size()) + " " + (read ? "read" : "write") + " region(s)");
  return {path, block, regions[index].buffer, scope};
}

// Replaces block `name` by `block` and puts `before`/`after` around its
// top-level nest.
Stmt installWithCopy(const StmtPath& path, const Stmt& block, const Stmt& before, const Stmt& after) {
  Stmt body = replaceAt(path, block);
  auto new_path = findBlock(body, path.target()->as<BlockNode>()->name);
  return insertAround(*new_path, topLevelIndex(*new_path), before, after);
}

// The block may read the buffer it writes only as a reduction's
// accumulator: `init { C[I] = ... } C[I] = f(C[I], ...)` (so every element
// is written by the init before it is read).
void checkOwnReads(const InstArgs& args, const BlockNode& b, const Buffer& buf) {
  if (!blockReads(b, buf)) return;
  std::string why = ScheduleState::describe(b) + " reads %" + buf->name +
                    " other than as the accumulator of a reduction with an init; its cache would start "
                    "without the buffer's values";
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  const auto* init = b.init ? b.init->as<StoreNode>() : nullptr;
  if (!st || !init || st->buffer != buf || init->buffer != buf || !sameIndices(st->indices, init->indices))
    args.fail(why);
  for (const auto& a : accessesIn(b.init))
    if (a.buffer == buf && !a.is_store) args.fail(why);
  for (const auto& a : accessesIn(b.body))
    if (a.buffer == buf && !sameIndices(a.indices, st->indices)) args.fail(why);
}

// The box of `buf` that block `b` writes over its iteration domain: each
// dimension of its write region must be a constant (in the iteration
// variables) or `v + c` for an iteration variable v used in no other
// dimension, so that the box is covered densely.
Box writtenBox(const InstArgs& args, const BlockNode& b, const Buffer& buf) {
  const BufferRegion* region = nullptr;
  for (const auto& r : b.writes) {
    if (r.buffer != buf) continue;
    if (region)
      args.fail(ScheduleState::describe(b) + " has more than one write region of %" + buf->name +
                "; cannot tell which part of it to copy back");
    region = &r;
  }
  std::string not_dense = "the region of %" + buf->name + " that " + ScheduleState::describe(b) +
                          " writes is not a dense box of its iteration domain; cannot tell which part of it "
                          "to copy back";
  Box box;
  std::vector<const VarNode*> used;
  Analyzer az;
  for (const auto& rg : region->region) {
    const IterVar* var = nullptr;
    for (const auto& iv : b.iter_vars) {
      if (usesVar(rg.extent, iv.var.get())) args.fail(not_dense);
      if (!usesVar(rg.min, iv.var.get())) continue;
      if (var || std::find(used.begin(), used.end(), iv.var.get()) != used.end()) args.fail(not_dense);
      var = &iv;
    }
    if (!var) {
      box.min.push_back(az.simplify(rg.min));
      box.extent.push_back(az.simplify(rg.extent));
      continue;
    }
    used.push_back(var->var.get());
    using build::operator+;
    using build::operator-;
    PrimExpr c = az.simplify(substitute(rg.min, {{var->var.get(), makeInt(0)}}));
    if (!az.canProve(build::eq(rg.min, var->var + c))) args.fail(not_dense);
    box.min.push_back(c);
    box.extent.push_back(az.simplify(var->extent + rg.extent - 1));
  }
  return box;
}

Buffer cacheBuffer(const PrimFunc& f, const Buffer& buf, StorageScope scope) {
  return makeBuffer(uniqueBufferName(f, buf->name + "_" + scopeName(scope)), buf->dtype, buf->shape, scope);
}

}  // namespace

std::vector<RVValue> applyCacheRead(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  CacheArgs c = readCacheArgs(s, args, /*read=*/true);
  const BlockNode& block = *c.block;
  const Buffer& buf = c.buffer;
  if (blockWrites(block, buf))
    args.fail(ScheduleState::describe(block) + " also writes %" + buf->name +
              "; cache_read needs a buffer the block only reads");
  const Stmt& nest = c.path.nodes[topLevelIndex(c.path)];
  if (const BlockNode* w = otherBlockAccessing(nest, &block, buf, /*writes=*/true))
    args.fail(ScheduleState::describe(*w) + " writes %" + buf->name + " in the loop nest of " +
              ScheduleState::describe(block) + "; a copy made before that nest would miss its values");

  Buffer cache = cacheBuffer(s.func, buf, c.scope);
  std::string copy_name = uniqueBlockName(s.func, cache->name);
  std::vector<PrimExpr> zeros(buf->shape.size(), makeInt(0));
  Stmt copy = copyNest(copy_name, buf, zeros, cache, zeros, buf->shape);

  Substituter sub;
  sub.mapBuffer(buf, cache);
  s.setBody(installWithCopy(c.path, sub(c.path.target()), copy, nullptr));
  s.func.allocs.push_back(cache);
  return {BlockHandle{copy_name}};
}

std::vector<RVValue> applyCacheWrite(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  CacheArgs c = readCacheArgs(s, args, /*read=*/false);
  const BlockNode& block = *c.block;
  const Buffer& buf = c.buffer;
  if (const BlockNode* w = otherBlockAccessing(s.func.body, &block, buf, /*writes=*/true))
    args.fail(ScheduleState::describe(*w) + " also writes %" + buf->name +
              "; cache_write needs a buffer only " + ScheduleState::describe(block) + " writes");
  const Stmt& nest = c.path.nodes[topLevelIndex(c.path)];
  if (const BlockNode* r = otherBlockAccessing(nest, &block, buf, /*writes=*/false))
    args.fail(ScheduleState::describe(*r) + " reads %" + buf->name + " in the loop nest of " +
              ScheduleState::describe(block) + "; it would read it before the copy back");
  checkOwnReads(args, block, buf);
  Box box = writtenBox(args, block, buf);

  Buffer cache = cacheBuffer(s.func, buf, c.scope);
  std::string copy_name = uniqueBlockName(s.func, cache->name);
  Stmt copy = copyNest(copy_name, cache, box.min, buf, box.min, box.extent);

  Substituter sub;
  sub.mapBuffer(buf, cache);
  s.setBody(installWithCopy(c.path, sub(c.path.target()), nullptr, copy));
  s.func.allocs.push_back(cache);
  return {BlockHandle{copy_name}};
}

// --- Schedule methods ----------------------------------------------------------

BlockRV Schedule::cacheRead(const BlockRV& block, int read_index, StorageScope scope) {
  return BlockRV{apply(makeInst("cache_read", {ref(block), read_index, scopeName(scope)}))[0]};
}

BlockRV Schedule::cacheWrite(const BlockRV& block, int write_index, StorageScope scope) {
  return BlockRV{apply(makeInst("cache_write", {ref(block), write_index, scopeName(scope)}))[0]};
}

}  // namespace mlcc::schedule
