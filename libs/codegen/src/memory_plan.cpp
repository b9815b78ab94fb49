// Greedy-by-size, first-fit placement of live ranges in one workspace, and
// the stacking plan for symbolic sizes (see memory_plan.h).
#include "memory_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

// Byte counts stay within int64 (mlcc/support/checked_math.h): a plan whose
// workspace would overflow is an error, never a wrapped small workspace.
uint64_t addBytes(uint64_t a, uint64_t b) {
  if (a > INT64_MAX || b > INT64_MAX) throw Error("memory plan: a size exceeds 2^63 - 1 bytes");
  return static_cast<uint64_t>(
      addOrThrow(static_cast<int64_t>(a), static_cast<int64_t>(b), "memory plan: the workspace size"));
}

uint64_t alignUp(uint64_t x, uint64_t a) { return addBytes(x, a - 1) / a * a; }

template <class T>
bool liveTogether(const T& a, const T& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Alignment a power of two, every live range ending after it starts.
template <class T>
void checkTensors(const std::vector<T>& tensors, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw Error("memory plan: alignment " + std::to_string(alignment) + " is not a power of two");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].last < tensors[i].first)
      throw Error("memory plan: tensor " + std::to_string(i) + " is last used (step " +
                  std::to_string(tensors[i].last) + ") before it is written (step " +
                  std::to_string(tensors[i].first) + ")");
}

}  // namespace

MemoryPlan planMemory(const std::vector<LiveTensor>& tensors, uint64_t alignment) {
  checkTensors(tensors, alignment);
  MemoryPlan plan;
  plan.offsets.assign(tensors.size(), 0);
  for (const LiveTensor& t : tensors) plan.sum_bytes = addBytes(plan.sum_bytes, t.bytes);
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (tensors[a].bytes != tensors[b].bytes) return tensors[a].bytes > tensors[b].bytes;
    return tensors[a].first < tensors[b].first;
  });
  // The placed tensors, as [offset, end) intervals, kept sorted by offset.
  struct Placed {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const LiveTensor& t = tensors[i];
    if (t.bytes == 0) continue;
    const uint64_t size = alignUp(t.bytes, alignment);
    uint64_t offset = 0;
    for (const Placed& p : placed) {  // by increasing offset: the first gap that fits
      if (!liveTogether(tensors[p.index], t)) continue;
      if (p.begin >= addBytes(offset, size)) break;
      offset = std::max(offset, alignUp(p.end, alignment));
    }
    plan.offsets[i] = offset;
    plan.workspace_bytes = std::max(plan.workspace_bytes, addBytes(offset, size));
    Placed np{offset, addBytes(offset, t.bytes), i};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), np,
                                   [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
                  np);
  }
  return plan;
}

namespace {

// The scaled plan (see memory_plan.h) when every symbolic size is c_i * U.
bool scaledPlan(const std::vector<LiveSymbolicTensor>& tensors, uint64_t alignment,
                SymbolicMemoryPlan& plan) {
  using ir::BinaryOp;
  ir::PrimExpr unit;  // the product of the dimensions of the first symbolic size
  std::unordered_map<const ir::VarNode*, ir::PrimExpr> ones;
  std::vector<int64_t> coeff(tensors.size(), 0);
  std::vector<bool> constant(tensors.size(), false);
  for (size_t i = 0; i < tensors.size(); ++i) {
    ir::PrimExpr size = ir::simplify(tensors[i].bytes);
    if (int64_t c; ir::asConstInt(size, &c)) {
      coeff[i] = c;
      constant[i] = true;
      continue;
    }
    bool other = false;  // something other than dimensions
    const bool first = !unit;
    if (first) unit = ir::makeInt(1);
    ir::anyOf(size, [&](const ir::PrimExpr& x) {
      if (auto* v = x->as<ir::VarNode>()) {
        if (first && !ones.count(v)) unit = ir::makeBinary(BinaryOp::Mul, unit, x);
        ones[v] = ir::makeInt(1);
      } else if (x->kind == ir::ExprKind::Load || x->kind == ir::ExprKind::Call) {
        other = true;
      }
      return other;
    });
    if (other) return false;
    if (!ir::asConstInt(ir::simplify(ir::substitute(size, ones)), &coeff[i]) || coeff[i] < 0) return false;
    ir::PrimExpr diff = ir::simplify(
        ir::makeBinary(BinaryOp::Sub, size, ir::makeBinary(BinaryOp::Mul, ir::makeInt(coeff[i]), unit)));
    if (int64_t d; !ir::asConstInt(diff, &d) || d != 0) return false;
  }
  // The scaled tensors' static plan (offsets times U), then the constant ones'.
  std::vector<LiveTensor> scaled, fixed;
  std::vector<size_t> scaled_ix, fixed_ix;
  for (size_t i = 0; i < tensors.size(); ++i) {
    LiveTensor t{static_cast<uint64_t>(coeff[i]), tensors[i].first, tensors[i].last};
    (constant[i] ? fixed : scaled).push_back(t);
    (constant[i] ? fixed_ix : scaled_ix).push_back(i);
  }
  const MemoryPlan ps = planMemory(scaled, alignment), pf = planMemory(fixed, alignment);
  if (!unit) unit = ir::makeInt(1);
  auto times = [&](uint64_t x) {
    return ir::simplify(ir::makeBinary(BinaryOp::Mul, ir::makeInt(static_cast<int64_t>(x)), unit));
  };
  const ir::PrimExpr base = times(ps.workspace_bytes);
  plan.offsets.assign(tensors.size(), ir::makeInt(0));
  for (size_t k = 0; k < scaled_ix.size(); ++k) plan.offsets[scaled_ix[k]] = times(ps.offsets[k]);
  for (size_t k = 0; k < fixed_ix.size(); ++k)
    plan.offsets[fixed_ix[k]] =
        ir::simplify(ir::makeBinary(BinaryOp::Add, base, ir::makeInt(static_cast<int64_t>(pf.offsets[k]))));
  plan.workspace_bytes = ir::simplify(
      ir::makeBinary(BinaryOp::Add, base, ir::makeInt(static_cast<int64_t>(pf.workspace_bytes))));
  return true;
}

}  // namespace

SymbolicMemoryPlan planSymbolicMemory(const std::vector<LiveSymbolicTensor>& tensors, uint64_t alignment) {
  using ir::BinaryOp;
  checkTensors(tensors, alignment);
  const auto a = static_cast<int64_t>(alignment);
  SymbolicMemoryPlan plan;
  plan.sum_bytes = ir::makeInt(0);
  for (const LiveSymbolicTensor& t : tensors) {
    plan.sizes.push_back(ir::simplify(ir::makeBinary(
        BinaryOp::Mul,
        ir::makeBinary(BinaryOp::Div, ir::makeBinary(BinaryOp::Add, t.bytes, ir::makeInt(a - 1)),
                       ir::makeInt(a)),
        ir::makeInt(a))));
    plan.sum_bytes = ir::simplify(ir::makeBinary(BinaryOp::Add, plan.sum_bytes, t.bytes));
  }
  if (scaledPlan(tensors, alignment, plan)) return plan;
  plan.order.resize(tensors.size());
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  std::stable_sort(plan.order.begin(), plan.order.end(),
                   [&](size_t x, size_t y) { return tensors[x].first < tensors[y].first; });
  plan.below.resize(tensors.size());
  for (size_t k = 0; k < plan.order.size(); ++k)
    for (size_t p = 0; p < k; ++p)
      if (liveTogether(tensors[plan.order[k]], tensors[plan.order[p]]))
        plan.below[plan.order[k]].push_back(plan.order[p]);
  return plan;
}

int64_t evalDims(const ir::PrimExpr& e, const std::vector<const ir::VarNode*>& dims,
                 const std::vector<int64_t>& values) {
  std::unordered_map<const ir::VarNode*, ir::PrimExpr> map;
  for (size_t i = 0; i < dims.size() && i < values.size(); ++i) map[dims[i]] = ir::makeInt(values[i]);
  int64_t v = 0;
  if (!ir::asConstInt(ir::simplify(ir::substitute(e, map)), &v))
    throw Error("internal error: " + ir::printExpr(e) + " is not an expression of the symbolic dimensions");
  return v;
}

MemoryPlan evaluateMemoryPlan(const SymbolicMemoryPlan& plan, const std::vector<const ir::VarNode*>& dims,
                              const std::vector<int64_t>& values) {
  auto eval = [&](const ir::PrimExpr& e) { return static_cast<uint64_t>(evalDims(e, dims, values)); };
  MemoryPlan r;
  r.sum_bytes = eval(plan.sum_bytes);
  if (plan.workspace_bytes) {  // scaled
    for (const auto& o : plan.offsets) r.offsets.push_back(eval(o));
    r.workspace_bytes = eval(plan.workspace_bytes);
    return r;
  }
  std::vector<uint64_t> sizes;
  for (const auto& s : plan.sizes) sizes.push_back(eval(s));
  r.offsets.assign(sizes.size(), 0);
  for (size_t i : plan.order) {
    for (size_t j : plan.below[i]) r.offsets[i] = std::max(r.offsets[i], r.offsets[j] + sizes[j]);
    r.workspace_bytes = std::max(r.workspace_bytes, r.offsets[i] + sizes[i]);
  }
  return r;
}

}  // namespace mlcc::codegen
