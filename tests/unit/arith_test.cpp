// Index arithmetic: simplification keeps the value, bounds contain every
// value, and the rewrites that make scheduled indices readable happen.
#include "mlcc/ir/arith.h"

#include <gtest/gtest.h>

#include <random>

#include "mlcc/ir/builder.h"
#include "mlcc/ir/printer.h"

using namespace mlcc::ir;
using namespace mlcc::ir::build;

namespace {

// Evaluates an i64 expression with the given variable values.
int64_t eval(const PrimExpr& e, const std::map<const VarNode*, int64_t>& env) {
  if (const auto* i = e->as<IntImmNode>()) return i->value;
  if (const auto* v = e->as<VarNode>()) return env.at(v);
  if (const auto* u = e->as<UnaryNode>()) return -eval(u->a, env);
  const auto* b = e->as<BinaryNode>();
  int64_t x = eval(b->a, env), y = eval(b->b, env);
  switch (b->op) {
    case BinaryOp::Add: return x + y;
    case BinaryOp::Sub: return x - y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div: return floorDiv(x, y);
    case BinaryOp::Mod: return floorMod(x, y);
    case BinaryOp::Min: return std::min(x, y);
    case BinaryOp::Max: return std::max(x, y);
    default: ADD_FAILURE() << "unexpected operator"; return 0;
  }
}

TEST(Arith, CollectsLinearTerms) {
  Var a = makeVar("a"), b = makeVar("b"), c = makeVar("c");
  EXPECT_EQ(printExpr(simplify((a * 4 + b) * 8 + c)), "a * 32 + b * 8 + c");
  EXPECT_EQ(printExpr(simplify(a + 3 - a + b * 0 + 2)), "5");
  EXPECT_EQ(printExpr(simplify(a * 1 + 0)), "a");
  EXPECT_EQ(printExpr(simplify(a - b * 2 - 1)), "a - b * 2 - 1");
}

TEST(Arith, ResolvesDivModWithRanges) {
  Var f = makeVar("f"), j = makeVar("j");
  Analyzer az;
  az.bind(j, 0, 16);
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) / 16)), "f");
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) % 16)), "j");
  EXPECT_EQ(printExpr(az.simplify(j / 16)), "0");
  // Without a range for j only the exact identity (q * d + r) / d == q + r / d.
  EXPECT_EQ(printExpr(simplify((f * 16 + j) / 16)), "f + j / 16");
  EXPECT_EQ(printExpr(simplify((f * 2 + j + 3) / 2)), "f + (j + 1) / 2 + 1");
  EXPECT_EQ(printExpr(simplify((f * 3 + j) / 2)), "(f * 3 + j) / 2");
  EXPECT_EQ(printExpr(simplify((f / 4) / 8)), "f / 32");
  // A value split into quotient and remainder and put back together.
  EXPECT_EQ(printExpr(simplify(f / 8 * 8 + f % 8)), "f");
  EXPECT_EQ(printExpr(simplify((f / 8 * 16 + f % 8 * 2) + j)), "f * 2 + j");
  EXPECT_EQ(printExpr(simplify(f / 8 * 8 + f % 4)), "f / 8 * 8 + f % 4");
  // The same one level down: a value split into three or four parts.
  EXPECT_EQ(printExpr(simplify(f / 16 % 3 * 16 + f % 16)), "f % 48");
  EXPECT_EQ(printExpr(simplify(f / 144 * 144 + f / 48 % 3 * 48 + f / 16 % 3 * 16 + f % 16)), "f");
  EXPECT_EQ(printExpr(simplify(f / 16 % 3 * 16 + f % 8)), "f / 16 % 3 * 16 + f % 8");
  // Over an x that is itself a sum (a thread's element of a fused loop bound
  // to blocks and threads, b * 256 + t): simplified alone, x % 16 is t % 16
  // and shows no x, yet the chain folds.
  Var b = makeVar("b"), t = makeVar("t");
  PrimExpr x = b * 256 + t;
  EXPECT_EQ(printExpr(simplify(x / 16 % 14 * 16 + x % 16)), "(b * 256 + t) % 224");
  EXPECT_EQ(printExpr(simplify(x / 3136 * 3136 + x / 224 % 14 * 224 + x / 16 % 14 * 16 + x % 16)),
            "b * 256 + t");
  // A split loop's parts put back, divided: x / 256 * 16 + x % 256 / 16 is
  // x / 16 (the thread block's and the thread's shares of x / 16).
  EXPECT_EQ(printExpr(simplify(f / 256 * 16 + f % 256 / 16)), "f / 16");
  EXPECT_EQ(printExpr(simplify((f / 256 * 16 + f % 256 / 16) % 14 * 16 + f % 256 % 16)), "f % 224");
  EXPECT_EQ(printExpr(simplify(f / 256 % 4 * 16 + f % 256 / 16)), "f % 1024 / 16");
  EXPECT_EQ(printExpr(simplify(f / 256 * 16 + f % 256 / 32)), "f / 256 * 16 + f % 256 / 32");
  EXPECT_EQ(printExpr(simplify(f / 8 * 2 + f / 4 % 2)), "f / 4");
  EXPECT_EQ(printExpr(simplify(f / 8 * 8 + f / 4 % 2 * 4 + f % 4)), "f");
  EXPECT_EQ(printExpr(simplify(f / 8 * 2 + f / 4 % 3)), "f / 8 * 2 + f / 4 % 3");
  Analyzer bt;
  bt.bind(t, 0, 256);
  EXPECT_EQ(printExpr(bt.simplify((x / 224 % 14 * 224 + x / 16 % 14 * 16 + x % 16) * 2 + 1)),
            "(b * 256 + t) % 3136 * 2 + 1");
}

TEST(Arith, BoundsAndProofs) {
  Var i = makeVar("i"), k = makeVar("k"), n = makeVar("n");
  Analyzer az;
  az.bind(i, 0, 4);
  az.bind(k, 0, 8);
  auto b = az.bounds(n * 4 + i);
  ASSERT_TRUE(b);
  EXPECT_EQ(printExpr(b->min), "n * 4");
  EXPECT_EQ(printExpr(b->max), "n * 4 + 3");
  auto cb = az.constBounds(i * 8 - k + 2);
  ASSERT_TRUE(cb);
  EXPECT_EQ(cb->first, -5);
  EXPECT_EQ(cb->second, 26);
  EXPECT_TRUE(az.canProve(lt(i * 8 + k, 32)));
  EXPECT_FALSE(az.canProve(lt(i * 8 + k, 31)));
  EXPECT_FALSE(az.canProve(lt(i, n)));
  // One constant end of the bounds is enough.
  Var j = makeVar("j");
  az.bind(j, lit(0), n);
  EXPECT_TRUE(az.canProve(lt(j, n)));
  EXPECT_TRUE(az.canProve(ge(j, 0)));
  EXPECT_FALSE(az.canProve(lt(j, n - 1)));
  EXPECT_FALSE(az.canProve(eq(j, n)));
  EXPECT_FALSE(az.bounds(load(makeBuffer("A", DType::i64, {lit(4)}), {i})));
}

// Random expressions: the simplified form has the same value everywhere in
// the bound ranges, and the bounds contain every value.
TEST(Arith, RandomExpressionsKeepTheirValue) {
  std::mt19937 rng(7);
  Var v[3] = {makeVar("x"), makeVar("y"), makeVar("z")};
  int64_t ext[3] = {3, 5, 8};
  Analyzer az;
  for (int i = 0; i < 3; ++i) az.bind(v[i], 0, ext[i]);
  std::function<PrimExpr(int)> gen = [&](int depth) -> PrimExpr {
    int pick = std::uniform_int_distribution<int>(0, depth > 3 ? 1 : 7)(rng);
    if (pick == 0) return v[rng() % 3];
    if (pick == 1) return lit(int64_t(rng() % 9) - 2);
    PrimExpr a = gen(depth + 1), b = gen(depth + 1);
    switch (pick) {
      case 2: return a + b;
      case 3: return a - b;
      case 4: return a * lit(int64_t(rng() % 5) + 1);
      case 5: return a / lit(int64_t(rng() % 6) + 1);
      case 6: return a % lit(int64_t(rng() % 6) + 1);
      default: return minimum(a, b);
    }
  };
  for (int trial = 0; trial < 400; ++trial) {
    PrimExpr e = gen(0);
    PrimExpr s = az.simplify(e);
    auto b = az.constBounds(e);
    for (int64_t x = 0; x < ext[0]; ++x)
      for (int64_t y = 0; y < ext[1]; ++y)
        for (int64_t z = 0; z < ext[2]; ++z) {
          std::map<const VarNode*, int64_t> env{{v[0].get(), x}, {v[1].get(), y}, {v[2].get(), z}};
          int64_t want = eval(e, env);
          ASSERT_EQ(eval(s, env), want) << printExpr(e) << " simplified to " << printExpr(s);
          if (b) {
            ASSERT_TRUE(b->first <= want && want <= b->second) << printExpr(e);
          }
        }
  }
}

// The div/mod folds over random constants: the folded form has the value of
// the unfolded one for every x, negative ones too (/ and % floor).
TEST(Arith, DivModFoldsKeepTheirValue) {
  std::mt19937 rng(11);
  Var x = makeVar("x"), y = makeVar("y");
  int folded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t d = 1 + rng() % 4, c = d * (1 + rng() % 4), k = 1 + rng() % 3, m = rng() % 4;
    const PrimExpr base = rng() % 2 ? PrimExpr(x) : x * lit(int64_t(1 + rng() % 3)) + y;
    PrimExpr quotient = base / lit(c);
    if (m) quotient = quotient % lit(m);
    const PrimExpr low = rng() % 2 ? base % lit(c) / lit(d) : base / lit(d) % lit(c / d);
    const PrimExpr e = quotient * lit(k * c / d) + low * lit(k);
    const PrimExpr s = simplify(e);
    folded += printExpr(s).size() < printExpr(e).size();
    for (int64_t vx = -40; vx <= 40; ++vx)
      for (int64_t vy = -5; vy <= 5; ++vy) {
        std::map<const VarNode*, int64_t> env{{x.get(), vx}, {y.get(), vy}};
        ASSERT_EQ(eval(s, env), eval(e, env)) << printExpr(e) << " simplified to " << printExpr(s);
      }
  }
  EXPECT_GT(folded, 250);
}

// A blocked index (block * c + lane, 0 <= lane < c) divided at a multiple of
// the block keeps the lane out of the quotient: a concatenation of 144-channel
// parts read in 16-lane blocks selects its part by block / 9, uniform across
// the lanes. Random blocks, lanes, divisors and offsets keep their value,
// negative blocks too.
TEST(Arith, BlockedIndexDividedAtAMultipleOfTheBlock) {
  Var f = makeVar("f"), j = makeVar("j");
  Analyzer az;
  az.bind(j, 0, 16);
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) / 144)), "f / 9");
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) % 144)), "j + f % 9 * 16");
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) % 144 / 16)), "f % 9");
  EXPECT_EQ(printExpr(az.simplify((f * 16 + j) % 144 % 16)), "j");
  // The lane may reach past the block: no split.
  EXPECT_EQ(printExpr(az.simplify((f * 8 + j) / 144)), "(f * 8 + j) / 144");
  std::mt19937 rng(5);
  Var x = makeVar("x"), lane = makeVar("lane");
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t c = 2 + rng() % 15, d = c * (1 + rng() % 9), lanes = 1 + rng() % c, k = rng() % 40 - 20;
    Analyzer bl;
    bl.bind(lane, 0, lanes);
    const PrimExpr base = x * lit(c) + lane + lit(k);
    for (BinaryOp op : {BinaryOp::Div, BinaryOp::Mod}) {
      const PrimExpr e = makeBinary(op, base, lit(d)), s = bl.simplify(e);
      for (int64_t vx = -30; vx <= 30; ++vx)
        for (int64_t vl = 0; vl < lanes; ++vl) {
          std::map<const VarNode*, int64_t> env{{x.get(), vx}, {lane.get(), vl}};
          ASSERT_EQ(eval(s, env), eval(e, env)) << printExpr(e) << " simplified to " << printExpr(s);
        }
    }
  }
}

// alignedLanes: an index moving by one per lane from a multiple of the
// lanes, through a fused copy's divisions too. Every accepted index is
// checked by evaluation (negative values included: the IR's / and % floor).
TEST(Arith, AlignedLanes) {
  Var t = makeVar("t"), l = makeVar("l"), k = makeVar("k");
  struct Case {
    PrimExpr index;
    int64_t lanes;
    bool aligned;
  };
  const PrimExpr fused = t * 4 + l;
  const std::vector<Case> cases = {
      {t * 4 + l, 4, true},
      {(fused / 8) * 256 + k * 8 + fused % 8, 4, true},  // a 64 x 8 tile's copy from a 256-wide matrix
      {(k * 8 + fused / 32) * 64 + fused % 32, 4, true},
      {(t * 2 + l) % 8 + k * 16, 2, true},
      {(t * 2 + l) % 8, 4, false},     // the first lane's index is not a multiple of 4
      {t * 4 + l + 1, 4, false},       // misaligned
      {t * 4 + l * 2, 4, false},       // stride 2
      {fused / 8, 4, false},           // does not move
      {(t * 4 + l) % 2, 4, false},     // a divisor smaller than the lanes
      {(t * 3 + l) / 8 * 8, 4, false}  // not a multiple before the division
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(printExpr(c.index));
    EXPECT_EQ(alignedLanes(c.index, l, c.lanes), c.aligned);
    if (!c.aligned) continue;
    for (int64_t tv = -9; tv <= 9; ++tv)
      for (int64_t kv = -3; kv <= 3; ++kv) {
        const int64_t first = eval(c.index, {{t.get(), tv}, {l.get(), 0}, {k.get(), kv}});
        EXPECT_EQ(floorMod(first, c.lanes), 0);
        for (int64_t lv = 1; lv < c.lanes; ++lv)
          EXPECT_EQ(eval(c.index, {{t.get(), tv}, {l.get(), lv}, {k.get(), kv}}), first + lv);
      }
  }
}

// replaceBoundedPart: the part taken out as a subexpression, from a
// flattened sum, divided or taken modulo; each result evaluates to the
// original with z set to the part's value.
TEST(Arith, ReplaceBoundedPart) {
  Var b = makeVar("b"), f = makeVar("f"), t = makeVar("t"), z = makeVar("z");
  Analyzer az;
  az.bind(f, 0, 3);
  az.bind(t, 0, 32);
  const PrimExpr part = f * 32 + t;
  struct Case {
    PrimExpr index;
    std::string replaced;
  };
  const std::vector<Case> cases = {
      {b * 96 + f * 32 + t, "b * 96 + z"},
      {az.simplify(b * 10 + part / 8), "b * 10 + z / 8"},
      {az.simplify(b * 8 + part % 8), "b * 8 + z % 8"},
      {f * 3 + t, "f * 3 + t"},  // not the part: unchanged
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(printExpr(c.index));
    const PrimExpr r = replaceBoundedPart(c.index, part, z, az);
    EXPECT_EQ(printExpr(simplify(r)), c.replaced);
    if (c.replaced == "f * 3 + t") continue;
    for (int64_t bv = -2; bv <= 2; ++bv)
      for (int64_t fv = 0; fv < 3; ++fv)
        for (int64_t tv = 0; tv < 32; ++tv)
          EXPECT_EQ(eval(r, {{b.get(), bv}, {z.get(), fv * 32 + tv}}),
                    eval(c.index, {{b.get(), bv}, {f.get(), fv}, {t.get(), tv}}));
  }
}

}  // namespace
