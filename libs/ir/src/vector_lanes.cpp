// Whether an index covers one aligned vector of lanes (see arith.h): the
// divisions and modulos by multiples of the lane count are taken apart
// where the lane only moves the remainder, then the index must be its
// first lane's value plus the lane, that value a multiple of the lanes.
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/substitute.h"

namespace mlcc::ir {

namespace {

// Whether `e` is a multiple of n for every value of its variables.
bool multipleOf(const PrimExpr& e, int64_t n) {
  int64_t c;
  if (asConstInt(e, &c)) return floorMod(c, n) == 0;
  const auto* b = e->as<BinaryNode>();
  if (!b) return false;
  switch (b->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Min:
    case BinaryOp::Max: return multipleOf(b->a, n) && multipleOf(b->b, n);
    case BinaryOp::Mul: return multipleOf(b->a, n) || multipleOf(b->b, n);
    case BinaryOp::Mod: return asConstInt(b->b, &c) && c > 0 && c % n == 0 && multipleOf(b->a, n);
    default: return false;
  }
}

class TakeLaneApart {
 public:
  TakeLaneApart(const Var& lane, int64_t lanes) : lane_(lane), lanes_(lanes) {}

  // `e` with (s + lane) / d rewritten as s / d and (s + lane) % d as
  // s % d + lane, where d is a multiple of the lanes and s a multiple of
  // them free of the lane (the lane then never carries into the
  // quotient: s % d + lane < d).
  PrimExpr operator()(const PrimExpr& e) const {
    const auto* b = e->as<BinaryNode>();
    if (!b) return e;
    PrimExpr x = (*this)(b->a), y = (*this)(b->b);
    int64_t d;
    if ((b->op == BinaryOp::Div || b->op == BinaryOp::Mod) && asConstInt(y, &d) && d > 0 && d % lanes_ == 0) {
      const PrimExpr first = simplify(substitute(x, {{lane_.get(), makeInt(0)}}));
      const PrimExpr rest = simplify(makeBinary(BinaryOp::Sub, x, first));
      int64_t zero;
      const bool lane_only = asConstInt(simplify(makeBinary(BinaryOp::Sub, rest, lane_)), &zero) && zero == 0;
      if (lane_only && multipleOf(first, lanes_)) {
        PrimExpr part = makeBinary(b->op, first, y);
        return b->op == BinaryOp::Div ? part : makeBinary(BinaryOp::Add, part, lane_);
      }
    }
    return makeBinary(b->op, x, y);
  }

 private:
  const Var& lane_;
  int64_t lanes_;
};

}  // namespace

bool alignedLanes(const PrimExpr& index, const Var& lane, int64_t lanes) {
  if (lanes < 1) return false;
  Analyzer az;
  az.bind(lane, 0, lanes);
  const PrimExpr apart = simplify(TakeLaneApart(lane, lanes)(az.simplify(index)));
  const PrimExpr first = simplify(substitute(apart, {{lane.get(), makeInt(0)}}));
  int64_t zero;
  return asConstInt(simplify(makeBinary(BinaryOp::Sub, makeBinary(BinaryOp::Sub, apart, first), lane)),
                    &zero) &&
         zero == 0 && multipleOf(first, lanes);
}

}  // namespace mlcc::ir
