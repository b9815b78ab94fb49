// Races between the thread blocks of one GPU kernel (see gpu_block_races.h).
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
#include "gpu_block_races.h"

#include <algorithm>
#include <cstdlib>
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

struct Access {
  const BufferNode* buffer;
  std::vector<PrimExpr> indices;  // in the kernel's loop variables and one variable per blockIdx axis
  bool store;
  std::string block;         // the innermost enclosing block
  PrimExpr flat;             // the row-major offset of the element
  PrimExpr fused_flat;       // the same through the blockIdx.x and threadIdx.x loops fused (null: none)
  std::vector<Bound> below;  // its block's predicate: e < bound for each
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
          if (f->loop_kind == LoopKind::thread_binding && f->thread_tag == "threadIdx.x" &&
              asConstInt(f->extent, &extent) && extent > 0)
            thread_x_ = {f->loop_var, extent};
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
        const size_t outer = below_.size();
        predicateBounds(b->predicate);
        visit(b->init, b->name);
        visit(b->body, b->name);
        below_.resize(outer);
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
    if (buf->scope != StorageScope::global) return;
    Access a{buf, {}, store, block, nullptr, nullptr, below_};
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
  std::vector<Bound> below_;
  std::map<std::string, PrimExpr> grid_extent_;
  std::pair<Var, int64_t> thread_x_;  // the threadIdx.x loop and its extent
};

// index = sum k_b * b + rest: the coefficients of the axes and the rest's
// constant bounds (within the predicate's bounds `below` on it), or nullopt.
struct Split {
  std::map<std::string, int64_t> coeff;  // nonzero only
  int64_t lo, hi;
};

std::optional<Split> splitByAxes(const PrimExpr& index, const Collector& c, const std::vector<Bound>& below) {
  Split s;
  PrimExpr rest = index;
  for (const auto& [tag, axis] : c.axes) {
    Substituter next;
    next.mapVar(axis.var, makeBinary(BinaryOp::Add, axis.var, makeInt(1)));
    int64_t k;
    if (!asConstInt(c.az.simplify(makeBinary(BinaryOp::Sub, next(index), index)), &k)) return std::nullopt;
    if (k != 0) {
      s.coeff[tag] = k;
      rest = makeBinary(BinaryOp::Sub, rest, makeBinary(BinaryOp::Mul, makeInt(k), axis.var));
    }
  }
  rest = c.az.simplify(rest);
  for (const auto& [tag, axis] : c.axes)
    if (usesVar(rest, axis.var.get())) return std::nullopt;  // not affine in the axes
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
  std::vector<std::pair<int64_t, int64_t>> radix;  // (|k|, extent or -1), smallest |k| first
  for (const auto& [tag, k] : sa->coeff) radix.push_back({std::llabs(k), c.axes.at(tag).extent});
  std::sort(radix.begin(), radix.end());
  int64_t span = std::max(sa->hi, sb->hi) - std::min(sa->lo, sb->lo) + 1;  // the rests' window
  for (size_t i = 0; i < radix.size(); ++i) {
    const auto [k, extent] = radix[i];
    if (span > k || (extent < 0 && i + 1 < radix.size())) return {};  // a symbolic extent: only the last
    span = k * extent;
  }
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

}  // namespace

std::optional<std::string> threadBlockRace(const Stmt& kernel) {
  Collector c;
  c.visit(kernel, "");
  std::set<std::string> varying;
  for (const auto& [tag, axis] : c.axes)
    if (axis.physical == tag && axis.extent != 1) varying.insert(tag);
  if (varying.empty()) return std::nullopt;
  // A store its block also loads at the same index (a reduction's update)
  // is the reduction check's.
  auto update = [&](const Access& w) {
    return std::any_of(c.accesses.begin(), c.accesses.end(),
                       [&](const Access& r) { return !r.store && r.buffer == w.buffer && ownElement(w, r); });
  };
  for (const Access& w : c.accesses) {
    if (!w.store) continue;
    for (const Access& r : c.accesses) {
      if (r.buffer != w.buffer || (!r.store && ownElement(w, r))) continue;
      if (r.store && (update(w) || update(r))) continue;
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
