// Internal helpers shared by every op family (the family-specific ones are in
// elementwise_util.h, nn_util.h and manipulate_util.h, which include this).
#pragma once

#include <cstdint>

#include "mlcc/ops/shape.h"

namespace mlcc::ops {

// Product of the constant dimensions (symbolic ones count as 1), for FLOP counts.
inline int64_t staticCount(const Shape& s) {
  int64_t n = 1;
  for (const auto& d : s) {
    int64_t c;
    if (ir::asConstInt(d, &c)) n *= c;
  }
  return n;
}

}  // namespace mlcc::ops
