// Boxes of shared and local buffers per kernel (see buffer_boxes.h).
#include "mlcc/schedule/buffer_boxes.h"

#include <algorithm>
#include <functional>
#include <set>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/schedule/gpu_check.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

struct Access {
  std::vector<PrimExpr> indices;  // in loop variables (thread loops as their axis variable)
  // The same without the predicate-bounded variables (for local buffers:
  // a thread's indices are fixed, the parts a predicate bounds too).
  std::vector<PrimExpr> plain_indices;
  std::vector<const ForNode*> loops;
  std::vector<std::pair<Var, int64_t>> bounded;  // predicate-bounded parts: [0, extent)
};

class AccessCollector {
 public:
  AccessCollector(const PrimFunc& f, BufferBoxes& out) : out_(out) {
    for (const auto& b : f.allocs)
      if (b->scope != StorageScope::global) buffers_.insert(b.get());
  }

  void stmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* l = s->as<ForNode>();
        if (l->loop_kind == LoopKind::thread_binding) {
          auto it = out_.thread_vars.find(l->thread_tag);
          if (it == out_.thread_vars.end())
            it = out_.thread_vars.emplace(l->thread_tag, makeVar(l->thread_tag)).first;
          subst_[l->loop_var.get()] = plain_[l->loop_var.get()] = it->second;
        }
        loops_.push_back(l);
        stmt(l->body);
        loops_.pop_back();
        return;
      }
      case StmtKind::Block: {
        // A part of the bindings bounded by the predicate (`%f * 224 + %t <
        // 2640` after a fuse and a split) is a variable over that range, as
        // verifyGpuFunc takes it: the boxes are then as tight as the
        // predicate makes them.
        const auto* b = s->as<BlockNode>();
        const size_t bounded_before = bounded_.size();
        std::vector<std::pair<PrimExpr, Var>> cuts;
        Analyzer az;
        for (const ForNode* l : loops_)
          if (l->loop_kind != LoopKind::thread_binding) az.bind(l->loop_var, makeInt(0), l->extent);
        for (const auto& [tag, v] : out_.thread_vars)
          for (const ForNode* l : loops_)
            if (l->thread_tag == tag && !az.isBound(v)) az.bind(v, makeInt(0), l->extent);
        if (b->predicate)
          for (const auto& [part, extent] : predicateBounds(substitute(b->predicate, subst_), az)) {
            Var z = makeVar("bounded");
            bounded_.push_back({z, extent});
            cuts.push_back({part, z});
          }
        for (const auto& iv : b->iter_vars) {
          expr(iv.binding);
          PrimExpr binding = substitute(iv.binding, subst_);
          for (const auto& [part, z] : cuts) binding = replaceBoundedPart(binding, part, z, az);
          subst_[iv.var.get()] = binding;
          plain_[iv.var.get()] = substitute(iv.binding, plain_);
        }
        expr(b->predicate);
        stmt(b->init);
        stmt(b->body);
        bounded_.resize(bounded_before);
        return;
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        for (const auto& i : st->indices) expr(i);
        expr(st->value);
        note(st->buffer.get(), st->indices);
        return;
      }
      case StmtKind::Seq:
        for (const auto& c : s->as<SeqNode>()->stmts) stmt(c);
        return;
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        expr(i->cond);
        stmt(i->then_case);
        stmt(i->else_case);
        return;
      }
    }
  }

  std::map<const BufferNode*, std::vector<Access>> accesses;

 private:
  void expr(const PrimExpr& e) {
    if (!e) return;
    if (const auto* l = e->as<LoadNode>()) note(l->buffer.get(), l->indices);
    forEachChild(e, [&](const PrimExpr& x) { expr(x); });
  }

  void note(const BufferNode* b, const std::vector<PrimExpr>& indices) {
    if (!buffers_.count(b)) return;
    Access a;
    for (const auto& i : indices) {
      a.indices.push_back(substitute(i, subst_));
      a.plain_indices.push_back(substitute(i, plain_));
    }
    a.loops = loops_;
    a.bounded = bounded_;
    accesses[b].push_back(std::move(a));
  }

  BufferBoxes& out_;
  std::set<const BufferNode*> buffers_;
  std::vector<const ForNode*> loops_;
  std::unordered_map<const VarNode*, PrimExpr> subst_, plain_;
  std::vector<std::pair<Var, int64_t>> bounded_;
};

bool isBlockIdx(const std::string& tag) { return tag.rfind("blockIdx.", 0) == 0; }

}  // namespace

BufferBoxes computeBufferBoxes(const PrimFunc& f, const Stmt& root) {
  BufferBoxes out;
  AccessCollector c(f, out);
  c.stmt(root);
  for (const auto& [buf, accesses] : c.accesses) {
    const bool shared = buf->scope == StorageScope::shared;
    std::vector<int64_t> declared(buf->shape.size(), -1);  // -1: symbolic
    for (size_t d = 0; d < declared.size(); ++d) asConstInt(buf->shape[d], &declared[d]);
    size_t common = accesses[0].loops.size();
    for (const auto& a : accesses) {
      size_t k = 0;
      while (k < common && k < a.loops.size() && a.loops[k] == accesses[0].loops[k]) ++k;
      common = k;
    }
    // Per access and dimension: the first and last index over the ranging loops.
    std::vector<std::vector<std::optional<IntBounds>>> bounds;
    for (const auto& a : accesses) {
      Analyzer az;
      std::set<const VarNode*> ranging;
      auto range = [&](const Var& v, const PrimExpr& extent) {
        if (!az.isBound(v)) az.bind(v, makeInt(0), extent);
        ranging.insert(v.get());
      };
      for (size_t k = 0; k < a.loops.size(); ++k) {
        const ForNode* l = a.loops[k];
        if (l->loop_kind == LoopKind::thread_binding) {
          if (isBlockIdx(l->thread_tag) || !shared) continue;
          range(out.thread_vars.at(l->thread_tag), l->extent);
          continue;
        }
        if (k < common) continue;
        range(l->loop_var, l->extent);
      }
      for (const auto& [z, extent] : a.bounded) range(z, makeInt(extent));
      auto& row = bounds.emplace_back();
      for (const auto& i : shared ? a.indices : a.plain_indices) {
        // An index of fixed variables only is its own bounds (the Analyzer
        // does not bound a division of symbols: a thread's one element of
        // a local accumulator indexed by `(%bx * 256 + %tx) / 49`).
        const bool fixed = !anyOf(i, [&](const PrimExpr& x) {
          const auto* v = x->as<VarNode>();
          return v && ranging.count(v);
        });
        row.push_back(fixed ? std::optional<IntBounds>(IntBounds{i, i}) : az.bounds(i));
      }
    }
    BufferBox box;
    Analyzer plain;
    for (size_t d = 0; d < declared.size(); ++d) {
      PrimExpr base;
      int64_t lo = 0, hi = -1;
      bool ok = true;
      for (const auto& row : bounds) {
        if (!row[d]) {
          ok = false;
          break;
        }
        if (!base) base = row[d]->min;
        int64_t a, b;
        if (!asConstInt(plain.simplify(makeBinary(BinaryOp::Sub, row[d]->min, base)), &a) ||
            !asConstInt(plain.simplify(makeBinary(BinaryOp::Sub, row[d]->max, base)), &b)) {
          ok = false;
          break;
        }
        lo = std::min(lo, a);
        hi = std::max(hi, b);
      }
      if (ok && (declared[d] < 0 || hi - lo + 1 < declared[d])) {
        box.base.push_back(plain.simplify(makeBinary(BinaryOp::Add, base, makeInt(lo))));
        box.extent.push_back(hi - lo + 1);
      } else if (declared[d] >= 0) {
        box.base.push_back(makeInt(0));
        box.extent.push_back(declared[d]);
      } else {
        throw Error("in prim @" + f.name + ": " + scopeName(buf->scope) + " buffer %" + buf->name +
                    " has a symbolic shape, and the part of dimension " + std::to_string(d) +
                    " a kernel uses is not of a constant size");
      }
    }
    for (size_t k = 0; k < common; ++k) {
      const ForNode* l = accesses[0].loops[k];
      if (l->loop_kind == LoopKind::thread_binding) continue;
      box.zero_loop = l;
      int64_t trips;
      if (asConstInt(l->extent, &trips) && trips <= 1) continue;
      bool moves = false;
      std::unordered_map<const VarNode*, PrimExpr> next{
          {l->loop_var.get(), makeBinary(BinaryOp::Add, l->loop_var, makeInt(1))}};
      for (size_t d = 0; d < box.base.size(); ++d) {
        int64_t step;
        if (asConstInt(plain.simplify(makeBinary(BinaryOp::Sub, substitute(box.base[d], next), box.base[d])),
                       &step) &&
            std::abs(step) >= box.extent[d])
          moves = true;
      }
      box.iterations_disjoint &= moves;
    }
    out.boxes.emplace(buf, std::move(box));
  }
  return out;
}

}  // namespace mlcc::schedule
