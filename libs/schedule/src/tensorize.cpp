// tensorize: replaces a tile of a loop nest by a call of a tensor intrinsic
// (TVM's tensorize; tensor_intrin.h): the nest under a loop, or inside a
// block that blockize made, is checked to compute exactly what the
// intrinsic's description computes, then becomes an opaque block with the
// attribute tensor_intrin = "NAME" whose regions are the routine's
// arguments: its reads, in the description's parameter order, then its one
// write. The nest stays as the block's body (what a reader, and any stage
// that does not call the routine, sees); the interpreter and codegen call
// the routine once per execution of the block instead.
//
//   tensorize(%l3, "mylib_gemm_4x16")
//
// Matching: the nest has as many loops as the description, with the same
// constant extents in the same order; its block has no init (decompose the
// reduction first), no predicate and one store. With each block's iteration
// variables replaced by their bindings and the description's loops by the
// nest's, the stored values must be the same expression tree, and each access
// of buffer %A where the description accesses parameter %p must differ from
// it by an offset per dimension that no loop of the nest moves: the tile's
// corner. %A and %p have the same dtype and rank, each parameter maps to one
// buffer and back, and each buffer has one corner.
#include <map>
#include <unordered_map>

#include "cache_util.h"
#include "loops.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/schedule/tensor_intrin.h"
#include "state.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

class TileMatcher {
 public:
  TileMatcher(const ScheduleState& s, const std::string& intrin, const std::vector<const ForNode*>& loops)
      : s_(s), intrin_(intrin), loops_(loops) {
    for (const ForNode* f : loops) az_.bind(f->loop_var, makeInt(0), f->extent);
  }

  // Matches actual against described expressions (both in the nest's loops).
  void expr(const PrimExpr& a, const PrimExpr& d) {
    if (a->kind != d->kind || a->dtype != d->dtype) mismatch(a, d);
    switch (a->kind) {
      case ExprKind::Load: {
        const auto* la = a->as<LoadNode>();
        const auto* ld = d->as<LoadNode>();
        access(la->buffer, la->indices, ld->buffer, ld->indices);
        return;
      }
      case ExprKind::IntImm:
        if (a->as<IntImmNode>()->value != d->as<IntImmNode>()->value) mismatch(a, d);
        return;
      case ExprKind::FloatImm: {
        const double x = a->as<FloatImmNode>()->value, y = d->as<FloatImmNode>()->value;
        if (!(x == y || (x != x && y != y))) mismatch(a, d);
        return;
      }
      case ExprKind::Var:
        if (a.get() != d.get() && !sameIndex(a, d)) mismatch(a, d);
        return;
      case ExprKind::Binary:
        if (a->as<BinaryNode>()->op != d->as<BinaryNode>()->op) mismatch(a, d);
        break;
      case ExprKind::Unary:
        if (a->as<UnaryNode>()->op != d->as<UnaryNode>()->op) mismatch(a, d);
        break;
      case ExprKind::Call:
        if (a->as<CallNode>()->name != d->as<CallNode>()->name ||
            a->as<CallNode>()->args.size() != d->as<CallNode>()->args.size())
          mismatch(a, d);
        break;
      case ExprKind::Select:
      case ExprKind::Cast: break;
    }
    std::vector<PrimExpr> ac, dc;
    forEachChild(a, [&](const PrimExpr& x) { ac.push_back(x); });
    forEachChild(d, [&](const PrimExpr& x) { dc.push_back(x); });
    if (ac.size() != dc.size()) mismatch(a, d);
    for (size_t i = 0; i < ac.size(); ++i) expr(ac[i], dc[i]);
  }

  // Buffer %A at `ai` where the description accesses parameter %p at `di`.
  void access(const Buffer& a, const std::vector<PrimExpr>& ai, const Buffer& p,
              const std::vector<PrimExpr>& di) {
    if (auto it = buffer_of_.find(p.get()); it != buffer_of_.end() && it->second != a)
      fail("the description's %" + p->name + " is %" + it->second->name + " in one place and %" + a->name +
           " in another");
    if (auto it = param_of_.find(a.get()); it != param_of_.end() && it->second != p)
      fail("%" + a->name + " is the description's %" + it->second->name + " in one place and %" + p->name +
           " in another");
    if (a->dtype != p->dtype)
      fail("%" + a->name + " is " + std::string(dtypeName(a->dtype)) + " but the description's %" + p->name +
           " is " + std::string(dtypeName(p->dtype)));
    if (a->shape.size() != p->shape.size())
      fail("%" + a->name + " has rank " + std::to_string(a->shape.size()) + " but the description's %" +
           p->name + " has rank " + std::to_string(p->shape.size()) +
           " (give the description the buffer's rank, with extent-1 dimensions)");
    buffer_of_[p.get()] = a;
    param_of_[a.get()] = p;
    std::vector<PrimExpr> corner;
    for (size_t k = 0; k < ai.size(); ++k) {
      PrimExpr off = az_.simplify(makeBinary(BinaryOp::Sub, ai[k], di[k]));
      for (const ForNode* f : loops_)
        if (usesVar(off, f->loop_var.get()))
          fail("index " + std::to_string(k) + " of %" + a->name + " is " + printExpr(az_.simplify(ai[k])) +
               " where the description's %" + p->name + " has " + printExpr(di[k]) +
               ": they do not move together over the tile");
      corner.push_back(off);
    }
    auto [it, added] = corner_.emplace(p.get(), corner);
    if (!added)
      for (size_t k = 0; k < corner.size(); ++k)
        if (!sameIndex(it->second[k], corner[k]))
          fail("%" + a->name + " is accessed at two different tiles (corners " + printExpr(it->second[k]) +
               " and " + printExpr(corner[k]) + " in dimension " + std::to_string(k) + ")");
  }

  // The region of parameter p: its buffer from the corner over p's shape.
  BufferRegion region(const Buffer& p) const {
    auto it = buffer_of_.find(p.get());
    if (it == buffer_of_.end())
      fail("the description's parameter %" + p->name + " has no counterpart in the nest");
    BufferRegion r{it->second, {}};
    const auto& corner = corner_.at(p.get());
    for (size_t k = 0; k < corner.size(); ++k) r.region.push_back({corner[k], p->shape[k]});
    return r;
  }

  [[noreturn]] void fail(const std::string& why) const {
    s_.fail("cannot tensorize with \"" + intrin_ + "\": " + why);
  }

 private:
  bool sameIndex(const PrimExpr& a, const PrimExpr& b) const {
    if (!isInt(a->dtype) || !isInt(b->dtype)) return false;
    int64_t c;
    return asConstInt(az_.simplify(makeBinary(BinaryOp::Sub, a, b)), &c) && c == 0;
  }
  [[noreturn]] void mismatch(const PrimExpr& a, const PrimExpr& d) const {
    fail("the nest computes " + printExpr(a) + " where the description computes " + printExpr(d));
  }

  const ScheduleState& s_;
  const std::string& intrin_;
  const std::vector<const ForNode*>& loops_;
  Analyzer az_;
  std::unordered_map<const BufferNode*, Buffer> buffer_of_;  // description parameter -> buffer
  std::unordered_map<const BufferNode*, Buffer> param_of_;   // buffer -> description parameter
  std::unordered_map<const BufferNode*, std::vector<PrimExpr>> corner_;
};

std::vector<PrimExpr> substituted(const std::vector<PrimExpr>& v,
                                  const std::unordered_map<const VarNode*, PrimExpr>& vars) {
  std::vector<PrimExpr> out;
  for (const auto& e : v) out.push_back(substitute(e, vars));
  return out;
}

}  // namespace

std::vector<RVValue> applyTensorize(ScheduleState& s, const InstArgs& args, std::optional<AttrValue>&) {
  args.expectCount(2);
  args.allowAttrs({});
  const std::string name = args.string(1);
  const TensorIntrin* intrin = findTensorIntrin(name);
  if (!intrin) {
    std::string loaded;
    for (const auto& n : tensorIntrinNames()) loaded += (loaded.empty() ? "" : ", ") + n;
    args.fail("no tensor intrinsic \"" + name + "\" is loaded (mlcc-schedule --intrinsics FILE; loaded: " +
              (loaded.empty() ? "none" : loaded) + ")");
  }
  StmtPath path;
  Stmt root;
  std::string what, block_name;
  Attrs attrs;
  if (args.isBlock(0)) {
    path = *findBlock(s.func.body, args.block(0));
    const auto* outer = path.target()->as<BlockNode>();
    what = ScheduleState::describe(*outer);
    if (!outer->iter_vars.empty() || outer->init || outer->predicate || !outer->alloc_buffers.empty() ||
        !outer->body->as<ForNode>())
      s.fail("cannot tensorize " + what +
             ": it is not a block that blockize made (an opaque block around a "
             "loop nest)");
    root = outer->body;
    block_name = outer->name;
    attrs = outer->attrs;
  } else {
    Var loop = args.loop(0);
    path = *findLoop(s.func.body, loop.get());
    what = ScheduleState::describe(loop);
    root = path.target();
  }
  std::string why;
  auto nest = perfectNest(root, &why);
  if (!nest) s.fail("cannot tensorize " + what + ": " + why);
  if (block_name.empty()) block_name = uniqueBlockName(s.func, nest->block->name + "_o");
  const BlockNode& blk = *nest->block;
  if (blk.init)
    s.fail("cannot tensorize " + what + ": block \"" + blk.name +
           "\" has an init part; decompose_reduction first and tensorize the update");
  if (blk.predicate) s.fail("cannot tensorize " + what + ": block \"" + blk.name + "\" has a predicate");
  if (!blk.alloc_buffers.empty())
    s.fail("cannot tensorize " + what + ": block \"" + blk.name + "\" allocates buffers");

  const PerfectNest desc = *perfectNest(intrin->desc.body, &why);  // checked when loaded
  TileMatcher m(s, name, nest->loops);
  auto extents = [](const std::vector<const ForNode*>& loops) {
    std::string t;
    for (const ForNode* f : loops) t += (t.empty() ? "" : ", ") + printExpr(f->extent);
    return "[" + t + "]";
  };
  bool same = nest->loops.size() == desc.loops.size();
  for (size_t k = 0; same && k < desc.loops.size(); ++k) {
    int64_t x, y;
    same = asConstInt(nest->loops[k]->extent, &x) && asConstInt(desc.loops[k]->extent, &y) && x == y;
  }
  if (!same)
    m.fail("the loops under " + what + " have extents " + extents(nest->loops) + ", the description's " +
           extents(desc.loops));

  std::unordered_map<const VarNode*, PrimExpr> actual, described, loop_of;
  for (const auto& iv : blk.iter_vars) actual[iv.var.get()] = iv.binding;
  for (size_t k = 0; k < desc.loops.size(); ++k)
    loop_of[desc.loops[k]->loop_var.get()] = nest->loops[k]->loop_var;
  for (const auto& iv : desc.block->iter_vars) described[iv.var.get()] = substitute(iv.binding, loop_of);

  const StoreNode& st = *nest->store;
  const StoreNode& dst = *desc.store;
  m.access(st.buffer, substituted(st.indices, actual), dst.buffer, substituted(dst.indices, described));
  m.expr(substitute(st.value, actual), substitute(dst.value, described));

  const auto& params = intrin->desc.params;
  std::vector<BufferRegion> reads;
  for (size_t i = 0; i + 1 < params.size(); ++i) reads.push_back(m.region(params[i]));
  attrs["tensor_intrin"] = AttrValue(name);
  Stmt block = makeBlock(block_name, {}, std::move(reads), {m.region(params.back())}, root, nullptr, nullptr,
                         {}, attrs);
  s.setBody(replaceAt(path, block));
  return {};
}

void Schedule::tensorize(const LoopRV& loop, const std::string& intrin) {
  apply(makeInst("tensorize", {ref(loop), intrin}));
}

void Schedule::tensorize(const BlockRV& block, const std::string& intrin) {
  apply(makeInst("tensorize", {ref(block), intrin}));
}

}  // namespace mlcc::schedule
