// Races in one GPU kernel (see gpu_races.h): between its thread blocks,
// and between the threads of a thread block storing to one element.
//
// Each access to a global buffer is written in the kernel's loop variables
// (block iteration variables replaced by their bindings, the loops bound to
// one blockIdx axis by one variable per axis). Two accesses of the same
// buffer, a store and a load or two stores, are apart in thread blocks when,
// for every blockIdx axis of extent > 1, some dimension of both indices, or
// the element's row-major offset, is
//     sum over axes b of k_b * b  +  rest,
// with the same coefficients k_b in both, and the rests of both (over every
// other loop's range, and below the bounds `e < c` of the blocks'
// predicates) fit in one window of width <= the smallest |k_b|, each
// further |k_b| at least the span of the smaller ones (a mixed radix: the
// axes' values pick disjoint windows; an axis of symbolic extent can only
// be the last). Then whatever a thread block reads or writes, no other
// thread block writes. Where indices divide a grid axis (b / c, b % c,
// (b / c) % d: loops fused into one grid axis), the parts are axes of their
// own, and the thread blocks apart along parts that make up b's digits are
// apart along b. The offset is also read through v = b * T + t (blockIdx.x
// and its threadIdx.x loop fused back), where a fused loop split over
// blocks and threads and then by the shape folds back to v. A block's load
// of the element it stores (a reduction's update) is the thread's own, and
// the reduction check's (gpu_check.h). Anything not shown so is refused.
//
// Threads: a store's element offset is shown to differ between any two
// threads of a thread block as a mixed radix (distinctPerThread) of the
// loops around it in the kernel, each loop split by the divisions of it
// the offset uses (tx / 8, tx % 8) and loops fused and split again
// ((f * 32 + t) / 10) seen as one loop, the threads also numbered as the
// GPU does (t = ty * X + tx). A serial loop whose body reads the shared
// buffer it stores to has a barrier between its iterations (the code
// generator's), so it is the same for all threads.
#include "gpu_races.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/substitute.h"
#include "tree.h"

namespace mlcc::schedule {

using namespace ir;

namespace {

// e < bound, a term of a block's predicate.
struct Bound {
  PrimExpr e;
  int64_t bound;
};

// A loop around an access inside the kernel (not bound to blockIdx).
struct Loop {
  Var var;
  int64_t extent;   // -1: symbolic
  bool thread;      // bound to threadIdx
  std::string tag;  // its thread tag, if bound
};

struct Access {
  const BufferNode* buffer;
  std::vector<PrimExpr> indices;  // in the kernel's loop variables and one variable per blockIdx axis
  bool store;
  std::string block;         // the innermost enclosing block
  PrimExpr flat;             // the row-major offset of the element
  PrimExpr fused_flat;       // the same through the blockIdx.x and threadIdx.x loops fused (null: none)
  std::vector<Bound> below;  // its block's predicate: e < bound for each
  std::vector<Loop> loops;   // the loops around it in the kernel, outermost first (a store in an init:
                             // without those of the block's reduce variables, at their first value)
  bool in_reduction;         // its block has a reduce iteration variable
};

// A blockIdx axis, or a part of one: b / c and b % c (of a constant c)
// where indices divide a grid axis (thread blocks of fused loops).
struct Axis {
  Var var;
  int64_t extent;        // -1: symbolic
  std::string physical;  // the blockIdx tag it is (a part of)
  int64_t weight = 1;    // a part: (b / weight) % modulus
  int64_t modulus = 0;   // 0: none (b / weight)
};

class Collector {
 public:
  std::vector<Access> accesses;
  std::map<std::string, Axis> axes;  // "blockIdx.x", "blockIdx.x/2", "blockIdx.x%2"
  Analyzer az;

  void visit(const Stmt& s, const std::string& block) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        loads(f->extent, block);
        if (f->loop_kind == LoopKind::thread_binding && f->thread_tag.rfind("blockIdx.", 0) == 0) {
          int64_t extent;
          if (!asConstInt(f->extent, &extent)) extent = -1;
          auto it = axes.find(f->thread_tag);
          if (it == axes.end()) {
            it = axes.emplace(f->thread_tag, Axis{makeVar(f->thread_tag), extent, f->thread_tag}).first;
            az.bind(it->second.var, makeInt(0), sub_(f->extent));
            grid_extent_[f->thread_tag] = sub_(f->extent);
          }
          sub_.mapVar(f->loop_var, it->second.var);
        } else {
          az.bind(f->loop_var, makeInt(0), sub_(f->extent));
          int64_t extent;
          if (!asConstInt(f->extent, &extent)) extent = -1;
          const bool thread =
              f->loop_kind == LoopKind::thread_binding && f->thread_tag.rfind("threadIdx.", 0) == 0;
          if (thread && f->thread_tag == "threadIdx.x" && extent > 0) thread_x_ = {f->loop_var, extent};
          loops_.push_back({f->loop_var, extent, thread, f->thread_tag});
          visit(f->body, block);
          loops_.pop_back();
          return;
        }
        visit(f->body, block);
        return;
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        for (const auto& iv : b->iter_vars) {
          loads(iv.binding, b->name);
          sub_.mapVar(iv.var, sub_(iv.binding));
        }
        loads(b->predicate, b->name);
        const bool outer_reduction = in_reduction_;
        in_reduction_ = std::any_of(b->iter_vars.begin(), b->iter_vars.end(),
                                    [](const IterVar& iv) { return iv.kind == IterKind::reduce; });
        const size_t outer = below_.size();
        predicateBounds(b->predicate);
        if (b->init) {
          // The init runs at the reduce variables' first values: not along
          // the loops that feed them.
          std::vector<Loop> around = loops_;
          std::erase_if(loops_, [&](const Loop& l) {
            return std::any_of(b->iter_vars.begin(), b->iter_vars.end(), [&](const IterVar& iv) {
              return iv.kind == IterKind::reduce && usesVar(iv.binding, l.var.get());
            });
          });
          visit(b->init, b->name);
          loops_ = std::move(around);
        }
        visit(b->body, b->name);
        below_.resize(outer);
        in_reduction_ = outer_reduction;
        return;
      }
      case StmtKind::Seq:
        for (const auto& c : s->as<SeqNode>()->stmts) visit(c, block);
        return;
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        loads(i->cond, block);
        visit(i->then_case, block);
        visit(i->else_case, block);
        return;
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        for (const auto& i : st->indices) loads(i, block);
        loads(st->value, block);
        add(st->buffer.get(), st->indices, true, block);
        return;
      }
    }
  }

 private:
  void loads(const PrimExpr& e, const std::string& block) {
    if (!e) return;
    if (const auto* l = e->as<LoadNode>()) add(l->buffer.get(), l->indices, false, block);
    forEachChild(e, [&](const PrimExpr& x) { loads(x, block); });
  }
  void add(const BufferNode* buf, const std::vector<PrimExpr>& indices, bool store,
           const std::string& block) {
    if (buf->scope == StorageScope::local) return;
    Access a{buf, {}, store, block, nullptr, nullptr, below_, loops_, in_reduction_};
    for (const auto& i : indices) a.indices.push_back(az.simplify(parts(az.simplify(sub_(i)))));
    // (Thread blocks of loops fused into one grid axis and its threads write
    // x[v / n, v % n], v = b * T + t: apart by the offset v, not by either
    // dimension.)
    PrimExpr flat = makeInt(0);
    for (size_t d = 0; d < indices.size(); ++d)
      flat = makeBinary(BinaryOp::Add, makeBinary(BinaryOp::Mul, flat, buf->shape[d]), sub_(indices[d]));
    a.flat = az.simplify(parts(az.simplify(flat)));
    a.fused_flat = fusedView(flat);
    accesses.push_back(std::move(a));
  }
  // `e` with each b / c, b % c and (b / c) % d of a grid axis b replaced by
  // its part's variable.
  PrimExpr parts(const PrimExpr& e) {
    const auto* bin = e->as<BinaryNode>();
    int64_t c, d;
    auto gridAxis = [&](const PrimExpr& x) -> const std::string* {
      for (const auto& [tag, axis] : axes)
        if (axis.physical == tag && x.get() == axis.var.get()) return &tag;
      return nullptr;
    };
    if (bin && (bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && asConstInt(bin->b, &c) && c > 0) {
      if (const std::string* tag = gridAxis(bin->a))
        return bin->op == BinaryOp::Div ? part(*tag, c, 0) : part(*tag, 1, c);
      const auto* inner = bin->a->as<BinaryNode>();
      if (bin->op == BinaryOp::Mod && inner && inner->op == BinaryOp::Div && asConstInt(inner->b, &d) &&
          d > 0)
        if (const std::string* tag = gridAxis(inner->a)) return part(*tag, d, c);
    }
    return mapChildren(e, [&](const PrimExpr& x) { return parts(x); });
  }
  // The part (b / weight) % modulus of grid axis `tag` (modulus 0: b / weight).
  const Var& part(const std::string& tag, int64_t weight, int64_t modulus) {
    const std::string name = weight == 1 && modulus ? tag + "%" + std::to_string(modulus)
                             : modulus ? tag + "/" + std::to_string(weight) + "%" + std::to_string(modulus)
                                       : tag + "/" + std::to_string(weight);
    auto it = axes.find(name);
    if (it != axes.end()) return it->second.var;
    const int64_t whole = axes.at(tag).extent;
    int64_t extent = modulus;
    PrimExpr range = makeInt(modulus);
    if (!modulus) {
      extent = whole < 0 ? -1 : (whole + weight - 1) / weight;
      range = az.simplify(makeBinary(BinaryOp::Div,
                                     makeBinary(BinaryOp::Add, grid_extent_.at(tag), makeInt(weight - 1)),
                                     makeInt(weight)));
    }
    it = axes.emplace(name, Axis{makeVar(name), extent, tag, weight, modulus}).first;
    az.bind(it->second.var, makeInt(0), range);
    return it->second.var;
  }
  // `flat` seen through v = b * T + t, b the blockIdx.x axis and t the
  // threadIdx.x loop of extent T (b = v / T, t = v % T): a fused loop
  // split over thread blocks and threads and split again by the shape's
  // dimensions, x[v / n1, v / n2 % m2, ...], folds back to v where the
  // simplifier sees one v. Null where the kernel has no such pair.
  PrimExpr fusedView(const PrimExpr& flat) {
    auto b = axes.find("blockIdx.x");
    if (b == axes.end() || !thread_x_.first) return nullptr;
    const Var& t = thread_x_.first;
    const PrimExpr T = makeInt(thread_x_.second);
    Var v = makeVar("v");
    Substituter split, unsplit;
    split.mapVar(b->second.var, makeBinary(BinaryOp::Div, v, T));
    split.mapVar(t, makeBinary(BinaryOp::Mod, v, T));
    unsplit.mapVar(v, makeBinary(BinaryOp::Add, makeBinary(BinaryOp::Mul, b->second.var, T), t));
    return az.simplify(parts(az.simplify(unsplit(simplify(split(flat))))));
  }

  // The terms e < c (e <= c, c > e, ...) of a block's predicate, in the
  // accesses' terms: a predicated step bounds what its store's rest can be.
  void predicateBounds(const PrimExpr& p) {
    const auto* bin = p ? p->as<BinaryNode>() : nullptr;
    if (!bin) return;
    int64_t k;
    if (bin->op == BinaryOp::And) {
      predicateBounds(bin->a);
      predicateBounds(bin->b);
    } else if ((bin->op == BinaryOp::LT || bin->op == BinaryOp::LE) && asConstInt(bin->b, &k)) {
      below_.push_back({az.simplify(parts(az.simplify(sub_(bin->a)))), bin->op == BinaryOp::LT ? k : k + 1});
    } else if ((bin->op == BinaryOp::GT || bin->op == BinaryOp::GE) && asConstInt(bin->a, &k)) {
      below_.push_back({az.simplify(parts(az.simplify(sub_(bin->b)))), bin->op == BinaryOp::GT ? k : k + 1});
    }
  }

  Substituter sub_;
  bool in_reduction_ = false;
  std::vector<Loop> loops_;
  std::vector<Bound> below_;
  std::map<std::string, PrimExpr> grid_extent_;
  std::pair<Var, int64_t> thread_x_;  // the threadIdx.x loop and its extent
};

// e = sum k_v * v + rest over `vars`: the coefficient of each (by
// position; 0 where e does not move with it) and the rest, free of them;
// nullopt where e is not affine in them.
struct AffineTerms {
  std::vector<int64_t> coeff;
  PrimExpr rest;
};
std::optional<AffineTerms> affineIn(const PrimExpr& e, const std::vector<Var>& vars, const Analyzer& az) {
  AffineTerms t{std::vector<int64_t>(vars.size(), 0), e};
  for (size_t i = 0; i < vars.size(); ++i) {
    Substituter next;
    next.mapVar(vars[i], makeBinary(BinaryOp::Add, vars[i], makeInt(1)));
    if (!asConstInt(az.simplify(makeBinary(BinaryOp::Sub, next(e), e)), &t.coeff[i])) return std::nullopt;
    if (t.coeff[i] != 0)
      t.rest = makeBinary(BinaryOp::Sub, t.rest, makeBinary(BinaryOp::Mul, makeInt(t.coeff[i]), vars[i]));
  }
  t.rest = az.simplify(t.rest);
  for (const Var& v : vars)
    if (usesVar(t.rest, v.get())) return std::nullopt;
  return t;
}

// Whether digits (|k|, extent) are a mixed radix over a lowest window of
// `span` values: each |k|, smallest first, at least the span of what is
// below it (a symbolic extent, -1, only on the largest). Then distinct
// digit values give sums in disjoint windows.
bool mixedRadix(std::vector<std::pair<int64_t, int64_t>> digits, int64_t span = 1) {
  std::sort(digits.begin(), digits.end());
  for (size_t i = 0; i < digits.size(); ++i) {
    const auto [k, extent] = digits[i];
    if (span > k || (extent < 0 && i + 1 < digits.size())) return false;
    span = k * extent;
  }
  return true;
}

// index = sum k_b * b + rest: the coefficients of the axes and the rest's
// constant bounds (within the predicate's bounds `below` on it), or nullopt.
struct Split {
  std::map<std::string, int64_t> coeff;  // nonzero only
  int64_t lo, hi;
};

std::optional<Split> splitByAxes(const PrimExpr& index, const Collector& c, const std::vector<Bound>& below) {
  std::vector<Var> vars;
  for (const auto& [tag, axis] : c.axes) vars.push_back(axis.var);
  const std::optional<AffineTerms> t = affineIn(index, vars, c.az);
  if (!t) return std::nullopt;  // not affine in the axes
  Split s;
  size_t i = 0;
  for (const auto& [tag, axis] : c.axes)
    if (const int64_t k = t->coeff[i++]) s.coeff[tag] = k;
  const PrimExpr& rest = t->rest;
  auto b = c.az.constBounds(rest);
  if (!b) return std::nullopt;
  s.lo = b->first;
  s.hi = b->second;
  for (const Bound& p : below) {
    int64_t d;  // rest == p.e + d < p.bound + d
    if (asConstInt(c.az.simplify(makeBinary(BinaryOp::Sub, rest, p.e)), &d))
      s.hi = std::min(s.hi, p.bound - 1 + d);
  }
  return s;
}

// The axes whose values keep the two accesses apart in dimension d.
std::set<std::string> axesApartIn(const PrimExpr& a, const PrimExpr& b, const Collector& c, const Access& wa,
                                  const Access& wb) {
  auto sa = splitByAxes(a, c, wa.below), sb = splitByAxes(b, c, wb.below);
  if (!sa || !sb || sa->coeff != sb->coeff || sa->coeff.empty()) return {};
  std::vector<std::pair<int64_t, int64_t>> radix;  // (|k|, extent or -1)
  for (const auto& [tag, k] : sa->coeff) radix.push_back({std::llabs(k), c.axes.at(tag).extent});
  if (!mixedRadix(radix, std::max(sa->hi, sb->hi) - std::min(sa->lo, sb->lo) + 1))  // over the rests' window
    return {};
  std::set<std::string> out;
  for (const auto& [tag, k] : sa->coeff) out.insert(tag);
  return out;
}

std::string who(const Access& a) {
  return a.block.empty() ? "a statement outside blocks" : "block \"" + a.block + "\"";
}

// A block's load of the element it stores (a reduction's update): the
// thread reads what it writes. Whether other threads update that element
// too is the reduction check's (gpu_check.h).
bool ownElement(const Access& w, const Access& r) {
  if (w.block != r.block || w.indices.size() != r.indices.size()) return false;
  for (size_t d = 0; d < w.indices.size(); ++d)
    if (!structuralEqual(w.indices[d], r.indices[d])) return false;
  return true;
}

// A store its block also loads at the same index: a reduction's update
// (the reduction checks of gpu_check.h decide who may update an element).
bool isUpdate(const Access& w, const std::vector<Access>& accesses) {
  return std::any_of(accesses.begin(), accesses.end(),
                     [&](const Access& r) { return !r.store && r.buffer == w.buffer && ownElement(w, r); });
}

// The affine form of `e` in `loops` (coefficients by position in loops),
// loops of extent 1 at their only value; nullopt where e is not affine in
// them.
std::optional<AffineTerms> loopTerms(const PrimExpr& e, const std::vector<Loop>& loops, const Analyzer& az) {
  Substituter first;
  std::vector<Var> vars;
  for (const Loop& l : loops) {
    if (l.extent == 1) first.mapVar(l.var, makeInt(0));
    vars.push_back(l.var);
  }
  return affineIn(az.simplify(first(e)), vars, az);
}

// Whether `e` differs at any two points of `loops` that differ along a
// loop `e` moves with, and moves with every threadIdx loop of extent > 1:
// e is sum k_l * l + rest, the rest free of the loops (the same for every
// thread of a thread block), the |k_l| != 0 a mixed radix. A sum of loops
// that the block predicate bounds (`below`: `%t * 4 + %i < 7`, a tile's
// tail), whose terms appear in e scaled alike, is one digit over that
// bound. Then two threads never store to one element: they differ along
// some threadIdx loop, so e differs.
bool distinctPerThread(PrimExpr e, std::vector<Loop> loops, std::vector<Bound> below, const Analyzer& outer) {
  Analyzer az = outer;
  const size_t own = loops.size();
  // Loops of extent 1 at their only value (in e too); a bound s / c < b is
  // s < b * c.
  Substituter first;
  for (const Loop& l : loops)
    if (l.extent == 1) first.mapVar(l.var, makeInt(0));
  e = az.simplify(first(e));
  for (Bound& b : below) {
    b.e = az.simplify(first(b.e));
    int64_t c;
    if (const auto* div = b.e->as<BinaryNode>();
        div && div->op == BinaryOp::Div && asConstInt(div->b, &c) && c > 0 && b.bound <= INT64_MAX / c) {
      b.e = div->a;
      b.bound *= c;
    }
  }
  // Loops fused and split again (x = %f * 32 + %t, then x / 48, x % 16,
  // (%f * 2 + %t / 16) % 3 as the simplifier writes x / 16 % 3): where x is
  // a dense mixed radix of the loops (coefficients 1, e0, e0 e1, ...), one
  // loop X over its span (or the predicate's bound on it) stands for them,
  // each member the digit (X / k) % e, so that every use shows X.
  std::map<size_t, std::vector<size_t>> members;  // a fused loop's, by position in loops
  std::vector<PrimExpr> sums;                     // the numerators of e's divisions
  std::function<void(const PrimExpr&)> numerators = [&](const PrimExpr& x) {
    const auto* bin = x->as<BinaryNode>();
    if (bin && (bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && bin->a->as<BinaryNode>())
      sums.push_back(bin->a);
    forEachChild(x, numerators);
  };
  numerators(e);
  for (const PrimExpr& sum : sums) {
    if (!anyOf(e, [&](const PrimExpr& x) { return structuralEqual(x, sum); })) continue;  // folded already
    const std::optional<AffineTerms> q = loopTerms(sum, loops, az);
    int64_t c0;
    if (!q || !asConstInt(q->rest, &c0) || c0 != 0) continue;
    std::vector<std::pair<int64_t, size_t>> in;  // (k, position)
    bool ok = true;
    for (size_t i = 0; ok && i < loops.size(); ++i)
      if (q->coeff[i] != 0) {
        ok = q->coeff[i] > 0 && loops[i].extent > 0 && !members.count(i);
        in.push_back({q->coeff[i], i});
      }
    std::sort(in.begin(), in.end());
    int64_t span = 1;
    for (const auto& [k, i] : in) {
      ok = ok && k == span;
      span *= loops[i].extent;
    }
    if (!ok || in.size() < 2) continue;
    for (const Bound& b : below)
      if (structuralEqual(az.simplify(b.e), az.simplify(sum))) span = std::min(span, b.bound);
    Var v = makeVar("fused");
    az.bind(v, makeInt(0), makeInt(span));
    Substituter digits;
    bool thread = false;
    for (size_t j = 0; j < in.size(); ++j) {
      const auto [k, i] = in[j];
      const PrimExpr quotient = makeBinary(BinaryOp::Div, v, makeInt(k));
      digits.mapVar(loops[i].var, j + 1 < in.size()
                                      ? makeBinary(BinaryOp::Mod, quotient, makeInt(loops[i].extent))
                                      : quotient);
      thread = thread || loops[i].thread;
      members[loops.size()].push_back(i);
    }
    loops.push_back({v, span, thread, ""});
    e = az.simplify(digits(e));
    for (Bound& b : below) b.e = az.simplify(digits(b.e));
  }
  // Loops split (tx / 8, tx % 8, (tx / 8) % 4) by their parts, each a loop
  // of its own: its digits (owner, weight, modulus).
  struct Digit {
    size_t owner;
    int64_t weight, modulus;  // (tx / weight) % modulus; modulus 0: tx / weight
  };
  std::map<size_t, Digit> digit_of;  // by position in loops
  const size_t splittable = loops.size();
  std::function<PrimExpr(const PrimExpr&)> parts = [&](const PrimExpr& x) -> PrimExpr {
    const auto* bin = x->as<BinaryNode>();
    int64_t c, d = 0;
    if (bin && (bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && asConstInt(bin->b, &c) && c > 0) {
      PrimExpr v = bin->a;
      int64_t weight = bin->op == BinaryOp::Div ? c : 1, modulus = bin->op == BinaryOp::Mod ? c : 0;
      const auto* inner = v->as<BinaryNode>();
      if (bin->op == BinaryOp::Mod && inner && inner->op == BinaryOp::Div && asConstInt(inner->b, &d) &&
          d > 0) {
        v = inner->a;  // (v / d) % c
        weight = d;
      } else if (bin->op == BinaryOp::Div && inner && inner->op == BinaryOp::Mod &&
                 asConstInt(inner->b, &d) && d > 0 && d % c == 0) {
        v = inner->a;  // (v % d) / c, the same as (v / c) % (d / c)
        modulus = d / c;
      }
      for (size_t i = 0; i < splittable; ++i) {
        if (loops[i].extent < 1 || v.get() != loops[i].var.get()) continue;
        for (const auto& [pos, dg] : digit_of)
          if (dg.owner == i && dg.weight == weight && dg.modulus == modulus) return loops[pos].var;
        const int64_t extent = modulus ? modulus : (loops[i].extent + weight - 1) / weight;
        Var part = makeVar(loops[i].var->name + "_part");
        az.bind(part, makeInt(0), makeInt(extent));
        digit_of[loops.size()] = {i, weight, modulus};
        loops.push_back({part, extent, false, ""});
        return loops.back().var;
      }
    }
    return mapChildren(x, parts);
  };
  const PrimExpr split = parts(e);
  for (Bound& b : below) b.e = parts(b.e);  // (before t: parts may add loops)
  const std::optional<AffineTerms> t = loopTerms(split, loops, az);
  if (!t) return false;
  std::vector<bool> used(loops.size(), false);  // merged into a bounded digit
  std::vector<std::pair<int64_t, int64_t>> digits;
  for (const Bound& p : below) {
    const std::optional<AffineTerms> q = loopTerms(p.e, loops, az);
    int64_t c0;
    if (!q || !asConstInt(q->rest, &c0)) continue;
    // e's terms of the predicate's loops are a * its terms, a != 0.
    int64_t a = 0;
    bool scaled = true;
    std::vector<std::pair<int64_t, int64_t>> inner;
    for (size_t i = 0; i < loops.size(); ++i) {
      if (q->coeff[i] == 0) continue;
      if (q->coeff[i] < 0 || used[i]) scaled = false;
      if (!scaled) break;
      if (a == 0 && t->coeff[i] % q->coeff[i] == 0) a = t->coeff[i] / q->coeff[i];
      scaled = a != 0 && t->coeff[i] == a * q->coeff[i];
      inner.push_back({q->coeff[i], loops[i].extent});
    }
    if (!scaled || a == 0 || !mixedRadix(inner)) continue;
    for (size_t i = 0; i < loops.size(); ++i) used[i] = used[i] || q->coeff[i] != 0;
    digits.push_back({std::llabs(a), p.bound - c0});
  }
  // Every thread loop moves e: itself, digits of it that make it up (tx % 8
  // and tx / 8; tx % 8, (tx / 8) % 4 and tx / 32...), or a fused loop it is
  // part of that does.
  std::function<bool(size_t)> moves = [&](size_t i) {
    if (used[i] || t->coeff[i] != 0) return true;
    std::map<int64_t, Digit> by_weight;
    for (const auto& [pos, dg] : digit_of)
      if (dg.owner == i && moves(pos)) by_weight.emplace(dg.weight, dg);
    for (int64_t w = 1;;) {
      auto it = by_weight.find(w);
      if (it == by_weight.end() && w >= loops[i].extent) return true;
      if (it == by_weight.end()) break;
      if (!it->second.modulus) return true;
      w *= it->second.modulus;
    }
    for (const auto& [pos, in] : members)
      if (std::find(in.begin(), in.end(), i) != in.end() && moves(pos)) return true;
    return false;
  };
  for (size_t i = 0; i < own; ++i)
    if (loops[i].thread && loops[i].extent != 1 && !moves(i))
      return false;  // its threads store to one element
  for (size_t i = 0; i < loops.size(); ++i)
    if (!used[i] && loops[i].extent != 1 && t->coeff[i] != 0)
      digits.push_back({std::llabs(t->coeff[i]), loops[i].extent});
  return mixedRadix(std::move(digits));
}

// The same with the threads numbered as the GPU does, x fastest, one
// linear index t (tx = t % X, ty = t / X % Y, ...): threads fused and then
// split again (a cooperative fetch's (%ty * 5 + %tx) / 8) are t's parts.
bool distinctPerLinearThread(const PrimExpr& e, const std::vector<Loop>& loops,
                             const std::vector<Bound>& below, const Analyzer& outer) {
  Var t = makeVar("thread");
  Substituter linear;
  std::vector<Loop> rest;
  int64_t stride = 1;
  for (const char* tag : {"threadIdx.x", "threadIdx.y", "threadIdx.z"})
    for (const Loop& l : loops)
      if (l.thread && l.tag == tag) {
        if (l.extent < 1) return false;
        linear.mapVar(l.var, makeBinary(BinaryOp::Mod, makeBinary(BinaryOp::Div, t, makeInt(stride)),
                                        makeInt(l.extent)));
        stride *= l.extent;
      }
  for (const Loop& l : loops)
    if (!l.thread) rest.push_back(l);
  rest.push_back({t, stride, true, "thread"});
  Analyzer az = outer;
  az.bind(t, makeInt(0), makeInt(stride));
  std::vector<Bound> bounds;
  for (const Bound& b : below) bounds.push_back({az.simplify(linear(b.e)), b.bound});
  return distinctPerThread(az.simplify(linear(e)), rest, bounds, az);
}

}  // namespace

std::optional<std::string> threadStoreRace(const Stmt& kernel) {
  Collector c;
  c.visit(kernel, "");
  for (const Access& w : c.accesses) {
    // A reduction's update is the reduction checks' (an element updated by
    // several threads is refused there); any other store is checked here.
    if (!w.store || (w.in_reduction && isUpdate(w, c.accesses))) continue;
    std::vector<Loop> loops;
    for (size_t i = 0; i < w.loops.size(); ++i) {
      const Loop& l = w.loops[i];
      // A thread loop inside another of the same axis is that axis (the
      // outer one's value is not used under it: nestedThreadLoopProblem).
      if (l.thread &&
          std::any_of(w.loops.begin() + i + 1, w.loops.end(), [&](const Loop& o) { return o.tag == l.tag; }))
        continue;
      // A serial loop whose body also reads a shared buffer it writes: the
      // code generator puts a barrier between its iterations (the next
      // one's writes wait for this one's reads), so threads store in one
      // iteration at a time; the loop is the same for all of them.
      const bool read_inside = std::any_of(c.accesses.begin(), c.accesses.end(), [&](const Access& r) {
        return !r.store && r.buffer == w.buffer &&
               std::any_of(r.loops.begin(), r.loops.end(),
                           [&](const Loop& o) { return o.var.get() == l.var.get(); });
      });
      if (l.thread || w.buffer->scope != StorageScope::shared || !read_inside) loops.push_back(l);
    }
    const bool threaded =
        std::any_of(loops.begin(), loops.end(), [](const Loop& l) { return l.thread && l.extent != 1; });
    if (!threaded || distinctPerThread(w.flat, loops, w.below, c.az) ||
        distinctPerLinearThread(w.flat, loops, w.below, c.az) ||
        (w.fused_flat && distinctPerThread(w.fused_flat, loops, w.below, c.az)))
      continue;
    const std::string scope = w.buffer->scope == StorageScope::shared ? "shared" : "global";
    return who(w) + " stores to " + scope + " buffer %" + w.buffer->name +
           ", and it cannot be shown that no two threads of a thread block store to one element: threads run "
           "in no set order, so which value stays would be chance (each thread must store its own elements: "
           "bind the loops that index %" +
           w.buffer->name + " to threadIdx, or store from one thread)";
  }
  return std::nullopt;
}

std::optional<std::string> threadBlockRace(const Stmt& kernel) {
  Collector c;
  c.visit(kernel, "");
  std::set<std::string> varying;
  for (const auto& [tag, axis] : c.axes)
    if (axis.physical == tag && axis.extent != 1) varying.insert(tag);
  if (varying.empty()) return std::nullopt;
  for (const Access& w : c.accesses) {
    if (!w.store || w.buffer->scope != StorageScope::global) continue;
    for (const Access& r : c.accesses) {
      if (r.buffer != w.buffer || (!r.store && ownElement(w, r))) continue;
      if (r.store && (isUpdate(w, c.accesses) || isUpdate(r, c.accesses))) continue;
      std::set<std::string> apart;
      for (size_t d = 0; d < w.indices.size() && d < r.indices.size(); ++d)
        for (const auto& tag : axesApartIn(w.indices[d], r.indices[d], c, w, r)) apart.insert(tag);
      for (const auto& tag : axesApartIn(w.flat, r.flat, c, w, r)) apart.insert(tag);
      if (w.fused_flat && r.fused_flat)
        for (const auto& tag : axesApartIn(w.fused_flat, r.fused_flat, c, w, r)) apart.insert(tag);
      // Thread blocks apart along b, or along parts of b that are its digits
      // in a mixed radix: b % c0, (b / c0) % c1, ..., b / (c0 c1 ..).
      auto isApart = [&](const std::string& tag) {
        if (apart.count(tag)) return true;
        std::map<int64_t, const Axis*> digits;  // by weight
        for (const auto& [name, axis] : c.axes)
          if (axis.physical == tag && name != tag && apart.count(name)) digits.emplace(axis.weight, &axis);
        const int64_t whole = c.axes.at(tag).extent;
        for (int64_t w = 1;;) {
          auto it = digits.find(w);
          if (it == digits.end()) return whole >= 0 && w >= whole;
          if (!it->second->modulus) return true;
          w *= it->second->modulus;
        }
      };
      for (const auto& tag : varying)
        if (!isApart(tag) && r.store)
          return who(w) + (r.block == w.block ? " writes" : " and " + who(r) + " write") +
                 " global buffer %" + w.buffer->name +
                 ", and it cannot be shown that no two thread blocks (" + tag +
                 ") write one element: thread blocks run in no set order, so which value stays would be "
                 "chance (bind the loops that index %" +
                 w.buffer->name + " to blockIdx, or write it from one thread block)";
        else if (!isApart(tag))
          return who(r) + " reads global buffer %" + r.buffer->name + ", which " + who(w) +
                 " writes, and it cannot be shown that the elements one thread block (" + tag +
                 ") reads are written by no other: thread blocks run in no set order and no barrier orders "
                 "them "
                 "(compute %" +
                 r.buffer->name + " in a kernel of its own, or per thread block into a shared buffer)";
    }
  }
  return std::nullopt;
}

}  // namespace mlcc::schedule
