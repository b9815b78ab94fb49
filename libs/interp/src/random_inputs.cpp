// Deterministic random input tensors for mlcc-run without --input.
#include <cmath>
#include <random>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"

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

ir::Tensor randomInput(ir::DType dtype, const std::vector<int64_t>& shape, uint64_t seed, size_t index) {
  return randomTensor(dtype, shape, seed * 1000003 + index);
}

std::vector<int64_t> concreteShape(const InputSpec& spec, const std::map<std::string, int64_t>& dims) {
  std::vector<int64_t> shape;
  for (const auto& d : spec.shape) {
    int64_t c;
    if (ir::asConstInt(d, &c)) {
      shape.push_back(c);
    } else if (auto* v = d->as<ir::VarNode>()) {
      auto it = dims.find(v->name);
      shape.push_back(it == dims.end() ? 1 : it->second);
    } else {
      throw Error("input '" + spec.name + "': cannot make a random tensor of type " +
                  ir::printType(ir::Type::tensor(spec.dtype, spec.shape)) + ": a dimension is an expression");
    }
  }
  return shape;
}

}  // namespace mlcc::interp
