// Helpers of the cache, storage and reduction primitives (see cache_util.h).
#include "cache_util.h"

#include <algorithm>
#include <functional>
#include <set>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::schedule {

using namespace ir;

StorageScope parseScope(const InstArgs& args, const std::string& text) {
  for (StorageScope sc : {StorageScope::global, StorageScope::shared, StorageScope::local})
    if (text == scopeName(sc)) return sc;
  args.fail("unknown storage scope \"" + text + "\" (expected \"global\", \"shared\" or \"local\")");
}

StmtPath topLevelBlockPath(const ScheduleState& s, const InstArgs& args, const std::string& name) {
  auto path = findBlock(s.func.body, name);
  if (!path) s.fail("no block \"" + name + "\"");
  if (const BlockNode* outer = enclosingBlock(*path))
    args.fail("block \"" + name + "\" is nested in block \"" + outer->name +
              "\"; only blocks of the function's top level are supported");
  return *path;
}

size_t topLevelIndex(const StmtPath& path) {
  return path.nodes.size() > 1 && path.nodes[0]->as<SeqNode>() ? 1 : 0;
}

Stmt insertAround(const StmtPath& path, size_t index, const Stmt& before, const Stmt& after) {
  std::vector<Stmt> items;
  if (before) items.push_back(before);
  items.push_back(path.nodes[index]);
  if (after) items.push_back(after);
  return replaceAt(path, index, makeSeq(std::move(items)));
}

namespace {

std::string uniqueName(const std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

}  // namespace

std::string uniqueBlockName(const PrimFunc& f, const std::string& base) {
  std::set<std::string> taken;
  forEachBlock(f.body, [&](const BlockNode& b, const StmtPath&) { taken.insert(b.name); });
  return uniqueName(taken, base);
}

std::string uniqueBufferName(const PrimFunc& f, const std::string& base) {
  std::set<std::string> taken;
  for (const auto& b : f.params) taken.insert(b->name);
  for (const auto& b : f.allocs) taken.insert(b->name);
  forEachBlock(f.body, [&](const BlockNode& blk, const StmtPath&) {
    for (const auto& b : blk.alloc_buffers) taken.insert(b->name);
  });
  return uniqueName(taken, base);
}

bool isParam(const PrimFunc& f, const Buffer& b) {
  return std::find(f.params.begin(), f.params.end(), b) != f.params.end();
}

bool isAllocated(const PrimFunc& f, const Buffer& b) {
  bool found = std::find(f.allocs.begin(), f.allocs.end(), b) != f.allocs.end();
  forEachBlock(f.body, [&](const BlockNode& blk, const StmtPath&) {
    for (const auto& x : blk.alloc_buffers) found |= x == b;
  });
  return found;
}

namespace {

void collect(const PrimExpr& e, std::vector<Access>& out) {
  if (!e) return;
  forEachChild(e, [&](const PrimExpr& x) { collect(x, out); });
  if (const auto* n = e->as<LoadNode>()) out.push_back({n->buffer, n->indices, false});
}

void collect(const Stmt& s, std::vector<Access>& out) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::For:
      collect(s->as<ForNode>()->extent, out);
      collect(s->as<ForNode>()->body, out);
      return;
    case StmtKind::Block: {
      const auto* b = s->as<BlockNode>();
      for (const auto& iv : b->iter_vars) collect(iv.binding, out);
      collect(b->predicate, out);
      collect(b->init, out);
      collect(b->body, out);
      return;
    }
    case StmtKind::Store: {
      const auto* st = s->as<StoreNode>();
      for (const auto& i : st->indices) collect(i, out);
      collect(st->value, out);
      out.push_back({st->buffer, st->indices, true});
      return;
    }
    case StmtKind::Seq:
      for (const auto& c : s->as<SeqNode>()->stmts) collect(c, out);
      return;
    case StmtKind::If: {
      const auto* i = s->as<IfNode>();
      collect(i->cond, out);
      collect(i->then_case, out);
      collect(i->else_case, out);
      return;
    }
  }
}

bool touches(const BlockNode& b, const Buffer& buf, bool writes) {
  for (const auto& r : writes ? b.writes : b.reads)
    if (r.buffer == buf) return true;
  for (const Stmt& part : {b.init, b.body})
    for (const auto& a : accessesIn(part))
      if (a.buffer == buf && a.is_store == writes) return true;
  return false;
}

}  // namespace

std::vector<Access> accessesIn(const Stmt& s) {
  std::vector<Access> out;
  collect(s, out);
  return out;
}

bool blockReads(const BlockNode& b, const Buffer& buf) { return touches(b, buf, false); }
bool blockWrites(const BlockNode& b, const Buffer& buf) { return touches(b, buf, true); }

const BlockNode* otherBlockAccessing(const Stmt& root, const BlockNode* except, const Buffer& buf,
                                     bool writes) {
  const BlockNode* found = nullptr;
  forEachBlock(root, [&](const BlockNode& b, const StmtPath&) {
    if (!found && &b != except && touches(b, buf, writes)) found = &b;
  });
  return found;
}

bool sameIndices(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  Analyzer az;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && !az.canProve(build::eq(a[i], b[i]))) return false;
  return true;
}

Stmt elementNest(const std::string& name, const std::vector<PrimExpr>& extents, const std::string& loop,
                 const std::function<ElementBlock(const std::vector<Var>& v)>& make) {
  std::vector<Var> loops;
  std::vector<IterVar> iters;
  std::vector<Var> vs;
  for (size_t d = 0; d < extents.size(); ++d) {
    const std::string index = std::to_string(d);
    loops.push_back(makeVar(loop + index));
    vs.push_back(makeVar("v" + index));
    iters.push_back({vs.back(), extents[d], IterKind::spatial, loops.back()});
  }
  ElementBlock b = make(vs);
  Stmt nest = makeBlock(name, iters, {b.read}, {b.write}, b.body);
  for (size_t d = extents.size(); d-- > 0;) nest = makeFor(loops[d], extents[d], nest);
  return nest;
}

Stmt copyNest(const std::string& name, const Buffer& src, const std::vector<PrimExpr>& src_min,
              const Buffer& dst, const std::vector<PrimExpr>& dst_min, const std::vector<PrimExpr>& extents) {
  using build::operator+;
  return elementNest(name, extents, "ax", [&](const std::vector<Var>& v) {
    std::vector<PrimExpr> src_idx, dst_idx;
    for (size_t d = 0; d < v.size(); ++d) {
      src_idx.push_back(simplify(src_min[d] + v[d]));
      dst_idx.push_back(simplify(dst_min[d] + v[d]));
    }
    return ElementBlock{build::point(src, src_idx), build::point(dst, dst_idx),
                        makeStore(dst, dst_idx, makeLoad(src, src_idx))};
  });
}

void replaceBuffer(PrimFunc& f, const Buffer& from, const Buffer& to) {
  Substituter sub;
  sub.mapBuffer(from, to);
  f.body = sub(f.body);
  for (auto& b : f.allocs)
    if (b == from) b = to;
}

}  // namespace mlcc::schedule
