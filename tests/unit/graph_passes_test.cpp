// The graph passes canonicalize and fold-constants: each on small
// hand-written modules, checked against the expected module (structural
// equality) and by interpreting before and after on random inputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/entry.h"
#include "mlcc/ir/module_io.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/weights.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/safetensors.h"
#include "mlcc/transform/pass.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::transform;
namespace fs = std::filesystem;

namespace {

// A fresh directory for one test's files.
std::string tempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mlcc_graph_passes_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// Symbolic dimensions of the inputs take the size `dim`.
std::vector<interp::NamedTensor> runMain(const ir::Module& m, uint64_t seed, int64_t dim = 3) {
  interp::Interpreter in(m);
  std::vector<interp::NamedTensor> inputs;
  for (const auto& spec : in.inputs("main")) {
    std::vector<int64_t> shape;
    for (const auto& d : spec.shape) {
      int64_t v = 0;
      shape.push_back(ir::asConstInt(d, &v) ? v : dim);
    }
    inputs.push_back({spec.name, interp::randomTensor(spec.dtype, shape, seed)});
  }
  return in.run("main", inputs);
}

void expectClose(const std::vector<interp::NamedTensor>& a, const std::vector<interp::NamedTensor>& b,
                 double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].tensor.shape(), b[i].tensor.shape());
    ASSERT_EQ(a[i].tensor.dtype(), b[i].tensor.dtype());
    for (int64_t k = 0; k < a[i].tensor.numel(); ++k)
      ASSERT_NEAR(a[i].tensor.at(k), b[i].tensor.at(k), tol * (1 + std::fabs(a[i].tensor.at(k))))
          << "output " << i << " element " << k;
  }
}

struct Result {
  ir::Module module;   // after the pipeline, re-read with its new weights
  NewWeights weights;  // what the passes made
  std::string text;    // printed module after the pipeline
};

// Runs `pipeline` on `m` (verifying after each pass), writes the result and
// its new weights into `dir` and reads it back, so the interpreter sees them.
Result runPasses(ir::Module m, const std::string& pipeline, const std::string& dir) {
  Result r;
  PassContext ctx;
  ctx.verify_each = true;
  ctx.new_weights = &r.weights;
  runPipeline(m, parsePipeline(pipeline), ctx);
  r.text = ir::printModule(m);
  std::string out = dir + "/out.ir";
  ir::writeModuleWithWeights(m, out, dir + "/out.safetensors", r.weights.tensors);
  r.module = ir::parseModuleFile(out);
  return r;
}

// Checks the pipeline keeps the meaning of `m` on random inputs.
Result checkPasses(const ir::Module& m, const std::string& pipeline, const std::string& dir, double tol = 0) {
  auto before = runMain(m, 7);
  Result r = runPasses(m, pipeline, dir);
  auto after = runMain(r.module, 7);
  expectClose(before, after, tol);
  return r;
}

ir::Module parse(const std::string& text, const std::string& dir = ".") {
  ir::Module m = ir::parseModule(text, "m.ir");
  m.base_dir = dir;
  return m;
}

// The text of the module tests/unit/fixtures/graph_passes/NAME, with its
// "mlcc.ir 1" header.
std::string moduleText(const std::string& name) {
  return "mlcc.ir 1\n" + mlcc::test::fixture("graph_passes/" + name);
}

// checkPasses on the module of the fixture graph_passes/NAME, its files in
// a fresh directory named after the fixture.
Result checkFixture(const std::string& name, const std::string& pipeline, double tol = 0) {
  std::string dir = tempDir(name.substr(0, name.rfind('.')));
  return checkPasses(parse(moduleText(name), dir), pipeline, dir, tol);
}

void expectModule(const ir::Module& actual, const std::string& expected_text) {
  ir::Module expected = ir::parseModule(expected_text, "expected.ir");
  EXPECT_TRUE(ir::structuralEqual(actual, expected)) << "got:\n"
                                                     << ir::printModule(actual) << "expected:\n"
                                                     << ir::printModule(expected);
}

}  // namespace

TEST(Canonicalize, RemovesNoOps) {
  Result r = checkFixture("canonicalize_removes_no_ops.ir", "canonicalize,dead-code-elimination");
  expectModule(r.module, moduleText("canonicalize_removes_no_ops_expected.ir"));
  EXPECT_TRUE(r.weights.tensors.empty());
}

// Outputs keep their names when canonicalize forwards an alias or a no-op
// into the return (the interpreter and codegen write outputs under these
// names): once, `return %y` with `%y = %a` became `return %a`, and mlcc-run
// wrote a.npy; an output that is an input kept the input's name.
TEST(Canonicalize, OutputsKeepTheirNames) {
  std::string dir = tempDir("output_names");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[4]) -> (f32[4], f32[4], f32[4]) {
  dataflow {
    %a: f32[4] = relu(%x)
    %y: f32[4] = %a
    %z: f32[4] = reshape(%a, shape = [4])
    %w: f32[4] = %x
  }
  return (%y, %z, %w)
}
)");
  Result r = checkPasses(m, "canonicalize,fuse-ops,dead-code-elimination", dir);
  const auto& main = std::get<ir::GraphFunc>(r.module.functions[0]);
  EXPECT_EQ(ir::outputNames(main), (std::vector<std::string>{"y", "z", "w"})) << r.text;
  EXPECT_NE(r.text.find("return (%a, %a, %x)"), std::string::npos) << r.text;
  // Unchanged names are not pinned.
  Result same = checkPasses(r.module, "canonicalize", dir);
  EXPECT_EQ(same.text, r.text);
}

TEST(Canonicalize, ComposesPermutes) {
  Result r = checkFixture("canonicalize_composes_permutes.ir", "canonicalize,dead-code-elimination");
  expectModule(r.module, moduleText("canonicalize_composes_permutes_expected.ir"));
}

// power(x, 2) is x * x (a layer norm's variance); other exponents, and a
// power whose result broadcasts x, stay.
TEST(Canonicalize, SquaresByMultiply) {
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[2, 8], %y: f32[8]) -> (f32[2, 8], f32[2, 8], f32[2, 8]) {
  dataflow {
    %two: f32[] = const 2.0
    %three: f32[] = const 3.0
    %twos: f32[2, 1] = const [2.0, 2.0]
    %sq: f32[2, 8] = power(%x, %two)
    %cube: f32[2, 8] = power(%x, %three)
    %bsq: f32[2, 8] = power(%y, %twos)
  }
  return (%sq, %cube, %bsq)
}
)");
  Result r = checkPasses(m, "canonicalize,dead-code-elimination", tempDir("square"), 0);
  EXPECT_NE(r.text.find("%sq: f32[2, 8] = multiply(%x, %x)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%cube: f32[2, 8] = power(%x, %three)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%bsq: f32[2, 8] = power(%y, %twos)"), std::string::npos) << r.text;
}

// A layer norm written out as PyTorch exports LayerNorm below opset 17
// (both operand orders of the commutative ops) becomes layer_norm; the same
// shape over a non-trailing axis, with another epsilon form (a vector), or
// with the variance of another tensor does not.
TEST(FuseLayerNorm, WrittenOutLayerNorms) {
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[2, 5, 8], %g: f32[8], %b: f32[8], %h: f32[2, 5, 8]) -> (f32[2, 5, 8], f32[2, 5, 8], f32[2, 5, 8], f32[2, 5, 8]) {
  dataflow {
    %two: f32[] = const 2.0
    %eps: f32[] = const 1e-05
    %mu: f32[2, 5, 1] = mean(%x, axes = [-1], keepdims = true)
    %d: f32[2, 5, 8] = subtract(%x, %mu)
    %sq: f32[2, 5, 8] = power(%d, %two)
    %var: f32[2, 5, 1] = mean(%sq, axes = [2], keepdims = true)
    %ve: f32[2, 5, 1] = add(%eps, %var)
    %s: f32[2, 5, 1] = sqrt(%ve)
    %n: f32[2, 5, 8] = divide(%d, %s)
    %m: f32[2, 5, 8] = multiply(%g, %n)
    %y: f32[2, 5, 8] = add(%b, %m)
    %mu1: f32[2, 1, 8] = mean(%x, axes = [1], keepdims = true)
    %d1: f32[2, 5, 8] = subtract(%x, %mu1)
    %sq1: f32[2, 5, 8] = multiply(%d1, %d1)
    %var1: f32[2, 1, 8] = mean(%sq1, axes = [1], keepdims = true)
    %ve1: f32[2, 1, 8] = add(%var1, %eps)
    %s1: f32[2, 1, 8] = sqrt(%ve1)
    %n1: f32[2, 5, 8] = divide(%d1, %s1)
    %m1: f32[2, 5, 8] = multiply(%n1, %g)
    %middle: f32[2, 5, 8] = add(%m1, %b)
    %sqh: f32[2, 5, 8] = multiply(%h, %h)
    %varh: f32[2, 5, 1] = mean(%sqh, axes = [-1], keepdims = true)
    %veh: f32[2, 5, 1] = add(%varh, %eps)
    %sh: f32[2, 5, 1] = sqrt(%veh)
    %nh: f32[2, 5, 8] = divide(%d, %sh)
    %mh: f32[2, 5, 8] = multiply(%nh, %g)
    %other: f32[2, 5, 8] = add(%mh, %b)
    %epsv: f32[8] = const [1e-05, 1e-05, 1e-05, 1e-05, 1e-05, 1e-05, 1e-05, 1e-05]
    %vv: f32[2, 5, 8] = add(%var, %epsv)
    %sv: f32[2, 5, 8] = sqrt(%vv)
    %nv: f32[2, 5, 8] = divide(%d, %sv)
    %mv: f32[2, 5, 8] = multiply(%nv, %g)
    %vector_eps: f32[2, 5, 8] = add(%mv, %b)
  }
  return (%y, %middle, %other, %vector_eps)
}
)");
  Result r =
      checkPasses(m, "canonicalize,fuse-layer-norm,dead-code-elimination", tempDir("layer_norm"), 1e-5);
  EXPECT_NE(r.text.find("%y: f32[2, 5, 8] = layer_norm(%x, %g, %b, axis = 2, epsilon = 1e-05)"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("layer_norm(", r.text.find("layer_norm(") + 1), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%middle: f32[2, 5, 8] = add(%m1, %b)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%other: f32[2, 5, 8] = add(%mh, %b)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%vector_eps: f32[2, 5, 8] = add(%mv, %b)"), std::string::npos) << r.text;
}

TEST(Canonicalize, FoldsBatchNormIntoDense) {
  Result r =
      checkFixture("canonicalize_folds_batch_norm_into_dense.ir", "canonicalize,dead-code-elimination", 1e-5);
  EXPECT_EQ(r.text.find("batch_norm"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("= dense(%x, %w_bn)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%bn: f32[2, 3] = add(%y_bn, %bn_bias)"), std::string::npos) << r.text;
  EXPECT_TRUE(r.weights.tensors.empty());  // small: inline
}

TEST(Canonicalize, FoldsBatchNormIntoConvWithNewWeights) {
  std::string dir = tempDir("bn_conv");
  ir::Tensor w = interp::randomTensor(ir::DType::f32, {3, 2, 3, 3}, 11);
  writeSafetensors(dir + "/in.safetensors",
                   {{"conv.weight", "F32", w.shape(), std::span<const std::byte>(w.bytes(), w.nbytes())}});
  const std::string text = R"(mlcc.ir 1
weights "in.safetensors"

graph @main(%x: f32[2, 2, 5, 5]) -> (f32[2, 3, 3, 3], f32[2, 3, 3, 3]) {
  dataflow {
    %w: f32[3, 2, 3, 3] = const "conv.weight"
    %y: f32[2, 3, 3, 3] = conv2d(%x, %w)
    %g: f32[3] = const [1.5, 0.5, -2.0]
    %b: f32[3] = const [0.1, -0.2, 0.3]
    %mu: f32[3] = const [0.4, -1.0, 2.0]
    %var: f32[3] = const [0.25, 4.0, 1.0]
    %bn: f32[2, 3, 3, 3] = batch_norm(%y, %g, %b, %mu, %var)
    %y2: f32[2, 3, 3, 3] = conv2d(%x, %w)
    %bn2: f32[2, 3, 3, 3] = batch_norm(%y2, %g, %b, %mu, %var)
    %r: f32[2, 3, 3, 3] = relu(%y2)
  }
  return (%bn, %bn2)
}
)";
  ir::Module m = parse(text, dir);
  Result r = checkPasses(m, "canonicalize,dead-code-elimination", dir, 1e-5);
  // %y2 has another use (%r, dead but still there during canonicalize): not
  // folded, but a per-channel multiply and add (s = gamma / sqrt(var + eps),
  // b' = beta - mean * s).
  EXPECT_NE(r.text.find("%bn2_scaled: f32[2, 3, 3, 3] = multiply(%y2, %bn2_scale)"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%bn2: f32[2, 3, 3, 3] = add(%bn2_scaled, %bn2_shift)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%bn2_scale: f32[3, 1, 1] = const ["), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("batch_norm"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("= const \"conv.weight.bn_folded\""), std::string::npos) << r.text;
  ASSERT_EQ(r.weights.tensors.size(), 1u);
  EXPECT_EQ(r.weights.tensors[0].first, "conv.weight.bn_folded");
  // Folded numerically: w'[o] = w[o] * gamma[o] / sqrt(var[o] + 1e-5).
  const double gamma[3] = {1.5, 0.5, -2.0}, var[3] = {0.25, 4.0, 1.0};
  const ir::Tensor& nw = r.weights.tensors[0].second;
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_NEAR(nw.at(i), w.at(i) * gamma[i / 18] / std::sqrt(var[i / 18] + 1e-5), 1e-5);
  // Without a place for new weights, the conv's weight cannot fold: the
  // batch_norm is scaled (its constants are small enough to be inline).
  PassContext ctx;
  ir::Module m2 = parse(text, dir);
  runPipeline(m2, parsePipeline("canonicalize"), ctx);
  EXPECT_NE(ir::printModule(m2).find("%bn: f32[2, 3, 3, 3] = add(%bn_scaled, %bn_shift)"), std::string::npos)
      << ir::printModule(m2);
}

TEST(FoldConstants, FoldsInlineAndToNewWeights) {
  const std::string name = "fold_constants_folds_inline_and_to_new_weights.ir";
  Result r = checkFixture(name, "fold-constants,dead-code-elimination");
  ASSERT_EQ(r.weights.tensors.size(), 2u);
  EXPECT_EQ(r.weights.tensors[0].first, "folded.0");
  EXPECT_EQ(r.weights.tensors[1].first, "folded.1");
  EXPECT_EQ(r.weights.tensors[1].second.at(31), 2.25);
  EXPECT_NE(r.text.find("%big2: f32[32] = const \"folded.1\""), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("%big:"), std::string::npos) << r.text;  // dead after folding
  EXPECT_NE(r.text.find("%e: f32[2, 2] = const ["), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%y: f32[32] = add(%x, %big2)"), std::string::npos) << r.text;

  // max-bytes: the 128-byte results stay; the 16-byte one folds.
  Result small = checkFixture(name, "fold-constants{max-bytes=64}");
  EXPECT_TRUE(small.weights.tensors.empty());
  EXPECT_NE(small.text.find("%big: f32[32] = broadcast_to"), std::string::npos) << small.text;
  EXPECT_NE(small.text.find("%e: f32[2, 2] = const ["), std::string::npos) << small.text;
}

// max-work: a product of constants of more FLOPs (2 * 2 * 2 * 2 = 16 here)
// stays an op for run time.
TEST(FoldConstants, LeavesOpsOfMoreWorkThanMaxWork) {
  const std::string text = R"(mlcc.ir 1
graph @main(%x: f32[2, 2]) -> f32[2, 2] {
  dataflow {
    %a: f32[2, 2] = const [1.0, 2.0, 3.0, 4.0]
    %m: f32[2, 2] = matmul(%a, %a)
    %y: f32[2, 2] = add(%x, %m)
  }
  return %y
}
)";
  const std::string dir = tempDir("fold_max_work");
  Result kept = checkPasses(parse(text, dir), "fold-constants{max-work=15}", dir);
  EXPECT_NE(kept.text.find("%m: f32[2, 2] = matmul(%a, %a)"), std::string::npos) << kept.text;
  Result folded = checkPasses(parse(text, dir), "fold-constants{max-work=16}", dir);
  EXPECT_NE(folded.text.find("%m: f32[2, 2] = const [7.0, 10.0, 15.0, 22.0]"), std::string::npos)
      << folded.text;
}

TEST(FoldConstants, NewNamesAvoidExistingWeights) {
  std::string dir = tempDir("fold_names");
  ir::Tensor w = interp::randomTensor(ir::DType::f32, {20}, 3);
  writeSafetensors(dir + "/in.safetensors",
                   {{"folded.0", "F32", w.shape(), std::span<const std::byte>(w.bytes(), w.nbytes())}});
  ir::Module m = parse(R"(mlcc.ir 1
weights "in.safetensors"

graph @main(%x: f32[20]) -> f32[20] {
  dataflow {
    %w: f32[20] = const "folded.0"
    %n: f32[20] = negative(%w)
    %y: f32[20] = add(%x, %n)
  }
  return %y
}
)",
                       dir);
  Result r = checkPasses(m, "fold-constants,dead-code-elimination", dir);
  ASSERT_EQ(r.weights.tensors.size(), 1u);
  EXPECT_EQ(r.weights.tensors[0].first, "folded.1");
}

// A conv1d as imported (expand_dims, conv2d, squeeze) followed by its bias,
// a ReLU and the next conv1d: the squeeze moves after the add and the ReLU
// (the bias gains the unit axis), the next expand_dims cancels it, and the
// squeezes left without a use are gone; both convolutions' operands stay
// 4-D. It also moves after a multiply by another tensor (which gains the
// axis too), but not past an op with an axis (softmax). The interpreter
// gives the same outputs.
TEST(Passes, CanonicalizeMovesSqueezesAfterElementwiseOps) {
  const std::string dir = tempDir("canonicalize_squeeze");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[2, 3, 6], %w: f32[4, 3, 1, 1], %b: f32[1, 4, 1], %v: f32[5, 4, 1, 1], %s: f32[2, 4, 6]) -> (f32[2, 5, 6], f32[2, 4, 6], f32[2, 4, 6], f32[2, 5], f32[2, 5, 1]) {
  dataflow {
    %x4: f32[2, 3, 1, 6] = expand_dims(%x, axes = [2])
    %c4: f32[2, 4, 1, 6] = conv2d(%x4, %w)
    %c: f32[2, 4, 6] = squeeze(%c4, axes = [2])
    %cb: f32[2, 4, 6] = add(%c, %b)
    %r: f32[2, 4, 6] = relu(%cb)
    %r4: f32[2, 4, 1, 6] = expand_dims(%r, axes = [2])
    %d4: f32[2, 5, 1, 6] = conv2d(%r4, %v)
    %d: f32[2, 5, 6] = squeeze(%d4, axes = [2])
    %m: f32[2, 4, 6] = multiply(%s, %r)
    %sm: f32[2, 4, 6] = softmax(%m, axis = -1)
    %mx: f32[2, 5] = max(%d, axes = [2])
    %mk: f32[2, 5, 1] = mean(%d, axes = [-1], keepdims = true)
  }
  return (%d, %m, %sm, %mx, %mk)
}
)",
                               dir),
                         "canonicalize", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[2, 4, 1, 6] = add(%c4, %b_unsqueezed)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%b_unsqueezed: f32[1, 4, 1, 1] = expand_dims(%b, axes = [2])"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("conv2d(%r_unsqueezed, %v)"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("squeeze(%c4"), std::string::npos) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "= expand_dims("), 3) << r.text;  // x's, the bias's, s's
  EXPECT_NE(r.text.find("%m: f32[2, 4, 6] = squeeze(%m_unsqueezed, axes = [2])"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%sm: f32[2, 4, 6] = softmax(%m, axis = -1)"), std::string::npos) << r.text;
  // A reduction of a squeeze reduces the unsqueezed value (the squeeze after it).
  EXPECT_NE(r.text.find("%mx_unsqueezed: f32[2, 5, 1, 1] = max(%d4, axes = [3], keepdims = true)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%mx: f32[2, 5] = squeeze(%mx_unsqueezed, axes = [2, 3])"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%mk: f32[2, 5, 1] = squeeze(%mk_unsqueezed, axes = [2])"), std::string::npos)
      << r.text;
}

// A dilated convolution over a map smaller than its taps' spread (DeepLab's
// ASPP): taps that read only padding for every output go. 6 apart on a
// 5 x 5 map with padding 6, only the center tap reads the input: a 1 x 1
// convolution without padding or dilation, its weight the center tap. 2
// apart, every tap reads some input: unchanged. A stride of 2 with padding
// 4, dilation 3: the first row of taps (offset -4) never reaches the
// input, the others do: rows 1..2 kept, the top padding 4 - 3 = 1. The
// interpreter gives the same outputs.
TEST(Passes, CanonicalizeDropsConvolutionTapsThatReadOnlyPadding) {
  const std::string dir = tempDir("canonicalize_taps");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[1, 2, 5, 5], %w: f32[3, 2, 3, 3]) -> (f32[1, 3, 5, 5], f32[1, 3, 5, 5], f32[1, 3, 2, 2]) {
  dataflow {
    %far: f32[1, 3, 5, 5] = conv2d(%x, %w, padding = [6, 6, 6, 6], dilation = [6, 6])
    %near: f32[1, 3, 5, 5] = conv2d(%x, %w, padding = [2, 2, 2, 2], dilation = [2, 2])
    %strided: f32[1, 3, 2, 2] = conv2d(%x, %w, padding = [4, 0, 0, 0], dilation = [3, 1], strides = [2, 2])
  }
  return (%far, %near, %strided)
}
)",
                               dir),
                         "canonicalize", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[3, 2, 1, 1] = strided_slice(%w, axes = [2, 3], begin = [1, 1], end = [2, 2]"),
            std::string::npos)
      << r.text;
  EXPECT_NE(
      r.text.find(
          "%far: f32[1, 3, 5, 5] = conv2d(%x, %w_live_taps, dilation = [1, 1], padding = [0, 0, 0, 0])"),
      std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%near: f32[1, 3, 5, 5] = conv2d(%x, %w, dilation = [2, 2]"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("f32[3, 2, 2, 3] = strided_slice(%w, axes = [2, 3], begin = [1, 0], end = [3, 3]"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("dilation = [3, 1], padding = [1, 0, 0, 0], strides = [2, 2])"), std::string::npos)
      << r.text;
}

TEST(Passes, CanonicalizeThenFoldKeepsMeaning) {
  // Constants made by canonicalize are read by fold-constants in the same pipeline.
  Result r = checkFixture("canonicalize_then_fold_keeps_meaning.ir",
                          "canonicalize,fold-constants,dead-code-elimination", 1e-5);
  EXPECT_EQ(r.text.find("permute_dims"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("batch_norm"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%c: f32[3] = const ["), std::string::npos) << r.text;
}

namespace {}  // namespace

// A chain of convolutions (3x3, a residual add, depthwise, 1x1 to 24 and 6
// channels) with bias, relu, a scalar multiply and sigmoid between them
// stays in NCHW[x]c: the layout changes only at the input, the weights,
// and the outputs (the pools pool blocked, the concat concatenates
// blocks), and the bias folds into a blocked constant.
TEST(ConvertLayout, ChainConvertsOnlyAtItsEdges) {
  Result r =
      checkFixture("convert_layout_chain.ir", "convert-layout,fold-constants,dead-code-elimination", 1e-4);
  EXPECT_EQ(test::occurrences(r.text, "= conv2d("), 0) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "= conv2d_nchwc("), 5) << r.text;
  // x -> NCHW3c; w1..w4, wd packed; o (24 = 3 x 8), c4 (6 channels) and
  // p and g (the pools' results) back to NCHW.
  EXPECT_EQ(test::occurrences(r.text, "layout_transform("), 10) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "dst_layout = \"NCHW\""), 4) << r.text;
  EXPECT_NE(r.text.find("f32[1, 2, 10, 10, 16] = concat(%r1_nchw16c, %s_nchw16c, axis = 1)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("f32[1, 1, 5, 5, 16] = max_pool2d(%dh_nchw16c, ceil_mode = false, dilation = [1, 1], "
                        "layout = \"NCHW16c\""),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("f32[1, 1, 10, 10, 3] = layout_transform(%x"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 3, 5, 5, 8] = sigmoid("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%b_nchw16c: f32[1, 1, 1, 16] = const ["), std::string::npos)
      << r.text;  // the folded bias
}

// A pad of a blocked value along H and W (Inception's Pad before its
// average pools) pads it blocked, and the pool pools blocked: no
// conversion to NCHW between the convolutions. A pad of the channels stays
// in NCHW. The interpreter gives the same outputs.
TEST(ConvertLayout, SpatialPadsOfBlockedValuesPadBlocked) {
  const std::string dir = tempDir("convert_layout_pad");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[1, 16, 7, 7], %w: f32[16, 16, 1, 1], %v: f32[16, 16, 1, 1]) -> (f32[1, 16, 7, 7], f32[1, 18, 7, 7]) {
  dataflow {
    %c: f32[1, 16, 7, 7] = conv2d(%x, %w)
    %p: f32[1, 16, 9, 9] = pad(%c, mode = "constant", pad_value = 0.0, pad_width = [0, 0, 1, 1, 0, 0, 1, 1])
    %a: f32[1, 16, 7, 7] = avg_pool2d(%p, pool_size = [3, 3], strides = [1, 1])
    %y: f32[1, 16, 7, 7] = conv2d(%a, %v)
    %q: f32[1, 18, 7, 7] = pad(%c, mode = "constant", pad_value = 0.0, pad_width = [0, 1, 0, 0, 0, 1, 0, 0])
  }
  return (%y, %q)
}
)",
                               dir),
                         "convert-layout,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[1, 1, 9, 9, 16] = pad(%c_nchw16c, mode = \"constant\", pad_value = 0.0, "
                        "pad_width = [0, 0, 1, 1, 0, 0, 0, 1, 1, 0])"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("f32[1, 1, 7, 7, 16] = avg_pool2d("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 18, 7, 7] = pad(%c, "), std::string::npos) << r.text;
}

// dense / 2-D matmul with a constant weight over 2+ rows: dense_pack with
// the weight packed in panels (NK8n with block=8), folded at compile time,
// once per weight however many ops use it; N not a multiple of the block
// (12) padded with zero columns to one (16), the extra columns dropped; one
// row (the GEMV rule's) or a weight that is an input: unchanged. A matmul's
// weight with a unit batch ([1, K, N]) is packed as [K, N] where x has its
// rank, and stays where the result would gain the batch axis. The
// interpreter gives the same outputs before and after.
TEST(ConvertLayout, PacksConstantDenseWeights) {
  auto values = [](int64_t n, double scale) {
    std::string v = "[";
    for (int64_t i = 0; i < n; ++i) v += (i ? ", " : "") + std::to_string(((i * 37) % 23 - 11) * scale);
    return v + "]";
  };
  std::string dir = tempDir("convert_layout_dense");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[32, 12], %x3: f32[2, 20, 12], %s: f32[8, 12], %wi: f32[16, 12], %s9: f32[9, 12], %s1: f32[1, 12]) -> (f32[32, 16], f32[2, 20, 24], f32[8, 16], f32[32, 16], f32[32, 12], f32[9, 16], f32[1, 16], f32[2, 20, 24], f32[1, 32, 24]) {
  dataflow {
    %w: f32[16, 12] = const )" +
                           values(192, 0.05) + R"(
    %b: f32[12, 24] = const )" +
                           values(288, 0.03) + R"(
    %b2: f32[12, 16] = const )" +
                           values(192, 0.02) + R"(
    %w12: f32[12, 12] = const )" +
                           values(144, 0.04) + R"(
    %b3: f32[1, 12, 24] = const )" +
                           values(288, 0.01) + R"(
    %d: f32[32, 16] = dense(%x, %w)
    %mm: f32[2, 20, 24] = matmul(%x3, %b)
    %few: f32[8, 16] = matmul(%s, %b2)
    %inp: f32[32, 16] = dense(%x, %wi)
    %odd: f32[32, 12] = dense(%x, %w12)
    %nine: f32[9, 16] = matmul(%s9, %b2)
    %one: f32[1, 16] = matmul(%s1, %b2)
    %mmb: f32[2, 20, 24] = matmul(%x3, %b3)
    %mm2: f32[1, 32, 24] = matmul(%x, %b3)
  }
  return (%d, %mm, %few, %inp, %odd, %nine, %one, %mmb, %mm2)
}
)",
                       dir);
  Result r = checkPasses(m, "convert-layout{block=8},fold-constants,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("%d: f32[32, 16] = dense_pack(%x, "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%mm: f32[2, 20, 24] = dense_pack(%x3, "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%few: f32[8, 16] = dense_pack(%s, "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%one: f32[1, 16] = matmul(%s1, %b2)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%inp: f32[32, 16] = dense(%x, %wi)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%odd_padded: f32[32, 16] = dense_pack(%x, "), std::string::npos) << r.text;
  EXPECT_NE(
      r.text.find("%odd: f32[32, 12] = strided_slice(%odd_padded, axes = [1], begin = [0], end = [12])"),
      std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%nine: f32[9, 16] = dense_pack(%s9, "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%mmb: f32[2, 20, 24] = dense_pack(%x3, "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%mm2: f32[1, 32, 24] = matmul(%x, %b3)"), std::string::npos) << r.text;
  // The packed weights are constants (folded), not run-time transforms.
  EXPECT_EQ(test::occurrences(r.text, "layout_transform("), 0) << r.text;
  // %w, %w12 (padded) and %b2 (%few and %nine share it) packed once each, %b
  // and %b3 once.
  EXPECT_EQ(test::occurrences(r.text, "f32[2, 12, 8] = const"), 3) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "f32[3, 12, 8] = const"), 2) << r.text;
}

// Rows (tile 8) or columns (tile: block = 8) that tile badly are padded
// with zeros and the padding's products sliced off: a dense_pack over 17
// rows computes 24; a matmul of two values [2, 17, 6] x [2, 6, 19] computes
// [2, 24, 24]; 12 rows (tiled by 6) and 16 columns stay; 36 columns (more
// than two vectors, tiled by no power of two: 6) become 40, except for a
// single row (a GEMV). The interpreter gives the same outputs before and
// after.
TEST(ConvertLayout, PadsRowsAndColumnsThatTileBadly) {
  auto values = [](int64_t n) {
    std::string v = "[";
    for (int64_t i = 0; i < n; ++i) v += (i ? ", " : "") + std::to_string(((i * 29) % 17 - 8) * 0.05);
    return v + "]";
  };
  std::string dir = tempDir("convert_layout_pad");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[17, 1, 12], %a: f32[2, 17, 6], %b: f32[2, 6, 19], %c: f32[12, 6], %d: f32[6, 16], %e: f32[2, 8, 6], %f: f32[2, 6, 36], %g: f32[1, 6], %h: f32[6, 36]) -> (f32[17, 1, 16], f32[2, 17, 19], f32[12, 16], f32[2, 8, 36], f32[1, 36]) {
  dataflow {
    %w: f32[16, 12] = const )" +
                           values(192) + R"(
    %y: f32[17, 1, 16] = dense(%x, %w)
    %s: f32[2, 17, 19] = matmul(%a, %b)
    %t: f32[12, 16] = matmul(%c, %d)
    %u: f32[2, 8, 36] = matmul(%e, %f)
    %v: f32[1, 36] = matmul(%g, %h)
  }
  return (%y, %s, %t, %u, %v)
}
)",
                       dir);
  Result r = checkPasses(m, "convert-layout{block=8},fold-constants,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[24, 16] = dense_pack("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[2, 24, 24] = matmul("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%t: f32[12, 16] = matmul(%c, %d)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[2, 8, 40] = matmul("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%v: f32[1, 36] = matmul(%g, %h)"), std::string::npos) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "strided_slice("), 3) << r.text;
}

// A mean over H and W (no keepdims) and a max over W (keepdims) of a
// convolution's blocked output reduce it blocked: the mean's kept axes
// dropped by a reshape after the transform back. The interpreter gives the
// same outputs before and after.
TEST(ConvertLayout, SpatialReductionsOfBlockedValuesReduceBlocked) {
  std::string dir = tempDir("convert_layout_reduce");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[1, 8, 5, 6], %w: f32[16, 8, 3, 3]) -> (f32[1, 16], f32[1, 16, 5, 1]) {
  dataflow {
    %y: f32[1, 16, 5, 6] = conv2d(%x, %w, padding = [1, 1, 1, 1])
    %r: f32[1, 16, 5, 6] = relu(%y)
    %g: f32[1, 16] = mean(%r, axes = [2, 3])
    %h: f32[1, 16, 5, 1] = max(%r, axes = [-1], keepdims = true)
  }
  return (%g, %h)
}
)",
                       dir);
  Result r = checkPasses(m, "convert-layout{block=8},fold-constants,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[1, 2, 1, 1, 8] = mean(%r_nchw8c, axes = [2, 3], keepdims = true)"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%g: f32[1, 16] = reshape(%g_kept, shape = [1, 16])"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 2, 5, 1, 8] = max(%r_nchw8c, axes = [3], keepdims = true)"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(test::occurrences(r.text, "layout_transform(%r"), 0) << r.text;
}

// A grouped convolution (RegNet's: groups of 8 channels) converts with
// blocks that divide each group's channels: 16 -> 24 channels in 2 groups
// takes blocks of 8 in and 4 out (block=8 caps them), the weight
// OIHW8i4o; the interpreter gives the same output before and after.
TEST(ConvertLayout, GroupedConvolutionTakesBlocksOfItsGroups) {
  auto values = [](int64_t n) {
    std::string v = "[";
    for (int64_t i = 0; i < n; ++i) v += (i ? ", " : "") + std::to_string(((i * 31) % 19 - 9) * 0.03);
    return v + "]";
  };
  std::string dir = tempDir("convert_layout_grouped");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[1, 16, 6, 6]) -> f32[1, 24, 6, 6] {
  dataflow {
    %w: f32[24, 8, 3, 3] = const )" +
                           values(24 * 8 * 9) + R"(
    %y: f32[1, 24, 6, 6] = conv2d(%x, %w, groups = 2, padding = [1, 1, 1, 1])
    %z: f32[1, 24, 6, 6] = relu(%y)
  }
  return %z
}
)",
                       dir);
  Result r = checkPasses(m, "convert-layout{block=8},fold-constants,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("f32[1, 6, 6, 6, 4] = conv2d_nchwc("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[6, 1, 3, 3, 8, 4] = const"), std::string::npos) << r.text;
}

// Channels that blocks of 16 do not divide, 40 and 56, are padded with
// zero channels to the next multiple of 16 (48, 64) rather than cut into
// blocks of 8, and 9 to 16 rather than a block of 9 lanes: the convolutions, the depthwise one (groups = 48),
// the bias and the sigmoid compute blocked, with zero weights for the padded channels; the result drops them.
// A division by a per-channel tensor would make 0 / 0 there, which the next convolution's zero weights would
// not cancel: it stays in NCHW (the interpreter would see NaN in %y).
TEST(ConvertLayout, PadsChannelsToWholeVectorBlocks) {
  std::string dir = tempDir("convert_layout_padded_channels");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[1, 16, 6, 6], %w1: f32[40, 16, 1, 1], %b: f32[40, 1, 1], %wd: f32[40, 1, 3, 3], %w2: f32[56, 40, 1, 1], %d: f32[1, 40, 1, 1], %w3: f32[16, 40, 1, 1], %w9: f32[9, 16, 1, 1]) -> (f32[1, 56, 6, 6], f32[1, 16, 6, 6], f32[1, 9, 6, 6]) {
  dataflow {
    %c1: f32[1, 40, 6, 6] = conv2d(%x, %w1)
    %a: f32[1, 40, 6, 6] = add(%c1, %b)
    %s: f32[1, 40, 6, 6] = sigmoid(%a)
    %dw: f32[1, 40, 6, 6] = conv2d(%s, %wd, groups = 40, padding = [1, 1, 1, 1])
    %c2: f32[1, 56, 6, 6] = conv2d(%dw, %w2)
    %q: f32[1, 40, 6, 6] = divide(%a, %d)
    %y: f32[1, 16, 6, 6] = conv2d(%q, %w3)
    %c9: f32[1, 9, 6, 6] = conv2d(%x, %w9)
  }
  return (%c2, %y, %c9)
}
)",
                       dir);
  Result r = checkPasses(m, "convert-layout,dead-code-elimination", dir, 1e-5);
  EXPECT_EQ(test::occurrences(r.text, "= conv2d_nchwc("), 5) << r.text;
  EXPECT_NE(r.text.find("f32[1, 3, 6, 6, 16] = sigmoid("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%c9: f32[1, 9, 6, 6] = strided_slice("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("groups = 48"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 4, 6, 6, 16] = conv2d_nchwc(%dw_nchw16c"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%q: f32[1, 40, 6, 6] = divide(%a, %d)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%c2: f32[1, 56, 6, 6] = strided_slice("), std::string::npos) << r.text;
}

// A transposed convolution is one conv2d over its stride x stride phases
// (blocked) and a depth-to-space, the padding cut: U-Net's 2 x 2 / 2,
// DCGAN's 4 x 4 / 2 with padding 1, a rectangular 4 x 3 / (2, 3) with
// asymmetric padding and output padding, a 3 x 3 / 1, and a 3 x 3 / 2 with
// output padding (its kernel padded with zero taps to 4 x 4), a grouped and
// a depthwise 4 x 4 / 2 (a grouped conv2d, each group's phases together). A
// dilated one stays. The interpreter gives the same outputs.
TEST(ConvertLayout, TransposedConvolutionIsAConvolutionOverItsPhases) {
  const std::string dir = tempDir("convert_layout_transposed");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[1, 16, 5, 6], %w: f32[16, 8, 2, 2], %g: f32[16, 8, 4, 4], %q: f32[16, 4, 4, 3], %v: f32[16, 4, 3, 3], %h: f32[16, 2, 3, 3], %e: f32[16, 3, 4, 4], %d: f32[16, 1, 4, 4]) -> (f32[1, 8, 10, 12], f32[1, 8, 10, 12], f32[1, 4, 10, 18], f32[1, 4, 5, 6], f32[1, 4, 12, 14], f32[1, 4, 13, 15], f32[1, 6, 10, 12], f32[1, 16, 10, 12]) {
  dataflow {
    %up: f32[1, 8, 10, 12] = conv2d_transpose(%x, %w, strides = [2, 2])
    %gan: f32[1, 8, 10, 12] = conv2d_transpose(%x, %g, strides = [2, 2], padding = [1, 1, 1, 1])
    %rect: f32[1, 4, 10, 18] = conv2d_transpose(%x, %q, strides = [2, 3], padding = [2, 0, 1, 0], output_padding = [1, 0])
    %same: f32[1, 4, 5, 6] = conv2d_transpose(%x, %v, padding = [1, 1, 1, 1])
    %overlap: f32[1, 4, 12, 14] = conv2d_transpose(%x, %v, strides = [2, 2], output_padding = [1, 1])
    %dilated: f32[1, 4, 13, 15] = conv2d_transpose(%x, %h, strides = [2, 2], dilation = [2, 2], groups = 2)
    %grouped: f32[1, 6, 10, 12] = conv2d_transpose(%x, %e, strides = [2, 2], padding = [1, 1, 1, 1], groups = 2)
    %depthwise: f32[1, 16, 10, 12] = conv2d_transpose(%x, %d, strides = [2, 2], padding = [1, 1, 1, 1], groups = 16)
  }
  return (%up, %gan, %rect, %same, %overlap, %dilated, %grouped, %depthwise)
}
)",
                               dir),
                         "convert-layout,dead-code-elimination", dir, 1e-5);
  EXPECT_EQ(test::occurrences(r.text, "= conv2d_nchwc("), 6) << r.text;  // the depthwise one stays NCHW
  EXPECT_NE(r.text.find("f32[1, 2, 5, 6, 16] = conv2d_nchwc("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 8, 5, 2, 6, 2] = permute_dims(%up_phases_split, axes = [0, 1, 4, 2, 5, 3])"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%up: f32[1, 8, 10, 12] = reshape("), std::string::npos) << r.text;
  // 4 x 4 / 2: 2 x 2 taps per phase over x padded by 1, 6 x 7 rows of each phase, the padding cut.
  EXPECT_NE(r.text.find("f32[1, 2, 6, 7, 16] = conv2d_nchwc("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%gan: f32[1, 8, 10, 12] = strided_slice(%gan_uncut, axes = [2, 3], begin = [1, 1], "
                        "end = [11, 13])"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%rect: f32[1, 4, 10, 18] = strided_slice(%rect_uncut"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%same: f32[1, 4, 5, 6] = strided_slice(%same_uncut"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("%overlap: f32[1, 4, 12, 14] = reshape("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("= pad(%v"), std::string::npos) << r.text;  // the zero taps
  EXPECT_NE(r.text.find("%dilated: f32[1, 4, 13, 15] = conv2d_transpose(%x, %h"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%grouped: f32[1, 6, 10, 12] = strided_slice(%grouped_uncut"), std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("%depthwise: f32[1, 16, 10, 12] = strided_slice(%depthwise_uncut"), std::string::npos)
      << r.text;
}

// A convolution to fewer than 8 channels over rows of at least a vector
// (an image's RGB) stays in NCHW, where its vector runs along the rows;
// over shorter rows (a squeeze-excite's 1 x 1 map) it is blocked. The
// interpreter gives the same outputs.
TEST(ConvertLayout, ConvolutionToFewChannelsOverLongRowsStaysNchw) {
  const std::string dir = tempDir("convert_layout_few_channels");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[1, 16, 20, 20], %w: f32[16, 16, 3, 3], %v: f32[3, 16, 3, 3], %s: f32[1, 16, 1, 1], %u: f32[4, 16, 1, 1]) -> (f32[1, 3, 20, 20], f32[1, 4, 1, 1]) {
  dataflow {
    %a: f32[1, 16, 20, 20] = conv2d(%x, %w, padding = [1, 1, 1, 1])
    %rgb: f32[1, 3, 20, 20] = conv2d(%a, %v, padding = [1, 1, 1, 1])
    %se: f32[1, 4, 1, 1] = conv2d(%s, %u)
  }
  return (%rgb, %se)
}
)",
                               dir),
                         "convert-layout,dead-code-elimination", dir, 1e-5);
  EXPECT_NE(r.text.find("%rgb: f32[1, 3, 20, 20] = conv2d(%a, %v"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[1, 1, 1, 1, 4] = conv2d_nchwc("), std::string::npos) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "= conv2d_nchwc("), 2) << r.text;
}

// A symbolic batch (a model exported with a dynamic batch axis) blocks as
// a static one does: only the channels and the image must be static. The
// blocked ops keep the batch variable, and only the chain's result goes
// back to NCHW (a dynamic-batch ResNet-18 had stayed in NCHW: 75 ms where
// the static one takes 35). The interpreter gives the same outputs at
// batch 3.
TEST(ConvertLayout, SymbolicBatchBlocks) {
  const std::string dir = tempDir("convert_layout_batch");
  Result r = checkPasses(parse(R"(mlcc.ir 1
graph @main(%x: f32[n, 16, 6, 6], %w: f32[16, 16, 3, 3], %v: f32[8, 16, 1, 1], %b: f32[16, 1, 1]) -> f32[n, 8, 3, 3] {
  dataflow {
    %c: f32[n, 16, 6, 6] = conv2d(%x, %w, padding = [1, 1, 1, 1])
    %d: f32[n, 16, 6, 6] = add(%c, %b)
    %r: f32[n, 16, 6, 6] = relu(%d)
    %p: f32[n, 16, 3, 3] = max_pool2d(%r, pool_size = [2, 2], strides = [2, 2])
    %y: f32[n, 8, 3, 3] = conv2d(%p, %v)
  }
  return %y
}
)",
                               dir),
                         "convert-layout,dead-code-elimination", dir, 1e-5);
  EXPECT_EQ(test::occurrences(r.text, "= conv2d_nchwc("), 2) << r.text;
  EXPECT_NE(r.text.find("f32[n, 1, 3, 3, 16] = max_pool2d("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("f32[n, 1, 6, 6, 16] = relu("), std::string::npos) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "dst_layout = \"NCHW\""), 1) << r.text;
}

// A dense layer over a symbolic number of rows (a dynamic batch: [n, 12],
// and [n * 3, 12] as a flattening reshape leaves it) packs its constant
// weight whatever the rows turn out to be; the rows are not padded (their
// number is unknown), the padded columns are dropped. The interpreter gives
// the same outputs at n = 3.
TEST(ConvertLayout, DenseOverSymbolicRowsPacksItsWeight) {
  std::string w = "[";
  for (int i = 0; i < 120; ++i) w += (i ? ", " : "") + std::to_string(((i * 37) % 23 - 11) * 0.05);
  w += "]";
  std::string dir = tempDir("convert_layout_dense_rows");
  Result r = checkPasses(parse(R"(mlcc.ir 1

graph @main(%x: f32[n, 12], %y: f32[n, 3, 12]) -> (f32[n, 10], f32[n * 3, 10]) {
  dataflow {
    %w: f32[10, 12] = const )" + w +
                                   R"(
    %d: f32[n, 10] = dense(%x, %w)
    %f: f32[n * 3, 12] = reshape(%y, shape = [n * 3, 12])
    %e: f32[n * 3, 10] = dense(%f, %w)
  }
  return (%d, %e)
}
)",
                               dir),
                         "convert-layout{block=8},fold-constants,dead-code-elimination", dir, 1e-5);
  EXPECT_EQ(test::occurrences(r.text, "= dense_pack("), 2) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "= dense("), 0) << r.text;
  EXPECT_NE(r.text.find("%d: f32[n, 10] = strided_slice("), std::string::npos) << r.text;
}

TEST(ConvertLayout, LeavesWhatItCannotBlock) {
  // groups of one input channel that are not depthwise (4 -> 8 channels in
  // 4 groups), symbolic channels, f16: unchanged.
  std::string dir = tempDir("convert_layout_leaves");
  ir::Module m = parse(R"(mlcc.ir 1

graph @main(%x: f32[1, 4, 6, 6], %w: f32[8, 1, 3, 3], %y: f32[1, c, 6, 6], %v: f32[4, c, 1, 1], %h: f16[1, 4, 6, 6], %hw: f16[4, 4, 1, 1]) -> (f32[1, 8, 4, 4], f32[1, 4, 6, 6], f16[1, 4, 6, 6]) {
  dataflow {
    %a: f32[1, 8, 4, 4] = conv2d(%x, %w, groups = 4)
    %b: f32[1, 4, 6, 6] = conv2d(%y, %v)
    %c: f16[1, 4, 6, 6] = conv2d(%h, %hw)
  }
  return (%a, %b, %c)
}
)",
                       dir);
  Result r = runPasses(m, "convert-layout", dir);
  EXPECT_EQ(test::occurrences(r.text, "layout_transform"), 0) << r.text;
  EXPECT_EQ(test::occurrences(r.text, "= conv2d("), 3) << r.text;
}
