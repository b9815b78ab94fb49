// The op pattern kind of a prim func (see tir_op_pattern.h).
#include "tir_op_pattern.h"

#include <algorithm>
#include <functional>

#include "mlcc/ir/expr_functor.h"

namespace mlcc::transform {

namespace {

using ops::OpPattern;

bool isVar(const ir::PrimExpr& e, const ir::Var& v) { return e.get() == v.get(); }

// The pattern of one load given the block's spatial variables (the store's
// indices, in order).
OpPattern loadPattern(const ir::LoadNode& load, const std::vector<ir::Var>& vars) {
  for (const auto& i : load.indices)
    if (ir::anyOf(i, [](const ir::PrimExpr& x) { return x->as<ir::LoadNode>() != nullptr; }))
      return OpPattern::Opaque;  // a data-dependent index
  if (load.indices.size() == vars.size()) {
    bool same = true;
    for (size_t d = 0; d < vars.size(); ++d) same = same && isVar(load.indices[d], vars[d]);
    if (same) return OpPattern::Elementwise;
  }
  // Broadcast: each index is 0 or a later variable than the previous one,
  // the trailing ones aligned as numpy broadcasting aligns them.
  size_t next = vars.size() - std::min(vars.size(), load.indices.size());
  bool broadcast = load.indices.size() <= vars.size();
  for (const auto& i : load.indices) {
    int64_t c = -1;
    if (!broadcast) break;
    if (ir::asConstInt(i, &c) && c == 0) {
      ++next;
      continue;
    }
    broadcast = next < vars.size() && isVar(i, vars[next]);
    ++next;
  }
  return broadcast ? OpPattern::Broadcast : OpPattern::Injective;
}

}  // namespace

OpPattern derivePrimFuncPattern(const ir::PrimFunc& f) {
  if (!f.allocs.empty() || f.params.empty()) return OpPattern::Opaque;
  // One loop nest down to one block.
  ir::Stmt s = f.body;
  while (s && s->kind == ir::StmtKind::For) s = s->as<ir::ForNode>()->body;
  const auto* block = s ? s->as<ir::BlockNode>() : nullptr;
  if (!block || block->predicate || !block->alloc_buffers.empty()) return OpPattern::Opaque;
  const auto* store = block->body ? block->body->as<ir::StoreNode>() : nullptr;
  const ir::Buffer& out = f.params.back();
  if (!store || store->buffer != out || store->indices.size() != out->shape.size()) return OpPattern::Opaque;
  std::vector<ir::Var> vars;
  bool reduce = false;
  for (const auto& iv : block->iter_vars) {
    if (iv.kind == ir::IterKind::reduce) reduce = true;
    if (iv.kind == ir::IterKind::opaque) return OpPattern::Opaque;
  }
  // The store writes the output at its spatial variables in order, each over
  // its whole dimension.
  for (size_t d = 0; d < store->indices.size(); ++d) {
    auto it = std::find_if(block->iter_vars.begin(), block->iter_vars.end(),
                           [&](const ir::IterVar& iv) { return isVar(store->indices[d], iv.var); });
    if (it == block->iter_vars.end() || it->kind != ir::IterKind::spatial ||
        !ir::sameExpr(it->extent, out->shape[d]))
      return OpPattern::Opaque;
    vars.push_back(it->var);
  }
  OpPattern p = OpPattern::Elementwise;
  bool self_read = false;
  std::function<void(const ir::PrimExpr&)> walk = [&](const ir::PrimExpr& e) {
    if (const auto* l = e->as<ir::LoadNode>()) {
      if (l->buffer == out)
        self_read = true;
      else
        p = std::max(p, loadPattern(*l, vars));
    }
    ir::forEachChild(e, walk);
  };
  walk(store->value);
  if (reduce) return self_read && block->init ? OpPattern::Reduction : OpPattern::Opaque;
  return self_read || block->init ? OpPattern::Opaque : p;
}

OpPattern primFuncPattern(const ir::PrimFunc& f) {
  if (auto it = f.attrs.find("op_pattern"); it != f.attrs.end() && it->second.isString())
    for (OpPattern p : {OpPattern::Elementwise, OpPattern::Broadcast, OpPattern::Injective,
                        OpPattern::Reduction, OpPattern::OutEwiseFusable, OpPattern::Opaque})
      if (it->second.asString() == ops::patternName(p)) return p;
  return derivePrimFuncPattern(f);
}

}  // namespace mlcc::transform
