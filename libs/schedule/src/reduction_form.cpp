// The form of a reduction block (see reduction_form.h).
#include "mlcc/schedule/reduction_form.h"

#include "cache_util.h"
#include "mlcc/ir/builder.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/te.h"

namespace mlcc::schedule {

using namespace ir;

std::optional<ReductionForm> matchReductionForm(const BlockNode& b, std::string& why) {
  const auto* st = b.body ? b.body->as<StoreNode>() : nullptr;
  const auto* bin = st ? st->value->as<BinaryNode>() : nullptr;
  if (!bin) {
    why = "is not a reduction into one element";
    return std::nullopt;
  }
  ReductionForm r{st->buffer, st->indices, bin->op, true, nullptr, nullptr};
  te::ReduceOp op;
  switch (bin->op) {
    case BinaryOp::Add: op = te::ReduceOp::Sum; break;
    case BinaryOp::Mul: op = te::ReduceOp::Prod; break;
    case BinaryOp::Max: op = te::ReduceOp::Max; break;
    case BinaryOp::Min: op = te::ReduceOp::Min; break;
    default: why = "combines with '" + std::string(binaryOpName(bin->op)) + "'"; return std::nullopt;
  }
  auto isAcc = [&](const PrimExpr& e) {
    const auto* ld = e->as<LoadNode>();
    return ld && ld->buffer == r.out && sameIndices(ld->indices, r.indices);
  };
  if (isAcc(bin->a)) {
    r.value = bin->b;
  } else if (isAcc(bin->b)) {
    r.acc_first = false;
    r.value = bin->a;
  } else {
    why = "does not update %" + r.out->name + " with its own value";
    return std::nullopt;
  }
  for (const auto& a : accessesIn(makeStore(r.out, r.indices, r.value)))
    if (!a.is_store && a.buffer == r.out) {
      why = "reads %" + r.out->name + " other than as its accumulator";
      return std::nullopt;
    }
  for (const auto& w : b.writes)
    if (w.buffer != r.out) {
      why = "also writes %" + w.buffer->name;
      return std::nullopt;
    }
  for (const auto& iv : b.iter_vars)
    for (const auto& i : r.indices)
      if (iv.kind == IterKind::reduce && usesVar(i, iv.var.get())) {
        why = "stores at an index that depends on reduce iteration variable %" + iv.var->name;
        return std::nullopt;
      }
  r.identity = te::reduceIdentity(op, r.out->dtype);
  return r;
}

PrimExpr combineReduction(const ReductionForm& r, const PrimExpr& acc, const PrimExpr& value) {
  return r.acc_first ? makeBinary(r.op, acc, value) : makeBinary(r.op, value, acc);
}

}  // namespace mlcc::schedule
