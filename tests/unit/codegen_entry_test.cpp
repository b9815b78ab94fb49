// The compiled graph entry (mlcc-codegen's compileModule): small legalized
// modules compiled to an object, linked with the runtime into a model.so
// (mlcc-link's linkModel), loaded through the C ABI and compared with the
// interpreter on random inputs: dense+bias+relu, a small conv net with
// several intermediates (workspace reuse), aliases, tuples and returned
// inputs/constants, BLAS-dispatched groups (call_extern), models with a
// symbolic batch run at several sizes; modules of prim funcs compiled as
// functions of model.so, each run by name. And the errors: unlegalized ops,
// symbolic shapes in library calls, unknown externs, graph calls, prim funcs
// that cannot be functions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "mlcc/codegen/llvm.h"
#include "mlcc/host/compiled_model.h"
#include "mlcc/host/linker.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/module_io.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/safetensors.h"
#include "mlcc/transform/pass.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::test;

namespace {

struct Weight {
  std::string name;
  std::vector<int64_t> shape;
};

// Parses `body` as a module whose weights (random, f32) are in w.safetensors in `dir`.
ir::Module makeModule(const TempDir& dir, const std::string& body, const std::vector<Weight>& weights = {}) {
  std::string text = "mlcc.ir 1\n";
  if (!weights.empty()) {
    std::vector<ir::Tensor> data;
    std::vector<SafetensorsTensorToWrite> views;
    for (size_t i = 0; i < weights.size(); ++i)
      data.push_back(interp::randomTensor(ir::DType::f32, weights[i].shape, 100 + i));
    for (size_t i = 0; i < weights.size(); ++i)
      views.push_back({weights[i].name, "F32", weights[i].shape, {data[i].bytes(), data[i].nbytes()}});
    writeSafetensors(dir.file("w.safetensors"), views);
    text += "weights \"w.safetensors\"\n";
  }
  ir::Module m = ir::parseModule(text + body, "test.ir");
  m.base_dir = dir.path();
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  return m;
}

ir::Module lowered(ir::Module m, const std::string& passes) {
  transform::PassContext ctx;
  ctx.verify_each = true;
  ctx.patterns_path = std::string(MLCC_SOURCE_DIR) + "/pipelines/patterns/blas.yaml";
  transform::runPipeline(m, transform::parsePipeline(passes), ctx);
  return m;
}

// Compiles `m` (its function `entry`, "": the default) into dir/NAME.so.
codegen::CodegenStats compileAndLink(const ir::Module& m, const TempDir& dir, const std::string& name,
                                     const std::string& entry = "") {
  codegen::LLVMOptions opts;
  opts.entry = entry;
  codegen::CodegenStats st = codegen::compileModule(m, opts, codegen::Emit::obj, dir.file(name + ".o"));
  host::LinkOptions lo;
  lo.objects = {dir.file(name + ".o")};
  lo.output = dir.file(name + ".so");
  host::linkModel(lo);
  return st;
}

// Values of symbolic dimensions by name.
using Dims = std::map<std::string, int64_t>;

// Expects the outputs of `model` (`got`) to be the interpreter's (`want`):
// names, shapes and values.
void expectSameTensors(const host::CompiledModel& model, const std::vector<ir::Tensor>& got,
                       const std::vector<interp::NamedTensor>& want, const std::string& name) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    EXPECT_EQ(model.outputs()[o].name, want[o].name);
    ASSERT_EQ(got[o].shape(), want[o].tensor.shape()) << want[o].name;
    double scale = 1.0;
    for (int64_t k = 0; k < want[o].tensor.numel(); ++k)
      scale = std::max(scale, std::abs(want[o].tensor.at(k)));
    int bad = 0;
    for (int64_t k = 0; k < got[o].numel() && bad < 5; ++k) {
      double g = got[o].at(k), w = want[o].tensor.at(k);
      if (!(std::abs(g - w) <= 1e-4 * std::abs(w) + 1e-5 * scale)) {
        ADD_FAILURE() << name << ": output " << want[o].name << "[" << k << "] = " << g << ", interpreter "
                      << w;
        ++bad;
      }
    }
  }
}

// Random inputs of function `entry` of the interpreted module, their
// symbolic dimensions from `dims`: by name (for the interpreter) and in
// order (for the model).
void randomInputs(const interp::Interpreter& in, const std::string& entry, const Dims& dims,
                  std::vector<interp::NamedTensor>& named, std::vector<ir::Tensor>& inputs) {
  uint64_t seed = 7;
  for (const auto& spec : in.inputs(entry)) {
    std::vector<int64_t> shape;
    for (const auto& d : spec.shape) {
      int64_t v = 0;
      if (auto* var = d->as<ir::VarNode>(); var && dims.count(var->name))
        v = dims.at(var->name);
      else
        ASSERT_TRUE(ir::asConstInt(d, &v));
      shape.push_back(v);
    }
    inputs.push_back(interp::randomTensor(spec.dtype, shape, seed++));
    named.push_back({spec.name, inputs.back()});
  }
}

// Runs `reference` in the interpreter and `compiled` as a model.so on the same
// random inputs; expects the same outputs (names, shapes, values). A model
// with symbolic dimensions runs once for each of `runs` (one model.so, so
// its workspace grows and is reused).
void expectSameOutputs(const ir::Module& reference, const ir::Module& compiled, const TempDir& dir,
                       const std::string& name, codegen::CodegenStats* stats = nullptr,
                       const std::vector<Dims>& runs = {Dims{}}) {
  codegen::CodegenStats st = compileAndLink(compiled, dir, name);
  if (stats) *stats = st;
  host::CompiledModel model(dir.file(name + ".so"));
  interp::Interpreter in(reference);
  std::string entry = in.defaultEntry();
  for (const Dims& dims : runs) {
    SCOPED_TRACE(name + ": " + std::to_string(dims.size()) + " symbolic dimensions" +
                 (dims.empty()
                      ? ""
                      : ", first " + dims.begin()->first + " = " + std::to_string(dims.begin()->second)));
    std::vector<interp::NamedTensor> named;
    std::vector<ir::Tensor> inputs;
    randomInputs(in, entry, dims, named, inputs);
    ASSERT_EQ(model.inputs().size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(model.inputs()[i].name, named[i].name);
    std::vector<interp::NamedTensor> want = in.run(entry, named);
    for (int rep = 0; rep < 2; ++rep)  // twice: the workspace is reused across runs
      expectSameTensors(model, model.run(inputs), want, name);
  }
}

std::string errorOf(const ir::Module& m, const TempDir& dir, const std::string& entry = "") {
  try {
    codegen::LLVMOptions opts;
    opts.entry = entry;
    codegen::compileModule(m, opts, codegen::Emit::obj, dir.file("bad.o"));
  } catch (const Error& e) {
    EXPECT_FALSE(test::fileExists(dir.file("bad.o")));
    return e.message();
  }
  return "(no error)";
}

const std::string kMlp = fixture("codegen_entry/mlp.ir");
const std::vector<Weight> kMlpWeights = {{"w1", {64, 32}}, {"b1", {64}}, {"w2", {10, 64}}};

}  // namespace

TEST(CodegenEntry, DenseBiasRelu) {
  TempDir dir;
  ir::Module m = makeModule(dir, kMlp, kMlpWeights);
  codegen::CodegenStats st;
  expectSameOutputs(m, lowered(m, "fuse-ops,legalize"), dir, "mlp", &st);
  EXPECT_EQ(st.kernels, 2);
  EXPECT_EQ(st.intermediate_bytes, 4u * 64 * 4);  // the relu output; the second result is the output
  EXPECT_EQ(st.planned_bytes, 4u * 64 * 4);
  EXPECT_EQ(st.weight_bytes, (64u * 32 + 64 + 10 * 64 + 10) * 4);
}

TEST(CodegenEntry, ConvNetReusesIntermediates) {
  TempDir dir;
  ir::Module m =
      makeModule(dir, fixture("codegen_entry/conv_net_reuses_intermediates.ir"),
                 {{"k1", {8, 3, 3, 3}}, {"k2", {8, 8, 3, 3}}, {"k3", {8, 8, 3, 3}}, {"w", {10, 200}}});
  codegen::CodegenStats st;
  // Unfused: every op is a kernel with its own intermediate.
  expectSameOutputs(m, lowered(m, "legalize"), dir, "convnet", &st);
  EXPECT_GE(st.kernels, 8);
  EXPECT_LT(st.planned_bytes, st.intermediate_bytes);
  expectSameOutputs(m, lowered(m, "fuse-ops,legalize"), dir, "convnet_fused");
}

TEST(CodegenEntry, AliasesTuplesAndReturnedInputsAndConstants) {
  TempDir dir;
  ir::Module m =
      makeModule(dir, fixture("codegen_entry/aliases_tuples_and_returned_inputs_and_constants.ir"));
  codegen::CodegenStats st;
  expectSameOutputs(m, lowered(m, "legalize"), dir, "tuples", &st);
  // %a (= %b = %u = both fields of %t) is written straight into output u: no intermediates.
  EXPECT_EQ(st.intermediate_bytes, 0u);
  EXPECT_EQ(st.weight_bytes, 3u * 4);
}

TEST(CodegenEntry, MultiOutputPrimFunc) {
  TempDir dir;
  ir::Module m = makeModule(dir, fixture("codegen_entry/multi_output_prim_func.ir"));
  codegen::CodegenStats st;
  expectSameOutputs(m, m, dir, "multi", &st);
  EXPECT_EQ(st.kernels, 2);
  EXPECT_EQ(st.intermediate_bytes, 4u * 8 * 4);  // %a; %b is written into output b
}

// A kernel's function-level allocation above the stack limit is a scratch
// buffer in the workspace, live during its call only (no calloc at run time).
TEST(CodegenEntry, KernelScratchInWorkspace) {
  TempDir dir;
  ir::Module m = makeModule(dir, fixture("codegen_entry/kernel_scratch_in_workspace.ir"));
  codegen::CodegenStats st;
  expectSameOutputs(m, m, dir, "scratch", &st);
  const uint64_t t = 256 * 128 * 4;
  EXPECT_EQ(st.intermediate_bytes, t);  // %y
  EXPECT_EQ(st.scratch_bytes, 2 * t);   // one per call
  EXPECT_EQ(st.planned_bytes, 2 * t);   // %y and one scratch at a time
  codegen::compileModule(m, {}, codegen::Emit::ll, dir.file("scratch.ll"));
  EXPECT_EQ(test::readFile(dir.file("scratch.ll")).find("calloc"), std::string::npos);
}

TEST(CodegenEntry, BlasDispatch) {
  TempDir dir;
  ir::Module m = makeModule(dir, fixture("codegen_entry/blas_dispatch.ir"),
                            {{"w1", {64, 32}},
                             {"b1", {64}},
                             {"w2", {10, 64}},
                             {"b2", {10}},
                             {"m", {16, 8}},
                             {"w3", {8, 8}},
                             {"c", {8}}});
  ir::Module blas = lowered(m, "fuse-by-pattern,fuse-ops,legalize");
  codegen::CodegenStats st;
  expectSameOutputs(lowered(m, "fuse-ops,legalize"), blas, dir, "blas", &st);
  std::vector<std::string> want = {
      "blas.dense_bias_relu 6x64x32", "blas.dense_bias 6x10x64", "blas.matmul 2x4x8x16",
      "blas.matmul 8x8x16",           "blas.dense 8x8x8",        "blas.matmul_bias_relu 2x4x8x16",
      "blas.matmul_bias 8x8x16"};
  EXPECT_EQ(st.kernel_names, want);
}

TEST(CodegenEntry, Errors) {
  TempDir dir;
  ir::Module m = makeModule(dir, kMlp, kMlpWeights);
  EXPECT_NE(errorOf(m, dir).find("binding %h: op dense was not legalized: run mlcc-legalize first"),
            std::string::npos)
      << errorOf(m, dir);
  EXPECT_NE(errorOf(lowered(m, "fuse-ops"), dir).find("call of graph function @"), std::string::npos);
  // What does not take symbolic shapes yet: library (BLAS) calls.
  ir::Module symbolic = makeModule(dir, fixture("codegen_entry/errors.ir"));
  EXPECT_NE(errorOf(symbolic, dir).find("symbolic shapes are not supported by codegen yet in library calls"),
            std::string::npos)
      << errorOf(symbolic, dir);
  ir::Module ext = makeModule(dir, fixture("codegen_entry/errors_2.ir"));
  EXPECT_NE(errorOf(ext, dir).find("unknown extern \"blas.conv\""), std::string::npos) << errorOf(ext, dir);
  ir::Module bias = makeModule(dir, fixture("codegen_entry/errors_3.ir"));
  EXPECT_NE(errorOf(bias, dir).find("the bias must have shape [N]"), std::string::npos) << errorOf(bias, dir);
}

// The same models with a symbolic batch n: one model.so runs at several
// sizes (the workspace grows, and is reused when n shrinks).
TEST(CodegenEntry, SymbolicBatch) {
  TempDir dir;
  const std::vector<Dims> ns = {{{"n", 3}}, {{"n", 1}}, {{"n", 8}}, {{"n", 3}}};
  ir::Module mlp = makeModule(dir, test::replaced(kMlp, "[4, ", "[n, "), kMlpWeights);
  codegen::CodegenStats st;
  expectSameOutputs(mlp, lowered(mlp, "fuse-ops,legalize"), dir, "mlp_n", &st, ns);
  // Reported for n = 1: the relu output, and the kernels' intermediates of
  // symbolic shape as scratch buffers in the workspace, reused.
  EXPECT_EQ(st.intermediate_bytes, 1u * 64 * 4);
  EXPECT_GT(st.scratch_bytes, 0u);
  EXPECT_LT(st.planned_bytes, st.intermediate_bytes + st.scratch_bytes);
  ir::Module tuples =
      makeModule(dir, test::replaced(fixture("codegen_entry/symbolic_batch.ir"), "[2, ", "[n, "));
  expectSameOutputs(tuples, lowered(tuples, "legalize"), dir, "tuples_n", nullptr, ns);
  ir::Module net =
      makeModule(dir, fixture("codegen_entry/symbolic_batch_2.ir"), {{"k1", {8, 3, 3, 3}}, {"w", {10, 128}}});
  expectSameOutputs(net, lowered(net, "legalize"), dir, "net_n", nullptr, ns);
  expectSameOutputs(net, lowered(net, "fuse-ops,legalize"), dir, "net_fused_n", nullptr, ns);

  // Before its shape is set, the batch is -1 and the model refuses to run.
  host::CompiledModel model(dir.file("mlp_n.so"));
  EXPECT_TRUE(model.hasSymbolicInputs());
  EXPECT_EQ(model.inputs()[0].shape, (std::vector<int64_t>{-1, 32}));
  EXPECT_EQ(model.outputs()[0].shape, (std::vector<int64_t>{-1, 10}));
  std::vector<ir::Tensor> in = {ir::Tensor::zeros(ir::DType::f32, {5, 32})};
  std::vector<ir::Tensor> out = {ir::Tensor::zeros(ir::DType::f32, {5, 10})};
  try {
    model.run(in, out);
    ADD_FAILURE() << "ran without the input shapes";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("symbolic dimension 'n' is not set"), std::string::npos) << e.message();
  }
  model.setInputShapes(in);
  EXPECT_EQ(model.outputs()[0].shape, (std::vector<int64_t>{5, 10}));
  try {
    model.setInputShapes({ir::Tensor::zeros(ir::DType::f32, {5, 31})});
    ADD_FAILURE() << "took a wrong shape";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("input 'x' has shape [?, 32], got [5, 31]"), std::string::npos) << e.message();
  }
}

// A module of prim funcs only: each is a function of model.so, loaded by
// name, taking the buffers it reads and giving those it writes (%C of mm
// and %y of acc both: the output starts as the input, or is it), as the
// interpreter runs prim func entries; acc (symbolic n, a scratch buffer of
// n rows) at several sizes. Then one prim func of a graph module alone
// (--entry), and what cannot be a function.
TEST(CodegenEntry, PrimFuncsAsFunctions) {
  TempDir dir;
  ir::Module m = makeModule(dir, fixture("codegen_entry/prim_funcs_as_functions.ir"));
  codegen::CodegenStats st = compileAndLink(m, dir, "funcs");
  EXPECT_EQ(st.functions, (std::vector<std::string>{"mm", "acc"}));
  EXPECT_EQ(st.dims, (std::vector<std::string>{"n"}));
  interp::Interpreter in(m);
  const std::vector<std::pair<std::string, std::vector<Dims>>> runs = {
      {"mm", {Dims{}}}, {"acc", {{{"n", 3}}, {{"n", 1}}, {{"n", 8}}, {{"n", 0}}}}};
  for (const auto& [name, sizes] : runs) {
    host::CompiledModel model(dir.file("funcs.so"), name);
    EXPECT_EQ(model.function(), name);
    EXPECT_EQ(model.functions(), (std::vector<std::string>{"mm", "acc"}));
    ASSERT_EQ(model.outputs().size(), 1u);
    EXPECT_EQ(model.outputs()[0].name, name == "mm" ? "C" : "y");
    EXPECT_EQ(model.inputs().back().name, model.outputs()[0].name);
    EXPECT_EQ(model.hasSymbolicInputs(), name == "acc");
    EXPECT_EQ(host::typeText(model.inputs()[0]), name == "mm" ? "f32[16, 8]" : "f32[n, 4]");
    for (const Dims& dims : sizes) {
      SCOPED_TRACE(name + (dims.empty() ? "" : ", n = " + std::to_string(dims.at("n"))));
      std::vector<interp::NamedTensor> named;
      std::vector<ir::Tensor> inputs;
      randomInputs(in, name, dims, named, inputs);
      ASSERT_EQ(model.inputs().size(), inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(model.inputs()[i].name, named[i].name);
      std::vector<interp::NamedTensor> want = in.run(name, named);
      for (int rep = 0; rep < 2; ++rep) expectSameTensors(model, model.run(inputs), want, name);
      // In place: the input and the output of the buffer it reads and writes as one buffer.
      std::vector<ir::Tensor> in_place = {inputs.back()};  // shares the input's storage
      model.run(inputs, in_place);
      expectSameTensors(model, in_place, want, name + " in place");
    }
    EXPECT_EQ(model.profile().size(), 1u);
    EXPECT_EQ(model.profile()[0].name, name);
  }
  // Without a name: several functions and no graph entry.
  auto loadError = [&](const std::string& file, const std::string& function) -> std::string {
    try {
      host::CompiledModel model(dir.file(file), function);
    } catch (const Error& e) {
      return e.message();
    }
    return "(no error)";
  };
  EXPECT_NE(loadError("funcs.so", "").find("no graph entry but 2 functions (prim funcs): @mm, @acc"),
            std::string::npos)
      << loadError("funcs.so", "");
  EXPECT_NE(loadError("funcs.so", "nosuch").find("no function @nosuch; the model's functions: @mm, @acc"),
            std::string::npos)
      << loadError("funcs.so", "nosuch");

  // --entry naming a prim func of a graph module: that function alone, its
  // scratch buffer the workspace; the model loads it without a name.
  ir::Module big = makeModule(dir, fixture("codegen_entry/kernel_scratch_in_workspace.ir"));
  st = compileAndLink(big, dir, "big", "big");
  EXPECT_EQ(st.functions, (std::vector<std::string>{"big"}));
  EXPECT_EQ(st.planned_bytes, 256u * 128 * 4);
  EXPECT_EQ(st.scratch_bytes, 256u * 128 * 4);
  {
    host::CompiledModel model(dir.file("big.so"));
    EXPECT_EQ(model.function(), "big");
    interp::Interpreter big_in(big);
    std::vector<interp::NamedTensor> named;
    std::vector<ir::Tensor> inputs;
    randomInputs(big_in, "big", {}, named, inputs);
    expectSameTensors(model, model.run(inputs), big_in.run("big", named), "big");
  }
  // A model with a graph entry has no functions.
  compileAndLink(big, dir, "graph");
  EXPECT_NE(
      loadError("graph.so", "big").find("no function @big: the model has a graph entry and no functions"),
      std::string::npos)
      << loadError("graph.so", "big");

  ir::Module bad = makeModule(dir, fixture("codegen_entry/prim_funcs_as_functions_errors.ir"));
  EXPECT_NE(errorOf(bad, dir, "fill")
                .find("prim func @fill: output %z has type f32[m, 3], but no input has the "
                      "dimension 'm'"),
            std::string::npos)
      << errorOf(bad, dir, "fill");
  EXPECT_NE(errorOf(bad, dir, "pairs")
                .find("prim func @pairs: input %x has type f32[n * 2]; a function's input "
                      "dimensions must be constants or symbolic dimensions"),
            std::string::npos)
      << errorOf(bad, dir, "pairs");
  EXPECT_NE(errorOf(bad, dir, "nosuch").find("no function @nosuch in the module"), std::string::npos);
}
