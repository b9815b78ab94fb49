// Helpers shared by the loop primitives (see loops.h).
#include "loops.h"

#include "mlcc/ir/stmt_functor.h"
#include "mlcc/ir/substitute.h"
#include "state.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

Stmt simplifyBindings(const Stmt& s, Analyzer& az) {
  if (const auto* f = s->as<ForNode>()) {
    az.bind(f->loop_var, makeInt(0), f->extent);
    Stmt out = mapChildren(s, [&](const Stmt& c) { return simplifyBindings(c, az); });
    az.unbind(f->loop_var);
    return out;
  }
  if (const auto* b = s->as<BlockNode>()) {
    BlockParts p(*b);
    for (auto& iv : p.iter_vars) iv.binding = az.simplify(iv.binding);
    if (p.predicate) {
      p.predicate = az.simplify(p.predicate);
      int64_t v;
      if (asConstInt(p.predicate, &v) && v != 0) p.predicate = nullptr;
    }
    return p.build();
  }
  return mapChildren(s, [&](const Stmt& c) { return simplifyBindings(c, az); });
}

}  // namespace

Analyzer contextAnalyzer(const StmtPath& path, size_t depth) {
  Analyzer az;
  for (size_t i = 0; i < depth && i < path.nodes.size(); ++i) {
    if (const auto* f = path.nodes[i]->as<ForNode>()) az.bind(f->loop_var, makeInt(0), f->extent);
    if (const auto* b = path.nodes[i]->as<BlockNode>())
      for (const auto& iv : b->iter_vars) az.bind(iv.var, makeInt(0), iv.extent);
  }
  return az;
}

Stmt substituteLoopVars(const Stmt& s, const VarMap& vars, Analyzer az) {
  Substituter sub;
  for (const auto& [from, to] : vars) sub.mapVar(from, to);
  return simplifyBindings(sub(s), az);
}

Stmt mapChildBlocks(const Stmt& s, const std::function<Stmt(const BlockNode&)>& fn) {
  if (const auto* b = s->as<BlockNode>()) return fn(*b);
  return mapChildren(s, [&](const Stmt& c) { return mapChildBlocks(c, fn); });
}

std::vector<const BlockNode*> blocksUnder(const ForNode& loop) {
  // childBlocks(s) of a block gives the blocks inside it: a body that is a
  // block is that block.
  if (const auto* b = loop.body->as<BlockNode>()) return {b};
  return childBlocks(loop.body);
}

const StoreNode* storeOutsideBlocks(const Stmt& s) {
  if (!s || s->as<BlockNode>()) return nullptr;
  if (const auto* st = s->as<StoreNode>()) return st;
  for (const auto& c : children(s))
    if (const auto* st = storeOutsideBlocks(c)) return st;
  return nullptr;
}

void checkOnlyBlocks(const ScheduleState& s, const ForNode& loop, const std::string& action) {
  if (const auto* st = storeOutsideBlocks(loop.body))
    s.fail("cannot " + action + ": " + ScheduleState::describe(loop.loop_var) + " has a store to %" +
           st->buffer->name + " outside any block");
}

std::optional<PerfectNest> perfectNest(const Stmt& s, std::string* why) {
  PerfectNest nest;
  Stmt at = s;
  while (at && at->kind == StmtKind::For) {
    nest.loops.push_back(at->as<ForNode>());
    at = nest.loops.back()->body;
  }
  nest.block = at ? at->as<BlockNode>() : nullptr;
  if (!nest.block) {
    *why =
        "the loops are not a perfect nest around one block (each loop's body the next loop, the innermost's "
        "a block)";
    return std::nullopt;
  }
  nest.store = nest.block->body ? nest.block->body->as<StoreNode>() : nullptr;
  if (!nest.store) {
    *why = "the body of block \"" + nest.block->name + "\" is not one store";
    return std::nullopt;
  }
  return nest;
}

std::string kindText(const ForNode& loop) {
  if (loop.loop_kind == LoopKind::thread_binding) return "thread_binding(" + loop.thread_tag + ")";
  return loopKindName(loop.loop_kind);
}

PrimExpr mulExtent(const ScheduleState& s, const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y, p;
  if (asConstInt(a, &x) && asConstInt(b, &y)) {
    if (__builtin_mul_overflow(x, y, &p))
      s.fail("the loop extents " + std::to_string(x) + " * " + std::to_string(y) + " overflow i64");
    return makeInt(p);
  }
  return simplify(makeBinary(BinaryOp::Mul, a, b));
}

}  // namespace mlcc::schedule
