// Classification of blocks for the default rules (see block_info.h).
#include "block_info.h"

#include <algorithm>

#include "../tree.h"

namespace mlcc::schedule {

using namespace ir;

const char* blockKindName(BlockKind k) {
  switch (k) {
    case BlockKind::Injective: return "injective";
    case BlockKind::Reduction: return "reduction";
    case BlockKind::MatmulLike: return "matmul-like";
    case BlockKind::Gemv: return "gemv";
    case BlockKind::Opaque: return "opaque";
  }
  return "?";
}

namespace {

PrimExpr stripCasts(PrimExpr e) {
  while (const auto* c = e->as<CastNode>()) e = c->value;
  return e;
}

// The first load in `e` (pre-order), or nullptr.
const LoadNode* firstLoad(const PrimExpr& e) {
  if (!e) return nullptr;
  if (const auto* l = e->as<LoadNode>()) return l;
  if (const auto* b = e->as<BinaryNode>()) {
    if (const auto* x = firstLoad(b->a)) return x;
    return firstLoad(b->b);
  }
  if (const auto* u = e->as<UnaryNode>()) return firstLoad(u->a);
  if (const auto* s = e->as<SelectNode>()) {
    if (const auto* x = firstLoad(s->true_value)) return x;
    return firstLoad(s->false_value);
  }
  if (const auto* c = e->as<CastNode>()) return firstLoad(c->value);
  if (const auto* c = e->as<CallNode>())
    for (const auto& a : c->args)
      if (const auto* x = firstLoad(a)) return x;
  return nullptr;
}

bool sameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;  // the same expression (iteration variables are shared nodes)
  return true;
}

// The reuse of an operand: the product of the constant extents of the
// spatial variables it is not indexed by (a symbolic extent counts as large).
int64_t reuse(const BlockNode& b, const std::vector<size_t>& spatial, const std::vector<bool>& uses) {
  int64_t r = 1;
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (uses[i]) continue;
    int64_t e;
    r *= asConstInt(b.iter_vars[spatial[i]].extent, &e) ? e : 1024;
  }
  return r;
}

}  // namespace

BlockInfo analyzeBlock(const BlockNode& block) {
  BlockInfo info;
  for (size_t i = 0; i < block.iter_vars.size(); ++i) {
    switch (block.iter_vars[i].kind) {
      case IterKind::spatial: info.spatial.push_back(i); break;
      case IterKind::reduce: info.reduce.push_back(i); break;
      case IterKind::opaque: return info;
    }
  }
  if (block.iter_vars.empty() || block.writes.size() != 1) return info;
  const auto* store = block.body ? block.body->as<StoreNode>() : nullptr;
  if (info.reduce.empty()) {
    if (store && !block.init) info.kind = BlockKind::Injective;
    return info;
  }
  if (!store || !block.init) return info;
  info.kind = BlockKind::Reduction;
  // C[i] = C[i] + a * b
  const auto* add = stripCasts(store->value)->as<BinaryNode>();
  if (!add || add->op != BinaryOp::Add) return info;
  PrimExpr other;
  for (const auto& [self, rest] : {std::pair{add->a, add->b}, std::pair{add->b, add->a}}) {
    const auto* l = stripCasts(self)->as<LoadNode>();
    if (l && l->buffer == store->buffer && sameIndices(l->indices, store->indices)) other = rest;
  }
  if (!other) return info;
  const auto* mul = stripCasts(other)->as<BinaryNode>();
  if (!mul || mul->op != BinaryOp::Mul) return info;
  info.a = firstLoad(mul->a);
  info.b = firstLoad(mul->b);
  if (!info.a || !info.b) return info;
  for (size_t s : info.spatial) {
    const VarNode* v = block.iter_vars[s].var.get();
    bool ua = false, ub = false;
    for (const auto& i : info.a->indices) ua |= usesVar(i, v);
    for (const auto& i : info.b->indices) ub |= usesVar(i, v);
    info.a_uses.push_back(ua);
    info.b_uses.push_back(ub);
  }
  int64_t ra = reuse(block, info.spatial, info.a_uses), rb = reuse(block, info.spatial, info.b_uses);
  if (ra > 1 && rb > 1)
    info.kind = BlockKind::MatmulLike;
  else if (ra > 1 || rb > 1)
    info.kind = BlockKind::Gemv;
  return info;
}

std::vector<const VarNode*> scanStepLoops(const PrimFunc& f) {
  std::vector<const VarNode*> steps;
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) {
    for (const auto& iv : b.iter_vars)
      if (iv.kind == IterKind::opaque)
        if (const auto* v = iv.binding->as<VarNode>();
            v && std::find(steps.begin(), steps.end(), v) == steps.end())
          steps.push_back(v);
  });
  return steps;
}

size_t spatialPosition(const BlockInfo& info, size_t iter) {
  return std::find(info.spatial.begin(), info.spatial.end(), iter) - info.spatial.begin();
}

}  // namespace mlcc::schedule
