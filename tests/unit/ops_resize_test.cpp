// resize2d (libs/ops/src/resize.cpp): type inference, errors, and the
// reference kernel against a numpy implementation of the ONNX Resize formulas
// for every method, coordinate mode and rounding method, and against
// torch.nn.functional.interpolate where torch has the same mode (bilinear with
// align_corners True/False, nearest, nearest-exact). One python run.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/npy.h"
#include "numpy_reference.h"

namespace {

using namespace mlcc::ir;
using namespace mlcc::test;

// Floats in [-4, 4), integers in [-100, 100].
const mlcc::test::RandomRange kRange{-4, 4, -100, 100};

Attrs resizeAttrs(int64_t oh, int64_t ow, const std::string& method = "nearest",
                  const std::string& mode = "half_pixel",
                  const std::string& rounding = "round_prefer_floor") {
  return {{"size", AttrValue::ints({oh, ow})},
          {"method", method},
          {"coordinate_transformation_mode", mode},
          {"rounding_method", rounding}};
}

TEST(OpsResize, Registration) {
  const mlcc::ops::OpDef* def = mlcc::ops::findOp("resize2d");
  ASSERT_NE(def, nullptr);
  EXPECT_EQ(def->pattern, mlcc::ops::OpPattern::Injective);
  Attrs a = mlcc::ops::normalizeAttrs(*def, {{"size", AttrValue::ints({4, 4})}});
  EXPECT_EQ(a.at("method").asString(), "nearest");
  EXPECT_EQ(a.at("coordinate_transformation_mode").asString(), "half_pixel");
  EXPECT_EQ(a.at("rounding_method").asString(), "round_prefer_floor");
  Type in = Type::tensor(DType::f32, std::vector<int64_t>{2, 3, 4, 4});
  Type out = Type::tensor(DType::f32, std::vector<int64_t>{2, 3, 8, 8});
  EXPECT_EQ(def->flops({in}, out, mlcc::ops::normalizeAttrs(*def, resizeAttrs(8, 8, "linear"))),
            6 * 2 * 3 * 8 * 8);
  EXPECT_EQ(def->flops({in}, out, mlcc::ops::normalizeAttrs(*def, resizeAttrs(8, 8))), 0);
}

TEST(OpsResize, InferAndErrors) {
  PrimExpr n = mlcc::ir::makeVar("n"), h = mlcc::ir::makeVar("h");
  auto c = [](int64_t v) { return mlcc::ops::dimConst(v); };
  Type sym = Type::tensor(DType::f32, {n, c(3), h, c(5)});
  EXPECT_EQ(mlcc::ir::printType(mlcc::ops::inferOpType("resize2d", {sym}, resizeAttrs(8, 10, "linear"))),
            "f32[n, 3, 8, 10]");
  Type i8 = Type::tensor(DType::i8, std::vector<int64_t>{1, 1, 2, 2});
  EXPECT_EQ(mlcc::ir::printType(mlcc::ops::inferOpType("resize2d", {i8}, resizeAttrs(3, 3))),
            "i8[1, 1, 3, 3]");
  EXPECT_EQ(inferError("resize2d", {i8}, resizeAttrs(3, 3, "linear")),
            "op 'resize2d': method 'linear' needs a float tensor, not i8[1, 1, 2, 2]");
  EXPECT_EQ(
      inferError("resize2d", {Type::tensor(DType::f32, std::vector<int64_t>{3, 4, 4})}, resizeAttrs(2, 2)),
      "op 'resize2d': expects an NCHW tensor of rank 4, not f32[3, 4, 4]");
  EXPECT_EQ(inferError("resize2d", {sym}, resizeAttrs(2, 2, "lanczos")),
            "op 'resize2d': unknown method 'lanczos' (expected one of \"nearest\", \"linear\", \"cubic\")");
  EXPECT_EQ(inferError("resize2d", {i8}, resizeAttrs(3, 3, "cubic")),
            "op 'resize2d': method 'cubic' needs a float tensor, not i8[1, 1, 2, 2]");
  Attrs bad_scales = resizeAttrs(2, 2, "linear");
  bad_scales["scales"] = AttrValue(AttrValue::List{AttrValue(0.5)});
  EXPECT_EQ(inferError("resize2d", {sym}, bad_scales),
            "op 'resize2d': scales must have two values [sh, sw], not 1");
  bad_scales["scales"] = AttrValue(AttrValue::List{AttrValue(0.5), AttrValue(0.0)});
  EXPECT_EQ(inferError("resize2d", {sym}, bad_scales),
            "op 'resize2d': scale 0.000000 is out of range [2^-16, 2^16]");
  EXPECT_EQ(
      inferError("resize2d", {sym}, resizeAttrs(2, 2, "nearest", "tf_crop_and_resize")),
      "op 'resize2d': unknown coordinate_transformation_mode 'tf_crop_and_resize' (expected one of "
      "\"half_pixel\", \"align_corners\", \"asymmetric\", \"pytorch_half_pixel\", \"half_pixel_symmetric\")");
  EXPECT_EQ(inferError("resize2d", {sym}, resizeAttrs(2, 2, "nearest", "half_pixel", "round")),
            "op 'resize2d': unknown rounding_method 'round' (expected one of \"round_prefer_floor\", "
            "\"round_prefer_ceil\", \"floor\", \"ceil\")");
  EXPECT_EQ(inferError("resize2d", {sym}, {{"size", AttrValue::ints({2})}}),
            "op 'resize2d': size [2] must be two non-negative sizes [oh, ow]");
  EXPECT_EQ(inferError("resize2d", {sym}, {}), "op 'resize2d' needs attribute 'size'");
  EXPECT_EQ(
      inferError("resize2d", {Type::tensor(DType::f32, std::vector<int64_t>{1, 1, 0, 2})}, resizeAttrs(2, 2)),
      "op 'resize2d': cannot resize the empty axis 2 of f32[1, 1, 0, 2]");
}

struct Case {
  Tensor x;
  int64_t oh, ow;
  std::string method, mode, rounding;
  std::string torch;  // a torch interpolate call with the same meaning, or ""
};

std::string torchCall(const Case& c) {
  if (c.x.dtype() != DType::f32) return "";  // torch lacks some f16 kernels on the CPU
  std::string size = "size=(" + std::to_string(c.oh) + ", " + std::to_string(c.ow) + ")";
  if (c.method == "linear") {
    if (c.mode == "align_corners") return size + ", mode='bilinear', align_corners=True";
    if (c.mode == "half_pixel" || (c.mode == "pytorch_half_pixel" && c.oh > 1 && c.ow > 1))
      return size + ", mode='bilinear', align_corners=False";
    return "";
  }
  if (c.mode == "asymmetric" && c.rounding == "floor") return size + ", mode='nearest'";
  if (c.mode == "half_pixel" && c.rounding == "round_prefer_ceil") return size + ", mode='nearest-exact'";
  return "";
}

std::vector<Case> cases() {
  std::mt19937 rng(99);
  std::vector<Case> out;
  struct Geometry {
    std::vector<int64_t> in;
    int64_t oh, ow;
  };
  std::vector<Geometry> geometries = {{{1, 2, 4, 5}, 8, 10}, {{2, 1, 5, 7}, 3, 4}, {{1, 1, 3, 4}, 7, 9},
                                      {{1, 2, 4, 4}, 1, 1},  {{1, 1, 1, 3}, 3, 2}, {{1, 1, 6, 6}, 4, 9}};
  for (const auto& g : geometries) {
    for (const char* mode : {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"}) {
      for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
        out.push_back(
            {randomTensor(rng, DType::f32, g.in, kRange), g.oh, g.ow, "nearest", mode, rounding, ""});
      out.push_back({randomTensor(rng, DType::f32, g.in, kRange), g.oh, g.ow, "linear", mode,
                     "round_prefer_floor", ""});
    }
  }
  // Other dtypes.
  out.push_back({randomTensor(rng, DType::f16, {1, 2, 3, 5}, kRange), 7, 4, "linear", "half_pixel",
                 "round_prefer_floor", ""});
  out.push_back(
      {randomTensor(rng, DType::f16, {1, 2, 3, 5}, kRange), 5, 8, "nearest", "asymmetric", "floor", ""});
  out.push_back({randomTensor(rng, DType::i8, {1, 2, 3, 5}, kRange), 5, 8, "nearest", "half_pixel",
                 "round_prefer_ceil", ""});
  out.push_back({randomTensor(rng, DType::i64, {2, 1, 4, 3}, kRange), 2, 7, "nearest", "align_corners",
                 "round_prefer_floor", ""});
  for (Case& c : out) c.torch = torchCall(c);
  return out;
}

const char* kPrelude = R"(def coord(n_in, n_out, mode):
    o = np.arange(n_out, dtype=np.float64)
    scale = n_out / n_in
    if mode == 'half_pixel':
        return (o + 0.5) / scale - 0.5
    if mode == 'pytorch_half_pixel':
        return (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == 'align_corners':
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    return o / scale

def nearest(x, n_in, rounding):
    f = np.floor(x)
    tie = x == f + 0.5
    if rounding == 'floor':
        r = f
    elif rounding == 'ceil':
        r = np.ceil(x)
    elif rounding == 'round_prefer_floor':
        r = np.where(tie, f, np.round(x))
    else:
        r = np.where(tie, f + 1, np.round(x))
    return np.clip(r, 0, n_in - 1).astype(np.int64)

def taps(x, n_in):
    x = np.clip(x, 0, n_in - 1)
    i0 = np.floor(x).astype(np.int64)
    return i0, np.minimum(i0 + 1, n_in - 1), x - i0

def onnx_resize(x, oh, ow, method, mode, rounding):
    H, W = x.shape[2], x.shape[3]
    if method == 'nearest':
        iy = nearest(coord(H, oh, mode), H, rounding)
        ix = nearest(coord(W, ow, mode), W, rounding)
        return x[:, :, iy][:, :, :, ix]
    y0, y1, wy = taps(coord(H, oh, mode), H)
    x0, x1, wx = taps(coord(W, ow, mode), W)
    v = x.astype(np.float64)
    top = v[:, :, y0][:, :, :, x0] * (1 - wx) + v[:, :, y0][:, :, :, x1] * wx
    bottom = v[:, :, y1][:, :, :, x0] * (1 - wx) + v[:, :, y1][:, :, :, x1] * wx
    wy = wy[:, None]
    return (top * (1 - wy) + bottom * wy).astype(x.dtype)
)";

// Each case against the ONNX formula, and against torch where it has the same
// mode: exact for nearest (data movement), within an absolute tolerance for
// linear.
TEST(OpsResize, KernelMatchesOnnxAndTorch) {
  std::string why = mlcc::test::pythonNumpyUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  std::vector<RefCase> refs;
  int torch_cases = 0;
  for (const Case& c : cases()) {
    Attrs attrs = resizeAttrs(c.oh, c.ow, c.method, c.mode, c.rounding);
    std::string label = mlcc::ir::printType(Type::tensor(c.x.dtype(), c.x.shape())) + " -> [" +
                        std::to_string(c.oh) + ", " + std::to_string(c.ow) + "] " + c.method + " " + c.mode +
                        (c.method == "nearest" ? " " + c.rounding : "");
    double tol = c.method == "nearest" ? 0.0 : c.x.dtype() == DType::f32 ? 1e-5 : 2e-2;
    refs.push_back({"resize2d",
                    {c.x},
                    attrs,
                    "lambda x: onnx_resize(x, " + std::to_string(c.oh) + ", " + std::to_string(c.ow) + ", '" +
                        c.method + "', '" + c.mode + "', '" + c.rounding + "')",
                    0,
                    tol,
                    label + " vs the ONNX formula"});
    if (c.torch.empty()) continue;
    ++torch_cases;
    refs.push_back({"resize2d",
                    {c.x},
                    attrs,
                    "lambda x: F.interpolate(torch.from_numpy(x), " + c.torch + ")",
                    0,
                    c.method == "nearest" ? 0.0 : 1e-5,
                    label + " vs torch"});
  }
  int compared = mlcc::test::runRefCases(refs, {.prelude = kPrelude, .same_dtype = true});
  if (!mlcc::test::torchAvailable()) {
    EXPECT_EQ(compared, static_cast<int>(refs.size()) - torch_cases);
    std::cerr << "note: torch is missing; resize2d checked against the ONNX formula only\n";
  } else {
    EXPECT_EQ(compared, static_cast<int>(refs.size()));
    std::cerr << "note: " << torch_cases << " cases also checked against torch\n";
  }
}

// bf16 (no numpy form): the same result as f32 on the same values, rounded.
TEST(OpsResize, BF16FollowsF32) {
  std::mt19937 rng(5);
  Tensor b = randomTensor(rng, DType::bf16, {1, 2, 3, 4}, kRange);
  Tensor f = Tensor::zeros(DType::f32, b.shape());
  for (int64_t i = 0; i < b.numel(); ++i) f.set(i, b.at(i));
  for (const char* method : {"nearest", "linear"}) {
    Attrs a = resizeAttrs(5, 7, method, "align_corners");
    Tensor rb = mlcc::ops::computeOp("resize2d", {b}, a)[0], rf = mlcc::ops::computeOp("resize2d", {f}, a)[0];
    ASSERT_EQ(rb.shape(), rf.shape());
    for (int64_t i = 0; i < rb.numel(); ++i) {
      Tensor one = Tensor::scalar(DType::bf16, rf.at(i));
      EXPECT_EQ(rb.at(i), one.at(0)) << method << " element " << i;
    }
  }
}

}  // namespace
