// Times the TensorIR interpreter on legalized ops of ResNet-18 size (a 3x3
// conv, a 256^3 matmul, relu, max_pool2d, softmax) and prints millions of
// elementary operations per second (multiply-adds for conv/matmul, output or
// window elements for the others). Usage: interp_tir_bench [filter]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc;
using ir::AttrValue;
using ir::DType;

namespace {

ir::Tensor randomF32(std::mt19937& rng, std::vector<int64_t> shape) {
  ir::Tensor t = ir::Tensor::zeros(DType::f32, shape);
  std::uniform_real_distribution<float> d(-1, 1);
  float* p = t.mutableData<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// Legalizes `op`, runs it once and prints the rate of `ops` elementary
// operations.
void bench(const char* label, const std::string& op, std::vector<ir::Tensor> inputs, const ir::Attrs& attrs,
           double ops) {
  std::vector<ir::Type> types;
  for (const auto& t : inputs) types.push_back(ir::Type::tensor(t.dtype(), t.shape()));
  ir::Module m;
  m.functions.push_back(ops::legalizeOp(op, types, attrs, "f"));
  std::vector<ir::Tensor> outs;
  const auto& params = m.findPrim("f")->params;
  for (size_t i = inputs.size(); i < params.size(); ++i) {
    std::vector<int64_t> shape;
    for (const auto& d : params[i]->shape) {
      int64_t c = 0;
      ir::asConstInt(d, &c);
      shape.push_back(c);
    }
    outs.push_back(ir::Tensor::zeros(params[i]->dtype, shape));
  }
  std::vector<ir::Tensor*> args;
  for (auto& t : inputs) args.push_back(&t);
  for (auto& t : outs) args.push_back(&t);
  interp::Interpreter in(m);
  auto t0 = std::chrono::steady_clock::now();
  in.runPrim("f", args);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sum = 0;  // a checksum, to compare results across versions
  for (const auto& o : outs)
    for (int64_t i = 0; i < o.numel(); ++i) sum += o.at(i);
  std::printf("%-30s %8.3f s  %8.1f M ops/s  (checksum %.6g)\n", label, s, ops / s / 1e6, sum);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string filter = argc > 1 ? argv[1] : "";
  auto want = [&](const char* n) { return filter.empty() || std::strstr(n, filter.c_str()); };
  std::mt19937 rng(1);
  try {
    // conv2d layers: ResNet-18's 3x3 layer at 56x56, its stride-2 stem and a
    // stride-2 3x3 layer.
    auto conv = [&](const char* label, std::vector<int64_t> x, std::vector<int64_t> w, int64_t s, int64_t p) {
      ir::Attrs a{{"strides", AttrValue::ints({s, s})},
                  {"padding", AttrValue::ints({p, p, p, p})},
                  {"dilation", AttrValue::ints({1, 1})},
                  {"groups", AttrValue(int64_t{1})}};
      int64_t oh = (x[2] + 2 * p - w[2]) / s + 1, ow = (x[3] + 2 * p - w[3]) / s + 1;
      double macs = 1.0 * x[0] * w[0] * oh * ow * w[1] * w[2] * w[3];
      bench(label, "conv2d", {randomF32(rng, x), randomF32(rng, w)}, a, macs);
    };
    if (want("conv")) conv("conv2d 1x64x56x56 k3 (MAC)", {1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1);
    if (want("conv7")) conv("conv2d 1x3x224x224 k7s2 (MAC)", {1, 3, 224, 224}, {64, 3, 7, 7}, 2, 3);
    if (want("convs2")) conv("conv2d 1x64x56x56 k3s2 (MAC)", {1, 64, 56, 56}, {128, 64, 3, 3}, 2, 1);
    if (want("matmul"))
      bench("matmul 256^3 (MAC)", "matmul", {randomF32(rng, {256, 256}), randomF32(rng, {256, 256})}, {},
            256.0 * 256 * 256);
    if (want("relu")) bench("relu 1M (elem)", "relu", {randomF32(rng, {1, 16, 256, 256})}, {}, 1 << 20);
    if (want("pool")) {
      ir::Attrs a{{"pool_size", AttrValue::ints({3, 3})},
                  {"strides", AttrValue::ints({2, 2})},
                  {"padding", AttrValue::ints({1, 1, 1, 1})},
                  {"dilation", AttrValue::ints({1, 1})},
                  {"ceil_mode", AttrValue(false)}};
      bench("max_pool2d 1x64x112x112 (win)", "max_pool2d", {randomF32(rng, {1, 64, 112, 112})}, a,
            64.0 * 56 * 56 * 9);
    }
    if (want("softmax"))
      bench("softmax 1024x1000 (elem)", "softmax", {randomF32(rng, {1024, 1000})}, {}, 1024.0 * 1000);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.format().c_str());
    return 1;
  }
  return 0;
}
