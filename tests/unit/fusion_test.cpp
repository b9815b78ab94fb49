// Fusion: fuse-ops groups op bindings by op pattern kind (chains, diamonds,
// reductions ending groups, opaque ops alone, max-depth, multi-output
// groups, ResNet-18's blocks) and fuse-by-pattern outlines declared op DAGs
// for library dispatch. Every case is interpreted before and after.
#include <gtest/gtest.h>

#include <regex>

#include "mlcc/frontend/onnx.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/npy.h"
#include "mlcc/transform/pass.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::transform;

namespace {

std::vector<interp::NamedTensor> runModule(const ir::Module& m,
                                           const std::vector<interp::NamedTensor>& inputs) {
  interp::Interpreter in(m);
  return in.run("main", inputs);
}

std::vector<interp::NamedTensor> randomInputs(const ir::Module& m) {
  interp::Interpreter in(m);
  std::vector<interp::NamedTensor> inputs;
  uint64_t seed = 1;
  for (const auto& spec : in.inputs("main")) {
    std::vector<int64_t> shape;
    for (const auto& d : spec.shape) {
      const auto* imm = d->as<ir::IntImmNode>();
      shape.push_back(imm ? imm->value : 3);
    }
    inputs.push_back({spec.name, interp::randomTensor(spec.dtype, shape, seed++)});
  }
  return inputs;
}

void expectSameOutputs(const std::vector<interp::NamedTensor>& a, const std::vector<interp::NamedTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].tensor.numel(), b[i].tensor.numel());
    for (int64_t k = 0; k < a[i].tensor.numel(); ++k)
      ASSERT_EQ(a[i].tensor.at(k), b[i].tensor.at(k)) << i << " " << k;
  }
}

// Parses `text`, runs `pipeline` (verifying), checks the meaning is kept and
// returns the printed result.
std::string fuse(const std::string& text, const std::string& pipeline, const std::string& patterns = "") {
  ir::Module m = ir::parseModule(text, "m.ir");
  auto inputs = randomInputs(m);
  auto before = runModule(m, inputs);
  PassContext ctx;
  ctx.verify_each = true;
  ctx.patterns_path = patterns;
  runPipeline(m, parsePipeline(pipeline), ctx);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string printed = ir::printModule(m);
  auto after = runModule(m, inputs);
  expectSameOutputs(before, after);
  // Printing and parsing back gives the same text.
  EXPECT_EQ(ir::printModule(ir::parseModule(printed, "fused.ir")), printed);
  return printed;
}

// The text of function `name` in a printed module.
std::string function(const std::string& text, const std::string& name) {
  size_t p = text.find("graph @" + name + "(");
  if (p == std::string::npos) return "";
  return text.substr(p, text.find("\n}\n", p) + 3 - p);
}

const char* kConvBlock = R"(mlcc.ir 1

graph @main(%x: f32[1, 2, 4, 4], %w: f32[3, 2, 3, 3], %r: f32[1, 3, 4, 4]) -> f32[1, 3, 4, 4] {
  dataflow {
    %b: f32[1, 3, 1, 1] = const [0.5, -1.0, 2.0]
    %c: f32[1, 3, 4, 4] = conv2d(%x, %w, padding = [1, 1, 1, 1])
    %cb: f32[1, 3, 4, 4] = add(%c, %b)
    %s: f32[1, 3, 4, 4] = add(%cb, %r)
    %y: f32[1, 3, 4, 4] = relu(%s)
  }
  return %y
}
)";

}  // namespace

TEST(FuseOps, ConvBiasResidualReluIsOneGroup) {
  std::string out = fuse(kConvBlock, "fuse-ops");
  EXPECT_NE(out.find("%y: f32[1, 3, 4, 4] = call @fused_conv2d_add_add_relu(%x, %w, %b, %r)"),
            std::string::npos)
      << out;
  std::string f = function(out, "fused_conv2d_add_add_relu");
  EXPECT_NE(f.find("-> f32[1, 3, 4, 4] attrs(primitive = true) {"), std::string::npos) << out;
  EXPECT_NE(f.find("%b: f32[1, 3, 1, 1]"), std::string::npos) << f;  // the constant is a parameter
  EXPECT_NE(out.find("%b: f32[1, 3, 1, 1] = const [0.5, -1.0, 2.0]"), std::string::npos) << out;
  EXPECT_EQ(test::occurrences(out, "graph @"), 2) << out;
}

TEST(FuseOps, ChainsOfElementwiseOpsAndMaxDepth) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[n, 4]) -> f32[n, 4] {
  dataflow {
    %a: f32[n, 4] = relu(%x)
    %b: f32[n, 4] = exp(%a)
    %c: f32[n, 4] = negative(%b)
    %d: f32[n, 4] = abs(%c)
    %e: f32[n, 4] = sigmoid(%d)
  }
  return %e
}
)";
  std::string all = fuse(text, "fuse-ops");
  EXPECT_NE(all.find("%e: f32[n, 4] = call @fused_relu_exp_negative_abs_sigmoid(%x)"), std::string::npos)
      << all;
  std::string two = fuse(text, "fuse-ops{max-depth=2}");
  EXPECT_EQ(test::occurrences(two, "call @"), 3) << two;  // 5 ops, at most 2 per group
  for (const char* name : {"fused_relu_exp", "fused_negative_abs", "fused_sigmoid"})
    EXPECT_NE(two.find(std::string("graph @") + name + "("), std::string::npos) << two;
  std::string one = fuse(text, "fuse-ops{max-depth=1}");
  EXPECT_EQ(test::occurrences(one, "call @"), 5) << one;
  EXPECT_THROW(fuse(text, "fuse-ops{max-depth=0}"), Error);
}

// A module fuse-ops groups, and what the fused module must hold.
struct FuseOpsCase {
  const char* name;
  const char* fixture;                              // under tests/unit/fixtures
  std::vector<std::string> bindings;                // each appears in the output
  std::vector<std::pair<std::string, int>> counts;  // text, how often it appears
};

class FuseOpsGrouping : public testing::TestWithParam<FuseOpsCase> {};

TEST_P(FuseOpsGrouping, GroupsAsExpected) {
  std::string out = fuse("mlcc.ir 1\n" + test::fixture(GetParam().fixture), "fuse-ops");
  for (const auto& binding : GetParam().bindings) EXPECT_NE(out.find(binding), std::string::npos) << out;
  for (const auto& [text, times] : GetParam().counts)
    EXPECT_EQ(test::occurrences(out, text), times) << text << "\n" << out;
}

const FuseOpsCase kFuseOpsCases[] = {
    {"DiamondFusesIntoItsPostDominator",
     "fusion/diamond.ir",
     {"%d: f32[2, 4] = call @fused_exp_relu_negative_add(%x)"},
     {{"call @", 1}}},
    // %a feeds an opaque softmax and a relu chain: it has no post-dominator in the block, so it is its own
    // group and both consumers read its output.
    {"ProducerOfTwoGroupsIsComputedOnce",
     "fusion/producer_of_two_groups.ir",
     {"%a: f32[2, 4] = call @fused_exp(%x)", "%s: f32[2, 4] = call @fused_softmax(%a)",
      "%u: f32[2, 4] = call @fused_relu_negative(%a)"},
     {{"= exp(", 1}}},
    {"ReductionEndsAGroup",
     "fusion/reduction_ends_a_group.ir",
     {"%s: f32[2] = call @fused_exp_sum(%x)", "%r: f32[2] = call @fused_relu(%s)"},
     {}},
    {"OpaqueOpsStayAlone",
     "fusion/opaque_ops.ir",
     {"= call @fused_relu(%x)", "= call @fused_cumsum(%a)", "= call @fused_exp(%s)"},
     {}},
};

INSTANTIATE_TEST_SUITE_P(FuseOps, FuseOpsGrouping, testing::ValuesIn(kFuseOpsCases),
                         [](const testing::TestParamInfo<FuseOpsCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(FuseOps, MultiOutputGroupReturnsATuple) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[2, 4]) -> (f32[2, 4], f32[2, 4]) {
  dataflow {
    %a: f32[2, 4] = exp(%x)
    %b: f32[2, 4] = add(%a, %x)
  }
  return (%a, %b)
}
)";
  std::string out = fuse(text, "fuse-ops");
  std::string f = function(out, "fused_exp_add");
  EXPECT_NE(f.find("-> (f32[2, 4], f32[2, 4]) attrs(primitive = true)"), std::string::npos) << out;
  EXPECT_NE(f.find("return (%a, %b)"), std::string::npos) << out;
  EXPECT_NE(out.find("= call @fused_exp_add(%x)"), std::string::npos) << out;
  EXPECT_NE(out.find("%a: f32[2, 4] = %fused_exp_add_out[0]"), std::string::npos) << out;
  EXPECT_NE(out.find("%b: f32[2, 4] = %fused_exp_add_out[1]"), std::string::npos) << out;
}

TEST(FuseOps, InjectiveOpsFuseAndSameGroupsShareAFunction) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[2, 6], %y: f32[2, 6]) -> (f32[3, 4], f32[3, 4]) {
  dataflow {
    %a: f32[2, 6] = relu(%x)
    %r: f32[3, 4] = reshape(%a, shape = [3, 4])
    %e: f32[3, 4] = exp(%r)
    %b: f32[2, 6] = relu(%y)
    %q: f32[3, 4] = reshape(%b, shape = [3, 4])
    %f: f32[3, 4] = exp(%q)
  }
  return (%e, %f)
}
)";
  std::string out = fuse(text, "fuse-ops");
  EXPECT_NE(out.find("%e: f32[3, 4] = call @fused_relu_reshape_exp(%x)"), std::string::npos) << out;
  EXPECT_NE(out.find("%f: f32[3, 4] = call @fused_relu_reshape_exp(%y)"), std::string::npos) << out;
  EXPECT_EQ(test::occurrences(out, "graph @"), 2) << out;
}

// softmax is a reduction for fusion: an elementwise producer (a score's
// scale) joins its group, and so does a crop (a strided_slice of unit
// steps: a matmul's padded columns dropped, read by the softmax in place);
// a strided slice of step 2 and a transpose do not (other injective ops
// would make the row reductions read across rows).
TEST(FuseOps, CropsAndElementwiseOpsFuseIntoASoftmax) {
  const char* text = R"(mlcc.ir 1

graph @main(%q: f32[2, 5, 4], %k: f32[2, 4, 8], %t: f32[2, 6, 5]) -> (f32[2, 5, 6], f32[2, 5, 4], f32[2, 5, 6], f32[2, 6, 5]) {
  dataflow {
    %s: f32[2, 5, 8] = matmul(%q, %k)
    %c: f32[2, 5, 6] = strided_slice(%s, axes = [2], begin = [0], end = [6])
    %p: f32[2, 5, 6] = softmax(%c, axis = -1)
    %s2: f32[2, 5, 8] = exp(%s)
    %e: f32[2, 5, 4] = strided_slice(%s2, axes = [2], begin = [0], end = [8], strides = [2])
    %pe: f32[2, 5, 4] = softmax(%e, axis = -1)
    %tt: f32[2, 5, 6] = permute_dims(%t, axes = [0, 2, 1])
    %pt: f32[2, 5, 6] = softmax(%tt, axis = -1)
    %m: f32[2, 6, 5] = multiply(%t, %t)
    %pm: f32[2, 6, 5] = softmax(%m, axis = -1)
  }
  return (%p, %pe, %pt, %pm)
}
)";
  std::string out = fuse(text, "fuse-ops");
  EXPECT_NE(out.find("%p: f32[2, 5, 6] = call @fused_strided_slice_softmax(%s)"), std::string::npos) << out;
  EXPECT_NE(out.find("%e: f32[2, 5, 4] = call @fused_exp_strided_slice(%s)"), std::string::npos) << out;
  EXPECT_NE(out.find("%pe: f32[2, 5, 4] = call @fused_softmax(%e)"), std::string::npos) << out;
  EXPECT_NE(out.find("= call @fused_permute_dims(%t)"), std::string::npos) << out;
  EXPECT_NE(out.find("%pm: f32[2, 6, 5] = call @fused_multiply_softmax(%t)"), std::string::npos) << out;
}

TEST(FuseOps, LeavesPrimitiveCallsAlone) {
  std::string out = fuse(kConvBlock, "fuse-ops,fuse-ops");
  EXPECT_EQ(test::occurrences(out, "graph @"), 2) << out;
}

// --- ResNet-18 ----------------------------------------------------------

namespace {

struct Counts {
  int ops = 0, groups = 0;
};

Counts countMain(const ir::Module& m) {
  Counts c;
  for (const auto& block : m.findGraph("main")->blocks)
    for (const auto& b : block.bindings) {
      if (b.value.kind == ir::ValueKind::Op) ++c.ops;
      if (b.value.kind == ir::ValueKind::CallGraph) ++c.groups;
    }
  return c;
}

}  // namespace

TEST(FuseOps, ResNet18AndMobileNetV2) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"resnet18", "mobilenetv2"}), 0);
  for (std::string name : {"resnet18", "mobilenetv2"}) {
    auto imported = frontend::importOnnxFile(dir.file(name + ".onnx"));
    frontend::writeImportedModel(imported, dir.file(name + ".ir"), "");
    ir::Module m = ir::parseModuleFile(dir.file(name + ".ir"));
    Counts before = countMain(m);
    PassContext ctx;
    ctx.verify_each = true;
    runPipeline(m, parsePipeline("fuse-ops"), ctx);
    Counts after = countMain(m);
    std::cout << name << ": " << before.ops << " graph ops -> " << after.groups
              << " fused groups (kernels)\n";
    EXPECT_EQ(after.ops, 0);
    EXPECT_LE(after.groups * 2, before.ops) << name;
    if (name == "resnet18") {
      std::string text = ir::printModule(m);
      // Every residual block's second convolution takes bias, residual and relu.
      EXPECT_GE(test::occurrences(text, "graph @fused_conv2d_add_add_relu"), 1) << text;
      EXPECT_GE(test::occurrences(text, "= call @fused_conv2d_add_add_relu"), 8) << text;
      NpyArray input = readNpy(dir.file(name + ".input.npy"));
      ir::Tensor x = ir::Tensor::copyOf(ir::DType::f32, input.shape, input.data);
      ir::Module original = ir::parseModuleFile(dir.file(name + ".ir"));
      auto ref = runModule(original, {{"input", x}});
      auto got = runModule(m, {{"input", x}});
      expectSameOutputs(ref, got);
    }
  }
}

// --- fuse-by-pattern ----------------------------------------------------

namespace {

const char* kDense = R"(mlcc.ir 1

graph @main(%x: f32[2, 8], %w: f32[4, 8], %w2: f32[4, 4]) -> (f32[2, 4], f32[2, 4]) {
  dataflow {
    %b: f32[4] = const [1.0, 2.0, 3.0, 4.0]
    %d: f32[2, 4] = dense(%x, %w)
    %db: f32[2, 4] = add(%b, %d)
    %y: f32[2, 4] = relu(%db)
    %d2: f32[2, 4] = dense(%y, %w2)
    %z: f32[2, 4] = exp(%d2)
    %m: f32[2, 4] = matmul(%y, %w2)
    %n: f32[2, 4] = negative(%m)
  }
  return (%z, %n)
}
)";

std::string patternFile(const std::string& name) { return std::string(MLCC_SOURCE_DIR) + "/" + name; }

}  // namespace

TEST(FuseByPattern, BlasPatternsWithCodegen) {
  std::string out = fuse(kDense, "fuse-by-pattern,fuse-ops", patternFile("pipelines/patterns/blas.yaml"));
  // add(%b, %d) matches add(_, b) with swapped operands.
  EXPECT_NE(out.find("%y: f32[2, 4] = call @fused_dense_add_relu(%x, %w, %b)"), std::string::npos) << out;
  EXPECT_NE(
      function(out, "fused_dense_add_relu")
          .find("attrs(codegen = \"blas.dense_bias_relu\", pattern = \"dense_bias_relu\", primitive = true)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("%d2: f32[2, 4] = call @fused_dense(%y, %w2)"), std::string::npos) << out;
  EXPECT_NE(out.find("%m: f32[2, 4] = call @fused_matmul(%y, %w2)"), std::string::npos) << out;
  // fuse-ops groups the rest around the library calls.
  EXPECT_NE(out.find("%z: f32[2, 4] = call @fused_exp(%d2)"), std::string::npos) << out;
  EXPECT_NE(function(out, "fused_exp").find("attrs(primitive = true)"), std::string::npos) << out;
  EXPECT_EQ(test::occurrences(out, "codegen = "), 3) << out;
}

TEST(FuseByPattern, CublasAndNoDoubleMatch) {
  std::string out =
      fuse(kDense, "fuse-by-pattern{patterns=" + patternFile("pipelines/patterns/cublas.yaml") + "}");
  EXPECT_NE(out.find("call @fused_dense_add_relu(%x, %w, %b)"), std::string::npos) << out;
  EXPECT_NE(out.find("codegen = \"cublas.dense_bias_relu\""), std::string::npos) << out;
  // Each dense is matched once: by the largest pattern that fits.
  EXPECT_EQ(test::occurrences(out, "= dense("), 2) << out;  // inside the two sub-functions only
  EXPECT_EQ(test::occurrences(out, "codegen = \"cublas.dense\""), 1) << out;
}

TEST(FuseByPattern, InnerValuesUsedOutsideAreNotMatched) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[2, 8], %w: f32[4, 8], %b: f32[4]) -> (f32[2, 4], f32[2, 4]) {
  dataflow {
    %d: f32[2, 4] = dense(%x, %w)
    %db: f32[2, 4] = add(%d, %b)
    %y: f32[2, 4] = relu(%db)
  }
  return (%y, %db)
}
)";
  std::string out = fuse(text, "fuse-by-pattern", patternFile("pipelines/patterns/blas.yaml"));
  EXPECT_NE(out.find("%db: f32[2, 4] = call @fused_dense_add(%x, %w, %b)"), std::string::npos) << out;
  EXPECT_NE(out.find("%y: f32[2, 4] = relu(%db)"), std::string::npos) << out;
}

TEST(FuseByPattern, AttributeConstraints) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[1, 4, 4, 4], %w: f32[4, 4, 1, 1], %dw: f32[4, 1, 3, 3]) -> f32[1, 4, 4, 4] {
  dataflow {
    %c: f32[1, 4, 4, 4] = conv2d(%x, %w)
    %r: f32[1, 4, 4, 4] = relu(%c)
    %g: f32[1, 4, 4, 4] = conv2d(%r, %dw, padding = [1, 1, 1, 1], groups = 4)
    %s: f32[1, 4, 4, 4] = relu(%g)
  }
  return %s
}
)";
  std::string out =
      fuse(text, "fuse-by-pattern", std::string(MLCC_TEST_DATA_DIR) + "/transform/patterns/conv.yaml");
  EXPECT_NE(out.find("%r: f32[1, 4, 4, 4] = call @fused_conv2d_relu(%x, %w)"), std::string::npos) << out;
  EXPECT_NE(out.find("attrs(pattern = \"conv_relu\", primitive = true)"), std::string::npos) << out;
  EXPECT_NE(out.find("%g: f32[1, 4, 4, 4] = conv2d(%r, %dw"), std::string::npos)
      << out;  // groups = 4: no match
}

TEST(FuseByPattern, PatternFileErrorsNameFileLineAndKey) {
  auto error = [](const std::string& name) {
    std::string path = std::string(MLCC_TEST_DATA_DIR) + "/transform/patterns/" + name;
    ir::Module m = ir::parseModule(kDense, "m.ir");
    PassContext ctx;
    ctx.patterns_path = path;
    try {
      runPipeline(m, parsePipeline("fuse-by-pattern"), ctx);
    } catch (const Error& e) {
      std::string f = e.format();
      f = f.substr(0, f.find('\n'));  // the first line, without the file's directory
      size_t dir = f.find(path);
      return dir == std::string::npos ? f : f.replace(dir, path.size(), name);
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("bad_op.yaml"), "bad_op.yaml:6:9: error: patterns[0].ops[1]: unknown op 'dens'");
  EXPECT_EQ(error("bad_attr.yaml"),
            "bad_attr.yaml:6:25: error: patterns[0].ops[0].attrs.groups: must be an int");
  EXPECT_EQ(
      error("bad_attr_name.yaml"),
      "bad_attr_name.yaml:7:11: error: patterns[0].ops[0].attrs.group: op 'conv2d' has no attribute 'group'");
  EXPECT_EQ(error("bad_key.yaml"),
            "bad_key.yaml:4:5: error: patterns[0].codgen: unknown key (expected name, ops, codegen)");
  EXPECT_EQ(error("bad_yaml.yaml"), "bad_yaml.yaml:6:1: error: invalid YAML: end of sequence flow not found");
  EXPECT_EQ(error("bad_arity.yaml"),
            "bad_arity.yaml:5:9: error: patterns[0].ops[0]: op 'dense' takes 2 operand(s), not 1");
  EXPECT_EQ(error("bad_root.yaml"),
            "bad_root.yaml:5:9: error: patterns[0].ops[0]: op 'dense' does not feed the pattern's root (the "
            "last op)");
  EXPECT_NE(error("missing.yaml").find("missing.yaml"), std::string::npos) << error("missing.yaml");
  EXPECT_EQ(
      error("bad_kernel.yaml"),
      "bad_kernel.yaml:4:14: error: patterns[0].codegen: blas.matmul_bias computes matmul(a, b) + bias, "
      "but the ops compute add(matmul(%x, permute_dims(%w)), %b)");
  EXPECT_EQ(
      error("bad_codegen.yaml").substr(0, 96),
      "bad_codegen.yaml:4:14: error: patterns[0].codegen: 'blas.gemm' is no library kernel (known: blas");
}

// The TVM tutorial's pattern (w transposed, named before x) on square
// shapes, where operands passed in the pattern's order would fit the kernel's
// shapes and silently compute dense(w, x): legalize passes (x, w, b), and the
// lowered module computes what the graph computed.
TEST(FuseByPattern, KernelOperandsAreBoundByRole) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[4, 4], %w: f32[4, 4], %b: f32[4], %r: f32[4, 4]) -> (f32[4, 4], f32[4, 4]) {
  dataflow {
    %wt: f32[4, 4] = permute_dims(%w)
    %y: f32[4, 4] = matmul(%x, %wt)
    %z: f32[4, 4] = add(%b, %y)
    %a: f32[4, 4] = relu(%z)
    %wt2: f32[4, 4] = permute_dims(%w)
    %y2: f32[4, 4] = matmul(%x, %wt2)
    %z2: f32[4, 4] = add(%r, %y2)
    %a2: f32[4, 4] = relu(%z2)
  }
  return (%a, %a2)
}
)";
  std::string fused =
      fuse(text, "fuse-by-pattern", std::string(MLCC_TEST_DATA_DIR) + "/transform/patterns/tvm_dense.yaml");
  // The second group adds a [4, 4] matrix, not a bias vector: left undispatched.
  EXPECT_EQ(test::occurrences(fused, "codegen = \"blas.dense_bias_relu\""), 1) << fused;
  EXPECT_NE(fused.find("%y2: f32[4, 4] = matmul(%x, %wt2)"), std::string::npos) << fused;
  std::string lowered = fuse(fused, "legalize");
  EXPECT_NE(lowered.find("call_extern \"blas.dense_bias_relu\"(%x, %w, %b)"), std::string::npos) << lowered;
}

// The rewrite pass with the shipped rules (pipelines/patterns/rewrites.yaml):
// matmul of a transposed weight becomes dense, multiply + add (operands in
// either order) becomes ewise_fma; the meaning is kept (fuse() interprets
// before and after). An i64 multiply-add is left alone (ewise_fma is f32
// only): a replacement that does not type-check never lands.
TEST(Rewrite, ShippedRules) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[4, 8], %w: f32[16, 8], %s: f32[4, 16], %t: f32[16], %i: i64[4], %j: i64[4]) -> (f32[4, 16], i64[4]) {
  dataflow {
    %wt: f32[8, 16] = permute_dims(%w, axes = [1, 0])
    %y: f32[4, 16] = matmul(%x, %wt)
    %m: f32[4, 16] = multiply(%y, %s)
    %z: f32[4, 16] = add(%t, %m)
    %k: i64[4] = multiply(%i, %j)
    %n: i64[4] = add(%k, %j)
  }
  return (%z, %n)
}
)";
  std::string out =
      fuse(text, "rewrite,dead-code-elimination", patternFile("pipelines/patterns/rewrites.yaml"));
  EXPECT_NE(out.find("%y: f32[4, 16] = dense(%x, %w)"), std::string::npos) << out;
  EXPECT_NE(out.find("%z: f32[4, 16] = ewise_fma(%y, %s, %t)"), std::string::npos) << out;
  EXPECT_EQ(test::occurrences(out, "permute_dims"), 0) << out;
  EXPECT_NE(out.find("%n: i64[4] = add(%k, %j)"), std::string::npos) << out;
  // Then the whole way down: legalized and compiled, against the graph.
  ir::Module m = ir::parseModule(out, "rewritten.ir");
  auto inputs = randomInputs(m);
  auto before = runModule(m, inputs);
  PassContext ctx;
  runPipeline(m, parsePipeline("fuse-ops,legalize"), ctx);
  expectSameOutputs(before, runModule(m, inputs));
}

// Rules apply to their own results until none matches; a rule that always
// matches its result is stopped with an error naming it.
TEST(Rewrite, FixedPointAndRulesThatNeverSettle) {
  const char* text = R"(mlcc.ir 1

graph @main(%a: f32[4], %b: f32[4]) -> f32[4] {
  dataflow {
    %n: f32[4] = negative(%b)
    %s: f32[4] = subtract(%a, %n)
    %n2: f32[4] = negative(%s)
    %s2: f32[4] = subtract(%a, %n2)
    %r: f32[4] = relu(%s2)
  }
  return %r
}
)";
  const std::string dir = std::string(MLCC_TEST_DATA_DIR) + "/transform/patterns/";
  std::string out = fuse(text, "rewrite,dead-code-elimination", dir + "rewrite_only.yaml");
  EXPECT_EQ(test::occurrences(out, "subtract"), 0) << out;
  EXPECT_EQ(test::occurrences(out, "= add("), 2) << out;
  // fuse-by-pattern on a file with rewrites only: nothing to outline.
  EXPECT_EQ(test::occurrences(fuse(text, "fuse-by-pattern", dir + "rewrite_only.yaml"), "call @"), 0);
  ir::Module m = ir::parseModule(text, "m.ir");
  PassContext ctx;
  ctx.patterns_path = dir + "rewrite_loop.yaml";
  EXPECT_NE(test::errorOf([&] { runPipeline(m, parsePipeline("rewrite"), ctx); })
                .find("graph @main: the rewrite rules do not settle: more than 100000 rewrites, the last by "
                      "rule 'relu_forever'"),
            std::string::npos);
}

TEST(Rewrite, RuleErrorsNameFileLineAndKey) {
  auto error = [](const std::string& name) {
    std::string path = std::string(MLCC_TEST_DATA_DIR) + "/transform/patterns/" + name;
    ir::Module m = ir::parseModule(kDense, "m.ir");
    PassContext ctx;
    ctx.patterns_path = path;
    std::string f = test::errorAt([&] { runPipeline(m, parsePipeline("rewrite"), ctx); });
    f = f.substr(0, f.find('\n'));
    size_t dir = f.find(path);
    return dir == std::string::npos ? f : f.replace(dir, path.size(), name);
  };
  EXPECT_EQ(error("rewrite_bad_name.yaml"),
            "rewrite_bad_name.yaml:8:9: error: rewrites[0].replace[0]: 'd' names nothing of the match (its "
            "wildcards and 'as' names) or an earlier replace op");
  EXPECT_EQ(error("rewrite_missing_attr.yaml"),
            "rewrite_missing_attr.yaml:7:9: error: rewrites[0].replace[0]: op 'expand_dims' needs attribute "
            "'axes'");
  EXPECT_EQ(
      error("rewrite_as_clash.yaml"),
      "rewrite_as_clash.yaml:7:9: error: rewrites[0].replace[0].as: name 'x' is already used by the match");
}

// A call_tir of a kernel a user wrote is fused like an op of its derived
// pattern (AnnotateTIROpPattern, MLC 7.7): the elementwise @scale joins the
// relu after it and legalize's FuseTIR merges the two; a reduction @rowsum
// ends its group; a kernel with two blocks stays opaque and alone. The
// annotate pass records the kinds as attributes.
TEST(FuseOps, CallTirOfUserKernelsFuseByTheirPattern) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[4, 8], %b: f32[8]) -> (f32[4, 8], f32[4], f32[4, 8]) {
  dataflow {
    %s: f32[4, 8] = call_tir @scale(%x)
    %r: f32[4, 8] = relu(%s)
    %e: f32[4, 8] = exp(%r)
    %t: f32[4] = call_tir @rowsum(%e)
    %a: f32[4, 8] = call_tir @addb(%x, %b)
    %o: f32[4, 8] = call_tir @twice(%a)
  }
  return (%r, %t, %o)
}

prim @scale(%a: f32[4, 8], %y: f32[4, 8]) {
  for %i in 0..4 {
    for %j in 0..8 {
      block "scale" (%vi = spatial(4, %i), %vj = spatial(8, %j)) {
        reads(%a[%vi, %vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %a[%vi, %vj] * -3.0 + 1.0
      }
    }
  }
}

prim @addb(%a: f32[4, 8], %b: f32[8], %y: f32[4, 8]) {
  for %i in 0..4 {
    for %j in 0..8 {
      block "addb" (%vi = spatial(4, %i), %vj = spatial(8, %j)) {
        reads(%a[%vi, %vj], %b[%vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %a[%vi, %vj] + %b[%vj]
      }
    }
  }
}

prim @rowsum(%a: f32[4, 8], %y: f32[4]) {
  for %i in 0..4 {
    for %k in 0..8 {
      block "rowsum" (%vi = spatial(4, %i), %vk = reduce(8, %k)) {
        reads(%a[%vi, %vk])
        writes(%y[%vi])
        init {
          %y[%vi] = 0.0
        }
        %y[%vi] = %y[%vi] + %a[%vi, %vk]
      }
    }
  }
}

prim @twice(%a: f32[4, 8], %y: f32[4, 8]) {
  for %i in 0..4 {
    for %j in 0..8 {
      block "first" (%vi = spatial(4, %i), %vj = spatial(8, %j)) {
        reads(%a[%vi, %vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %a[%vi, %vj] * 2.0
      }
    }
  }
  for %i in 0..4 {
    for %j in 0..8 {
      block "second" (%vi = spatial(4, %i), %vj = spatial(8, %j)) {
        reads(%y[%vi, %vj])
        writes(%y[%vi, %vj])
        %y[%vi, %vj] = %y[%vi, %vj] + 1.0
      }
    }
  }
}
)";
  std::string annotated = fuse(text, "annotate-tir-op-pattern");
  EXPECT_NE(annotated.find("prim @scale(%a: f32[4, 8], %y: f32[4, 8]) attrs(op_pattern = \"elementwise\")"),
            std::string::npos)
      << annotated;
  EXPECT_NE(annotated.find("attrs(op_pattern = \"broadcast\")"), std::string::npos) << annotated;
  EXPECT_NE(annotated.find("attrs(op_pattern = \"reduction\")"), std::string::npos) << annotated;
  EXPECT_NE(annotated.find("attrs(op_pattern = \"opaque\")"), std::string::npos) << annotated;

  std::string out = fuse(text, "fuse-ops");
  // scale + relu + exp, then the reduction joins them (an elementwise
  // producer fuses into a reduction; %r, returned, is a second output);
  // addb alone (its consumer is opaque).
  EXPECT_NE(out.find("(f32[4, 8], f32[4]) = call @fused_scale_relu_exp_rowsum(%x)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("%t: f32[4] = %fused_scale_relu_exp_rowsum_out[1]"), std::string::npos) << out;
  EXPECT_NE(out.find("call @fused_addb(%x, %b)"), std::string::npos) << out;
  EXPECT_NE(out.find("%o: f32[4, 8] = call_tir @twice(%a)"), std::string::npos) << out;
  // The whole way down to prim funcs: the user kernels' bodies merged.
  std::string lowered = fuse(text, "fuse-ops,legalize");
  EXPECT_NE(lowered.find("call_tir @fused_scale_relu_exp_rowsum(%x)"), std::string::npos) << lowered;
}
