// Internal helpers shared by every op family (the family-specific ones are in
// elementwise_util.h, nn_util.h and manipulate_util.h, which include this).
#pragma once

#include <cstdint>

#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"

namespace mlcc::ops {

// Product of the constant dimensions (symbolic ones count as 1), for FLOP
// counts: saturates at INT64_MAX instead of wrapping.
inline int64_t staticCount(const Shape& s) {
  int64_t n = 1;
  for (const auto& d : s) {
    int64_t c;
    if (ir::asConstInt(d, &c)) n = saturatingMul(n, c);
  }
  return n;
}

// a * b * c for FLOP counts, saturating.
inline int64_t flopsProduct(int64_t a, int64_t b, int64_t c = 1) {
  return saturatingMul(saturatingMul(a, b), c);
}

}  // namespace mlcc::ops
