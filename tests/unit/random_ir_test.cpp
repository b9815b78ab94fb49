// The random IR generator itself: over many seeds it covers the whole data
// model, every variable and buffer it uses is in scope (a light check), and
// every module passes the verifier (the full rules).
#include "random_ir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "mlcc/ir/intrinsics.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;

namespace {

// Records which features occur, and fails on out-of-scope uses.
class Census {
 public:
  std::set<std::string> seen;

  void module(const Module& m) {
    for (const auto& f : m.functions) std::visit([&](const auto& fn) { function(fn); }, f);
  }

 private:
  void note(const std::string& what) { seen.insert(what); }

  void expr(const PrimExpr& e, const std::set<const void*>& scope) {
    note("dtype." + std::string(dtypeName(e->dtype)));
    note("expr." + std::to_string(static_cast<int>(e->kind)));
    if (const auto* v = e->as<VarNode>()) {
      EXPECT_TRUE(scope.count(v)) << "variable %" << v->name << " out of scope";
    } else if (const auto* i = e->as<IntImmNode>()) {
      if (i->value < 0) note("negative int");
    } else if (const auto* f = e->as<FloatImmNode>()) {
      if (std::isnan(f->value)) note("nan");
      if (std::isinf(f->value)) note("inf");
      if (std::signbit(f->value)) note("negative float");
    } else if (const auto* b = e->as<BinaryNode>()) {
      note(std::string("op.") + binaryOpName(b->op));
      expr(b->a, scope);
      expr(b->b, scope);
    } else if (const auto* u = e->as<UnaryNode>()) {
      note(std::string("unary.") + unaryOpName(u->op));
      expr(u->a, scope);
    } else if (const auto* s = e->as<SelectNode>()) {
      for (const auto& x : {s->cond, s->true_value, s->false_value}) expr(x, scope);
    } else if (const auto* c = e->as<CastNode>()) {
      expr(c->value, scope);
    } else if (const auto* l = e->as<LoadNode>()) {
      EXPECT_TRUE(scope.count(l->buffer.get())) << "buffer %" << l->buffer->name << " out of scope";
      EXPECT_EQ(l->indices.size(), l->buffer->shape.size());
      for (const auto& x : l->indices) expr(x, scope);
    } else if (const auto* call = e->as<CallNode>()) {
      note("intrinsic." + call->name);
      for (const auto& x : call->args) expr(x, scope);
    }
  }

  void stmt(const Stmt& s, std::set<const void*> scope) {
    if (const auto* f = s->as<ForNode>()) {
      note(std::string("loop.") + loopKindName(f->loop_kind));
      if (!f->thread_tag.empty()) note("tag." + f->thread_tag);
      if (!f->attrs.empty()) note("loop attrs");
      expr(f->extent, scope);
      scope.insert(f->loop_var.get());
      stmt(f->body, scope);
    } else if (const auto* b = s->as<BlockNode>()) {
      std::set<const void*> inner;  // symbolic vars and buffers stay visible; loop vars do not
      for (const void* x : scope)
        if (!loop_vars_.count(x)) inner.insert(x);
      for (const auto& iv : b->iter_vars) {
        note(std::string("iter.") + iterKindName(iv.kind));
        expr(iv.binding, scope);
        if (usesAny(iv.binding, iter_vars_)) note("binding to an enclosing block's iteration variable");
        inner.insert(iv.var.get());
        iter_vars_.insert(iv.var.get());
      }
      for (const auto& a : b->alloc_buffers) {
        note(std::string("scope.") + scopeName(a->scope));
        inner.insert(a.get());
      }
      if (b->init) note("init"), stmt(b->init, inner);
      // Like the bindings, the predicate is evaluated outside the block (verifier.cpp).
      if (b->predicate) note("predicate"), expr(b->predicate, scope);
      for (const auto& r : b->reads) EXPECT_TRUE(inner.count(r.buffer.get()));
      for (const auto& r : b->writes) EXPECT_TRUE(inner.count(r.buffer.get()));
      stmt(b->body, inner);
    } else if (const auto* st = s->as<StoreNode>()) {
      EXPECT_TRUE(scope.count(st->buffer.get())) << "buffer %" << st->buffer->name << " out of scope";
      EXPECT_EQ(st->value->dtype, st->buffer->dtype);
      for (const auto& x : st->indices) expr(x, scope);
      expr(st->value, scope);
    } else if (const auto* seq = s->as<SeqNode>()) {
      for (const auto& x : seq->stmts) stmt(x, scope);
    } else if (const auto* i = s->as<IfNode>()) {
      note(i->else_case ? "if-else" : "if");
      expr(i->cond, scope);
      stmt(i->then_case, scope);
      if (i->else_case) stmt(i->else_case, scope);
    }
  }

  static bool usesAny(const PrimExpr& e, const std::set<const void*>& vars) {
    if (vars.count(e.get())) return true;
    if (const auto* b = e->as<BinaryNode>()) return usesAny(b->a, vars) || usesAny(b->b, vars);
    if (const auto* u = e->as<UnaryNode>()) return usesAny(u->a, vars);
    if (const auto* c = e->as<CastNode>()) return usesAny(c->value, vars);
    return false;
  }

  void collectLoopVars(const Stmt& s) {
    if (const auto* f = s->as<ForNode>()) loop_vars_.insert(f->loop_var.get()), collectLoopVars(f->body);
    if (const auto* b = s->as<BlockNode>()) collectLoopVars(b->body);
    if (const auto* seq = s->as<SeqNode>())
      for (const auto& x : seq->stmts) collectLoopVars(x);
    if (const auto* i = s->as<IfNode>()) {
      collectLoopVars(i->then_case);
      if (i->else_case) collectLoopVars(i->else_case);
    }
  }

  void function(const PrimFunc& f) {
    std::set<const void*> scope;
    for (const auto& b : f.params) {
      scope.insert(b.get());
      for (const auto& d : b->shape)
        if (d->as<VarNode>()) scope.insert(d.get()), note("symbolic prim dim");
    }
    for (const auto& b : f.allocs) scope.insert(b.get()), note(std::string("scope.") + scopeName(b->scope));
    if (!f.trace.empty()) note("trace");
    for (const auto& inst : f.trace.insts)
      if (inst.decision) note("decision");
    loop_vars_.clear();
    collectLoopVars(f.body);
    stmt(f.body, scope);
  }

  void attrs(const Attrs& as) {
    for (const auto& [key, v] : as) note("attr." + std::to_string(v.v.index()));
  }

  void function(const GraphFunc& f) {
    std::set<const void*> defined;
    for (const auto& p : f.params) defined.insert(p.get());
    for (const auto& block : f.blocks) {
      note(block.dataflow ? "dataflow block" : "plain block");
      for (const auto& b : block.bindings) {
        note(std::string("value.") + valueKindName(b.value.kind));
        if (b.value.is_inline) note("inline." + std::string(dtypeName(b.var->type.dtype)));
        attrs(b.value.attrs);
        for (const auto& a : b.value.args)
          EXPECT_TRUE(defined.count(a.get())) << "graph variable %" << a->name << " used before definition";
        defined.insert(b.var.get());
      }
    }
    for (const auto& r : f.ret) EXPECT_TRUE(defined.count(r.get()));
    if (f.ret_is_tuple) note("tuple return");
  }

  std::set<const void*> loop_vars_;
  std::set<const void*> iter_vars_;  // of the blocks entered so far
};

}  // namespace

TEST(RandomIr, CoversTheDataModelAndStaysInScope) {
  Census census;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(seed);
    census.module(mlcc::test::randomModule(seed));
  }
  std::vector<std::string> expected = {"value.alias",
                                       "value.const",
                                       "value.tuple",
                                       "value.tuple_get",
                                       "value.op",
                                       "value.call_tir",
                                       "value.call",
                                       "value.call_extern",
                                       "dataflow block",
                                       "plain block",
                                       "tuple return",
                                       "inline.f16",
                                       "inline.bf16",
                                       "inline.i8",
                                       "inline.bool",
                                       "symbolic prim dim",
                                       "trace",
                                       "decision",
                                       "loop attrs",
                                       "init",
                                       "predicate",
                                       "binding to an enclosing block's iteration variable",
                                       "if",
                                       "if-else",
                                       "negative int",
                                       "negative float",
                                       "nan",
                                       "inf",
                                       "tag.threadIdx.x",
                                       "tag.vthread",
                                       "unary.-",
                                       "unary.!"};
  for (int k = 0; k < 7; ++k) expected.push_back("attr." + std::to_string(k));
  for (int k = 0; k < 9; ++k) expected.push_back("expr." + std::to_string(k));
  for (DType t : kAllDTypes) expected.push_back("dtype." + std::string(dtypeName(t)));
  for (const char* k : {"serial", "parallel", "vectorized", "unrolled", "thread_binding"})
    expected.push_back(std::string("loop.") + k);
  for (const char* k : {"spatial", "reduce", "opaque"}) expected.push_back(std::string("iter.") + k);
  for (const char* k : {"global", "shared", "local"}) expected.push_back(std::string("scope.") + k);
  for (const auto& info : allIntrinsics()) expected.push_back("intrinsic." + std::string(info.name));
  for (int op = 0; op <= static_cast<int>(BinaryOp::Or); ++op)
    expected.push_back(std::string("op.") + binaryOpName(static_cast<BinaryOp>(op)));
  for (const auto& what : expected) EXPECT_TRUE(census.seen.count(what)) << "never generated: " << what;
}

// Every generated module is well formed by the verifier's rules, so the
// property tests built on the generator test legal IR.
TEST(RandomIr, ModulesPassTheVerifier) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    mlcc::ir::Module m = mlcc::test::randomModule(seed);
    try {
      mlcc::ir::verifyModule(m, mlcc::ir::structuralChecksOnly());
    } catch (const mlcc::Error& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.format();
    }
  }
}

// mutateOnce changes a float literal to another value of its dtype, also
// where v + 1 rounds back to v (makeFloat rounds to the dtype).
TEST(RandomIr, MutatedFloatLiteralsChangeInTheirDType) {
  const std::pair<double, DType> cases[] = {
      {1024.0, DType::bf16}, {-1e10, DType::f32}, {3.4028235e+38, DType::f32}, {0.5, DType::f16}};
  for (const auto& [value, dtype] : cases) {
    SCOPED_TRACE(std::to_string(value) + " " + std::string(dtypeName(dtype)));
    PrimFunc f;
    f.name = "f";
    Buffer a = makeBuffer("A", dtype, {});
    f.params = {a};
    f.body = makeStore(a, {}, makeFloat(value, dtype));  // the only mutation site
    Module m;
    m.functions.push_back(f);
    EXPECT_FALSE(structuralEqual(m, mlcc::test::mutateOnce(m, 1)));
  }
}
