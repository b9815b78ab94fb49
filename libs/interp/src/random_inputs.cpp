// Deterministic random input tensors for mlcc-run without --input.
#include <cmath>
#include <random>

#include "mlcc/interp/interpreter.h"

namespace mlcc::interp {

ir::Tensor randomTensor(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed) {
  ir::Tensor t = ir::Tensor::zeros(dtype, shape);
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };  // (0, 1)
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (ir::isFloat(dtype))
      v = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform());  // Box-Muller
    else if (dtype == ir::DType::boolean)
      v = static_cast<double>(rng() >> 63);
    else
      v = static_cast<double>(rng() % 10);
    t.set(i, v);
  }
  return t;
}

}  // namespace mlcc::interp
