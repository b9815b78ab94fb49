// Converters of the ONNX window functions (HannWindow, HammingWindow,
// BlackmanWindow) and MelWeightMatrix: constants of their inputs, which
// must be known at import (bound with --bind when they are graph inputs),
// computed as ONNX's definitions and rounded to the output dtype.
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

// MelWeightMatrix as ONNX's reference computes it: num_mel_bins + 2 points
// evenly spaced in mel (the step divides by num_mel_bins + 2), converted to
// spectrogram bins (floor((dft_length + 1) * hz / sample_rate)), and a
// triangle from each point through the next to the one after; the log1p of
// the edge frequencies in f32 (the reference's dtype there), the rest in
// double.
std::vector<ValuePtr> melWeightMatrix(NodeCtx& c) {
  auto scalarInt = [&](size_t i, const char* what) {
    const std::vector<int64_t> v = c.constInts(i, what);
    if (v.size() != 1) c.fail(std::string(what) + " must hold one value");
    return v[0];
  };
  auto scalarFloat = [&](size_t i, const char* what) {
    const std::vector<double> v = c.constFloats(i, what);
    if (v.size() != 1) c.fail(std::string(what) + " must hold one value");
    return v[0];
  };
  const int64_t mels = scalarInt(0, "num_mel_bins"), dft = scalarInt(1, "dft_length"),
                rate = scalarInt(2, "sample_rate");
  const double lower = scalarFloat(3, "lower_edge_hertz"), upper = scalarFloat(4, "upper_edge_hertz");
  if (mels <= 0 || dft <= 0 || rate <= 0) c.fail("num_mel_bins, dft_length and sample_rate must be positive");
  const int64_t bins = dft / 2 + 1;
  checkComputedSize({bins, mels}, "the matrix");
  auto mel = [](double hz) {
    return 2595.0 * static_cast<double>(std::log1p(static_cast<float>(hz) / 700.0f)) / std::log(10.0);
  };
  const double low = mel(lower), step = (mel(upper) - low) / static_cast<double>(mels + 2);
  std::vector<int64_t> point(static_cast<size_t>(mels + 2));
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double hz = 700.0 * std::expm1((static_cast<double>(k) * step + low) / 2595.0 * std::log(10.0));
    point[static_cast<size_t>(k)] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= bins)
      c.fail("a mel band reaches past the spectrogram's " + std::to_string(bins) + " bins");
    return w[static_cast<size_t>(j * mels + i)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = point[static_cast<size_t>(i)], mid = point[static_cast<size_t>(i + 1)],
                  hi = point[static_cast<size_t>(i + 2)];
    if (mid == lo)
      at(mid, i) = 1;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j) at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  const ir::DType dt = dtypeFromOnnx(static_cast<int>(c.attrInt("output_datatype", 1)), "output_datatype");
  return {c.im.constant(ir::Tensor::fromValues(dt, {bins, mels}, w), c.outName())};
}

}  // namespace

void registerSignalConverters(ConverterTable& t) {
  t["HannWindow"] = window({0.5, -0.5});
  const double alpha = 25.0 / 46.0;
  t["HammingWindow"] = window({alpha, -(1 - alpha)});
  t["BlackmanWindow"] = window({0.42, -0.5, 0.08});
  t["MelWeightMatrix"] = melWeightMatrix;
}

}  // namespace mlcc::frontend::onnx_import
