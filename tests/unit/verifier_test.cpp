// The IR verifier: a valid MLP-like module (graph functions calling prim funcs
// with a matmul reduction, symbolic batch n) passes; then one minimal broken
// module per rule, checking the error message; a hand-filled SourceMap
// locating the error; and accesses provably out of bounds (rejected) next to
// guarded or unprovable ones (accepted).
#include "mlcc/ir/verifier.h"

#include <gtest/gtest.h>

#include <cstring>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/entry.h"
#include "mlcc/ir/parser.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;
using namespace mlcc::ir::build;

namespace {

constexpr DType f32 = DType::f32;

// ---- building blocks

IterVar spatial(Var v, PrimExpr extent, PrimExpr binding) {
  return IterVar{std::move(v), std::move(extent), IterKind::spatial, std::move(binding)};
}
IterVar reduce(Var v, PrimExpr extent, PrimExpr binding) {
  return IterVar{std::move(v), std::move(extent), IterKind::reduce, std::move(binding)};
}

Buffer buf(const std::string& name, std::vector<PrimExpr> shape, DType t = f32,
           StorageScope scope = StorageScope::global) {
  return makeBuffer(name, t, std::move(shape), scope);
}

PrimFunc prim(std::string name, std::vector<Buffer> params, Stmt body, std::vector<Buffer> allocs = {}) {
  PrimFunc f;
  f.name = std::move(name);
  f.params = std::move(params);
  f.allocs = std::move(allocs);
  f.body = std::move(body);
  return f;
}

Type tensor(std::vector<PrimExpr> shape, DType t = f32) { return Type::tensor(t, std::move(shape)); }

Binding bind(GraphVar var, ValueKind kind, std::vector<GraphVar> args = {}, std::string callee = {}) {
  Binding b{std::move(var), {}};
  b.value.kind = kind;
  b.value.args = std::move(args);
  b.value.callee = std::move(callee);
  return b;
}

Binding constWeight(GraphVar var, std::string weight) {
  Binding b = bind(std::move(var), ValueKind::Const);
  b.value.weight = std::move(weight);
  return b;
}

Binding constInline(GraphVar var, std::vector<float> values) {
  Binding b = bind(std::move(var), ValueKind::Const);
  b.value.is_inline = true;
  b.value.data.resize(values.size() * sizeof(float));
  std::memcpy(b.value.data.data(), values.data(), b.value.data.size());
  return b;
}

GraphFunc graph(std::string name, std::vector<GraphVar> params, std::vector<Binding> bindings, GraphVar ret) {
  GraphFunc f;
  f.name = std::move(name);
  f.params = std::move(params);
  f.ret_type = ret->type;
  f.blocks.push_back(BindingBlock{true, std::move(bindings)});
  f.ret = {std::move(ret)};
  return f;
}

// ---- the valid module

// Y[i, j] = sum_k X[i, k] * W[j, k], with a symbolic batch n.
PrimFunc densePrim() {
  Var n = makeVar("n");
  Buffer X = buf("X", {n, lit(16)}), W = buf("W", {lit(8), lit(16)}), Y = buf("Y", {n, lit(8)});
  Var i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
  Var vi = makeVar("vi"), vj = makeVar("vj"), vk = makeVar("vk");
  Stmt block = makeBlock("dense", {spatial(vi, n, i), spatial(vj, lit(8), j), reduce(vk, lit(16), k)},
                         {point(X, {vi, vk}), point(W, {vj, vk})}, {point(Y, {vi, vj})},
                         store(Y, {vi, vj}, load(Y, {vi, vj}) + load(X, {vi, vk}) * load(W, {vj, vk})),
                         /*init=*/store(Y, {vi, vj}, lit(0.0f)));
  Stmt loops = makeFor(i, n, makeFor(j, lit(8), makeFor(k, lit(16), block)), LoopKind::parallel);
  return prim("dense", {X, W, Y}, loops);
}

// B = max(A, 0) through a block-local buffer, under a predicate on the loop
// variable and a function-level scratch buffer.
PrimFunc reluPrim() {
  Var n = makeVar("n");
  Buffer A = buf("A", {n, lit(8)}), B = buf("B", {n, lit(8)});
  Buffer scratch = buf("scratch", {lit(8)});
  Buffer tmp = buf("tmp", {lit(1)}, f32, StorageScope::local);
  Var i = makeVar("i"), j = makeVar("j"), vi = makeVar("vi"), vj = makeVar("vj");
  Stmt body = makeSeq({store(tmp, {lit(0)}, load(A, {vi, vj})),
                       store(B, {vi, vj}, build::maximum(load(tmp, {lit(0)}), lit(0.0f)))});
  Stmt block =
      makeBlock("relu", {spatial(vi, n, i), spatial(vj, lit(8), j)}, {point(A, {vi, vj})},
                {point(B, {vi, vj})}, body, nullptr, /*predicate=*/makeBinary(BinaryOp::LT, i, n), {tmp});
  Stmt zero = makeFor(j, lit(8), store(scratch, {j}, lit(0.0f)), LoopKind::vectorized);
  return prim("relu", {A, B}, makeSeq({zero, makeFor(i, n, makeFor(j, lit(8), block))}), {scratch});
}

// The MLP-like module: @main calls both prim funcs and a graph sub-function,
// with constants, a tuple, a tuple item, an op and a tuple return.
struct Mlp {
  Var n = makeVar("n");
  Module m;

  Mlp() {
    GraphVar x = makeGraphVar("x", tensor({n, lit(16)}));
    GraphVar w = makeGraphVar("w", tensor({lit(8), lit(16)}));
    GraphVar h = makeGraphVar("h", tensor({n, lit(8)}));
    GraphVar y = makeGraphVar("y", tensor({n, lit(8)}));
    GraphVar s = makeGraphVar("s", tensor({lit(2)}));
    GraphVar t = makeGraphVar("t", Type::tuple({y->type, s->type}));
    GraphVar y2 = makeGraphVar("y2", y->type);
    GraphVar z = makeGraphVar("z", y->type);
    GraphVar r = makeGraphVar("r", y->type);
    GraphVar out = makeGraphVar("out", y->type);
    Binding get = bind(y2, ValueKind::TupleGet, {t});
    get.value.index = 0;
    Binding softmax = bind(r, ValueKind::Op, {z}, "softmax");
    softmax.value.attrs["axis"] = -1;

    GraphFunc main =
        graph("main", {x},
              {constWeight(w, "fc1.weight"), bind(h, ValueKind::CallTir, {x, w}, "dense"),
               bind(y, ValueKind::CallTir, {h}, "relu"), constInline(s, {1.0f, 2.0f}),
               bind(t, ValueKind::Tuple, {y, s}), get, bind(z, ValueKind::CallGraph, {y2}, "sub"), softmax},
              out);
    main.blocks.push_back(BindingBlock{false, {bind(out, ValueKind::Alias, {r})}});
    main.ret = {out, s};
    main.ret_is_tuple = true;
    main.ret_type = Type::tuple({out->type, s->type});

    Var m_dim = makeVar("m");
    GraphVar a = makeGraphVar("a", tensor({m_dim, lit(8)}));
    GraphVar b = makeGraphVar("b", a->type);
    GraphFunc sub = graph("sub", {a}, {bind(b, ValueKind::CallTir, {a}, "relu")}, b);
    sub.attrs["primitive"] = true;

    m.weight_files = {"mlp.safetensors"};
    m.functions = {main, sub, densePrim(), reluPrim()};
  }

  GraphFunc& main() { return std::get<GraphFunc>(m.functions[0]); }
  PrimFunc& dense() { return std::get<PrimFunc>(m.functions[2]); }
  Binding& binding(const std::string& name) {
    for (auto& block : main().blocks)
      for (auto& b : block.bindings)
        if (b.var->name == name) return b;
    throw std::runtime_error("no binding " + name);
  }
  const GraphVar& var(const std::string& name) { return binding(name).var; }
  // Replaces binding `name`'s variable by a fresh one of type `t`.
  void retype(const std::string& name, Type t) { binding(name).var = makeGraphVar(name, std::move(t)); }
};

// ---- expectations

template <class F>
void expectError(F&& verify, const std::string& expected) {
  try {
    verify();
    ADD_FAILURE() << "no error; expected one containing: " << expected;
  } catch (const mlcc::Error& e) {
    EXPECT_NE(e.message().find(expected), std::string::npos) << "message: " << e.message();
  }
}
void expectModuleError(const Module& m, const std::string& expected) {
  expectError([&] { verifyModule(m, mlcc::ir::structuralChecksOnly()); }, expected);
}
void expectPrimError(const PrimFunc& f, const std::string& expected) {
  expectError([&] { verifyPrimFunc(f); }, expected);
}

// A one-loop prim func: for %i in 0..4 { block "B" (%vi = spatial(4, %i)) { body } }
// with A, B: f32[4]; `body` gets vi.
struct Copy {
  Buffer A = buf("A", {lit(4)}), B = buf("B", {lit(4)});
  Var i = makeVar("i"), vi = makeVar("vi");
  Stmt body() const { return store(B, {vi}, load(A, {vi})); }
  PrimFunc func(Stmt block_body, std::vector<IterVar> iters = {}, Stmt init = nullptr) const {
    if (iters.empty()) iters = {spatial(vi, lit(4), i)};
    Stmt block =
        makeBlock("B", std::move(iters), {point(A, {vi})}, {point(B, {vi})}, std::move(block_body), init);
    return prim("copy", {A, B}, makeFor(i, lit(4), block));
  }
  PrimFunc func() const { return func(body()); }
};

// ---- valid IR

TEST(Verifier, ValidMlpModulePasses) {
  Mlp mlp;
  EXPECT_NO_THROW(verifyModule(mlp.m, mlcc::ir::structuralChecksOnly()));
}

TEST(Verifier, ValidPrimFuncVariantsPass) {
  Copy c;
  EXPECT_NO_THROW(verifyPrimFunc(c.func()));
  // GPU binding, an opaque block (no iteration variables) that sees the
  // loop variable, and an if.
  Var bx = makeVar("bx"), tx = makeVar("tx");
  Stmt opaque = makeBlock("root", {}, {}, {}, makeIf(bx < 2, store(c.B, {bx * 2 + tx}, lit(1.0f))));
  PrimFunc gpu =
      prim("gpu", {c.A, c.B},
           makeFor(bx, lit(2), makeFor(tx, lit(2), opaque, LoopKind::thread_binding, "threadIdx.x"),
                   LoopKind::thread_binding, "blockIdx.x"));
  EXPECT_NO_THROW(verifyPrimFunc(gpu));
  // A nested block whose binding uses the outer block's iteration variable.
  Var j = makeVar("j"), vo = makeVar("vo"), vin = makeVar("vin");
  Stmt inner = makeBlock("inner", {spatial(vin, lit(4), vo + j * 0)}, {}, {}, store(c.B, {vin}, lit(2.0f)));
  Stmt outer = makeBlock("outer", {spatial(vo, lit(4), c.i)}, {}, {}, makeFor(j, lit(1), inner));
  EXPECT_NO_THROW(verifyPrimFunc(prim("nested", {c.A, c.B}, makeFor(c.i, lit(4), outer))));
  // The same Var for two sibling loops is fine (no nesting).
  Stmt twice = makeSeq(
      {makeFor(j, lit(4), store(c.B, {j}, lit(0.0f))), makeFor(j, lit(4), store(c.B, {j}, lit(1.0f)))});
  EXPECT_NO_THROW(verifyPrimFunc(prim("siblings", {c.A, c.B}, twice)));
}

TEST(Verifier, ValidTracePasses) {
  PrimFunc f = Copy().func();
  f.trace.insts.push_back(TraceInst{"get_block", {"B"}, {}, {"b0"}, std::nullopt});
  f.trace.insts.push_back(TraceInst{"get_loops", {TraceRef{"b0"}}, {}, {"l1"}, std::nullopt});
  f.trace.insts.push_back(
      TraceInst{"sample_perfect_tile", {TraceRef{"l1"}}, {{"n", 2}}, {"v2", "v3"}, AttrValue::ints({2, 2})});
  f.trace.insts.push_back(TraceInst{
      "split", {TraceRef{"l1"}, AttrValue::List{TraceRef{"v2"}, TraceRef{"v3"}}}, {}, {"l4", "l5"}, {}});
  EXPECT_NO_THROW(verifyPrimFunc(f));
}

// ---- module

TEST(VerifierModule, DuplicateFunctionName) {
  Mlp mlp;
  std::get<GraphFunc>(mlp.m.functions[1]).name = "main";
  expectModuleError(mlp.m, "function @main is defined twice");
}

TEST(VerifierModule, WeightsFiles) {
  Mlp mlp;
  mlp.m.weight_files.push_back("mlp.safetensors");
  expectModuleError(mlp.m, "weights file \"mlp.safetensors\" is listed twice");
  mlp.m.weight_files = {""};
  expectModuleError(mlp.m, "empty weights file name");
}

// ---- graph functions

TEST(VerifierGraph, VariableDefinedTwice) {
  Mlp mlp;
  mlp.binding("h").var = mlp.main().params[0];
  expectModuleError(mlp.m, "in graph @main, binding %x: variable %x is defined twice");
}

TEST(VerifierGraph, OutputNamesListOneDistinctNamePerOutput) {
  Mlp mlp;
  mlp.main().attrs["output_names"] = AttrValue(AttrValue::List{AttrValue("logits")});
  expectModuleError(mlp.m, "@main: attribute output_names must list one name per output (the function has 2");
  mlp.main().attrs["output_names"] = AttrValue(AttrValue::List{AttrValue(int64_t{3}), AttrValue("probs")});
  expectModuleError(mlp.m, "@main: attribute output_names must list non-empty strings");
  mlp.main().attrs["output_names"] = AttrValue(AttrValue::List{AttrValue("logits"), AttrValue("logits")});
  expectModuleError(mlp.m, "@main: attribute output_names names 'logits' twice");
  mlp.main().attrs["output_names"] = AttrValue(AttrValue::List{AttrValue("logits"), AttrValue("probs")});
  EXPECT_NO_THROW(verifyModule(mlp.m, mlcc::ir::structuralChecksOnly()));
  EXPECT_EQ(outputNames(mlp.main()), (std::vector<std::string>{"logits", "probs"}));
}

TEST(VerifierGraph, UseBeforeDefinition) {
  Mlp mlp;
  mlp.binding("h").value.args[1] = mlp.var("y");
  expectModuleError(mlp.m, "in graph @main, binding %h: %y is used before its definition");
}

// One edit of the valid MLP module and the error the verifier must report.
struct MlpEdit {
  const char* name;
  void (*edit)(Mlp& mlp);
  const char* expected;
};

class VerifierGraphMlpEdit : public testing::TestWithParam<MlpEdit> {};

TEST_P(VerifierGraphMlpEdit, ReportsTheError) {
  Mlp mlp;
  GetParam().edit(mlp);
  expectModuleError(mlp.m, GetParam().expected);
}

const MlpEdit kMlpEdits[] = {
    {"UndefinedVariable",
     [](Mlp& mlp) {
       mlp.binding("h").value.args[1] = makeGraphVar("ghost", tensor({lit(8), lit(16)}));
     },
     "%ghost is not defined in this function"},
    {"NullArgument", [](Mlp& mlp) { mlp.binding("h").value.args[1] = nullptr; }, "binding %h: null argument"},
    {"CallTirArity", [](Mlp& mlp) { mlp.binding("h").value.args.pop_back(); },
     "call_tir @dense has 1 argument(s) and 1 output(s), but the prim func has 3 parameter(s)"},
    {"CallTirArgumentDType",
     [](Mlp& mlp) {
       mlp.retype("w", tensor({lit(8), lit(16)}, DType::f16));
       mlp.binding("h").value.args[1] = mlp.var("w");
     },
     "call_tir @dense argument %w has type f16[8, 16], but buffer %W is f32[8, 16]"},
    {"CallTirTupleOutputsMustBeTensors",
     [](Mlp& mlp) {
       Type inner = Type::tuple({tensor({mlp.n, lit(8)})});
       mlp.retype("h", Type::tuple({inner}));
     },
     "call_tir @dense output 0 is a tuple, not a tensor"},
    {"TupleGetOnNonTuple", [](Mlp& mlp) { mlp.binding("y2").value.args[0] = mlp.var("y"); },
     "binding %y2: %y is not a tuple but f32[n, 8]"},
    {"TupleGetIndexOutOfRange", [](Mlp& mlp) { mlp.binding("y2").value.index = 2; },
     "tuple index 2 is out of range for %t with 2 field(s)"},
    {"TupleGetTypeMismatch", [](Mlp& mlp) { mlp.binding("y2").value.index = 1; },
     "item 1 of %t has type f32[2], not f32[n, 8]"},
    {"TupleTypeMismatch",
     [](Mlp& mlp) { std::swap(mlp.binding("t").value.args[0], mlp.binding("t").value.args[1]); },
     "binding %t: tuple field 0 is %s of type f32[2], but the binding type says f32[n, 8]"}};

INSTANTIATE_TEST_SUITE_P(VerifierGraph, VerifierGraphMlpEdit, testing::ValuesIn(kMlpEdits),
                         [](const testing::TestParamInfo<MlpEdit>& info) {
                           return std::string(info.param.name);
                         });

TEST(VerifierGraph, CallTirCalleeMissing) {
  Mlp mlp;
  mlp.binding("h").value.callee = "nosuch";
  expectModuleError(mlp.m, "call_tir callee @nosuch is not a function of the module");
  mlp.binding("h").value.callee = "sub";
  expectModuleError(mlp.m, "call_tir callee @sub is a graph function, not a prim func");
}

TEST(VerifierGraph, CallTirOutputRankAndDims) {
  Mlp mlp;
  mlp.retype("h", tensor({mlp.n}));
  mlp.binding("y").value.args[0] = mlp.var("h");
  expectModuleError(mlp.m, "call_tir @dense output has type f32[n], but buffer %Y is f32[n, 8]");
  Mlp mlp2;
  mlp2.retype("w", tensor({lit(8), lit(15)}));
  mlp2.binding("h").value.args[1] = mlp2.var("w");
  expectModuleError(mlp2.m, "argument %w has type f32[8, 15], but buffer %W is f32[8, 16]");
}

TEST(VerifierGraph, CallGraphCallee) {
  Mlp mlp;
  mlp.binding("z").value.callee = "relu";
  expectModuleError(mlp.m, "call callee @relu is a prim func; use call_tir");
  mlp.binding("z").value.callee = "nosuch";
  expectModuleError(mlp.m, "call callee @nosuch is not a function of the module");
}

TEST(VerifierGraph, CallGraphArityAndTypes) {
  Mlp mlp;
  mlp.binding("z").value.args.push_back(mlp.var("y2"));
  expectModuleError(mlp.m, "call @sub has 2 argument(s), but @sub takes 1");
  Mlp mlp2;
  mlp2.binding("z").value.args[0] = mlp2.var("s");
  expectModuleError(mlp2.m, "call @sub argument %s has type f32[2], but parameter %a is f32[m, 8]");
}

TEST(VerifierGraph, AliasTypeMismatch) {
  Mlp mlp;
  GraphFunc& main = mlp.main();
  main.blocks[1].bindings[0].value.args[0] = mlp.var("s");
  expectModuleError(mlp.m,
                    "binding %out: alias of %s: the binding has type f32[n, 8], but %s has type f32[2]");
}

// Keyword arguments belong to calls; on an alias, constant, tuple or tuple
// item the text has no place for them (they would vanish when printed).
TEST(VerifierGraph, OnlyCallsTakeAttributes) {
  for (const char* name : {"out", "w", "s", "t", "y2"}) {
    Mlp mlp;
    mlp.binding(name).value.attrs["tag"] = "x";
    expectModuleError(mlp.m, std::string("binding %") + name);
    expectModuleError(mlp.m, "value has attributes ('tag'); only calls take keyword arguments");
  }
  Mlp mlp;
  mlp.binding("h").value.attrs["tag"] = "x";  // call_tir
  mlp.binding("z").value.attrs["tag"] = "x";  // call
  EXPECT_NO_THROW(verifyModule(mlp.m, mlcc::ir::structuralChecksOnly()));
}

// AttrValue's invariant: an i64 constant is a plain integer, never an
// expression (the text reads `(5)` back as the integer 5).
TEST(VerifierGraph, AttributeExpressionsAreNotI64Literals) {
  Mlp mlp;
  AttrValue five;
  five.v = makeInt(5);  // bypasses the constructor's normalization
  mlp.binding("r").value.attrs["axis"] = five;
  expectModuleError(mlp.m, "attribute 'axis' holds the i64 literal expression 5");
  mlp.binding("r").value.attrs["axis"] = AttrValue::List{AttrValue(int64_t{1}), five};
  expectModuleError(mlp.m, "attribute 'axis' holds the i64 literal expression 5");
  mlp.binding("r").value.attrs["axis"] = AttrValue(makeInt(5, DType::i32));
  EXPECT_NO_THROW(verifyModule(mlp.m, mlcc::ir::structuralChecksOnly()));
  Copy c;
  PrimFunc f = c.func();
  f.attrs["unroll"] = five;
  expectPrimError(f, "attribute 'unroll' holds the i64 literal expression 5");
}

TEST(VerifierGraph, ConstWithoutWeightName) {
  Mlp mlp;
  mlp.binding("w").value.weight.clear();
  expectModuleError(mlp.m, "binding %w: constant without a weight name");
}

TEST(VerifierGraph, InlineConstSize) {
  Mlp mlp;
  mlp.binding("s").value.data.resize(12);
  expectModuleError(mlp.m, "inline constant has 12 bytes, but f32[2] needs 8");
}

// Sizes (issue 12): negative dimensions, and byte sizes that overflow int64
// (f32[2^62] wraps to 0 bytes unchecked, so a 1-element weight passed).
TEST(VerifierGraph, NegativeAndOverflowingDims) {
  Mlp neg;
  neg.retype("w", tensor({lit(-1), lit(16)}));
  neg.binding("h").value.args[1] = neg.var("w");
  expectModuleError(neg.m, "binding %w: negative dimension -1 in f32[-1, 16]");
  Mlp huge;
  huge.retype("w", tensor({lit(99999999999), lit(99999999999)}));
  huge.binding("h").value.args[1] = huge.var("w");
  expectModuleError(huge.m, "binding %w: f32[99999999999, 99999999999] is too large");
  Mlp wraps;
  wraps.retype("s", tensor({lit(int64_t{1} << 62)}));
  expectModuleError(wraps.m, "binding %s: f32[4611686018427387904] is too large");
}

TEST(VerifierPrim, NegativeAndOverflowingBufferDims) {
  Copy c;
  PrimFunc f = c.func();
  f.params[0] = buf("A", {lit(-4)});
  expectPrimError(f, "parameter %A: negative dimension -4 in f32[-4]");
  PrimFunc g = c.func();
  g.allocs.push_back(buf("T", {lit(int64_t{1} << 40), lit(int64_t{1} << 40)}, DType::i64));
  expectPrimError(g, "allocated buffer %T: i64[1099511627776, 1099511627776] is too large");
}

TEST(VerifierGraph, InlineConstNeedsStaticShape) {
  Mlp mlp;
  Binding c = constInline(makeGraphVar("c", tensor({mlp.n})), {1.0f});
  mlp.main().blocks[0].bindings.insert(mlp.main().blocks[0].bindings.begin(), c);
  expectModuleError(mlp.m, "inline constant needs a static shape, not f32[n]");
}

TEST(VerifierGraph, ReturnUndefined) {
  Mlp mlp;
  mlp.main().ret[0] = makeGraphVar("nowhere", tensor({mlp.n, lit(8)}));
  expectModuleError(mlp.m, "in graph @main, return: %nowhere is not defined in this function");
}

TEST(VerifierGraph, ReturnTypeMismatch) {
  Mlp mlp;
  mlp.main().ret_type.fields[1] = tensor({lit(3)});
  expectModuleError(mlp.m, "returned %s has type f32[2], but field 1 of the return type is f32[3]");
  Mlp mlp2;
  mlp2.main().ret_is_tuple = false;
  expectModuleError(mlp2.m, "returns 2 values without a tuple");
  Mlp mlp3;
  mlp3.main().ret.pop_back();
  expectModuleError(mlp3.m, "returns a tuple of 1 value(s), but the return type is (f32[n, 8], f32[2])");
}

TEST(VerifierGraph, UnboundSymbolicDimension) {
  Mlp mlp;
  Var m = makeVar("m");
  mlp.retype("r", tensor({m, lit(8)}));
  expectModuleError(mlp.m, "binding %r: symbolic dimension m is not bound by a parameter");
  Mlp mlp2;
  mlp2.main().ret_type.fields[0] = tensor({m, lit(8)});
  expectModuleError(mlp2.m, "in graph @main, return type: symbolic dimension m is not bound by a parameter");
}

TEST(VerifierGraph, DimensionsAreI64) {
  Mlp mlp;
  Type bad = Type::tensor(f32, {makeInt(2, DType::i32)});
  mlp.retype("s", bad);
  expectModuleError(mlp.m, "binding %s: shape dimension has dtype i32, not i64");
}

// The verifier asks the OpTypeInfo it is given about each op binding, and
// puts the binding's context on its errors.
TEST(VerifierGraph, OpTypeInfoChecksOpBindings) {
  struct SoftmaxNeedsAxis final : OpTypeInfo {
    mutable int calls = 0;
    void checkBinding(const GraphFunc&, const Binding& b) const override {
      ++calls;
      if (b.value.callee == "softmax" && !b.value.attrs.count("axis"))
        throw mlcc::Error("missing attribute axis");
    }
    int64_t flops(const Binding&) const override { return 0; }
  } op_types;
  Mlp mlp;
  EXPECT_NO_THROW(verifyModule(mlp.m, op_types));
  EXPECT_EQ(op_types.calls, 1);
  mlp.binding("r").value.attrs.clear();
  expectError([&] { verifyModule(mlp.m, op_types); },
              "in graph @main, binding %r: op softmax: missing attribute axis");
  EXPECT_NO_THROW(verifyModule(mlp.m, mlcc::ir::structuralChecksOnly()));
  mlp.binding("r").value.callee.clear();
  expectModuleError(mlp.m, "op call without an op name");
}

// ---- prim funcs: buffers

TEST(VerifierPrim, ParamsAreGlobalAndDistinct) {
  Copy c;
  PrimFunc f = c.func();
  f.params[0] = buf("A", {lit(4)}, f32, StorageScope::shared);
  expectPrimError(f, "in prim @copy: parameter %A has scope shared; parameters are global");
  f.params[0] = c.B;
  expectPrimError(f, "parameter %B is listed twice");
}

TEST(VerifierPrim, BufferNotInScope) {
  Copy c;
  Buffer other = buf("D", {lit(4)});
  expectPrimError(c.func(store(other, {c.vi}, load(c.A, {c.vi}))),
                  "in prim @copy, block \"B\": store to buffer %D, which is not a parameter");
  expectPrimError(c.func(store(c.B, {c.vi}, load(other, {c.vi}))),
                  "load from buffer %D, which is not a parameter");
}

TEST(VerifierPrim, BlockBufferOnlyInsideItsBlock) {
  Copy c;
  Buffer tmp = buf("tmp", {lit(4)}, f32, StorageScope::local);
  Stmt block = makeBlock("B", {spatial(c.vi, lit(4), c.i)}, {}, {}, store(tmp, {c.vi}, lit(1.0f)), nullptr,
                         nullptr, {tmp});
  Stmt after = makeFor(makeVar("j"), lit(4), store(c.B, {lit(0)}, load(tmp, {lit(0)})));
  expectPrimError(prim("f", {c.A, c.B}, makeSeq({makeFor(c.i, lit(4), block), after})),
                  "in prim @f: load from buffer %tmp, which is not a parameter");
}

// As in TVM, a block's regions describe what it accesses outside itself:
// they may not name a buffer the block allocates.
TEST(VerifierPrim, RegionsDoNotNameTheBlocksOwnBuffers) {
  Copy c;
  Buffer tmp = buf("tmp", {lit(4)}, f32, StorageScope::local);
  Stmt body = makeSeq({store(tmp, {c.vi}, load(c.A, {c.vi})), store(c.B, {c.vi}, load(tmp, {c.vi}))});
  auto withRegions = [&](std::vector<BufferRegion> reads, std::vector<BufferRegion> writes) {
    Stmt block = makeBlock("B", {spatial(c.vi, lit(4), c.i)}, std::move(reads), std::move(writes), body,
                           nullptr, nullptr, {tmp});
    return prim("own", {c.A, c.B}, makeFor(c.i, lit(4), block));
  };
  EXPECT_NO_THROW(verifyPrimFunc(withRegions({point(c.A, {c.vi})}, {point(c.B, {c.vi})})));
  expectPrimError(withRegions({point(c.A, {c.vi}), point(tmp, {c.vi})}, {point(c.B, {c.vi})}),
                  "block \"B\": read region of %tmp, which the block allocates itself");
  expectPrimError(withRegions({point(c.A, {c.vi})}, {whole(tmp)}),
                  "write region of %tmp, which the block allocates itself");
}

TEST(VerifierPrim, UnboundSymbolicDimension) {
  Var n = makeVar("n");
  Buffer A = buf("A", {n * 2});
  expectPrimError(prim("f", {A}, store(A, {lit(0)}, lit(0.0f))),
                  "parameter %A: symbolic dimension n is not bound by a parameter");
}

// ---- prim funcs: variables and scopes

TEST(VerifierPrim, VariableNotInScope) {
  Copy c;
  Var ghost = makeVar("ghost");
  expectPrimError(c.func(store(c.B, {ghost}, lit(0.0f))), "block \"B\": variable %ghost is not in scope");
}

TEST(VerifierPrim, ShadowingIsAnError) {
  Copy c;
  Var j = makeVar("j");
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, lit(4), makeFor(j, lit(4), store(c.B, {j}, lit(0.0f))))),
                  "in prim @f: loop variable %j is already defined in an enclosing scope");
  // An iteration variable that reuses the loop variable's node.
  expectPrimError(c.func(c.body(), {spatial(c.i, lit(4), c.i)}),
                  "block \"B\": iteration variable %i is already defined in an enclosing scope");
}

TEST(VerifierPrim, LoopAndIterVarsAreI64) {
  Copy c;
  Var j = makeVar("j", DType::i32);
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, lit(4), store(c.B, {lit(0)}, lit(0.0f)))),
                  "loop variable %j has dtype i32, not i64");
  Var vi32 = makeVar("vi", DType::i32);
  expectPrimError(c.func(store(c.B, {vi32}, lit(0.0f)), {spatial(vi32, lit(4), c.i)}),
                  "iteration variable %vi has dtype i32, not i64");
}

TEST(VerifierPrim, Extents) {
  Copy c;
  Var j = makeVar("j");
  Stmt s = store(c.B, {lit(0)}, lit(0.0f));
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, lit(0), s)),
                  "extent of loop %j is 0; it must be positive");
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, makeInt(4, DType::i32), s)),
                  "extent of loop %j has dtype i32, not i64");
  expectPrimError(c.func(c.body(), {spatial(c.vi, lit(-1), c.i)}),
                  "extent of iteration variable %vi is -1; it must be positive");
}

TEST(VerifierPrim, ThreadTags) {
  Copy c;
  Var j = makeVar("j");
  Stmt s = store(c.B, {j}, lit(0.0f));
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, lit(4), s, LoopKind::thread_binding, "threadIdx.w")),
                  "loop %j is bound to invalid thread tag \"threadIdx.w\"");
  expectPrimError(prim("f", {c.A, c.B}, makeFor(j, lit(4), s, LoopKind::parallel, "blockIdx.x")),
                  "loop %j is parallel but has thread tag \"blockIdx.x\"");
}

TEST(VerifierPrim, BindingUsesOnlyEnclosingLoopVars) {
  // The message of the brief, verbatim.
  Var n = makeVar("n");
  Buffer C = buf("C", {lit(4)});
  Var i = makeVar("i"), x = makeVar("x"), vk = makeVar("vk");
  Stmt block = makeBlock("C", {reduce(vk, lit(4), x)}, {}, {}, store(C, {vk}, lit(0.0f)));
  expectPrimError(
      prim("mm", {C}, makeFor(i, lit(4), block)),
      "in prim @mm, block \"C\": iteration variable %vk is bound to %x, which is not a loop variable "
      "of an enclosing loop");
  // A loop variable outside the enclosing block is hidden from a nested binding.
  Var vo = makeVar("vo"), j = makeVar("j"), vin = makeVar("vin");
  Stmt inner = makeBlock("inner", {spatial(vin, lit(4), i)}, {}, {}, store(C, {vin}, lit(0.0f)));
  Stmt outer = makeBlock("outer", {spatial(vo, lit(4), i)}, {}, {}, makeFor(j, lit(1), inner));
  expectPrimError(prim("nest", {C}, makeFor(i, lit(4), outer)),
                  "block \"inner\": iteration variable %vin is bound to %i, which is not a loop variable");
}

TEST(VerifierPrim, BlockBodyUsesIterVarsNotLoopVars) {
  Copy c;
  expectPrimError(c.func(store(c.B, {c.i}, load(c.A, {c.vi}))),
                  "block \"B\": loop variable %i of a loop outside the block is used inside it");
  // Nor the iteration variables of an outer block inside a nested block.
  Var vo = makeVar("vo"), vin = makeVar("vin"), j = makeVar("j");
  Stmt inner = makeBlock("inner", {spatial(vin, lit(1), j)}, {}, {}, store(c.B, {vo}, lit(0.0f)));
  Stmt outer = makeBlock("outer", {spatial(vo, lit(4), c.i)}, {}, {}, makeFor(j, lit(1), inner));
  expectPrimError(prim("nest", {c.A, c.B}, makeFor(c.i, lit(4), outer)),
                  "block \"inner\": iteration variable %vo of block \"outer\" is used inside a nested block");
}

TEST(VerifierPrim, PredicateUsesLoopVarsAndIsBool) {
  Copy c;
  auto withPredicate = [&](PrimExpr pred) {
    Stmt block = makeBlock("B", {spatial(c.vi, lit(4), c.i)}, {}, {}, c.body(), nullptr, pred);
    return prim("p", {c.A, c.B}, makeFor(c.i, lit(4), block));
  };
  EXPECT_NO_THROW(verifyPrimFunc(withPredicate(c.i < 3)));
  expectPrimError(withPredicate(c.i + 1), "block \"B\": block predicate has dtype i64, not bool");
  expectPrimError(withPredicate(c.vi < 3), "variable %vi is not in scope");
}

// ---- prim funcs: accesses

TEST(VerifierPrim, AccessRank) {
  Copy c;
  expectPrimError(c.func(store(c.B, {c.vi}, load(c.A, {c.vi, c.vi}))),
                  "load from %A has 2 index(es), but the buffer has rank 1");
  expectPrimError(c.func(store(c.B, {}, load(c.A, {c.vi}))),
                  "store to %B has 0 index(es), but the buffer has rank 1");
}

TEST(VerifierPrim, StoreDType) {
  Copy c;
  expectPrimError(c.func(store(c.B, {c.vi}, c.vi)), "stores a value of dtype i64 into %B of dtype f32");
}

TEST(VerifierPrim, IndicesAreIntegers) {
  Copy c;
  // The factory refuses a float index, so build the node directly.
  PrimExpr bad = std::make_shared<LoadNode>(f32, c.A, std::vector<PrimExpr>{lit(0.0f)});
  expectPrimError(c.func(store(c.B, {c.vi}, bad)), "index 0 of %A has dtype f32, not an integer");
}

TEST(VerifierPrim, ConstantIndexOutOfBounds) {
  Copy c;
  expectPrimError(c.func(store(c.B, {lit(4)}, load(c.A, {c.vi}))),
                  "index 4 of %B is out of bounds [0, 4) in dimension 0");
  expectPrimError(c.func(store(c.B, {c.vi}, load(c.A, {lit(-1)}))), "index -1 of %A is out of bounds");
}

TEST(VerifierPrim, Regions) {
  Copy c;
  auto withReads = [&](std::vector<BufferRegion> reads) {
    Stmt block = makeBlock("B", {spatial(c.vi, lit(4), c.i)}, std::move(reads), {}, c.body());
    return prim("r", {c.A, c.B}, makeFor(c.i, lit(4), block));
  };
  expectPrimError(withReads({BufferRegion{c.A, {}}}),
                  "read region of %A has 0 range(s), but the buffer has rank 1");
  expectPrimError(withReads({BufferRegion{c.A, {Range{makeInt(0, DType::i32), lit(1)}}}}),
                  "read region min of %A has dtype i32, not i64");
  expectPrimError(withReads({point(buf("Z", {lit(4)}), {c.vi})}),
                  "read region of buffer %Z, which is not a parameter");
}

TEST(VerifierPrim, InitNeedsReduceIterVar) {
  Copy c;
  expectPrimError(c.func(c.body(), {}, store(c.B, {c.vi}, lit(0.0f))),
                  "block \"B\": block has an init part but no reduce iteration variable");
}

// ---- prim funcs: expression dtypes

TEST(VerifierPrim, IfConditionIsBool) {
  Copy c;
  expectPrimError(c.func(makeIf(c.vi + 0, c.body())), "if condition has dtype i64, not bool");
}

TEST(VerifierPrim, ExpressionDTypesRechecked) {
  Copy c;
  auto storeValue = [&](PrimExpr v) { return c.func(store(c.B, {c.vi}, std::move(v))); };
  PrimExpr a = load(c.A, {c.vi});
  expectPrimError(storeValue(std::make_shared<BinaryNode>(f32, BinaryOp::Add, a, PrimExpr(c.vi))),
                  "operands of '+' have different dtypes: f32 and i64");
  expectPrimError(storeValue(std::make_shared<BinaryNode>(f32, BinaryOp::LT, a, a)),
                  "expression has dtype f32, expected bool");
  expectPrimError(storeValue(std::make_shared<SelectNode>(f32, a, a, a)),
                  "select condition must be bool, not f32");
  expectPrimError(storeValue(std::make_shared<CallNode>(f32, "nosuch", std::vector<PrimExpr>{a})),
                  "unknown intrinsic 'nosuch'");
  expectPrimError(storeValue(std::make_shared<CallNode>(f32, "pow", std::vector<PrimExpr>{a})),
                  "intrinsic 'pow' takes 2 argument(s), not 1");
  expectPrimError(storeValue(std::make_shared<FloatImmNode>(DType::i64, 1.0)), "float literal of dtype i64");
}

// ---- prim funcs: traces

TEST(VerifierPrim, TraceRefsDefinedEarlier) {
  PrimFunc f = Copy().func();
  f.trace.insts.push_back(TraceInst{"get_loops", {TraceRef{"b0"}}, {}, {"l1"}, std::nullopt});
  expectPrimError(
      f, "in prim @copy, trace: instruction 0 (get_loops) uses %b0, which no earlier instruction defines");
  f.trace.insts.clear();
  f.trace.insts.push_back(TraceInst{"get_block", {"B"}, {}, {"b0"}, std::nullopt});
  f.trace.insts.push_back(
      TraceInst{"split", {AttrValue(AttrValue::List{TraceRef{"v9"}})}, {}, {"l2"}, std::nullopt});
  expectPrimError(f, "instruction 1 (split) uses %v9");
  f.trace.insts[1] = TraceInst{"get_block", {"B"}, {}, {"b0"}, std::nullopt};
  expectPrimError(f, "instruction 1 (get_block) redefines %b0");
}

TEST(VerifierModule, PrimErrorsNameTheFunction) {
  PrimFunc dense = densePrim();
  dense.params.pop_back();  // %Y is now written but not a parameter
  Module m;
  m.functions = {dense};
  expectModuleError(m,
                    "in prim @dense, block \"dense\": write region of buffer %Y, which is not a parameter");
}

// ---- source locations

TEST(Verifier, ErrorCarriesSourceLocation) {
  Mlp mlp;
  mlp.binding("w").value.weight.clear();
  SourceMap sm;
  sm.file = "mlp.ir";
  sm.text =
      "mlcc.ir 1\ngraph @main(%x: f32[n, 16]) -> (f32[n, 8], f32[2]) {\n  %w: f32[8, 16] = const \"\"\n";
  sm.locs[mlp.var("w").get()] = mlcc::SourceLoc{"mlp.ir", 3, 3};
  try {
    verifyModule(mlp.m, mlcc::ir::structuralChecksOnly(), &sm);
    FAIL() << "expected an error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_EQ(e.loc().col, 3);
    EXPECT_EQ(e.source_line(), "  %w: f32[8, 16] = const \"\"");
    EXPECT_NE(
        e.format().find("mlp.ir:3:3: error: in graph @main, binding %w: constant without a weight name"),
        std::string::npos)
        << e.format();
  }
  // A prim func error falls back to the function's location.
  PrimFunc f = Copy().func(store(buf("D", {lit(4)}), {lit(0)}, lit(0.0f)));
  SourceMap psm;
  psm.file = "copy.ir";
  psm.text = "mlcc.ir 1\nprim @copy(%A: f32[4], %B: f32[4]) {\n";
  psm.locs[&f] = mlcc::SourceLoc{"", 2, 1};
  try {
    verifyPrimFunc(f, &psm);
    FAIL() << "expected an error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.loc().file, "copy.ir");
    EXPECT_EQ(e.loc().line, 2);
    EXPECT_EQ(e.source_line(), "prim @copy(%A: f32[4], %B: f32[4]) {");
  }
  // Without a source map: no location.
  expectError([&] { verifyPrimFunc(f); }, "store to buffer %D");
}

// ---- accesses provably out of bounds

TEST(VerifierBounds, StoreOutOfBoundsAtSomeIteration) {
  Copy c;
  expectPrimError(c.func(store(c.B, {c.vi + 1}, load(c.A, {c.vi}))),
                  "block \"B\": store to %B is out of bounds: index 4 in dimension 0 of size 4 at %i = 3");
  // Through a nested block's binding and a second loop.
  Var j = makeVar("j"), vo = makeVar("vo"), vin = makeVar("vin");
  Stmt inner = makeBlock("inner", {spatial(vin, lit(8), vo * 2 + j)}, {}, {}, store(c.B, {vin}, lit(2.0f)));
  Stmt outer = makeBlock("outer", {spatial(vo, lit(4), c.i)}, {}, {}, makeFor(j, lit(2), inner));
  expectPrimError(
      prim("nested", {c.A, c.B}, makeFor(c.i, lit(4), outer)),
      "block \"inner\": store to %B is out of bounds: index 6 in dimension 0 of size 4 at %i = 3, %j = 0");
}

TEST(VerifierBounds, LoadOutOfBounds) {
  Copy c;
  expectPrimError(c.func(store(c.B, {c.vi}, load(c.A, {c.vi - 1}))),
                  "load from %A is out of bounds: index -1 in dimension 0 of size 4 at %i = 0");
  // A load in an index is checked too.
  Buffer idx = buf("idx", {lit(4)}, DType::i64);
  expectPrimError(prim("gather", {c.A, idx, c.B},
                       makeFor(c.i, lit(4), store(c.B, {c.i}, load(c.A, {load(idx, {c.i * 2})})))),
                  "load from %idx is out of bounds: index 6 in dimension 0 of size 4 at %i = 3");
}

TEST(VerifierBounds, GuardedOrUnprovableAccessesPass) {
  Copy c;
  // Guarded by an if, a block predicate, or a select branch.
  EXPECT_NO_THROW(verifyPrimFunc(c.func(makeIf(lt(c.vi, 3), store(c.B, {c.vi + 1}, lit(1.0f))))));
  PrimFunc pred = prim("pred", {c.A, c.B},
                       makeFor(c.i, lit(5),
                               makeBlock("B", {spatial(c.vi, lit(4), c.i)}, {}, {},
                                         store(c.B, {c.vi}, lit(1.0f)), nullptr, lt(c.i, 4))));
  EXPECT_NO_THROW(verifyPrimFunc(pred));
  EXPECT_NO_THROW(
      verifyPrimFunc(c.func(store(c.B, {c.vi}, makeSelect(gt(c.vi, 0), load(c.A, {c.vi - 1}), lit(0.0f))))));
  // A loop of symbolic extent may not run at all; an index read from memory is unknown.
  Var n = makeVar("n");
  Buffer X = buf("X", {n}), Y = buf("Y", {lit(4)});
  EXPECT_NO_THROW(verifyPrimFunc(prim("sym", {X, Y}, makeFor(c.i, n, store(Y, {c.i + 7}, lit(1.0f))))));
  EXPECT_NO_THROW(verifyPrimFunc(prim("sym_dim", {X, Y}, makeFor(c.i, n, store(X, {c.i + 1}, lit(1.0f))))));
  Buffer idx = buf("idx", {lit(4)}, DType::i64);
  EXPECT_NO_THROW(verifyPrimFunc(prim(
      "gather", {c.A, idx, c.B}, makeFor(c.i, lit(4), store(c.B, {c.i}, load(c.A, {load(idx, {c.i})}))))));
  // In bounds everywhere: the extremes exactly at the edges.
  EXPECT_NO_THROW(verifyPrimFunc(c.func(store(c.B, {lit(3) - c.vi}, load(c.A, {c.vi % 4})))));
}

TEST(VerifierBounds, LocatedInTheSource) {
  const std::string text =
      "mlcc.ir 1\n"
      "prim @shift(%x: f32[8], %y: f32[8]) {\n"
      "  for %i in 0..8 {\n"
      "    block \"shift\" (%vi = spatial(8, %i)) {\n"
      "      reads(%x[%vi])\n"
      "      writes(%y[%vi])\n"
      "      %y[%vi * 100000 + 1] = %x[%vi]\n"
      "    }\n"
      "  }\n"
      "}\n";
  SourceMap sm;
  Module m = parseModule(text, "shift.ir", &sm);
  try {
    verifyModule(m, mlcc::ir::structuralChecksOnly(), &sm);
    FAIL() << "expected an error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.loc().file, "shift.ir");
    EXPECT_EQ(e.loc().line, 7);
    EXPECT_EQ(e.loc().col, 7);
    EXPECT_NE(e.format().find("shift.ir:7:7: error: in prim @shift, block \"shift\": store to %y is out of "
                              "bounds: index 700001 in dimension 0 of size 8 at %i = 7"),
              std::string::npos)
        << e.format();
  }
}

}  // namespace
