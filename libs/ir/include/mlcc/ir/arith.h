// Integer index arithmetic: simplification and bounds of i64 expressions
// over loop variables with known ranges. Schedule primitives use it to keep
// rewritten indices readable (`(%i0 * 4 + %i1) * 8 + %i2` becomes
// `%i0 * 32 + %i1 * 8 + %i2`; `(%f * 16 + %j) / 16` becomes `%f` when
// 0 <= %j < 16), to compute the region a loop nest touches (compute_at,
// cache_read) and to prove predicates (split of a non-divisible extent).
//
//   Analyzer az;
//   az.bind(i, 0, 16);              // i in [0, 16)
//   PrimExpr s = az.simplify(e);
//   auto b = az.bounds(e);          // {min, max} as expressions, or nullopt
//   bool always = az.canProve(lt(e, 256));
//
// Variables without a range are symbols: they stay in the bounds (the
// bounds of `n * 4 + i` with i in [0, 4) are [n * 4, n * 4 + 3]).
// Simplification keeps the meaning for every value of every variable:
// rewrites that need a range (floordiv/floormod) use only the bound ranges.
#pragma once

#include <optional>
#include <unordered_map>

#include "mlcc/ir/expr.h"
#include "mlcc/support/checked_math.h"

namespace mlcc::ir {

struct IntBounds {
  PrimExpr min;  // inclusive
  PrimExpr max;  // inclusive
};

class Analyzer {
 public:
  // `v` ranges over [min, min + extent).
  void bind(const Var& v, PrimExpr min, PrimExpr extent);
  void bind(const Var& v, int64_t min, int64_t extent) { bind(v, makeInt(min), makeInt(extent)); }
  void unbind(const Var& v);
  bool isBound(const Var& v) const { return ranges_.count(v.get()) != 0; }

  // An equivalent expression in normal form: constants folded, sums of
  // products with constant coefficients collected (terms in first-seen
  // order, constant last), identities removed, floordiv/floormod by a
  // positive constant resolved where the bound ranges allow.
  // Non-integer expressions are returned with only their integer
  // sub-expressions simplified.
  PrimExpr simplify(const PrimExpr& e) const;

  // Inclusive bounds of an i64 expression over the bound ranges, in terms
  // of the unbound symbols; nullopt when some part cannot be bounded
  // (loads, non-constant divisors, products of two ranged variables).
  std::optional<IntBounds> bounds(const PrimExpr& e) const;
  // Constant bounds, when both ends fold to constants.
  std::optional<std::pair<int64_t, int64_t>> constBounds(const PrimExpr& e) const;

  // Whether a bool expression (comparisons of i64 expressions, && and ||)
  // holds for every value in the bound ranges. False when unsure.
  bool canProve(const PrimExpr& cond) const;

  struct Range {
    PrimExpr min, extent;
  };
  const std::unordered_map<const VarNode*, Range>& ranges() const { return ranges_; }

 private:
  std::unordered_map<const VarNode*, Range> ranges_;
};

// Simplification without any ranges.
PrimExpr simplify(const PrimExpr& e);

// Whether an i64 index moves by exactly 1 per lane, for `lane` in
// [0, lanes), from a first lane's index that is a multiple of `lanes`, for
// every value of its other variables: the lanes then touch one aligned
// vector of `lanes` elements (vector_lanes.cpp). A division or modulo by a
// multiple of `lanes` of a lane-aligned sum plus the lane (a fused copy
// split again: `(%t * 4 + %lane) / 8`, `(%t * 4 + %lane) % 8`) counts as
// the sum's quotient and remainder plus the lane. False when unsure.
bool alignedLanes(const PrimExpr& index, const Var& lane, int64_t lanes);

// `index` (in loop variables) with `part`, a sum a block predicate bounds
// (`%f * 128 + %t < 130`), replaced by the variable `z` that stands for it
// over the bounded range (bounded_part.cpp): where the part is a
// subexpression; or where the index is the part plus terms free of its
// variables (`%b * 128 + %f * 128 + %t`: the simplifier flattens the sum);
// or such terms plus the part divided (`%f * 3 + (%y * 6 + %x) / 14` of
// `(%f * 42 + %y * 6 + %x) / 14`: the simplifier spreads a division over
// the terms) or taken modulo a constant; else the same in its operands
// (`(%f * 4 + (%t * 8 + %u) / 16) % 3`). Else unchanged. The GPU checks, the cuda code generator's
// buffer boxes and the written-before-read analysis bound tiles with it.
PrimExpr replaceBoundedPart(const PrimExpr& index, const PrimExpr& part, const Var& z, const Analyzer& az);

// The IR's integer `/` and `%` on constants: floorDiv and floorMod of
// mlcc/support/checked_math.h.
using mlcc::floorDiv;
using mlcc::floorMod;

}  // namespace mlcc::ir
