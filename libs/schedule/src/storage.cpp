// Storage primitives: set_scope and storage_align, on an intermediate
// buffer (a function or block allocation, never a parameter) that a block
// writes.
//
//   set_scope(%b0, 0, "shared")                              # block, write index, scope
//   storage_align(%b0, 0, axis = 0, factor = 32, offset = 1) # block, write index; keywords
//
// set_scope gives the buffer a new storage scope: a new buffer node with the
// scope replaces the old one everywhere (accesses, regions, allocation).
//
// storage_align makes the stride of dimension `axis` (negative: counted from
// the end, -2 is the second-innermost) be factor * k + offset (to avoid
// shared-memory bank conflicts). Buffers have no strides here, so
// it pads instead: `axis` must be the second-innermost dimension, whose
// stride is the innermost extent, and the allocation's innermost extent
// becomes the smallest s >= extent with s % factor == offset. Accesses are
// unchanged (they stay inside the original extent), so the meaning is too.
// Other axes are refused, as are a symbolic innermost extent, factor <= 0
// and an offset outside [0, factor).
#include "cache_util.h"
#include "mlcc/ir/arith.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// The intermediate buffer block `args.block(0)` writes at index args.integer(1).
Buffer writtenIntermediate(const ScheduleState& s, const InstArgs& args) {
  const BlockNode& block = s.block(args.block(0));
  int64_t index = args.integer(1);
  if (index < 0 || index >= static_cast<int64_t>(block.writes.size()))
    args.fail("write index " + std::to_string(index) + " is out of range: " + ScheduleState::describe(block) +
              " has " + std::to_string(block.writes.size()) + " write region(s)");
  Buffer buf = block.writes[index].buffer;
  if (isParam(s.func, buf))
    args.fail("%" + buf->name + " is a parameter of the function; only intermediate buffers can be changed");
  return buf;
}

int64_t requiredInt(const InstArgs& args, const std::string& key) {
  if (!args.attr(key)) args.fail("missing keyword argument '" + key + "'");
  return args.intAttr(key, 0);
}

}  // namespace

std::vector<RVValue> applySetScope(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(3);
  args.allowAttrs({});
  Buffer buf = writtenIntermediate(s, args);
  StorageScope scope = parseScope(args, args.string(2));
  replaceBuffer(s.func, buf, makeBuffer(buf->name, buf->dtype, buf->shape, scope));
  return {};
}

std::vector<RVValue> applyStorageAlign(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({"axis", "factor", "offset"});
  Buffer buf = writtenIntermediate(s, args);
  int64_t axis = requiredInt(args, "axis"), factor = requiredInt(args, "factor"),
          offset = requiredInt(args, "offset");
  const int64_t rank = static_cast<int64_t>(buf->shape.size());
  if (axis < -rank || axis >= rank)
    args.fail("axis " + std::to_string(axis) + " is out of range for %" + buf->name + " of rank " +
              std::to_string(rank));
  if (axis < 0) axis += rank;
  if (axis != rank - 2)
    args.fail("storage_align is supported on the second-innermost axis only (axis " +
              std::to_string(rank - 2) + " of %" + buf->name + "), not axis " + std::to_string(axis));
  if (factor <= 0) args.fail("factor must be positive, not " + std::to_string(factor));
  if (offset < 0 || offset >= factor)
    args.fail("offset must be in [0, factor), not " + std::to_string(offset));
  int64_t extent;
  if (!asConstInt(buf->shape.back(), &extent))
    args.fail("the innermost dimension of %" + buf->name + " is not a constant; cannot pad it");
  int64_t padded = extent + floorMod(offset - extent, factor);
  std::vector<PrimExpr> shape = buf->shape;
  shape.back() = makeInt(padded);
  replaceBuffer(s.func, buf, makeBuffer(buf->name, buf->dtype, shape, buf->scope));
  return {};
}

// --- Schedule methods ----------------------------------------------------------

void Schedule::setScope(const BlockRV& block, int write_index, StorageScope scope) {
  apply(makeInst("set_scope", {ref(block), write_index, scopeName(scope)}));
}

void Schedule::storageAlign(const BlockRV& block, int write_index, int axis, int64_t factor, int64_t offset) {
  apply(makeInst("storage_align", {ref(block), write_index},
                 {{"axis", axis}, {"factor", factor}, {"offset", offset}}));
}

}  // namespace mlcc::schedule
