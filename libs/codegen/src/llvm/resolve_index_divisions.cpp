// Index divisions resolved before emission: a load or store index that
// divides (or takes the remainder of) a block iteration variable, as a
// packed operand is read (`%b_layout[%v1 / 16, %vk, %v1 % 16]`), is
// rewritten in terms of the enclosing loop variables, simplified with the
// loops' ranges, where that removes every division and remainder: with
// %v1 bound to `%j1 * 16 + %j3` (0 <= %j3 < 16) the index becomes
// `[%j1, %vk, %j3]`. A loop vectorized over %j3 then sees unit-stride
// accesses (unit_stride.cpp) instead of gathers, and no division is emitted
// per element. Any other index is left as it is; values are unchanged (an
// iteration variable is its binding), so this is invisible in the IR.
#include <functional>
#include <unordered_map>

#include "llvm/kernel_emitter.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::codegen {

namespace {

using namespace ir;

bool hasDivision(const PrimExpr& e) {
  return anyOf(e, [](const PrimExpr& x) {
    const auto* b = x->as<BinaryNode>();
    return b && (b->op == BinaryOp::Div || b->op == BinaryOp::Mod);
  });
}

class Resolver {
 public:
  Stmt stmt(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        az_.bind(f->loop_var, makeInt(0), f->extent);
        Stmt body = stmt(f->body);
        az_.unbind(f->loop_var);
        if (body == f->body) return s;
        return makeFor(f->loop_var, f->extent, body, f->loop_kind, f->thread_tag, f->attrs);
      }
      case StmtKind::Seq: {
        std::vector<Stmt> items;
        bool changed = false;
        for (const auto& c : s->as<SeqNode>()->stmts) {
          items.push_back(stmt(c));
          changed |= items.back() != c;
        }
        return changed ? makeSeq(std::move(items)) : s;
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        PrimExpr c = expr(i->cond);
        Stmt t = stmt(i->then_case), e = stmt(i->else_case);
        return c == i->cond && t == i->then_case && e == i->else_case ? s : makeIf(c, t, e);
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        std::vector<PrimExpr> idx = indices(st->indices);
        PrimExpr v = expr(st->value);
        return idx == st->indices && v == st->value ? s : makeStore(st->buffer, std::move(idx), v);
      }
      case StmtKind::Block: return block(*s->as<BlockNode>(), s);
    }
    return s;
  }

 private:
  Stmt block(const BlockNode& b, const Stmt& s) {
    std::vector<std::pair<const VarNode*, PrimExpr>> saved;
    for (const auto& iv : b.iter_vars) {
      // Bindings of nested blocks may name the outer block's variables.
      PrimExpr value = az_.simplify(substitute(iv.binding, bindings_));
      auto it = bindings_.find(iv.var.get());
      saved.emplace_back(iv.var.get(), it == bindings_.end() ? nullptr : it->second);
      bindings_[iv.var.get()] = value;
    }
    Stmt init = stmt(b.init), body = stmt(b.body);
    for (const auto& [v, old] : saved) {
      if (old)
        bindings_[v] = old;
      else
        bindings_.erase(v);
    }
    if (init == b.init && body == b.body) return s;
    return makeBlock(b.name, b.iter_vars, b.reads, b.writes, body, init, b.predicate, b.alloc_buffers,
                     b.attrs);
  }

  std::vector<PrimExpr> indices(const std::vector<PrimExpr>& in) {
    std::vector<PrimExpr> out;
    for (const auto& i : in) {
      PrimExpr e = expr(i);
      if (hasDivision(e)) {
        PrimExpr resolved = az_.simplify(substitute(e, bindings_));
        if (!hasDivision(resolved)) e = resolved;
      }
      out.push_back(e);
    }
    return out;
  }

  PrimExpr expr(const PrimExpr& e) {
    if (!e) return e;
    std::function<PrimExpr(const PrimExpr&)> f = [&](const PrimExpr& x) -> PrimExpr {
      if (const auto* l = x->as<LoadNode>()) {
        std::vector<PrimExpr> idx = indices(l->indices);
        return idx == l->indices ? x : makeLoad(l->buffer, std::move(idx));
      }
      return mapChildren(x, f);
    };
    return f(e);
  }

  Analyzer az_;
  std::unordered_map<const VarNode*, PrimExpr> bindings_;
};

}  // namespace

Stmt resolveIndexDivisions(const Stmt& body) { return Resolver().stmt(body); }

}  // namespace mlcc::codegen
