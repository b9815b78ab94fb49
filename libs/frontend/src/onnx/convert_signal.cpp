// Converters of the ONNX window functions (HannWindow, HammingWindow,
// BlackmanWindow): the window is a constant of the size input, which must
// be known at import (bound with --bind when it is a graph input), computed
// in double as ONNX's definitions and rounded to the output dtype.
#include <cmath>
#include <numbers>

#include "convert_util.h"

namespace mlcc::frontend::onnx_import {

namespace {

// cos(k · 2πn / N₁) terms: w[n] = Σ coef[k] · cos(2πkn / N₁), with N₁ the
// size (periodic) or the size - 1 (symmetric).
Converter window(std::vector<double> coef) {
  return [coef](NodeCtx& c) -> std::vector<ValuePtr> {
    const std::vector<int64_t> size = c.constInts(0, "size");
    if (size.size() != 1) c.fail("size must be a scalar");
    const int64_t n = size[0];
    if (n < 0) c.fail("size must not be negative");
    checkComputedSize({n}, "the window");
    const ir::DType dt = dtypeFromOnnx(static_cast<int>(c.attrInt("output_datatype", 1)), "output_datatype");
    const double n1 = static_cast<double>(c.attrInt("periodic", 1) != 0 ? n : n - 1);
    std::vector<double> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      for (size_t k = 0; k < coef.size(); ++k)
        w[static_cast<size_t>(i)] +=
            coef[k] * std::cos(2.0 * std::numbers::pi * static_cast<double>(k) * static_cast<double>(i) / n1);
    return {c.im.constant(ir::Tensor::fromValues(dt, {n}, w), c.outName())};
  };
}

}  // namespace

void registerSignalConverters(ConverterTable& t) {
  t["HannWindow"] = window({0.5, -0.5});
  const double alpha = 25.0 / 46.0;
  t["HammingWindow"] = window({alpha, -(1 - alpha)});
  t["BlackmanWindow"] = window({0.42, -0.5, 0.08});
}

}  // namespace mlcc::frontend::onnx_import
