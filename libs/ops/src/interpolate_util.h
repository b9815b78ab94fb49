// Interpolation weights shared by resize2d and grid_sample: written once as a
// template, so a reference kernel (T = float) and its lowering (T = PrimExpr)
// compute the same f32 operations in the same order.
#pragma once

#include <array>

#include "mlcc/ir/builder.h"

namespace mlcc::ops {

// Keys' cubic convolution weights of the neighbours floor(x) - 1 .. floor(x) + 2
// at fraction t = x - floor(x), for coefficient a (ONNX's cubic_coeff_a;
// GridSample's is -0.75).
template <class T>
std::array<T, 4> cubicWeights(const T& t, float a) {
  using namespace ir::build;
  auto far = [&](const T& d) -> T { return ((d * a - 5 * a) * d + 8 * a) * d - 4 * a; };
  auto near = [&](const T& d) -> T { return ((a + 2) * d - (a + 3)) * d * d + 1.0f; };
  const T v = 1.0f - t;
  return {far(t + 1.0f), near(t), near(v), far(v + 1.0f)};
}

}  // namespace mlcc::ops
