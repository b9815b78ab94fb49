// Spatial nests that move data between layouts (llvm_common.h): two shapes
// that the generic fuse-and-split of scheduleSpatialNest vectorizes with a
// division per lane.
//
// - A flat index taken apart by constant divisions (a reshape from a blocked
//   layout: the CNN's flatten of NCHW16c reads x[v / 2704, v / 13 % 13,
//   v % 13, v / 169 % 16]): the loop is split at those periods
//   ([2, 16, 13, 13]), so that each index is one loop variable once the
//   code generator simplifies it over the loops' ranges, and the innermost
//   part is vectorized (12.9 -> 2.5 us per call on the CNN's flatten).
// - A transpose whose output's innermost dimension is short (NCHW to
//   NCHW3c: y[h, w, c] = x[c, h, w]): the loop that an input is contiguous
//   along is vectorized, the short loops inside it unrolled, so the loads
//   are whole vectors and LLVM interleaves the stores (19.7 -> 0.9 us per
//   call on a 3x64x64 image).
#include <algorithm>
#include <set>

#include "../tree.h"
#include "llvm_common.h"
#include "mlcc/ir/expr_functor.h"

namespace mlcc::schedule::cpu {

using namespace ir;

namespace {

// Loops inside a transpose's vectorized loop are unrolled up to this many
// iterations in all.
constexpr int64_t kMaxUnrolledInside = 16;
// The least innermost period worth a vector.
constexpr int kMinPeriodVector = 4;

// Calls f on every expression of the block's store (its indices and value).
void forEachExpr(const BlockNode& b, const std::function<void(const PrimExpr&)>& f) {
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  if (!st) return;
  std::function<void(const PrimExpr&)> walk = [&](const PrimExpr& e) {
    f(e);
    forEachChild(e, walk);
  };
  for (const auto& i : st->indices) walk(i);
  walk(st->value);
}

std::optional<int64_t> constOperand(const PrimExpr& e) {
  int64_t c;
  return asConstInt(e, &c) && c > 1 ? std::optional<int64_t>(c) : std::nullopt;
}

// The periods at which the body takes `v` apart: c of v / c, m of v % m,
// c * m of (v / c) % m; sorted, those in (1, extent).
std::vector<int64_t> periodsOf(const BlockNode& b, const VarNode* v, int64_t extent) {
  std::set<int64_t> found;
  forEachExpr(b, [&](const PrimExpr& e) {
    const auto* bin = e->as<BinaryNode>();
    if (!bin || (bin->op != BinaryOp::Div && bin->op != BinaryOp::Mod)) return;
    auto c = constOperand(bin->b);
    if (!c) return;
    if (bin->a.get() == v) {
      found.insert(*c);
    } else if (const auto* inner = bin->a->as<BinaryNode>();
               bin->op == BinaryOp::Mod && inner && inner->op == BinaryOp::Div && inner->a.get() == v) {
      if (auto d = constOperand(inner->b)) found.insert(*d * *c);
    }
  });
  std::vector<int64_t> out;
  for (int64_t p : found)
    if (p < extent) out.push_back(p);
  return out;
}

// The split factors of a loop of `extent` at `periods` (ascending), outermost
// first, when each period divides the next and the extent; else empty.
std::vector<int64_t> periodFactors(const std::vector<int64_t>& periods, int64_t extent) {
  if (periods.empty()) return {};
  std::vector<int64_t> bounds = periods;
  bounds.push_back(extent);
  std::vector<int64_t> factors{bounds[0]};
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] % bounds[i - 1] != 0) return {};
    factors.push_back(bounds[i] / bounds[i - 1]);
  }
  std::reverse(factors.begin(), factors.end());
  return factors;
}

// Whether some load of the body has `v` itself as its last index.
bool loadContiguousAlong(const BlockNode& b, const VarNode* v) {
  bool found = false;
  forEachExpr(b, [&](const PrimExpr& e) {
    if (const auto* l = e->as<LoadNode>(); l && !l->indices.empty() && l->indices.back().get() == v)
      found = true;
  });
  return found;
}

}  // namespace

std::optional<std::vector<LoopRV>> splitAtPeriods(Schedule& sch, const BlockRV& block,
                                                  const std::vector<LoopRV>& inner, size_t first_iter,
                                                  int lanes) {
  // The innermost loop only, taken apart at two periods or more (one period
  // is an upsampling's x[v / 2], which the plain vector serves), its
  // innermost part long enough to be the vector.
  if (inner.empty()) return std::nullopt;
  auto extent = constExtent(sch, inner.back());
  if (!extent) return std::nullopt;
  const BlockNode& b = blockNode(sch, block);
  const auto periods = periodsOf(b, b.iter_vars[first_iter + inner.size() - 1].var.get(), *extent);
  const auto factors = periods.size() >= 2 ? periodFactors(periods, *extent) : std::vector<int64_t>{};
  if (factors.empty() || factors.back() < std::min(kMinPeriodVector, lanes)) return std::nullopt;
  auto parts = tileLoop(sch, inner.back(), factors);
  sch.vectorize(parts.back());
  std::vector<LoopRV> rest(inner.begin(), inner.end() - 1);
  rest.insert(rest.end(), parts.begin(), parts.end() - 1);
  return rest;
}

std::optional<std::vector<LoopRV>> vectorizeTranspose(Schedule& sch, const BlockRV& block,
                                                      const std::vector<LoopRV>& inner, size_t first_iter,
                                                      int lanes) {
  const BlockNode& b = blockNode(sch, block);
  int64_t inside = 1;  // the iterations of the loops inside inner[j]
  for (size_t j = inner.size(); j-- > 1;) {
    auto e = constExtent(sch, inner[j]);
    if (!e || (inside *= *e) > kMaxUnrolledInside) return std::nullopt;
    auto extent = constExtent(sch, inner[j - 1]);
    const size_t pos = first_iter + j - 1;
    if (!extent || *extent < lanes || !loadContiguousAlong(b, b.iter_vars[pos].var.get())) continue;
    for (size_t k = j; k < inner.size(); ++k) sch.unroll(inner[k]);
    sch.vectorize(inner[j - 1]);
    return std::vector<LoopRV>(inner.begin(), inner.begin() + j - 1);
  }
  return std::nullopt;
}

}  // namespace mlcc::schedule::cpu
