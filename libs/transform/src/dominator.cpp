// The dataflow graph of a block and its post-dominator tree (see dominator.h).
#include "dominator.h"

#include <algorithm>

#include "mlcc/ir/structural.h"
#include "tir_op_pattern.h"

namespace mlcc::transform {

ops::OpPattern combinePattern(ops::OpPattern a, ops::OpPattern b) { return std::max(a, b); }

ops::OpPattern bindingPattern(const ir::Binding& b, const ir::Module* m) {
  if (b.value.kind == ir::ValueKind::CallTir && m && b.value.attrs.empty() && b.var->type.isTensor())
    if (const ir::PrimFunc* f = m->findPrim(b.value.callee); f && f->trace.insts.empty())
      return primFuncPattern(*f);
  if (b.value.kind != ir::ValueKind::Op) return ops::OpPattern::Opaque;
  const ops::OpDef* def = ops::findOp(b.value.callee);
  return def ? def->pattern : ops::OpPattern::Opaque;
}

bool sameShape(const ir::Type& a, const ir::Type& b) {
  if (!a.isTensor() || !b.isTensor() || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!ir::structuralEqual(a.shape[i], b.shape[i])) return false;
  return true;
}

PostDomTree PostDomTree::build(const DataflowGraph& g) {
  PostDomTree t;
  t.nodes.resize(g.nodes.size());
  // The least common ancestor of two tree nodes, combining the patterns of
  // the tree edges walked.
  auto lca = [&](size_t a, size_t b, ops::OpPattern& pattern) -> size_t {
    while (a != b) {
      if (a == kNone || b == kNone) return kNone;
      if (t.nodes[a].depth < t.nodes[b].depth) {
        pattern = combinePattern(pattern, t.nodes[b].pattern);
        b = t.nodes[b].parent;
      } else if (t.nodes[b].depth < t.nodes[a].depth) {
        pattern = combinePattern(pattern, t.nodes[a].pattern);
        a = t.nodes[a].parent;
      } else {
        pattern = combinePattern(pattern, combinePattern(t.nodes[a].pattern, t.nodes[b].pattern));
        a = t.nodes[a].parent;
        b = t.nodes[b].parent;
      }
    }
    return a;
  };
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const auto& outs = g.nodes[i].outputs;
    Node& n = t.nodes[i];
    if (outs.empty()) {
      n.parent = kNone;
      n.depth = 1;
      n.pattern = ops::OpPattern::Opaque;
      continue;
    }
    ops::OpPattern pattern = ops::OpPattern::Elementwise;
    size_t parent = outs[0].node;
    pattern = combinePattern(pattern, outs[0].pattern);
    for (size_t k = 1; k < outs.size(); ++k) {
      parent = lca(parent, outs[k].node, pattern);
      pattern = combinePattern(pattern, outs[k].pattern);
    }
    n.parent = parent;
    n.depth = parent == kNone ? 1 : t.nodes[parent].depth + 1;
    n.pattern = pattern;
  }
  return t;
}

}  // namespace mlcc::transform
