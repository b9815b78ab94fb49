// pad_einsum: pads a block's spatial iteration domain up to multiples of
// the given factors (TVM's pad_einsum, here also for reads that index the
// padded variables affinely, as a convolution's windows do), so that a
// prime extent (Inception's 17- and 71-wide feature maps) tiles like a
// composite one.
//
//   pad_einsum(%b0, [1, 1, 1, 8, 1])   # one factor per iteration variable
//
// The block then writes a new buffer `<out>_pad`, whose padded dimensions
// have the new extents, and a block `<out>_crop` after its nest copies the
// original domain to the output. A buffer the block reads at an index of a
// padded variable that can then pass its end gets a copy `<name>_pad`, large
// enough, made by a block before the nest; the elements past the original's
// end are zero (a select with a clamped index, like legalize's padding
// blocks). The padded iterations only compute elements that the crop
// leaves out, so the program computes the same.
// Refused: a block not at the top level or not alone in its loop nest; a
// padded variable that is a reduction's, not bound to a loop of its own
// (bound to no other variable) with its (constant) extent, or not alone in
// one dimension of the block's write; a block writing more than one
// buffer, or a buffer another block writes; a read of a padded variable
// that cannot be bounded.
#include <algorithm>

#include "cache_util.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// The block's store (its body), or a failure.
const StoreNode& onlyStore(const InstArgs& args, const BlockNode& b) {
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  if (!st || b.writes.size() != 1 || b.writes[0].buffer != st->buffer)
    args.fail(ScheduleState::describe(b) + " must be a single store to one buffer to be padded");
  return *st;
}

// `name_pad`, a function allocation: `buf` with the given shape.
Buffer paddedBuffer(const PrimFunc& f, const Buffer& buf, const std::vector<int64_t>& shape) {
  std::vector<PrimExpr> dims;
  for (int64_t e : shape) dims.push_back(makeInt(e));
  return makeBuffer(uniqueBufferName(f, buf->name + "_pad"), buf->dtype, dims, StorageScope::global);
}

// A nest writing dst (shape `to`) from src (shape `from`, no larger in any
// dimension): dst[v] = v < from (in every grown dimension) ? src[min(v,
// from - 1)] : 0.
Stmt zeroPaddedCopy(const std::string& name, const Buffer& src, const std::vector<int64_t>& from,
                    const Buffer& dst, const std::vector<int64_t>& to) {
  std::vector<PrimExpr> extents;
  for (int64_t e : to) extents.push_back(makeInt(e));
  return elementNest(name, extents, "ax", [&](const std::vector<Var>& vars) {
    const std::vector<PrimExpr> v(vars.begin(), vars.end());
    std::vector<PrimExpr> src_idx = v;
    PrimExpr inside;
    for (size_t d = 0; d < to.size(); ++d) {
      if (to[d] == from[d]) continue;
      src_idx[d] = build::minimum(v[d], makeInt(from[d] - 1));
      PrimExpr in = build::lt(v[d], makeInt(from[d]));
      inside = inside ? build::land(inside, in) : in;
    }
    const PrimExpr zero = isFloat(src->dtype) ? makeFloat(0.0, src->dtype) : makeInt(0, src->dtype);
    return ElementBlock{build::point(src, src_idx), build::point(dst, v),
                        makeStore(dst, v, makeSelect(inside, makeLoad(src, src_idx), zero))};
  });
}

std::vector<int64_t> constShape(const InstArgs& args, const Buffer& b) {
  std::vector<int64_t> shape;
  for (const auto& d : b->shape) {
    int64_t e;
    if (!asConstInt(d, &e))
      args.fail("buffer %" + b->name + " has a symbolic shape; cannot pad its accesses");
    shape.push_back(e);
  }
  return shape;
}

}  // namespace

std::vector<RVValue> applyPadEinsum(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  const std::string name = args.block(0);
  StmtPath path = topLevelBlockPath(s, args, name);
  const BlockNode& b = *path.target()->as<BlockNode>();
  const std::string who = ScheduleState::describe(b);
  const AttrValue& input = args.input(1);
  if (!input.isList() || input.asList().size() != b.iter_vars.size())
    args.fail("argument 2 must list one padding factor per iteration variable of " + who + " (" +
              std::to_string(b.iter_vars.size()) + ")");
  const auto loops = loopsAbove(path);
  for (size_t i = topLevelIndex(path); i + 1 < path.nodes.size(); ++i)
    if (path.nodes[i]->kind != StmtKind::For || children(path.nodes[i]).size() != 1)
      args.fail(who + " must be alone in its loop nest to be padded");

  // The new extents; each padded variable's loop.
  std::vector<IterVar> iters = b.iter_vars;
  std::unordered_map<const VarNode*, int64_t> loop_extent;  // padded loops
  bool any = false;
  for (size_t i = 0; i < iters.size(); ++i) {
    const int64_t f = args.integerOf(input.asList()[i]);
    if (f < 1) args.fail("padding factors must be positive, not " + std::to_string(f));
    if (f == 1) continue;
    IterVar& iv = iters[i];
    int64_t e;
    if (iv.kind != IterKind::spatial)
      args.fail("cannot pad %" + iv.var->name + " of " + who + ": it is not a spatial variable");
    const auto* bound = iv.binding->as<VarNode>();
    const ForNode* loop = nullptr;
    for (const ForNode* l : loops)
      if (l->loop_var.get() == bound) loop = l;
    int64_t loop_e;
    bool shared = false;  // the loop also binds another variable
    for (size_t j = 0; j < iters.size(); ++j)
      if (j != i && loop && usesVar(b.iter_vars[j].binding, loop->loop_var.get())) shared = true;
    if (!asConstInt(iv.extent, &e) || !loop || !asConstInt(loop->extent, &loop_e) || loop_e != e || shared)
      args.fail("cannot pad %" + iv.var->name + " of " + who +
                ": it must have a constant extent and be bound to a loop of its own with that extent");
    const int64_t padded = (e + f - 1) / f * f;
    if (padded == e) continue;
    iv.extent = makeInt(padded);
    loop_extent[bound] = padded;
    any = true;
  }
  if (!any) return {};

  // The output: each padded variable alone in one dimension of the store.
  const StoreNode& st = onlyStore(args, b);
  const Buffer out = st.buffer;
  if (const BlockNode* w = otherBlockAccessing(s.func.body, &b, out, /*writes=*/true))
    args.fail(ScheduleState::describe(*w) + " also writes %" + out->name + "; cannot pad " + who);
  std::vector<int64_t> out_shape = constShape(args, out);
  for (size_t i = 0; i < iters.size(); ++i) {
    if (iters[i].extent.get() == b.iter_vars[i].extent.get()) continue;
    const VarNode* v = b.iter_vars[i].var.get();
    size_t dims = 0;
    for (size_t d = 0; d < st.indices.size(); ++d) {
      if (!usesVar(st.indices[d], v)) continue;
      ++dims;
      if (st.indices[d].get() != v)
        args.fail("cannot pad %" + v->name + " of " + who + ": the store to %" + out->name +
                  " indexes it other than alone in a dimension");
      asConstInt(iters[i].extent, &out_shape[d]);
    }
    if (dims != 1)
      args.fail("cannot pad %" + v->name + " of " + who + ": it must index one dimension of %" + out->name);
  }

  // The reads that can pass their buffer's end over the padded domain.
  Analyzer az;
  for (const auto& iv : iters) az.bind(iv.var, makeInt(0), iv.extent);
  struct Grown {
    Buffer buffer;
    std::vector<int64_t> shape, padded;
  };
  std::vector<Grown> grown;
  for (const auto& a : accessesIn(b.body)) {
    if (a.buffer == out || a.is_store) continue;
    auto it = std::find_if(grown.begin(), grown.end(), [&](const Grown& g) { return g.buffer == a.buffer; });
    if (it == grown.end()) {
      std::vector<int64_t> shape = constShape(args, a.buffer);
      grown.push_back({a.buffer, shape, shape});
      it = grown.end() - 1;
    }
    for (size_t d = 0; d < a.indices.size(); ++d) {
      auto range = az.constBounds(a.indices[d]);
      if (!range || range->first < 0)
        args.fail("cannot pad " + who + ": its read of %" + a.buffer->name + " in dimension " +
                  std::to_string(d) + " cannot be bounded over the padded domain");
      it->padded[d] = std::max(it->padded[d], range->second + 1);
    }
  }

  // The new block, loops and buffers.
  Substituter sub;
  const Buffer out_pad = paddedBuffer(s.func, out, out_shape);
  sub.mapBuffer(out, out_pad);
  std::vector<Buffer> allocs{out_pad};
  Stmt before;
  for (const Grown& g : grown) {
    if (g.padded == g.shape) continue;
    if (!isParam(s.func, g.buffer) && !isAllocated(s.func, g.buffer))
      args.fail("cannot pad " + who + ": it reads %" + g.buffer->name + ", which is not the function's");
    Buffer copy = paddedBuffer(s.func, g.buffer, g.padded);
    Stmt nest_copy = zeroPaddedCopy(uniqueBlockName(s.func, copy->name), g.buffer, g.shape, copy, g.padded);
    before = before ? makeSeq({before, nest_copy}) : nest_copy;
    sub.mapBuffer(g.buffer, copy);
    allocs.push_back(copy);
  }
  Stmt block =
      sub(makeBlock(b.name, iters, b.reads, b.writes, b.body, b.init, b.predicate, b.alloc_buffers, b.attrs));
  for (size_t i = loops.size(); i-- > 0;) {
    const ForNode& l = *loops[i];
    auto e = loop_extent.find(l.loop_var.get());
    block = makeFor(l.loop_var, e == loop_extent.end() ? l.extent : makeInt(e->second), block, l.loop_kind,
                    l.thread_tag, l.attrs);
  }
  std::vector<PrimExpr> zeros(out->shape.size(), makeInt(0));
  Stmt crop = copyNest(uniqueBlockName(s.func, out->name + "_crop"), out_pad, zeros, out, zeros, out->shape);
  const Stmt body = replaceAt(path, topLevelIndex(path), block);
  const StmtPath new_path = *findBlock(body, b.name);
  s.setBody(insertAround(new_path, topLevelIndex(new_path), before, crop));
  for (const auto& x : allocs) s.func.allocs.push_back(x);
  return {};
}

void Schedule::padEinsum(const BlockRV& block, const std::vector<int64_t>& factors) {
  AttrValue::List list;
  for (int64_t f : factors) list.push_back(f);
  apply(makeInst("pad_einsum", {ref(block), list}));
}

}  // namespace mlcc::schedule
