// Provably out-of-bounds buffer accesses: a witness search, so that only
// accesses that really go out of bounds are reported.
//
// An access is examined only where every enclosing loop has a constant
// extent (so every iteration point runs) and no guard can skip it: not under
// an `if`, a block predicate or a block's `init`, nor inside a `select`
// branch or the right side of `&&`/`||`. Its indices are evaluated as
// integers, block iteration variables through their bindings, at the
// corners of the loop ranges they depend on (every loop variable at 0 or at
// extent - 1). A corner where an index falls outside a constant dimension is
// an iteration that executes the access out of bounds. Affine indices reach
// their extremes at corners, so those are decided exactly; anything not
// evaluable (symbolic dimensions, loads in indices, overflow) is left alone.
#include "access_bounds.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "mlcc/ir/arith.h"

namespace mlcc::ir {

namespace {

// Corners are enumerated for at most this many loop variables per index.
constexpr size_t kMaxCornerVars = 12;

class Finder {
 public:
  std::optional<OutOfBoundsAccess> run(const PrimFunc& f) {
    visit(f.body);
    return found_;
  }

 private:
  using Env = std::unordered_map<const VarNode*, int64_t>;

  void visit(const Stmt& s) {
    if (!s || found_) return;
    const StmtNode* saved = stmt_;
    stmt_ = s.get();
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        int64_t extent;
        if (asConstInt(f->extent, &extent) && extent > 0) {
          loops_.emplace(f->loop_var.get(), extent);
          visit(f->body);
          loops_.erase(f->loop_var.get());
        }  // else: some iterations may not run; nothing below is examined
        break;
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        int64_t pred = 1;
        if (b->predicate && !(asConstInt(b->predicate, &pred) && pred != 0)) break;  // guarded
        blocks_.push_back(b);
        for (const auto& iv : b->iter_vars) bindings_[iv.var.get()] = iv.binding;
        visit(b->body);  // not b->init: it runs only on the first reduce iteration
        for (const auto& iv : b->iter_vars) bindings_.erase(iv.var.get());
        blocks_.pop_back();
        break;
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        for (const auto& i : st->indices) loads(i);
        loads(st->value);
        if (!found_) check(st, st->buffer, st->indices, "store to");
        break;
      }
      case StmtKind::Seq:
        for (const auto& x : s->as<SeqNode>()->stmts) visit(x);
        break;
      case StmtKind::If: break;  // guarded
    }
    stmt_ = saved;
  }

  // The loads `e` always executes.
  void loads(const PrimExpr& e) {
    if (!e || found_) return;
    switch (e->kind) {
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        loads(b->a);
        if (b->op != BinaryOp::And && b->op != BinaryOp::Or) loads(b->b);
        break;
      }
      case ExprKind::Unary: loads(e->as<UnaryNode>()->a); break;
      case ExprKind::Select: loads(e->as<SelectNode>()->cond); break;
      case ExprKind::Cast: loads(e->as<CastNode>()->value); break;
      case ExprKind::Call:
        for (const auto& a : e->as<CallNode>()->args) loads(a);
        break;
      case ExprKind::Load: {
        const auto* l = e->as<LoadNode>();
        for (const auto& i : l->indices) loads(i);
        if (!found_) check(l, l->buffer, l->indices, "load from");
        break;
      }
      default: break;
    }
  }

  // Collects the loop variables `e` depends on (through block bindings);
  // false when it depends on anything else (a symbolic dimension, a load).
  bool loopVars(const PrimExpr& e, std::vector<const VarNode*>& out) const {
    bool ok = true;
    std::function<void(const PrimExpr&)> walk = [&](const PrimExpr& x) {
      if (!ok || !x) return;
      switch (x->kind) {
        case ExprKind::IntImm: return;
        case ExprKind::Var: {
          const auto* v = x->as<VarNode>();
          if (loops_.count(v)) {
            if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
          } else if (auto it = bindings_.find(v); it != bindings_.end()) {
            walk(it->second);
          } else {
            ok = false;
          }
          return;
        }
        case ExprKind::Binary:
          walk(x->as<BinaryNode>()->a);
          walk(x->as<BinaryNode>()->b);
          return;
        case ExprKind::Unary: walk(x->as<UnaryNode>()->a); return;
        case ExprKind::Select:
          walk(x->as<SelectNode>()->cond);
          walk(x->as<SelectNode>()->true_value);
          walk(x->as<SelectNode>()->false_value);
          return;
        case ExprKind::Cast: walk(x->as<CastNode>()->value); return;
        default: ok = false; return;
      }
    };
    walk(e);
    return ok;
  }

  // The integer value of `e` with the loop variables of `env`.
  std::optional<int64_t> eval(const PrimExpr& e, const Env& env) const {
    if (!e) return std::nullopt;
    switch (e->kind) {
      case ExprKind::IntImm: return e->as<IntImmNode>()->value;
      case ExprKind::Var: {
        const auto* v = e->as<VarNode>();
        if (auto it = env.find(v); it != env.end()) return it->second;
        if (auto it = bindings_.find(v); it != bindings_.end()) return eval(it->second, env);
        return std::nullopt;
      }
      case ExprKind::Unary: {
        auto a = eval(e->as<UnaryNode>()->a, env);
        if (!a) return std::nullopt;
        if (e->as<UnaryNode>()->op == UnaryOp::Not) return *a == 0 ? 1 : 0;
        if (*a == INT64_MIN) return std::nullopt;
        return -*a;
      }
      case ExprKind::Select: {
        auto c = eval(e->as<SelectNode>()->cond, env);
        if (!c) return std::nullopt;
        return eval(*c ? e->as<SelectNode>()->true_value : e->as<SelectNode>()->false_value, env);
      }
      case ExprKind::Cast: {
        const auto* c = e->as<CastNode>();
        if (!isInt(c->dtype) && c->dtype != DType::boolean) return std::nullopt;
        auto v = eval(c->value, env);
        if (!v) return std::nullopt;
        if (c->dtype == DType::boolean) return *v != 0 ? 1 : 0;
        if (*v < intMin(c->dtype) || *v > intMax(c->dtype)) return std::nullopt;
        return v;
      }
      case ExprKind::Binary: return evalBinary(*e->as<BinaryNode>(), env);
      default: return std::nullopt;
    }
  }

  std::optional<int64_t> evalBinary(const BinaryNode& b, const Env& env) const {
    auto x = eval(b.a, env), y = eval(b.b, env);
    if (!x || !y) return std::nullopt;
    int64_t r;
    switch (b.op) {
      case BinaryOp::Add: return __builtin_add_overflow(*x, *y, &r) ? std::nullopt : std::optional(r);
      case BinaryOp::Sub: return __builtin_sub_overflow(*x, *y, &r) ? std::nullopt : std::optional(r);
      case BinaryOp::Mul: return __builtin_mul_overflow(*x, *y, &r) ? std::nullopt : std::optional(r);
      case BinaryOp::Div:
        if (*y == 0 || (*x == INT64_MIN && *y == -1)) return std::nullopt;
        return floorDiv(*x, *y);
      case BinaryOp::Mod:
        if (*y == 0 || (*x == INT64_MIN && *y == -1)) return std::nullopt;
        return floorMod(*x, *y);
      case BinaryOp::Min: return std::min(*x, *y);
      case BinaryOp::Max: return std::max(*x, *y);
      case BinaryOp::EQ: return *x == *y;
      case BinaryOp::NE: return *x != *y;
      case BinaryOp::LT: return *x < *y;
      case BinaryOp::LE: return *x <= *y;
      case BinaryOp::GT: return *x > *y;
      case BinaryOp::GE: return *x >= *y;
      case BinaryOp::And: return *x != 0 && *y != 0;
      case BinaryOp::Or: return *x != 0 || *y != 0;
    }
    return std::nullopt;
  }

  void check(const void* node, const Buffer& buf, const std::vector<PrimExpr>& indices, const char* what) {
    if (!buf || indices.size() != buf->shape.size()) return;
    for (size_t d = 0; d < indices.size() && !found_; ++d) {
      int64_t dim;
      if (!asConstInt(buf->shape[d], &dim)) continue;
      std::vector<const VarNode*> vars;
      if (!loopVars(indices[d], vars) || vars.size() > kMaxCornerVars) continue;
      for (uint64_t corner = 0; corner < (uint64_t{1} << vars.size()); ++corner) {
        Env env;
        for (size_t k = 0; k < vars.size(); ++k)
          env[vars[k]] = (corner >> k) & 1 ? loops_.at(vars[k]) - 1 : 0;
        auto idx = eval(indices[d], env);
        if (!idx || (*idx >= 0 && *idx < dim)) continue;
        std::string at;
        for (const VarNode* v : vars)
          at += (at.empty() ? " at " : ", ") + ("%" + v->name) + " = " + std::to_string(env[v]);
        found_ = OutOfBoundsAccess{node, stmt_, blocks_.empty() ? nullptr : blocks_.back(),
                                   std::string(what) + " %" + buf->name + " is out of bounds: index " +
                                       std::to_string(*idx) + " in dimension " + std::to_string(d) +
                                       " of size " + std::to_string(dim) + at};
        return;
      }
    }
  }

  std::unordered_map<const VarNode*, int64_t> loops_;      // enclosing loops: extent
  std::unordered_map<const VarNode*, PrimExpr> bindings_;  // enclosing blocks' iteration variables
  std::vector<const BlockNode*> blocks_;
  const StmtNode* stmt_ = nullptr;
  std::optional<OutOfBoundsAccess> found_;
};

}  // namespace

std::optional<OutOfBoundsAccess> findOutOfBoundsAccess(const PrimFunc& f) { return Finder().run(f); }

}  // namespace mlcc::ir
