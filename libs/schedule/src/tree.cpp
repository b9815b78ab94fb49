// Statement tree navigation and path-copying rewrites (see tree.h).
#include "tree.h"

#include "mlcc/ir/expr_functor.h"

namespace mlcc::schedule {

using namespace ir;

std::vector<Stmt> children(const Stmt& s) {
  if (!s) return {};
  switch (s->kind) {
    case StmtKind::Seq: return s->as<SeqNode>()->stmts;
    case StmtKind::For: return {s->as<ForNode>()->body};
    case StmtKind::Block: {
      const auto* b = s->as<BlockNode>();
      std::vector<Stmt> out;
      if (b->init) out.push_back(b->init);
      if (b->body) out.push_back(b->body);
      return out;
    }
    case StmtKind::If: {
      const auto* i = s->as<IfNode>();
      std::vector<Stmt> out{i->then_case};
      if (i->else_case) out.push_back(i->else_case);
      return out;
    }
    case StmtKind::Store: return {};
  }
  return {};
}

std::vector<Stmt> flattenSeq(const Stmt& s) {
  if (!s) return {};
  if (const auto* seq = s->as<SeqNode>()) return seq->stmts;
  return {s};
}

namespace {

bool findPath(const Stmt& s, const std::function<bool(const Stmt&)>& match, StmtPath& path) {
  if (!s) return false;
  path.nodes.push_back(s);
  if (match(s)) return true;
  for (const auto& c : children(s))
    if (findPath(c, match, path)) return true;
  path.nodes.pop_back();
  return false;
}

// `parent` with child `old_child` replaced by `child` (null: removed).
Stmt replaceChild(const Stmt& parent, const Stmt& old_child, const Stmt& child) {
  switch (parent->kind) {
    case StmtKind::Seq: {
      std::vector<Stmt> items;
      for (const auto& s : parent->as<SeqNode>()->stmts) {
        if (s != old_child) {
          items.push_back(s);
        } else if (child) {
          for (const auto& c : flattenSeq(child)) items.push_back(c);
        }
      }
      if (items.empty()) return nullptr;
      return makeSeq(std::move(items));
    }
    case StmtKind::For: {
      if (!child) return nullptr;
      ForParts f(*parent->as<ForNode>());
      f.body = child;
      return f.build();
    }
    case StmtKind::Block: {
      BlockParts b(*parent->as<BlockNode>());
      if (b.init == old_child)
        b.init = child;
      else
        b.body = child;
      return b.build();
    }
    case StmtKind::If: {
      const auto* i = parent->as<IfNode>();
      Stmt t = i->then_case, e = i->else_case;
      if (t == old_child)
        t = child;
      else
        e = child;
      if (!t && !e) return nullptr;
      if (!t) return makeIf(makeUnary(UnaryOp::Not, i->cond), e);
      return makeIf(i->cond, t, e);
    }
    case StmtKind::Store: break;
  }
  return parent;
}

}  // namespace

std::optional<StmtPath> findBlock(const Stmt& root, const std::string& name) {
  StmtPath p;
  if (findPath(
          root,
          [&](const Stmt& s) {
            const auto* b = s->as<BlockNode>();
            return b && b->name == name;
          },
          p))
    return p;
  return std::nullopt;
}

std::optional<StmtPath> findLoop(const Stmt& root, const VarNode* loop_var) {
  StmtPath p;
  if (findPath(
          root,
          [&](const Stmt& s) {
            const auto* f = s->as<ForNode>();
            return f && f->loop_var.get() == loop_var;
          },
          p))
    return p;
  return std::nullopt;
}

std::vector<const ForNode*> loopsAbove(const StmtPath& path) {
  std::vector<const ForNode*> loops;
  for (size_t i = 0; i + 1 < path.nodes.size(); ++i) {
    const auto& s = path.nodes[i];
    if (s->as<BlockNode>()) loops.clear();
    if (const auto* f = s->as<ForNode>()) loops.push_back(f);
  }
  return loops;
}

const BlockNode* enclosingBlock(const StmtPath& path) {
  for (size_t i = path.nodes.size() - 1; i-- > 0;)
    if (const auto* b = path.nodes[i]->as<BlockNode>()) return b;
  return nullptr;
}

Stmt replaceAt(const StmtPath& path, Stmt replacement) {
  return replaceAt(path, path.nodes.size() - 1, std::move(replacement));
}

Stmt replaceAt(const StmtPath& path, size_t index, Stmt replacement) {
  Stmt cur = std::move(replacement);
  for (size_t i = index; i-- > 0;) cur = replaceChild(path.nodes[i], path.nodes[i + 1], cur);
  return cur;
}

void forEachBlock(const Stmt& root, const std::function<void(const BlockNode&, const StmtPath&)>& fn) {
  StmtPath path;
  std::function<void(const Stmt&)> visit = [&](const Stmt& s) {
    if (!s) return;
    path.nodes.push_back(s);
    if (const auto* b = s->as<BlockNode>()) fn(*b, path);
    for (const auto& c : children(s)) visit(c);
    path.nodes.pop_back();
  };
  visit(root);
}

std::vector<const BlockNode*> childBlocks(const Stmt& s) {
  std::vector<const BlockNode*> out;
  std::function<void(const Stmt&)> visit = [&](const Stmt& x) {
    if (!x) return;
    if (const auto* b = x->as<BlockNode>()) {
      out.push_back(b);
      return;
    }
    for (const auto& c : children(x)) visit(c);
  };
  if (const auto* b = s ? s->as<BlockNode>() : nullptr) {
    for (const auto& c : children(s)) visit(c);
    (void)b;
  } else {
    visit(s);
  }
  return out;
}

bool usesVar(const PrimExpr& e, const VarNode* v) {
  return anyOf(e, [v](const PrimExpr& x) { return x.get() == static_cast<const ExprNode*>(v); });
}

bool usesVar(const Stmt& s, const VarNode* v) {
  if (!s) return false;
  switch (s->kind) {
    case StmtKind::For: {
      const auto* f = s->as<ForNode>();
      return usesVar(f->extent, v) || usesVar(f->body, v);
    }
    case StmtKind::Block: {
      const auto* b = s->as<BlockNode>();
      for (const auto& iv : b->iter_vars)
        if (usesVar(iv.extent, v) || usesVar(iv.binding, v)) return true;
      if (usesVar(b->predicate, v)) return true;
      for (const auto* regions : {&b->reads, &b->writes})
        for (const auto& r : *regions)
          for (const auto& rg : r.region)
            if (usesVar(rg.min, v) || usesVar(rg.extent, v)) return true;
      return usesVar(b->init, v) || usesVar(b->body, v);
    }
    case StmtKind::Store: {
      const auto* st = s->as<StoreNode>();
      for (const auto& i : st->indices)
        if (usesVar(i, v)) return true;
      return usesVar(st->value, v);
    }
    case StmtKind::Seq:
      for (const auto& c : s->as<SeqNode>()->stmts)
        if (usesVar(c, v)) return true;
      return false;
    case StmtKind::If: {
      const auto* i = s->as<IfNode>();
      return usesVar(i->cond, v) || usesVar(i->then_case, v) || usesVar(i->else_case, v);
    }
  }
  return false;
}

namespace {
std::vector<Buffer> buffersOf(const std::vector<BufferRegion>& regions) {
  std::vector<Buffer> out;
  for (const auto& r : regions) {
    bool seen = false;
    for (const auto& b : out) seen |= b == r.buffer;
    if (!seen) out.push_back(r.buffer);
  }
  return out;
}
}  // namespace

std::vector<Buffer> readBuffers(const BlockNode& b) { return buffersOf(b.reads); }
std::vector<Buffer> writeBuffers(const BlockNode& b) { return buffersOf(b.writes); }

ForParts::ForParts(const ForNode& f)
    : loop_var(f.loop_var),
      extent(f.extent),
      loop_kind(f.loop_kind),
      thread_tag(f.thread_tag),
      body(f.body),
      attrs(f.attrs) {}

Stmt ForParts::build() const { return makeFor(loop_var, extent, body, loop_kind, thread_tag, attrs); }

BlockParts::BlockParts(const BlockNode& b)
    : name(b.name),
      iter_vars(b.iter_vars),
      predicate(b.predicate),
      reads(b.reads),
      writes(b.writes),
      alloc_buffers(b.alloc_buffers),
      init(b.init),
      body(b.body),
      attrs(b.attrs) {}

Stmt BlockParts::build() const {
  return makeBlock(name, iter_vars, reads, writes, body, init, predicate, alloc_buffers, attrs);
}

}  // namespace mlcc::schedule
