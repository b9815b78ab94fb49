// Races between the thread blocks of one GPU kernel (see gpu_block_races.h).
//
// Each access to a global buffer is written in the kernel's loop variables
// (block iteration variables replaced by their bindings, the loops bound to
// one blockIdx axis by one variable per axis). A load and a store of the
// same buffer are apart in thread blocks when, for every blockIdx axis of
// extent > 1, some dimension of both indices is
//     sum over axes b of k_b * b  +  rest,
// with the same coefficients k_b in both, and the rests of both (over every
// other loop's range) fit in one window of width <= the smallest |k_b|,
// each further |k_b| at least the span of the smaller ones (a mixed radix:
// the axes' values pick disjoint windows; an axis of symbolic extent can
// only be the last). Then whatever a thread block
// reads, no other thread block writes. Where indices divide a grid axis
// (b / c, b % c: loops fused into one grid axis), the two parts are axes of
// their own, and the thread blocks apart along both are apart along b. A
// block's load of the element it
// stores (a reduction's update) is the thread's own. Anything not shown so
// is refused.
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

struct Access {
  const BufferNode* buffer;
  std::vector<PrimExpr> indices;  // in the kernel's loop variables and one variable per blockIdx axis
  bool store;
  std::string block;  // the innermost enclosing block
};

// A blockIdx axis, or a part of one: b / c and b % c (of a constant c)
// where indices divide a grid axis (thread blocks of fused loops).
struct Axis {
  Var var;
  int64_t extent;        // -1: symbolic
  std::string physical;  // the blockIdx tag it is (a part of)
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
        visit(b->init, b->name);
        visit(b->body, b->name);
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
    Access a{buf, {}, store, block};
    for (const auto& i : indices) a.indices.push_back(az.simplify(parts(az.simplify(sub_(i)))));
    accesses.push_back(std::move(a));
  }
  // `e` with each b / c and b % c of a grid axis b replaced by its part's
  // variable.
  PrimExpr parts(const PrimExpr& e) {
    const auto* bin = e->as<BinaryNode>();
    int64_t c;
    if (bin && (bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && asConstInt(bin->b, &c) && c > 0)
      for (const auto& [tag, axis] : axes)
        if (axis.physical == tag && bin->a.get() == axis.var.get()) return part(tag, bin->op, c);
    return mapChildren(e, [&](const PrimExpr& x) { return parts(x); });
  }
  const Var& part(const std::string& tag, BinaryOp op, int64_t c) {
    const std::string name = tag + (op == BinaryOp::Div ? "/" : "%") + std::to_string(c);
    auto it = axes.find(name);
    if (it != axes.end()) return it->second.var;
    const int64_t whole = axes.at(tag).extent;
    int64_t extent = c;
    PrimExpr range = makeInt(c);
    if (op == BinaryOp::Div) {
      extent = whole < 0 ? -1 : (whole + c - 1) / c;
      range = az.simplify(makeBinary(
          BinaryOp::Div, makeBinary(BinaryOp::Add, grid_extent_.at(tag), makeInt(c - 1)), makeInt(c)));
    }
    it = axes.emplace(name, Axis{makeVar(name), extent, tag}).first;
    az.bind(it->second.var, makeInt(0), range);
    return it->second.var;
  }
  Substituter sub_;
  std::map<std::string, PrimExpr> grid_extent_;
};

// index = sum k_b * b + rest: the coefficients of the axes and the rest's
// constant bounds, or nullopt.
struct Split {
  std::map<std::string, int64_t> coeff;  // nonzero only
  int64_t lo, hi;
};

std::optional<Split> splitByAxes(const PrimExpr& index, const Collector& c) {
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
  return s;
}

// The axes whose values keep the two accesses apart in dimension d.
std::set<std::string> axesApartIn(const PrimExpr& a, const PrimExpr& b, const Collector& c) {
  auto sa = splitByAxes(a, c), sb = splitByAxes(b, c);
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
  for (const Access& w : c.accesses) {
    if (!w.store) continue;
    for (const Access& r : c.accesses) {
      if (r.store || r.buffer != w.buffer || ownElement(w, r)) continue;
      std::set<std::string> apart;
      for (size_t d = 0; d < w.indices.size() && d < r.indices.size(); ++d)
        for (const auto& tag : axesApartIn(w.indices[d], r.indices[d], c)) apart.insert(tag);
      // Thread blocks apart along b, or along both b / c and b % c.
      auto isApart = [&](const std::string& tag) {
        if (apart.count(tag)) return true;
        for (const auto& [name, axis] : c.axes) {
          const std::string div = tag + "/";
          if (axis.physical == tag && name.rfind(div, 0) == 0 && apart.count(name) &&
              apart.count(tag + "%" + name.substr(div.size())))
            return true;
        }
        return false;
      };
      for (const auto& tag : varying)
        if (!isApart(tag))
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
