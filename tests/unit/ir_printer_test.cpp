// The IR printer: precedence-aware parentheses, float formatting, inline
// constants of 16-bit dtypes, name quoting and uniquifying.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;
using namespace mlcc::ir::build;

TEST(PrintExpr, Precedence) {
  Var a = makeVar("a"), b = makeVar("b"), c = makeVar("c");
  EXPECT_EQ(printExpr((a + b) * c), "(a + b) * c");
  EXPECT_EQ(printExpr(a + b * c), "a + b * c");
  EXPECT_EQ(printExpr(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(printExpr((a - b) - c), "a - b - c");
  EXPECT_EQ(printExpr(a / (b * c)), "a / (b * c)");
  EXPECT_EQ(printExpr(a * b % c), "a * b % c");
  EXPECT_EQ(printExpr(makeUnary(UnaryOp::Neg, makeFloat(1.0))), "-(1.0)");
  EXPECT_EQ(printExpr(a - makeInt(-1)), "a - -1");
  EXPECT_EQ(printExpr(makeUnary(UnaryOp::Neg, a + b)), "-(a + b)");
  EXPECT_EQ(printExpr(makeUnary(UnaryOp::Neg, a) * b), "-a * b");
  EXPECT_EQ(printExpr(makeUnary(UnaryOp::Neg, makeUnary(UnaryOp::Neg, a))), "--a");
  EXPECT_EQ(printExpr(makeBinary(BinaryOp::Or, lt(a, b), makeBinary(BinaryOp::And, lt(b, c), eq(a, c)))),
            "a < b || b < c && a == c");
  EXPECT_EQ(printExpr(makeBinary(BinaryOp::And, makeBinary(BinaryOp::Or, lt(a, b), lt(b, c)), eq(a, c))),
            "(a < b || b < c) && a == c");
  EXPECT_EQ(printExpr(makeUnary(UnaryOp::Not, lt(a, b))), "!(a < b)");
  EXPECT_EQ(printExpr(eq(lt(a, b), lt(b, c))), "a < b == (b < c)");
  EXPECT_EQ(printExpr(eq(lt(a, b), eq(b, c))), "a < b == (b == c)");
  EXPECT_EQ(printExpr(minimum(a, b + c) * 2), "min(a, b + c) * 2");
  EXPECT_EQ(printExpr(makeSelect(lt(a, b), makeCast(DType::f32, a), makeFloat(0.5))),
            "select(a < b, cast<f32>(a), 0.5)");
  EXPECT_EQ(printExpr(makeInt(-7, DType::i8) + makeInt(3, DType::i8)), "-7i8 + 3i8");
  // Literals hold values of their dtype (wrapped), so the text parses back.
  EXPECT_EQ(printExpr(makeInt(-1, DType::u8)), "255u8");
  EXPECT_EQ(printExpr(makeInt(200, DType::i8)), "-56i8");
  EXPECT_EQ(printExpr(makeFloat(0.5, DType::f16)), "0.5f16");
  EXPECT_EQ(printExpr(makeFloat(0.1, DType::f64)), "0.1f64");  // the double 0.1, not the float
  EXPECT_EQ(printExpr(parseExpr("1.0000000000001f64")), "1.0000000000001f64");
  EXPECT_EQ(printExpr(makeFloat(1e300, DType::f64)), "1e+300f64");
  EXPECT_EQ(printExpr(makeFloat(-INFINITY, DType::bf16)), "-infbf16");
  EXPECT_EQ(printExpr(makeFloat(NAN)), "nan");
  EXPECT_EQ(printExpr(makeBool(true)), "true");
  EXPECT_EQ(printExpr(makeVar("for") + makeVar("n.1")), "$\"for\" + $\"n.1\"");
  // Every printed form parses back to the same text.
  for (PrimExpr e : {(a + b) * c, a - (b - c), makeUnary(UnaryOp::Neg, makeFloat(1.0)) + makeFloat(2.0),
                     a - makeInt(-1), makeUnary(UnaryOp::Neg, makeInt(-3)), makeVar("if") * 2})
    EXPECT_EQ(printExpr(parseExpr(printExpr(e))), printExpr(e));
}

TEST(PrintExpr, RandomTreesRoundTrip) {
  std::mt19937 rng(7);
  Var vars[] = {makeVar("a"), makeVar("b"), makeVar("c")};
  std::function<PrimExpr(int)> gen = [&](int depth) -> PrimExpr {
    if (depth == 0 || rng() % 4 == 0) {
      switch (rng() % 3) {
        case 0: return vars[rng() % 3];
        case 1: return makeInt(static_cast<int64_t>(rng() % 21) - 10);
        default: return vars[rng() % 3];
      }
    }
    if (rng() % 6 == 0) return makeUnary(UnaryOp::Neg, gen(depth - 1));
    static const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                                   BinaryOp::Mod, BinaryOp::Min, BinaryOp::Max};
    return makeBinary(ops[rng() % 7], gen(depth - 1), gen(depth - 1));
  };
  for (int i = 0; i < 500; ++i) {
    PrimExpr e = gen(6);
    std::string s = printExpr(e);
    PrimExpr back = parseExpr(s);
    EXPECT_EQ(printExpr(back), s);
    // Same tree shape: compare a fully parenthesized rendering.
    std::function<std::string(const PrimExpr&)> full = [&](const PrimExpr& x) -> std::string {
      if (auto* bn = x->as<BinaryNode>())
        return std::string("(") + full(bn->a) + binaryOpName(bn->op) + full(bn->b) + ")";
      if (auto* u = x->as<UnaryNode>()) return "(neg " + full(u->a) + ")";
      return printExpr(x);
    };
    EXPECT_EQ(full(back), full(e)) << s;
  }
}

TEST(FormatFloat, Canonical) {
  EXPECT_EQ(formatFloat(1.0), "1.0");
  EXPECT_EQ(formatFloat(0.1), "0.1");
  EXPECT_EQ(formatFloat(1e-7), "1e-07");
  EXPECT_EQ(formatFloat(3.4028234663852886e+38), "3.4028235e+38");
  EXPECT_EQ(formatFloat(100.0), "100.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(INFINITY), "inf");
  EXPECT_EQ(formatFloat(-INFINITY), "-inf");
  EXPECT_EQ(formatFloat(NAN), "nan");
  EXPECT_EQ(formatFloat(65504.0, DType::f16), "65500.0");
  EXPECT_EQ(formatFloat(0.1, DType::bf16), "0.1");
}

TEST(FormatFloat, RandomRoundTrip) {
  std::mt19937_64 rng(42);
  auto reparse = [](const std::string& text, DType t) {
    PrimExpr e = parseExpr(t == DType::f32 ? text : text + std::string(dtypeName(t)));
    return e->as<FloatImmNode>()
               ? e->as<FloatImmNode>()->value
               : -e->as<UnaryNode>()->a->as<FloatImmNode>()->value;  // never: -x is a literal
  };
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    if (!std::isfinite(d)) continue;
    float f;
    uint32_t fbits = static_cast<uint32_t>(bits);
    std::memcpy(&f, &fbits, 4);
    // f32 literals: shortest text reads back to the same float.
    if (std::isfinite(f)) {
      std::string s = formatFloat(f);
      EXPECT_TRUE(s.find_first_of(".e") != std::string::npos) << s;
      double back = reparse(s, DType::f32);
      EXPECT_EQ(std::memcmp(&back, &static_cast<const double&>(static_cast<double>(f)), 8), 0) << s;
    }
    // Doubles (f64 attributes) round trip through printAttrValue / the attribute parser.
    std::string ds = formatFloat(d, DType::i64);
    EXPECT_EQ(std::strtod(ds.c_str(), nullptr), d) << ds;
    EXPECT_TRUE(ds.find_first_of(".e") != std::string::npos) << ds;
  }
}

TEST(FormatFloat, HalfAndBFloat16Exhaustive) {
  // Finite 16-bit values (a dense sample) print to text that reads back to the same value.
  for (DType t : {DType::f16, DType::bf16}) {
    for (uint32_t bits = 0; bits < 0x10000; bits += (t == DType::f16 ? 7 : 11)) {
      std::string text = "mlcc.ir 1\n\ngraph @f() -> " + std::string(dtypeName(t)) +
                         "[] {\n  %c: " + std::string(dtypeName(t)) + "[] = const ";
      GraphFunc g;
      g.name = "f";
      g.ret_type = Type::tensor(t, std::vector<PrimExpr>{});
      GraphVar c = makeGraphVar("c", g.ret_type);
      GraphValue v;
      v.kind = ValueKind::Const;
      v.is_inline = true;
      v.data = {static_cast<uint8_t>(bits & 0xff), static_cast<uint8_t>(bits >> 8)};
      g.blocks.push_back(BindingBlock{false, {Binding{c, v}}});
      g.ret = {c};
      Module m;
      m.functions.push_back(g);
      std::string printed = printModule(m);
      Module back = parseModule(printed, "half.ir");
      const auto& data = std::get<GraphFunc>(back.functions[0]).blocks[0].bindings[0].value.data;
      ASSERT_EQ(data.size(), 2u);
      uint16_t got = static_cast<uint16_t>(data[0] | (data[1] << 8));
      bool is_nan = t == DType::f16 ? ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff))
                                    : ((bits & 0x7f80) == 0x7f80 && (bits & 0x7f));
      if (!is_nan) {
        EXPECT_EQ(got, bits) << printed;
      }
      EXPECT_EQ(printModule(back), printed);
    }
  }
}

TEST(PrintModule, UniquifiesSharedNames) {
  Buffer A = makeBuffer("A", DType::f32, {makeInt(4)});
  Buffer A2 = makeBuffer("A", DType::f32, {makeInt(4)});
  Var i = makeVar("i"), i2 = makeVar("i"), i3 = makeVar("i_1");
  Stmt inner = makeFor(i3, makeInt(4), store(A2, {i3}, load(A, {i}) + load(A2, {i2})));
  Stmt body = makeSeq({makeFor(i, makeInt(4), makeFor(i2, makeInt(4), inner)),
                       makeFor(i2, makeInt(4), store(A, {i2}, makeFloat(1.0)))});
  PrimFunc f;
  f.name = "f";
  f.params = {A, A2};
  f.body = body;
  Module m;
  m.functions.push_back(f);
  std::string printed = printModule(m);
  EXPECT_EQ(printed,
            "mlcc.ir 1\n\nprim @f(%A: f32[4], %A_1: f32[4]) {\n"
            "  for %i in 0..4 {\n    for %i_1 in 0..4 {\n      for %i_1_1 in 0..4 {\n"
            "        %A_1[%i_1_1] = %A[%i] + %A_1[%i_1]\n      }\n    }\n  }\n"
            "  for %i in 0..4 {\n    %A[%i] = 1.0\n  }\n}\n");
  EXPECT_EQ(printModule(parseModule(printed, "u.ir")), printed);

  // Graph variables and symbolic variables.
  Var n = makeVar("n"), n2 = makeVar("n");
  GraphFunc g;
  g.name = "main";
  GraphVar x = makeGraphVar("x", Type::tensor(DType::f32, std::vector<PrimExpr>{n}));
  GraphVar x2 = makeGraphVar("x", Type::tensor(DType::f32, std::vector<PrimExpr>{n2}));
  GraphVar y = makeGraphVar("x", Type::tuple({x->type, x2->type}));
  g.params = {x, x2};
  GraphValue tup;
  tup.kind = ValueKind::Tuple;
  tup.args = {x, x2};
  g.blocks.push_back(BindingBlock{true, {Binding{y, tup}}});
  g.ret = {y};
  g.ret_type = y->type;
  std::string gp = printFunction(g);
  EXPECT_EQ(gp,
            "graph @main(%x: f32[n], %x_1: f32[n_1]) -> (f32[n], f32[n_1]) {\n  dataflow {\n"
            "    %x_2: (f32[n], f32[n_1]) = (%x, %x_1)\n  }\n  return %x_2\n}\n");
}

TEST(PrintModule, QuotingAndAttrs) {
  EXPECT_EQ(printAttrValue(AttrValue("a\"b\\c\n\x01")), "\"a\\\"b\\\\c\\n\\x01\"");
  EXPECT_EQ(printAttrValue(AttrValue(PrimExpr(makeFloat(1.5)))), "(1.5)");
  EXPECT_EQ(printAttrValue(AttrValue(1.5)), "1.5");
  EXPECT_EQ(printAttrValue(AttrValue(PrimExpr(makeInt(3, DType::i32)))), "3i32");
  EXPECT_EQ(printAttrValue(AttrValue(PrimExpr(makeBool(false)))), "(false)");
  EXPECT_EQ(printAttrValue(AttrValue(TraceRef{"l 0"})), "%\"l 0\"");
  EXPECT_EQ(
      printAttrValue(AttrValue(AttrValue::List{AttrValue::ints({1, -2}), AttrValue(AttrValue::List{})})),
      "[[1, -2], []]");
  EXPECT_EQ(printType(Type::tuple({Type::tensor(DType::i64, std::vector<int64_t>{}), Type::tuple({})})),
            "(i64[], ())");
  Trace t;
  t.insts.push_back(
      TraceInst{"split", {TraceRef{"l0"}, AttrValue::ints({4, 8})}, {{"factor", 2}}, {"a", "b"}, 3});
  EXPECT_EQ(printTrace(t), "trace {\n  %a, %b = split(%l0, [4, 8], factor = 2) decision 3\n}\n");
}
