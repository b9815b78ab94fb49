// Analyses of function-level allocations (see alloc_analysis.h): every
// access of an allocation is collected with its path from the function
// body; each read then looks for a store that covers it, and the accesses'
// bounds below their deepest common loop give the box a compaction needs.
#include "mlcc/ir/alloc_analysis.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::ir {

namespace {

// One step of the path from the body to an access: the statement, which of
// its parts holds the access (a Seq's position; a loop's body 0; a block's
// bindings and predicate -1, init 0, body 1; an if's condition -1, then 0,
// else 1), and whether that part can be skipped.
struct Step {
  const StmtNode* node;
  int part;
  bool guard;
  PrimExpr predicate = nullptr;  // a block body's guard: its predicate, in loop variables
};

struct Access {
  std::vector<Step> path;
  std::vector<PrimExpr> indices;  // in loop variables (block bindings substituted)
};

using VarMap = std::unordered_map<const VarNode*, PrimExpr>;

// A predicate's conjuncts as bounds `e < limit` (limit absent: `e >= 0`),
// or nullopt when some conjunct is another kind of condition. x > y is
// read as y < x.
struct Bound {
  PrimExpr e;
  std::optional<int64_t> limit;
};
std::optional<std::vector<Bound>> boundsOf(const PrimExpr& predicate) {
  std::vector<Bound> out;
  for (const PrimExpr& c : conjuncts(predicate)) {
    const auto* bin = c->as<BinaryNode>();
    if (!bin) return std::nullopt;
    BinaryOp op = bin->op;
    PrimExpr lhs = bin->a, rhs = bin->b;
    if (op == BinaryOp::GT || op == BinaryOp::GE) {
      std::swap(lhs, rhs);
      op = op == BinaryOp::GT ? BinaryOp::LT : BinaryOp::LE;
    }
    int64_t k = 0;
    if ((op == BinaryOp::LT || op == BinaryOp::LE) && asConstInt(rhs, &k))
      out.push_back({lhs, op == BinaryOp::LT ? k : k + 1});
    else if (op == BinaryOp::LE && asConstInt(lhs, &k) && k == 0)
      out.push_back({rhs, std::nullopt});
    else
      return std::nullopt;
  }
  return out;
}

// Whether a block's predicate only keeps its one store inside the buffer:
// each conjunct bounds an index of the store (in loop variables) by the
// buffer's extent along it (`index < c` with c >= the dimension, or
// `index >= 0`), as the predicates of a split that does not divide a
// dimension do. The block then stores every in-bounds element its
// unpredicated iterations would, and a read (always in bounds) can touch no
// other.
bool clipsOnlyOutside(const BlockNode& b, const VarMap& bindings) {
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  if (!st || !b.predicate) return false;
  std::vector<PrimExpr> index;
  for (const auto& i : st->indices) index.push_back(substitute(i, bindings));
  const auto bounds = boundsOf(substitute(b.predicate, bindings));
  if (!bounds) return false;
  for (const Bound& bound : *bounds) {
    bool bounds_an_index = false;
    for (size_t d = 0; d < index.size() && !bounds_an_index; ++d) {
      int64_t diff = 1, extent = 0;
      if (!asConstInt(simplify(makeBinary(BinaryOp::Sub, bound.e, index[d])), &diff) || diff != 0) continue;
      bounds_an_index = !bound.limit || (asConstInt(st->buffer->shape[d], &extent) && *bound.limit >= extent);
    }
    if (!bounds_an_index) return false;
  }
  return true;
}

class Collector {
 public:
  explicit Collector(const PrimFunc& f) {
    for (const auto& a : f.allocs) tracked_.insert(a.get());
    visit(f.body);
  }
  std::unordered_map<const BufferNode*, std::vector<Access>> reads, writes;

 private:
  void visit(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        path_.push_back({f, -1, false});
        loads(f->extent);
        path_.back().part = 0;
        visit(f->body);
        path_.pop_back();
        break;
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        path_.push_back({b, -1, false});
        for (const auto& iv : b->iter_vars) loads(iv.binding);
        loads(b->predicate);
        for (const auto& iv : b->iter_vars) bindings_[iv.var.get()] = substitute(iv.binding, bindings_);
        int64_t always = 1;
        const bool predicated = b->predicate && !(asConstInt(b->predicate, &always) && always != 0) &&
                                !clipsOnlyOutside(*b, bindings_);
        if (b->init) {
          path_.back() = {b, 0, true};  // runs on the first reduce iteration only
          visit(b->init);
        }
        path_.back() = {b, 1, predicated, predicated ? substitute(b->predicate, bindings_) : nullptr};
        visit(b->body);
        for (const auto& iv : b->iter_vars) bindings_.erase(iv.var.get());
        path_.pop_back();
        break;
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        for (const auto& i : st->indices) loads(i);
        loads(st->value);
        if (tracked_.count(st->buffer.get())) writes[st->buffer.get()].push_back(access(st->indices));
        break;
      }
      case StmtKind::Seq: {
        const auto& stmts = s->as<SeqNode>()->stmts;
        for (size_t i = 0; i < stmts.size(); ++i) {
          path_.push_back({s.get(), static_cast<int>(i), false});
          visit(stmts[i]);
          path_.pop_back();
        }
        break;
      }
      case StmtKind::If: {
        const auto* x = s->as<IfNode>();
        path_.push_back({x, -1, true});
        loads(x->cond);
        path_.back().part = 0;
        visit(x->then_case);
        path_.back().part = 1;
        visit(x->else_case);
        path_.pop_back();
        break;
      }
    }
  }

  void loads(const PrimExpr& e) {
    if (!e) return;
    if (const auto* l = e->as<LoadNode>(); l && tracked_.count(l->buffer.get()))
      reads[l->buffer.get()].push_back(access(l->indices));
    forEachChild(e, [&](const PrimExpr& x) { loads(x); });
  }

  Access access(const std::vector<PrimExpr>& indices) const {
    Access a{path_, {}};
    for (const auto& i : indices) a.indices.push_back(substitute(i, bindings_));
    return a;
  }

  std::unordered_set<const BufferNode*> tracked_;
  std::vector<Step> path_;
  VarMap bindings_;  // block iteration variable -> its value in loop variables
};

// How many leading steps two paths share (at most `limit`).
size_t commonSteps(const std::vector<Step>& a, const std::vector<Step>& b, size_t limit = SIZE_MAX) {
  size_t k = 0;
  while (k < limit && k < a.size() && k < b.size() && a[k].node == b[k].node && a[k].part == b[k].part) ++k;
  return k;
}

bool isZero(const PrimExpr& e) {
  int64_t v = 1;
  return asConstInt(e, &v) && v == 0;
}

// The store's own loops (below where it and the read diverge).
struct Own {
  const Var* var;
  int64_t extent;
};

// The span of `offset` (an index minus its base) when it is a dense sum of
// the own loops (coefficients 1, e1, e1 * e2, ...: every point of
// [0, span) once); each loop it uses is recorded in dim_of as indexing
// dimension d (none may index two). nullopt otherwise.
std::optional<int64_t> denseSpan(const PrimExpr& offset, const std::vector<Own>& own, const VarMap& own_zero,
                                 const Analyzer& az, size_t d,
                                 std::unordered_map<const VarNode*, size_t>& dim_of) {
  const PrimExpr o = az.simplify(offset);
  PrimExpr rest = o;
  std::vector<std::pair<int64_t, int64_t>> terms;  // (coefficient, extent)
  for (const Own& x : own) {
    VarMap one = own_zero;
    one[x.var->get()] = makeInt(1);
    int64_t c = 0;
    if (!asConstInt(az.simplify(substitute(o, one)), &c)) return std::nullopt;
    if (c == 0) continue;
    rest = makeBinary(BinaryOp::Sub, rest, makeBinary(BinaryOp::Mul, makeInt(c), *x.var));
    if (x.extent == 1) continue;
    if (c < 0 || !dim_of.emplace(x.var->get(), d).second) return std::nullopt;
    terms.emplace_back(c, x.extent);
  }
  int64_t zero = 1;
  if (!asConstInt(az.simplify(rest), &zero) || zero != 0) return std::nullopt;  // not linear in its loops
  std::sort(terms.begin(), terms.end());
  int64_t span = 1;
  for (const auto& [c, e] : terms)
    if (c != span || __builtin_mul_overflow(span, e, &span)) return std::nullopt;
  return span;
}

// Whether the store `w` covers the read `r` (see the header).
bool covers(const Access& w, const Access& r) {
  const size_t k = commonSteps(w.path, r.path);
  // They diverge at a sequence, the store's statement first.
  if (k == w.path.size() || k == r.path.size() || w.path[k].node->kind != StmtKind::Seq ||
      w.path[k].part >= r.path[k].part)
    return false;
  Analyzer az;
  for (size_t i = 0; i < k; ++i)
    if (const auto* f = w.path[i].node->as<ForNode>()) az.bind(f->loop_var, makeInt(0), f->extent);
  // The store's own loops run every iteration; nothing skips it but the
  // predicate of its own block when that only trims the top of the dense
  // range an index runs over (`%f * 128 + %t < 130`: a tile with a halo).
  std::vector<Own> own;
  VarMap own_zero;
  std::vector<Bound> trims;
  size_t own_block = 0;
  for (size_t i = 0; i < w.path.size(); ++i)
    if (w.path[i].node->kind == StmtKind::Block) own_block = i;
  for (size_t i = k + 1; i < w.path.size(); ++i) {
    if (w.path[i].guard) {
      if (i != own_block || !w.path[i].predicate) return false;
      auto bounds = boundsOf(w.path[i].predicate);
      if (!bounds) return false;
      trims = std::move(*bounds);
    }
    if (const auto* f = w.path[i].node->as<ForNode>()) {
      int64_t extent = 0;
      if (!asConstInt(f->extent, &extent) || extent < 1) return false;
      az.bind(f->loop_var, 0, extent);
      own.push_back({&f->loop_var, extent});
      own_zero[f->loop_var.get()] = makeInt(0);
    }
  }
  for (size_t i = k + 1; i < r.path.size(); ++i)
    if (const auto* f = r.path[i].node->as<ForNode>()) az.bind(f->loop_var, makeInt(0), f->extent);
  if (w.indices.size() != r.indices.size()) return false;
  // The read stays within [base, base + span) along dimension d.
  auto readInside = [&](size_t d, const PrimExpr& base, int64_t span) {
    const auto bounds = az.constBounds(az.simplify(makeBinary(BinaryOp::Sub, r.indices[d], base)));
    return bounds && bounds->first >= 0 && bounds->second < span;
  };
  std::vector<PrimExpr> bases;
  for (const auto& i : w.indices) bases.push_back(az.simplify(substitute(az.simplify(i), own_zero)));
  // Each index is its base plus a dense sum of own loops, no loop in two
  // dimensions.
  std::unordered_map<const VarNode*, size_t> dim_of;  // own loop -> the dimension it indexes
  std::vector<int64_t> spans;
  for (size_t d = 0; d < w.indices.size() && spans.size() == d; ++d)
    if (auto span =
            denseSpan(makeBinary(BinaryOp::Sub, w.indices[d], bases[d]), own, own_zero, az, d, dim_of))
      spans.push_back(*span);
  // Each trim bounds one dimension's offset (plus a constant) from above,
  // or from below by no more than its own range does.
  bool per_dimension = spans.size() == w.indices.size();
  for (const Bound& t : trims) {
    bool matched = false;
    for (size_t d = 0; d < spans.size() && per_dimension && !matched; ++d) {
      int64_t shift = 0;  // t.e = offset + shift
      const PrimExpr offset = makeBinary(BinaryOp::Sub, w.indices[d], bases[d]);
      if (!asConstInt(az.simplify(makeBinary(BinaryOp::Sub, t.e, offset)), &shift)) continue;
      matched = t.limit ? true : shift >= 0;
      if (t.limit) spans[d] = std::clamp<int64_t>(*t.limit - shift, 0, spans[d]);
    }
    per_dimension = per_dimension && matched;
  }
  for (size_t d = 0; d < spans.size() && per_dimension; ++d)
    per_dimension = readInside(d, bases[d], spans[d]);
  if (per_dimension) return true;
  // Or the indices split one dense sum (a fused loop split again, as a
  // cooperative fetch copies a tile: `(%t * 4 + %v) / 8`, `... % 8`): each
  // offset from its base lies in [0, span_d), and the offsets linearized
  // over those spans are a dense sum over [0, prod span_d). Linearizing
  // the tile is one to one, so every element of the tile is stored. A trim
  // of the fused sum (`%f * 224 + %t < 768`: a split past the tile's end)
  // makes that sum a variable over the trimmed range.
  std::vector<PrimExpr> indices = w.indices;
  std::vector<Own> fused_own = own;
  VarMap fused_zero = own_zero;
  const Var trimmed = makeVar("trimmed");
  if (!trims.empty()) {
    if (trims.size() != 1 || !trims[0].limit) return false;
    dim_of.clear();
    const auto trim_span = denseSpan(trims[0].e, own, own_zero, az, 0, dim_of);
    if (!trim_span || !isZero(az.simplify(substitute(trims[0].e, own_zero)))) return false;
    const int64_t extent = std::min(*trim_span, *trims[0].limit);
    if (extent < 1) return false;
    for (auto& i : indices) {
      i = replaceBoundedPart(az.simplify(i), trims[0].e, trimmed, az);
      for (const auto& [v, d] : dim_of)
        if (anyOf(i, [v = v](const PrimExpr& x) { return x.get() == v; }))
          return false;  // the part was not taken out
    }
    std::erase_if(fused_own, [&](const Own& x) { return dim_of.count(x.var->get()) != 0; });
    fused_own.push_back({&trimmed, extent});
    fused_zero[trimmed.get()] = makeInt(0);
    az.bind(trimmed, 0, extent);
  }
  std::vector<PrimExpr> offsets;
  spans.clear();
  for (size_t d = 0; d < indices.size(); ++d) {
    offsets.push_back(az.simplify(makeBinary(BinaryOp::Sub, indices[d], bases[d])));
    const auto bounds = az.constBounds(offsets.back());
    if (!bounds || bounds->first != 0) return false;
    spans.push_back(bounds->second + 1);
    if (!readInside(d, bases[d], spans.back())) return false;
  }
  PrimExpr flat = makeInt(0);
  int64_t total = 1;
  for (size_t d = 0; d < offsets.size(); ++d) {
    flat = makeBinary(BinaryOp::Add, makeBinary(BinaryOp::Mul, flat, makeInt(spans[d])), offsets[d]);
    if (__builtin_mul_overflow(total, spans[d], &total)) return false;
  }
  dim_of.clear();
  const auto span = denseSpan(flat, fused_own, fused_zero, az, 0, dim_of);
  return span && *span == total;
}

bool everyReadCovered(Collector& c, const BufferNode* buf) {
  const auto& writes = c.writes[buf];
  const auto& reads = c.reads[buf];
  return std::all_of(reads.begin(), reads.end(), [&](const Access& r) {
    return std::any_of(writes.begin(), writes.end(), [&](const Access& w) { return covers(w, r); });
  });
}

// The box of `accesses` per iteration of their deepest common loop (see
// the header), or nullopt.
std::optional<AllocBox> boxOf(const std::vector<const Access*>& accesses, DType dtype) {
  if (accesses.empty()) return std::nullopt;
  const Access& first = *accesses[0];
  size_t common = first.path.size();
  for (const Access* a : accesses) common = commonSteps(first.path, a->path, common);
  size_t loop = common;
  for (size_t i = 0; i < common; ++i)
    if (first.path[i].node->kind == StmtKind::For) loop = i;
  if (loop == common) return std::nullopt;
  AllocBox box{first.path[loop].node->as<ForNode>()->loop_var, {}, {}};
  std::vector<int64_t> hi;  // largest offset from the base per dimension
  for (const Access* a : accesses) {
    Analyzer az;
    for (size_t i = loop + 1; i < a->path.size(); ++i)
      if (const auto* f = a->path[i].node->as<ForNode>()) az.bind(f->loop_var, makeInt(0), f->extent);
    if (a->indices.size() != first.indices.size()) return std::nullopt;
    for (size_t d = 0; d < a->indices.size(); ++d) {
      const auto bounds = az.bounds(az.simplify(a->indices[d]));
      if (!bounds) return std::nullopt;
      const PrimExpr min = simplify(bounds->min);
      int64_t lo = 0, up = 0;
      if (box.base.size() <= d) {
        box.base.push_back(min);
        hi.push_back(0);
      } else if (!asConstInt(simplify(makeBinary(BinaryOp::Sub, min, box.base[d])), &lo) || lo < 0) {
        return std::nullopt;  // another base (a constant offset above it would do; not needed yet)
      }
      if (!asConstInt(simplify(makeBinary(BinaryOp::Sub, bounds->max, box.base[d])), &up) || up < 0)
        return std::nullopt;
      hi[d] = std::max(hi[d], up);
    }
  }
  int64_t bytes = dtypeBytes(dtype);
  for (int64_t h : hi) {
    box.extent.push_back(h + 1);
    if (__builtin_mul_overflow(bytes, h + 1, &bytes) || bytes > kMaxCompactBytes) return std::nullopt;
  }
  return box;
}

}  // namespace

AllocAnalysis analyzeAllocs(const PrimFunc& f) {
  Collector c(f);
  AllocAnalysis out;
  for (const auto& a : f.allocs) {
    if (!everyReadCovered(c, a.get())) continue;
    out.written_before_read.insert(a.get());
    int64_t elements = 1, e = 0;
    bool is_static = true;
    for (const auto& d : a->shape)
      is_static = is_static && asConstInt(d, &e) && !__builtin_mul_overflow(elements, e, &elements);
    // A symbolic alloc (a dynamic batch's intermediate) compacts to any box:
    // boxes are constant.
    if (!is_static) elements = INT64_MAX;
    std::vector<const Access*> accesses;
    for (const auto& x : c.reads[a.get()]) accesses.push_back(&x);
    for (const auto& x : c.writes[a.get()]) accesses.push_back(&x);
    auto box = boxOf(accesses, a->dtype);
    if (!box) continue;
    int64_t compact = 1;
    for (int64_t x : box->extent) compact *= x;
    if (compact < elements) out.boxes.emplace(a.get(), std::move(*box));
  }
  return out;
}

}  // namespace mlcc::ir
