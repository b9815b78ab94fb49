// The legalize pass (LegalizeOps + FuseTIR): op bindings and calls of fused
// groups become call_tir of prim funcs that verify, are named after their
// ops and deduplicated structurally, keep symbolic dimensions, and compute
// what the graph computed (interpreted before and after on random inputs);
// library-dispatched groups become call_extern.
#include <gtest/gtest.h>

#include <cmath>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/te.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"

using namespace mlcc;

namespace {

// Stand-in compute definitions for the few ops these tests use, installed
// only where the op registry has none yet (the op families' own definitions
// are written concurrently; these tests are about the pass, not the ops).
ops::OpDef* mutableOp(const std::string& name) { return const_cast<ops::OpDef*>(ops::findOp(name)); }

ir::PrimExpr broadcastLoad(const ir::Buffer& b, const ir::te::Indices& out) {
  std::vector<ir::PrimExpr> idx;
  size_t offset = out.size() - b->shape.size();
  for (size_t d = 0; d < b->shape.size(); ++d) {
    int64_t c;
    bool one = ir::asConstInt(b->shape[d], &c) && c == 1;
    idx.push_back(one ? ir::makeInt(0) : ir::PrimExpr(out[offset + d]));
  }
  return ir::makeLoad(b, idx);
}

void installStandInLegalizations() {
  auto unary = [](const std::string& name, std::function<ir::PrimExpr(ir::PrimExpr)> f) {
    ops::OpDef* def = mutableOp(name);
    if (!def || def->legalize) return;
    def->legalize = [name, f](const std::vector<ir::Type>& in, const ir::Type& out, const ir::Attrs&) {
      ir::te::FuncBuilder fb(name);
      ir::Buffer x = fb.input("x", in[0]);
      ir::Buffer y = fb.compute(name, out.shape, out.dtype, [&](const ir::te::Indices& i) {
        return f(ir::makeLoad(x, std::vector<ir::PrimExpr>(i.begin(), i.end())));
      });
      return fb.build({y});
    };
  };
  unary("relu", [](ir::PrimExpr x) { return ir::makeBinary(ir::BinaryOp::Max, x, ir::makeFloat(0.0)); });
  unary("exp", [](ir::PrimExpr x) { return ir::makeCall("exp", {x}); });
  unary("negative", [](ir::PrimExpr x) { return ir::makeUnary(ir::UnaryOp::Neg, x); });
  auto binary = [](const std::string& name, ir::BinaryOp op) {
    ops::OpDef* def = mutableOp(name);
    if (!def || def->legalize) return;
    def->legalize = [name, op](const std::vector<ir::Type>& in, const ir::Type& out, const ir::Attrs&) {
      ir::te::FuncBuilder fb(name);
      ir::Buffer a = fb.input("a", in[0]), b = fb.input("b", in[1]);
      ir::Buffer y = fb.compute(name, out.shape, out.dtype, [&](const ir::te::Indices& i) {
        return ir::makeBinary(op, broadcastLoad(a, i), broadcastLoad(b, i));
      });
      return fb.build({y});
    };
  };
  binary("add", ir::BinaryOp::Add);
  binary("multiply", ir::BinaryOp::Mul);
}

ir::Module legalized(const std::string& text) {
  installStandInLegalizations();
  ir::Module m = ir::parseModule(text, "m.ir");
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  transform::PassContext ctx;
  ctx.verify_each = true;
  transform::runPipeline(m, transform::parsePipeline("legalize"), ctx);
  return m;
}

// Graph functions hold only data movement and calls of prim funcs/externs.
void expectOnlyLowered(const ir::Module& m) {
  for (const auto& fn : m.functions)
    if (const auto* g = std::get_if<ir::GraphFunc>(&fn))
      for (const auto& block : g->blocks)
        for (const auto& b : block.bindings) {
          auto k = b.value.kind;
          EXPECT_TRUE(k == ir::ValueKind::CallTir || k == ir::ValueKind::CallExtern ||
                      k == ir::ValueKind::Const || k == ir::ValueKind::Tuple ||
                      k == ir::ValueKind::TupleGet || k == ir::ValueKind::Alias)
              << "@" << g->name << " %" << b.var->name << " is " << ir::valueKindName(k);
        }
}

std::vector<std::string> primNames(const ir::Module& m) {
  std::vector<std::string> names;
  for (const auto& fn : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&fn)) names.push_back(p->name);
  return names;
}

// Runs @main of `before` and `after` on the same random inputs (symbolic
// dimensions bound to `dim`) and expects the same outputs.
void expectSameResults(const ir::Module& before, const ir::Module& after, int64_t dim = 3) {
  interp::Interpreter a(before), b(after);
  std::vector<interp::NamedTensor> inputs;
  uint64_t seed = 7;
  for (const auto& spec : a.inputs("main")) {
    std::vector<int64_t> shape;
    for (const auto& d : spec.shape) {
      int64_t c;
      shape.push_back(ir::asConstInt(d, &c) ? c : dim);
    }
    inputs.push_back({spec.name, interp::randomTensor(spec.dtype, shape, seed++)});
  }
  auto ra = a.run("main", inputs), rb = b.run("main", inputs);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    ASSERT_EQ(ra[i].tensor.shape(), rb[i].tensor.shape());
    for (int64_t j = 0; j < ra[i].tensor.numel(); ++j)
      EXPECT_NEAR(ra[i].tensor.at(j), rb[i].tensor.at(j), 1e-5 * (1 + std::fabs(ra[i].tensor.at(j))))
          << "output " << i << " element " << j;
  }
}

const char* kOps = R"(mlcc.ir 1

graph @main(%x: f32[n, 4], %b: f32[4], %z: f32[2, 3]) -> (f32[n, 4], f32[2, 3]) {
  dataflow {
    %a: f32[n, 4] = relu(%x)
    %c: f32[n, 4] = add(%a, %b)
    %d: f32[n, 4] = relu(%c)
    %e: f32[n, 4] = exp(%d)
    %f: f32[2, 3] = relu(%z)
  }
  return (%e, %f)
}
)";

const char* kGroups = R"(mlcc.ir 1

graph @main(%x: f32[n, 4], %b: f32[4], %b2: f32[4], %z: f32[2, 3], %bz: f32[3]) -> (f32[n, 4], f32[2, 3]) {
  dataflow {
    %h: f32[n, 4] = call @fused_add_relu(%x, %b)
    %h2: f32[n, 4] = call @fused_add_relu1(%h, %b2)
    %r: f32[n, 4] = relu(%h2)
    %e: f32[n, 4] = call @fused_exp_relu_relu(%r)
    %y: f32[2, 3] = call @fused_add_relu2(%z, %bz)
  }
  return (%e, %y)
}

graph @fused_add_relu(%p: f32[m, 4], %q: f32[4]) -> f32[m, 4] attrs(primitive = true) {
  dataflow {
    %s: f32[m, 4] = add(%p, %q)
    %t: f32[m, 4] = relu(%s)
  }
  return %t
}

graph @fused_add_relu1(%p: f32[k, 4], %q: f32[4]) -> f32[k, 4] attrs(primitive = true) {
  dataflow {
    %s: f32[k, 4] = add(%p, %q)
    %t: f32[k, 4] = relu(%s)
  }
  return %t
}

graph @fused_exp_relu_relu(%p: f32[m, 4]) -> f32[m, 4] attrs(primitive = true) {
  dataflow {
    %s: f32[m, 4] = exp(%p)
    %t: f32[m, 4] = relu(%s)
    %u: f32[m, 4] = relu(%t)
  }
  return %u
}

graph @fused_add_relu2(%p: f32[2, 3], %q: f32[3]) -> f32[2, 3] attrs(primitive = true) {
  dataflow {
    %s: f32[2, 3] = add(%p, %q)
    %t: f32[2, 3] = relu(%s)
  }
  return %t
}
)";

// A symbolic batch that a flattening reshape leaves only inside dimensions
// (`batch * 17`, as PyTorch exports a dense layer over a batch of tokens).
const char* kFlattenedBatch = R"(mlcc.ir 1

graph @main(%x: f32[batch, 17, 32], %w: f32[32, 8]) -> f32[17, batch * 2, 4] {
  dataflow {
    %f: f32[batch * 17, 32] = reshape(%x, shape = [batch * 17, 32])
    %d: f32[batch * 17, 8] = matmul(%f, %w)
    %r: f32[17, batch * 2, 4] = reshape(%d, shape = [17, batch * 2, 4])
  }
  return %r
}
)";

}  // namespace

// An op whose operands and result have a symbolic variable only inside
// dimensions gets a prim func that binds it through one of them (the
// matmul's `batch * 17` a variable of its own): every prim func verifies,
// each binding its variables from whole dimensions of its parameters, and
// the module computes what the graph did at two batch sizes.
TEST(Legalize, SymbolsOnlyInsideDimensionsAreBoundThroughAMultiple) {
  ir::Module before = ir::parseModule(kFlattenedBatch, "m.ir");
  ir::Module m = legalized(kFlattenedBatch);
  expectOnlyLowered(m);
  const ir::PrimFunc* matmul = m.findPrim("matmul");
  ASSERT_TRUE(matmul);
  EXPECT_EQ(matmul->params[0]->shape[0]->kind, ir::ExprKind::Var) << ir::printModule(m);
  expectSameResults(before, m, 2);
  expectSameResults(before, m, 3);
}

TEST(Legalize, OpsBecomeCallTirOfNamedDedupedPrimFuncs) {
  installStandInLegalizations();
  ir::Module before = ir::parseModule(kOps, "m.ir");
  ir::Module m = legalized(kOps);
  expectOnlyLowered(m);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  // The two relus on f32[n, 4] share one prim func; the one on f32[2, 3] differs.
  EXPECT_EQ(primNames(m), (std::vector<std::string>{"relu", "add", "exp", "relu_1"}));
  std::string text = ir::printModule(m);
  EXPECT_NE(text.find("%a: f32[n, 4] = call_tir @relu(%x)"), std::string::npos) << text;
  EXPECT_NE(text.find("%d: f32[n, 4] = call_tir @relu(%c)"), std::string::npos) << text;
  EXPECT_NE(text.find("%f: f32[2, 3] = call_tir @relu_1(%z)"), std::string::npos) << text;
  // The symbolic batch stays symbolic in the prim funcs.
  const ir::PrimFunc* relu = m.findPrim("relu");
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->params[0]->shape[0]->kind, ir::ExprKind::Var);
  // Round trip through the text keeps the module.
  ir::Module again = ir::parseModule(text, "again.ir");
  EXPECT_EQ(ir::printModule(again), text);
  expectSameResults(before, m, 3);
  expectSameResults(before, m, 5);
}

TEST(Legalize, FusedGroupsBecomeOnePrimFuncEach) {
  installStandInLegalizations();
  ir::Module before = ir::parseModule(kGroups, "m.ir");
  ir::Module m = legalized(kGroups);
  expectOnlyLowered(m);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  // Sub-functions are gone; the two structurally equal groups share a prim
  // func; the static one gets its own, numbered, name.
  for (const auto& fn : m.functions) {
    if (const auto* g = std::get_if<ir::GraphFunc>(&fn)) {
      EXPECT_EQ(g->name, "main");
    }
  }
  EXPECT_EQ(primNames(m),
            (std::vector<std::string>{"fused_add_relu", "relu", "fused_exp_relu_relu", "fused_add_relu_1"}));
  std::string text = ir::printModule(m);
  EXPECT_NE(text.find("%h: f32[n, 4] = call_tir @fused_add_relu(%x, %b)"), std::string::npos) << text;
  EXPECT_NE(text.find("%h2: f32[n, 4] = call_tir @fused_add_relu(%h, %b2)"), std::string::npos) << text;
  EXPECT_NE(text.find("%y: f32[2, 3] = call_tir @fused_add_relu_1(%z, %bz)"), std::string::npos) << text;
  // Params are the group's params then its output; intermediates are allocs;
  // block names are unique within the function.
  const ir::PrimFunc* f = m.findPrim("fused_exp_relu_relu");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->params.size(), 2u);
  EXPECT_EQ(f->params[0]->name, "p");
  EXPECT_EQ(f->params[1]->name, "u");
  ASSERT_EQ(f->allocs.size(), 2u);
  EXPECT_EQ(f->allocs[0]->name, "s");
  EXPECT_EQ(f->allocs[1]->name, "t");
  EXPECT_EQ(f->params[0]->shape[0]->kind, ir::ExprKind::Var);  // m stays symbolic
  EXPECT_EQ(f->params[0]->shape[0], f->params[1]->shape[0]);   // ... and is one variable
  std::string ftext = ir::printFunction(ir::Function(*f));
  EXPECT_NE(ftext.find("block \"relu\""), std::string::npos) << ftext;
  EXPECT_NE(ftext.find("block \"relu_1\""), std::string::npos) << ftext;
  ir::Module again = ir::parseModule(text, "again.ir");
  EXPECT_EQ(ir::printModule(again), text);
  expectSameResults(before, m, 3);
  expectSameResults(before, m, 1);
}

TEST(Legalize, ReturnedParamsAndTuplesInGroupsAreCopied) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[n, 4]) -> (f32[n, 4], f32[n, 4], f32[n, 4]) {
  dataflow {
    %t: (f32[n, 4], f32[n, 4], f32[n, 4]) = call @g(%x)
    %a: f32[n, 4] = %t[0]
    %b: f32[n, 4] = %t[1]
    %c: f32[n, 4] = %t[2]
  }
  return (%a, %b, %c)
}

graph @g(%p: f32[m, 4]) -> (f32[m, 4], f32[m, 4], f32[m, 4]) attrs(primitive = true) {
  dataflow {
    %s: f32[m, 4] = negative(%p)
    %s2: f32[m, 4] = %s
  }
  return (%s, %p, %s2)
}
)";
  installStandInLegalizations();
  ir::Module before = ir::parseModule(text, "m.ir");
  ir::Module m = legalized(text);
  expectOnlyLowered(m);
  EXPECT_EQ(primNames(m), (std::vector<std::string>{"fused_negative"}));
  expectSameResults(before, m, 2);
}

// A group written as in TVM's tutorial (the weight transposed by
// permute_dims, so the pattern names w before x) is a dense: call_extern
// gets (x, w, b) in the kernel's order, and computes what the graph did even
// with square shapes, where a swapped order would go unnoticed by shapes.
TEST(Legalize, CodegenGroupsBecomeCallExternWithOperandsByRole) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[4, 4], %w: f32[4, 4], %b: f32[4]) -> f32[4, 4] {
  dataflow {
    %y: f32[4, 4] = call @fused_permute_dims_matmul_add_relu(%w, %x, %b)
  }
  return %y
}

graph @fused_permute_dims_matmul_add_relu(%p: f32[4, 4], %q: f32[4, 4], %r: f32[4]) -> f32[4, 4] attrs(codegen = "blas.dense_bias_relu", pattern = "dense", primitive = true) {
  dataflow {
    %t: f32[4, 4] = permute_dims(%p)
    %s: f32[4, 4] = matmul(%q, %t)
    %u: f32[4, 4] = add(%r, %s)
    %v: f32[4, 4] = relu(%u)
  }
  return %v
}
)";
  ir::Module before = ir::parseModule(text, "m.ir");
  ir::Module m = legalized(text);
  expectOnlyLowered(m);
  ASSERT_EQ(m.functions.size(), 1u);
  std::string out = ir::printModule(m);
  EXPECT_NE(out.find("%y: f32[4, 4] = call_extern \"blas.dense_bias_relu\"(%x, %w, %b)\n"), std::string::npos)
      << out;
  expectSameResults(before, m);
}

// A group that does not compute exactly what its kernel computes is refused:
// once an epilogue the kernel lacks was silently dropped, once a matmul's
// operand that is not transposed went to a dense kernel.
TEST(Legalize, CodegenGroupsThatAreNotTheKernelAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"%s: f32[4, 4] = dense(%p, %q)\n    %t: f32[4, 4] = add(%s, %r)\n    %u: f32[4, 4] = leaky_relu(%t, "
       "alpha = 0.25)",
       "blas.dense_bias computes dense(x, w) + bias, but the ops compute leaky_relu(add(dense(%p, %q), %r))"},
      {"%s: f32[4, 4] = matmul(%p, %q)\n    %u: f32[4, 4] = add(%s, %r)",
       "blas.dense_bias computes dense(x, w) + bias, but the ops compute add(matmul(%p, %q), %r)"},
      {"%t: f32[4, 4] = permute_dims(%q, axes = [0, 1])\n    %s: f32[4, 4] = matmul(%p, %t)\n    %u: f32[4, "
       "4] = add(%s, %r)",
       "does not swap the two axes of a matrix"},
  };
  for (const auto& [body, message] : cases) {
    std::string text = std::string(R"(mlcc.ir 1

graph @main(%x: f32[4, 4], %w: f32[4, 4], %b: f32[4]) -> f32[4, 4] {
  dataflow {
    %y: f32[4, 4] = call @g(%x, %w, %b)
  }
  return %y
}

graph @g(%p: f32[4, 4], %q: f32[4, 4], %r: f32[4]) -> f32[4, 4] attrs(codegen = "blas.dense_bias", primitive = true) {
  dataflow {
    )") + body + R"(
  }
  return %)" + (std::string(body).find("%u") != std::string::npos ? "u" : "t") +
                       R"(
}
)";
    try {
      ir::Module m = ir::parseModule(text, "m.ir");
      transform::PassContext ctx;
      transform::runPipeline(m, transform::parsePipeline("legalize"), ctx);
      ADD_FAILURE() << "expected an error for\n" << text;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(message), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("@g (codegen = \"blas.dense_bias\")"), std::string::npos) << e.message();
    }
  }
}

TEST(Legalize, OpsWithoutComputeDefinitionAreNamed) {
  const char* text = R"(mlcc.ir 1

graph @main(%x: f32[n, 4]) -> f32[n, 4] {
  dataflow {
    %y: f32[n, 4] = negative(%x)
  }
  return %y
}
)";
  installStandInLegalizations();
  ops::OpDef* def = mutableOp("negative");
  auto saved = def->legalize;
  def->legalize = nullptr;
  try {
    ir::Module m = ir::parseModule(text, "m.ir");
    transform::PassContext ctx;
    transform::runPipeline(m, transform::parsePipeline("legalize"), ctx);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("op 'negative' cannot be lowered to TensorIR yet"), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("%y"), std::string::npos) << e.message();
  }
  def->legalize = saved;
}

// FuseTIR over a group whose first member is a call_tir of a prim func the
// user wrote (MLC 7.5): its body is merged with the relu's into one prim
// func, both by legalize and by fuse-tir alone (which leaves the plain relu
// outside the group for legalize); a scheduled callee is refused.
TEST(Legalize, GroupsWithCallTirOfUserKernelsAreFused) {
  const std::string text = R"(mlcc.ir 1

graph @main(%x: f32[4, 8]) -> f32[4, 8] {
  dataflow {
    %y: f32[4, 8] = call @fused_scale_relu(%x)
    %z: f32[4, 8] = relu(%y)
  }
  return %z
}

graph @fused_scale_relu(%p: f32[4, 8]) -> f32[4, 8] attrs(primitive = true) {
  dataflow {
    %s: f32[4, 8] = call_tir @scale(%p)
    %t: f32[4, 8] = relu(%s)
  }
  return %t
}

prim @scale(%a: f32[4, 8], %b: f32[4, 8]) {
  for %i in 0..4 {
    for %j in 0..8 {
      block "scale" (%vi = spatial(4, %i), %vj = spatial(8, %j)) {
        reads(%a[%vi, %vj])
        writes(%b[%vi, %vj])
        %b[%vi, %vj] = %a[%vi, %vj] * -3.0 + 1.0
      }
    }
  }
}
)";
  ir::Module before = ir::parseModule(text, "m.ir");
  ir::Module m = legalized(text);
  expectOnlyLowered(m);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  std::string out = ir::printModule(m);
  EXPECT_NE(out.find("%y: f32[4, 8] = call_tir @fused_scale_relu(%x)"), std::string::npos) << out;
  const ir::PrimFunc* f = m.findPrim("fused_scale_relu");
  ASSERT_TRUE(f);
  std::string ftext = ir::printFunction(ir::Function(*f));
  EXPECT_NE(ftext.find("block \"scale\""), std::string::npos) << ftext;
  EXPECT_NE(ftext.find("block \"relu\""), std::string::npos) << ftext;
  expectSameResults(before, m);

  ir::Module tir_only = ir::parseModule(text, "m.ir");
  transform::PassContext ctx;
  ctx.verify_each = true;
  transform::runPipeline(tir_only, transform::parsePipeline("fuse-tir"), ctx);
  std::string t = ir::printModule(tir_only);
  EXPECT_NE(t.find("%y: f32[4, 8] = call_tir @fused_scale_relu(%x)"), std::string::npos) << t;
  EXPECT_NE(t.find("%z: f32[4, 8] = relu(%y)"), std::string::npos) << t;
  EXPECT_EQ(t.find("graph @fused_scale_relu"), std::string::npos) << t;
  expectSameResults(before, tir_only);

  std::string scheduled = text;
  scheduled.replace(
      scheduled.find("prim @scale(%a: f32[4, 8], %b: f32[4, 8]) {\n"),
      std::string("prim @scale(%a: f32[4, 8], %b: f32[4, 8]) {\n").size(),
      "prim @scale(%a: f32[4, 8], %b: f32[4, 8]) {\n  trace {\n    %b0 = get_block(\"scale\")\n  }\n");
  std::string error;
  try {
    legalized(scheduled);
  } catch (const Error& e) {
    error = e.message();
  }
  EXPECT_NE(error.find("call_tir @scale calls a scheduled prim func"), std::string::npos) << error;
}
