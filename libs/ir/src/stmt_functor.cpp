#include "mlcc/ir/stmt_functor.h"

namespace mlcc::ir {

Stmt mapChildren(const Stmt& s, const std::function<Stmt(const Stmt&)>& f) {
  if (!s) return s;
  auto map = [&](const Stmt& c) { return c ? f(c) : c; };
  switch (s->kind) {
    case StmtKind::For: {
      const auto* n = s->as<ForNode>();
      Stmt body = map(n->body);
      return body == n->body ? s
                             : makeFor(n->loop_var, n->extent, body, n->loop_kind, n->thread_tag, n->attrs);
    }
    case StmtKind::Seq: {
      std::vector<Stmt> items;
      bool changed = false;
      for (const auto& c : s->as<SeqNode>()->stmts) {
        items.push_back(map(c));
        changed |= items.back() != c;
      }
      return changed ? makeSeq(std::move(items)) : s;
    }
    case StmtKind::If: {
      const auto* n = s->as<IfNode>();
      Stmt t = map(n->then_case), e = map(n->else_case);
      return t == n->then_case && e == n->else_case ? s : makeIf(n->cond, t, e);
    }
    case StmtKind::Block: {
      const auto* n = s->as<BlockNode>();
      Stmt init = map(n->init), body = map(n->body);
      if (init == n->init && body == n->body) return s;
      return makeBlock(n->name, n->iter_vars, n->reads, n->writes, body, init, n->predicate, n->alloc_buffers,
                       n->attrs);
    }
    case StmtKind::Store: return s;
  }
  return s;
}

}  // namespace mlcc::ir
