// Rewrites of buffer accesses before emission, invisible in the IR (values
// are unchanged). One walker (rewriteAccesses) visits every load and store
// with the loops' ranges and the block bindings in scope; two rewrites use it:
//
// resolveIndexDivisions: a load or store index that divides (or takes the
// remainder of) a block iteration variable, as a packed operand is read
// (`%b_layout[%v1 / 16, %vk, %v1 % 16]`), is rewritten in terms of the
// enclosing loop variables, simplified with the loops' ranges, where that
// removes every division and remainder: with %v1 bound to `%j1 * 16 + %j3`
// (0 <= %j3 < 16) the index becomes `[%j1, %vk, %j3]`. A loop vectorized
// over %j3 then sees unit-stride accesses (unit_stride.cpp) instead of
// gathers, and no division is emitted per element. Any other index is left
// as it is. Where divisions remain but the access's row-major offset
// simplifies without them (a fused elementwise loop over rows that the
// vector does not divide), that offset becomes the last index, the others 0.
//
// planAllocations: a function alloc that every iteration of one loop
// uses only within a box of its own (ir::analyzeAllocs: e.g. a
// convolution's output tile that its epilogue reads right after) becomes a
// buffer of the box's shape, indexed relative to the box, that the emitter
// places per iteration of that loop (on the stack) instead of the whole
// intermediate in the workspace.
#include <functional>
#include <optional>
#include <unordered_map>

#include "llvm/kernel_emitter.h"
#include "mlcc/ir/alloc_analysis.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/stmt_functor.h"
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

class Rewriter {
 public:
  explicit Rewriter(const AccessRewrite& fn) : fn_(fn) {}

  Stmt stmt(const Stmt& s) {
    if (!s) return s;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        az_.bind(f->loop_var, makeInt(0), f->extent);
        Stmt out = mapChildren(s, [&](const Stmt& c) { return stmt(c); });
        az_.unbind(f->loop_var);
        return out;
      }
      case StmtKind::Seq: return mapChildren(s, [&](const Stmt& c) { return stmt(c); });
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        PrimExpr c = expr(i->cond);
        Stmt t = stmt(i->then_case), e = stmt(i->else_case);
        return c == i->cond && t == i->then_case && e == i->else_case ? s : makeIf(c, t, e);
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        std::vector<PrimExpr> idx = st->indices;
        Buffer buf = access(st->buffer, idx);
        PrimExpr v = expr(st->value);
        return buf == st->buffer && idx == st->indices && v == st->value ? s
                                                                         : makeStore(buf, std::move(idx), v);
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
    // A tensorized block's regions are accesses too: the corners of the
    // tiles its routine is called on.
    std::vector<BufferRegion> reads = b.reads, writes = b.writes;
    bool regions_changed = false;
    if (b.attrs.count("tensor_intrin"))
      for (auto* regions : {&reads, &writes})
        for (auto& r : *regions) {
          std::vector<PrimExpr> corner;
          for (const auto& range : r.region) corner.push_back(range.min);
          Buffer buf = access(r.buffer, corner);
          for (size_t d = 0; d < corner.size(); ++d) {
            regions_changed |= corner[d] != r.region[d].min;
            r.region[d].min = corner[d];
          }
          regions_changed |= buf != r.buffer;
          r.buffer = buf;
        }
    for (const auto& [v, old] : saved) {
      if (old)
        bindings_[v] = old;
      else
        bindings_.erase(v);
    }
    if (init == b.init && body == b.body && !regions_changed) return s;
    return makeBlock(b.name, b.iter_vars, std::move(reads), std::move(writes), body, init, b.predicate,
                     b.alloc_buffers, b.attrs);
  }

  // The access's buffer and indices after fn_ (its indices' loads first).
  Buffer access(const Buffer& buf, std::vector<PrimExpr>& indices) {
    for (auto& i : indices) i = expr(i);
    return fn_(buf, indices, az_, bindings_);
  }

  PrimExpr expr(const PrimExpr& e) {
    if (!e) return e;
    std::function<PrimExpr(const PrimExpr&)> f = [&](const PrimExpr& x) -> PrimExpr {
      if (const auto* l = x->as<LoadNode>()) {
        std::vector<PrimExpr> idx = l->indices;
        Buffer buf = access(l->buffer, idx);
        return buf == l->buffer && idx == l->indices ? x : makeLoad(buf, std::move(idx));
      }
      return mapChildren(x, f);
    };
    return f(e);
  }

  const AccessRewrite& fn_;
  Analyzer az_;
  std::unordered_map<const VarNode*, PrimExpr> bindings_;
};

}  // namespace

Stmt rewriteAccesses(const Stmt& body, const AccessRewrite& fn) { return Rewriter(fn).stmt(body); }

namespace {

// The row-major offset of `indices` into `buf`, when its shape is constant.
std::optional<PrimExpr> rowMajorOffset(const Buffer& buf, const std::vector<PrimExpr>& indices) {
  PrimExpr offset = makeInt(0);
  int64_t stride = 1;
  for (size_t d = indices.size(); d-- > 0;) {
    int64_t extent;
    if (!asConstInt(buf->shape[d], &extent)) return std::nullopt;
    offset = makeBinary(BinaryOp::Add, offset, makeBinary(BinaryOp::Mul, indices[d], makeInt(stride)));
    stride *= extent;
  }
  return offset;
}

// One access of resolveIndexDivisions: each index that divides, rewritten
// in the loop variables where that removes every division; with `flatten`,
// divisions left in loop variables (an elementwise block over its loops
// fused and split by the vector: %v2 = (%f * 16 + %j) % 1500, %v1 = (%f *
// 16 + %j) / 1500 % 1500) may still leave the whole row-major offset
// (%f * 16 + %j): then it becomes the last index, the others 0, which the
// emitter turns into the same address. A vectorized %j then loads and
// stores whole vectors where each lane's indices were computed and
// gathered, as LLVM did in a parallel loop's outlined body (one thread, 6 x
// 1500 x 1500: relu 60 -> 7.9 ms, exp 64 -> 12 ms). Not with bounds checks,
// which check each index against its dimension.
void resolveAccess(const Buffer& buf, std::vector<PrimExpr>& indices, const Analyzer& az,
                   const std::unordered_map<const VarNode*, PrimExpr>& bindings, bool flatten) {
  bool divides = false;
  std::vector<PrimExpr> resolved;
  for (auto& e : indices) {
    resolved.push_back(az.simplify(substitute(e, bindings)));
    if (hasDivision(resolved.back()))
      divides = true;
    else if (hasDivision(e))
      e = resolved.back();
  }
  if (!divides || !flatten || indices.empty()) return;
  std::optional<PrimExpr> offset = rowMajorOffset(buf, resolved);
  if (!offset) return;
  PrimExpr flat = az.simplify(*offset);
  if (hasDivision(flat)) return;
  for (auto& e : indices) e = makeInt(0);
  indices.back() = flat;
}

}  // namespace

Stmt resolveIndexDivisions(const Stmt& body, bool flatten) {
  return rewriteAccesses(body,
                         [flatten](const Buffer& buf, std::vector<PrimExpr>& indices, const Analyzer& az,
                                   const std::unordered_map<const VarNode*, PrimExpr>& bindings) {
                           resolveAccess(buf, indices, az, bindings, flatten);
                           return buf;
                         });
}

Stmt planAllocations(const PrimFunc& f, AllocPlan* plan) {
  AllocAnalysis analysis = analyzeAllocs(f);
  plan->written_before_read = std::move(analysis.written_before_read);
  const auto& boxes = analysis.boxes;
  if (boxes.empty()) return f.body;
  for (const auto& a : f.allocs)
    if (auto it = boxes.find(a.get()); it != boxes.end()) {
      std::vector<PrimExpr> shape;
      for (int64_t e : it->second.extent) shape.push_back(makeInt(e));
      Buffer c = makeBuffer(a->name, a->dtype, std::move(shape), a->scope);
      plan->compacted[a.get()] = c;
      plan->per_loop[it->second.loop.get()].push_back(c);
    }
  return rewriteAccesses(f.body, [&](const Buffer& buf, std::vector<PrimExpr>& indices, const Analyzer& az,
                                     const std::unordered_map<const VarNode*, PrimExpr>& bindings) {
    auto it = plan->compacted.find(buf.get());
    if (it == plan->compacted.end()) return buf;
    const AllocBox& box = boxes.at(buf.get());
    for (size_t d = 0; d < indices.size(); ++d)
      indices[d] = az.simplify(makeBinary(BinaryOp::Sub, substitute(indices[d], bindings), box.base[d]));
    return it->second;
  });
}

}  // namespace mlcc::codegen
