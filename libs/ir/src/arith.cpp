// Integer index arithmetic (see arith.h). Expressions are brought into a
// linear form: a list of (atom, constant coefficient) terms plus a constant,
// where an atom is anything that is not a sum or a product with a constant
// (a variable, a floordiv, a load, a product of two variables, ...).
#include "mlcc/ir/arith.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include "mlcc/ir/expr_functor.h"

namespace mlcc::ir {

namespace {

bool isIndex(const PrimExpr& e) { return e && e->dtype == DType::i64; }

bool constOf(const PrimExpr& e, int64_t* v) { return e && e->dtype == DType::i64 && asConstInt(e, v); }

struct Term {
  PrimExpr atom;
  int64_t coeff;
};

struct Linear {
  std::vector<Term> terms;
  int64_t constant = 0;

  void add(const PrimExpr& atom, int64_t coeff) {
    if (coeff == 0) return;
    for (auto& t : terms)
      if (sameExpr(t.atom, atom)) {
        t.coeff += coeff;
        return;
      }
    terms.push_back({atom, coeff});
  }
  void add(const Linear& o, int64_t scale) {
    for (const auto& t : o.terms) add(t.atom, t.coeff * scale);
    constant += o.constant * scale;
  }
  void dropZeros() {
    std::erase_if(terms, [](const Term& t) { return t.coeff == 0; });
  }
  bool isConst() const { return terms.empty(); }
};

PrimExpr fromLinear(Linear l) {
  l.dropZeros();
  PrimExpr out;
  for (const auto& t : l.terms) {
    int64_t mag = t.coeff < 0 ? -t.coeff : t.coeff;
    PrimExpr term = mag == 1 ? t.atom : makeBinary(BinaryOp::Mul, t.atom, makeInt(mag));
    if (!out)
      out = t.coeff < 0 ? makeUnary(UnaryOp::Neg, term) : term;
    else
      out = makeBinary(t.coeff < 0 ? BinaryOp::Sub : BinaryOp::Add, out, term);
  }
  if (!out) return makeInt(l.constant);
  if (l.constant > 0) return makeBinary(BinaryOp::Add, out, makeInt(l.constant));
  if (l.constant < 0) return makeBinary(BinaryOp::Sub, out, makeInt(-l.constant));
  return out;
}

bool mentionsBound(const PrimExpr& e, const std::unordered_map<const VarNode*, Analyzer::Range>& ranges) {
  return anyOf(e, [&](const PrimExpr& x) {
    const auto* v = x->as<VarNode>();
    return v && ranges.count(v) != 0;
  });
}

class Simplifier {
 public:
  explicit Simplifier(const Analyzer& az) : az_(az) {}

  PrimExpr operator()(const PrimExpr& e) {
    if (!e) return e;
    if (isIndex(e) && isLinearOp(e)) {
      // Chains of x / c and x % c fold where they are written over one x;
      // simplified, x / c and x % c no longer show their x (x = b * 256 + t:
      // x % 16 is t % 16), so they fold first.
      Linear raw = linear(e, /*simplify_atoms=*/false);
      if (mergeDivMod(raw, /*simplify_merged=*/false)) return (*this)(fromLinear(std::move(raw)));
      Linear l = linear(e);
      mergeDivMod(l);
      return fromLinear(std::move(l));
    }
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::Var: return e;
      case ExprKind::Binary: return binary(e);
      case ExprKind::Unary: {
        const auto* n = e->as<UnaryNode>();
        PrimExpr a = (*this)(n->a);
        int64_t v;
        if (n->op == UnaryOp::Not && a->dtype == DType::boolean && asConstInt(a, &v)) return makeBool(v == 0);
        return a == n->a ? e : makeUnary(n->op, a);
      }
      case ExprKind::Select: {
        const auto* n = e->as<SelectNode>();
        PrimExpr c = (*this)(n->cond), t = (*this)(n->true_value), f = (*this)(n->false_value);
        int64_t v;
        if (c->dtype == DType::boolean && asConstInt(c, &v)) return v ? t : f;
        return c == n->cond && t == n->true_value && f == n->false_value ? e : makeSelect(c, t, f);
      }
      case ExprKind::Cast: {
        const auto* n = e->as<CastNode>();
        PrimExpr v = (*this)(n->value);
        if (v->dtype == e->dtype) return v;
        return v == n->value ? e : makeCast(e->dtype, v);
      }
      case ExprKind::Load:
      case ExprKind::Call: return mapChildren(e, *this);
    }
    return e;
  }

  // Folds (x / c) * (k * c) + (x % c) * k into x * k (floor division and
  // modulo: x == x / c * c + x % c for every x), e.g. a fused loop split back,
  // and ((x / c) % m) * (k * c) + (x % c) * k into (x % (c * m)) * k (the
  // same one level down: a fused loop split into three or more). Divided by
  // a d that divides c, the same holds: (x / c) * (k * c / d) + (x % c) / d
  // * k is x / d * k (a split loop's outer part, x / c, scaled back next to
  // its inner part divided; (x % c) / d also written (x / d) % (c / d)).
  // Returns whether it folded anything;
  // `simplify_merged` false leaves what it writes unsimplified, for the next
  // fold to see the same x.
  bool mergeDivMod(Linear& l, bool simplify_merged = true) {
    bool folded = false;
    // Whole remainders (x % c) first: the low digits fold before divided
    // ones ((x / 16) % 14 * 16 + x % 16 is x % 224 before (x / 16) % 14 is
    // taken for (x % 224) / 16 next to x / 224 % 14).
    for (bool changed = true, divided = false; changed || !divided;) {
      if (!changed) divided = true;
      changed = false;
      for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
        const auto* div = l.terms[i].atom->as<BinaryNode>();
        int64_t c, m = 0;  // m > 0: the term is (x / c) % m
        if (div && div->op == BinaryOp::Mod && constOf(div->b, &m) && m > 0) {
          div = div->a->as<BinaryNode>();
        } else {
          m = 0;
        }
        if (!div || div->op != BinaryOp::Div || !constOf(div->b, &c) || c <= 0) continue;
        int64_t cm = 0;
        if (m > 0 && __builtin_mul_overflow(c, m, &cm)) continue;
        for (size_t j = 0; j < l.terms.size() && !changed; ++j) {
          if (j == i) continue;
          const auto* mod = l.terms[j].atom->as<BinaryNode>();
          int64_t k = l.terms[j].coeff, c2 = 0, d = 1;  // the term is (x % c) / d
          PrimExpr x;
          if (mod && mod->op == BinaryOp::Div && constOf(mod->b, &d) && d > 0) {
            mod = mod->a->as<BinaryNode>();
            if (mod && mod->op == BinaryOp::Mod && constOf(mod->b, &c2)) x = mod->a;
          } else if (const auto* q = mod && mod->op == BinaryOp::Mod ? mod->a->as<BinaryNode>() : nullptr;
                     q && q->op == BinaryOp::Div && constOf(q->b, &d) && d > 0 && constOf(mod->b, &c2) &&
                     !__builtin_mul_overflow(c2, d, &c2)) {
            x = q->a;  // (x / d) % (c / d), the same as (x % c) / d
          } else if (mod && mod->op == BinaryOp::Mod && constOf(mod->b, &c2)) {
            x = mod->a;
          }
          if (!x || c2 != c || c % d != 0 || k == 0 || l.terms[i].coeff != k * (c / d) ||
              !sameExpr(div->a, x) || (d > 1 && !divided))
            continue;
          // x / d (or x % (c * m) / d) takes the place of the quotient term.
          PrimExpr whole = m == 0 ? div->a : makeBinary(BinaryOp::Mod, div->a, makeInt(cm));
          if (d > 1) whole = makeBinary(BinaryOp::Div, whole, makeInt(d));
          Linear merged;
          merged.constant = l.constant;
          for (size_t t = 0; t < l.terms.size(); ++t) {
            if (t == i && simplify_merged) merged.add(linear((*this)(whole)), k);
            if (t == i && !simplify_merged) merged.add(linear(whole, false), k);
            if (t != i && t != j) merged.add(l.terms[t].atom, l.terms[t].coeff);
          }
          l = std::move(merged);
          changed = folded = true;
        }
      }
    }
    return folded;
  }

  // The linear form of an index expression (its atoms simplified unless
  // `simplify_atoms` is false).
  Linear linear(const PrimExpr& e, bool simplify_atoms = true) {
    Linear l;
    if (const auto* imm = e->as<IntImmNode>()) {
      l.constant = imm->value;
      return l;
    }
    if (const auto* u = e->as<UnaryNode>(); u && u->op == UnaryOp::Neg) {
      l.add(linear(u->a, simplify_atoms), -1);
      return l;
    }
    if (const auto* b = e->as<BinaryNode>()) {
      if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
        l.add(linear(b->a, simplify_atoms), 1);
        l.add(linear(b->b, simplify_atoms), b->op == BinaryOp::Add ? 1 : -1);
        return l;
      }
      if (b->op == BinaryOp::Mul) {
        Linear x = linear(b->a, simplify_atoms), y = linear(b->b, simplify_atoms);
        if (y.isConst()) {
          l.add(x, y.constant);
          return l;
        }
        if (x.isConst()) {
          l.add(y, x.constant);
          return l;
        }
        l.add(makeBinary(BinaryOp::Mul, fromLinear(x), fromLinear(y)), 1);
        return l;
      }
    }
    if (!simplify_atoms) {
      l.add(e, 1);
      return l;
    }
    PrimExpr s = (*this)(e);
    if (const auto* imm = s->as<IntImmNode>()) {
      l.constant = imm->value;
      return l;
    }
    if (s != e && isLinearOp(s)) return linear(s);
    l.add(s, 1);
    return l;
  }

 private:
  static bool isLinearOp(const PrimExpr& e) {
    if (const auto* b = e->as<BinaryNode>())
      return b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul;
    if (const auto* u = e->as<UnaryNode>()) return u->op == UnaryOp::Neg;
    return false;
  }

  PrimExpr binary(const PrimExpr& e) {
    const auto* n = e->as<BinaryNode>();
    PrimExpr a = (*this)(n->a), b = (*this)(n->b);
    int64_t x, y;
    bool ca = constOf(a, &x), cb = constOf(b, &y);
    if (isIndex(a) && isIndex(b)) {
      switch (n->op) {
        case BinaryOp::Div:
        case BinaryOp::Mod:
          if (ca && cb && y != 0) return makeInt(n->op == BinaryOp::Div ? floorDiv(x, y) : floorMod(x, y));
          if (cb && y > 0) return divMod(n->op, a, y);
          break;
        case BinaryOp::Min:
        case BinaryOp::Max: {
          if (ca && cb) return makeInt(n->op == BinaryOp::Min ? std::min(x, y) : std::max(x, y));
          bool a_le_b = az_.canProve(makeBinary(BinaryOp::LE, a, b));
          bool b_le_a = az_.canProve(makeBinary(BinaryOp::LE, b, a));
          if (n->op == BinaryOp::Min && a_le_b) return a;
          if (n->op == BinaryOp::Min && b_le_a) return b;
          if (n->op == BinaryOp::Max && a_le_b) return b;
          if (n->op == BinaryOp::Max && b_le_a) return a;
          break;
        }
        case BinaryOp::EQ:
        case BinaryOp::NE:
        case BinaryOp::LT:
        case BinaryOp::LE:
        case BinaryOp::GT:
        case BinaryOp::GE: {
          PrimExpr cmp = makeBinary(n->op, a, b);
          if (az_.canProve(cmp)) return makeBool(true);
          if (az_.canProve(makeUnary(UnaryOp::Not, cmp))) return makeBool(false);
          return cmp;
        }
        default: break;
      }
    }
    if ((n->op == BinaryOp::And || n->op == BinaryOp::Or) && a->dtype == DType::boolean) {
      int64_t v;
      bool And = n->op == BinaryOp::And;
      if (asConstInt(a, &v)) return (v != 0) == And ? b : a;
      if (asConstInt(b, &v)) return (v != 0) == And ? a : b;
    }
    return a == n->a && b == n->b ? e : makeBinary(n->op, a, b);
  }

  // (c * x + r) / d == x / (d / c) and (c * x + r) % d == c * (x % (d / c)) + r
  // for floor division when c divides d and 0 <= r < c: a blocked index
  // (block * 16 + lane) split at a multiple of the block (a concatenation of
  // 144-channel parts read in 16-lane blocks) keeps the lane out of the
  // quotient. `rest` holds the terms whose coefficients d does not divide,
  // `quotient` the others (divided by d).
  std::optional<PrimExpr> splitByFactor(BinaryOp op, const Linear& quotient, const Linear& rest, int64_t d) {
    std::vector<int64_t> factors;
    for (const auto& t : rest.terms)
      if (int64_t c = std::gcd(t.coeff < 0 ? -t.coeff : t.coeff, d); c > 1 && c < d) factors.push_back(c);
    std::sort(factors.rbegin(), factors.rend());
    for (int64_t c : factors) {
      Linear x, r;  // rest == c * x + r
      for (const auto& t : rest.terms)
        (t.coeff % c == 0 ? x : r).add(t.atom, t.coeff % c == 0 ? t.coeff / c : t.coeff);
      x.constant = floorDiv(rest.constant, c);
      r.constant = floorMod(rest.constant, c);
      auto rb = r.isConst() ? std::optional<std::pair<int64_t, int64_t>>({r.constant, r.constant})
                            : az_.constBounds(fromLinear(r));
      if (x.isConst() || !rb || rb->first < 0 || rb->second >= c) continue;
      PrimExpr inner = (*this)(makeBinary(op, fromLinear(x), makeInt(d / c)));
      Linear out = op == BinaryOp::Div ? quotient : r;
      out.add(inner, op == BinaryOp::Div ? 1 : c);
      return fromLinear(out);
    }
    return std::nullopt;
  }

  // a / d or a % d for a constant d > 0.
  PrimExpr divMod(BinaryOp op, const PrimExpr& a, int64_t d) {
    if (d == 1) return op == BinaryOp::Div ? a : makeInt(0);
    // (x / c) / d == x / (c * d) for positive c, d.
    if (const auto* inner = a->as<BinaryNode>(); inner && op == BinaryOp::Div && inner->op == BinaryOp::Div) {
      int64_t c;
      if (constOf(inner->b, &c) && c > 0) return divMod(BinaryOp::Div, inner->a, c * d);
    }
    // (x % c) % d == x % d when d divides c.
    if (const auto* inner = a->as<BinaryNode>(); inner && op == BinaryOp::Mod && inner->op == BinaryOp::Mod) {
      int64_t c;
      if (constOf(inner->b, &c) && c > 0 && c % d == 0) return divMod(BinaryOp::Mod, inner->a, d);
    }
    Linear l = linear(a), quotient, rest;
    for (const auto& t : l.terms) {
      if (t.coeff % d == 0)
        quotient.add(t.atom, t.coeff / d);
      else
        rest.add(t.atom, t.coeff);
    }
    quotient.constant = floorDiv(l.constant, d);
    rest.constant = floorMod(l.constant, d);
    PrimExpr rest_expr = fromLinear(rest);
    if (auto rb = az_.constBounds(rest_expr)) {
      int64_t k = floorDiv(rb->first, d);
      if (floorDiv(rb->second, d) == k) {
        // rest / d == k for every value: the division is exact.
        if (op == BinaryOp::Div) {
          quotient.constant += k;
          return fromLinear(quotient);
        }
        Linear r = rest;
        r.constant -= k * d;
        return fromLinear(r);
      }
    }
    if (auto split = splitByFactor(op, quotient, rest, d)) return *split;
    if (op == BinaryOp::Mod) {
      // x % d keeps only the terms whose coefficients d does not divide.
      if (quotient.terms.empty() && rest.terms.size() == l.terms.size() && rest.constant == l.constant)
        return makeBinary(BinaryOp::Mod, rest_expr, makeInt(d));
      return (*this)(makeBinary(BinaryOp::Mod, rest_expr, makeInt(d)));
    }
    // (q * d + r) / d == q + r / d for floor division, whatever r is: a
    // stride-d access re-indexed by w / d becomes unit-stride in q.
    if (quotient.terms.empty() && quotient.constant == 0)
      return makeBinary(BinaryOp::Div, fromLinear(l), makeInt(d));
    quotient.add(makeBinary(BinaryOp::Div, rest_expr, makeInt(d)), 1);
    return fromLinear(quotient);
  }

  const Analyzer& az_;
};

PrimExpr addExpr(const PrimExpr& a, const PrimExpr& b) { return simplify(makeBinary(BinaryOp::Add, a, b)); }
PrimExpr mulConst(const PrimExpr& a, int64_t c) { return simplify(makeBinary(BinaryOp::Mul, a, makeInt(c))); }
PrimExpr minExpr(const PrimExpr& a, const PrimExpr& b) { return simplify(makeBinary(BinaryOp::Min, a, b)); }
PrimExpr maxExpr(const PrimExpr& a, const PrimExpr& b) { return simplify(makeBinary(BinaryOp::Max, a, b)); }

}  // namespace

void Analyzer::bind(const Var& v, PrimExpr min, PrimExpr extent) {
  ranges_[v.get()] = {std::move(min), std::move(extent)};
}

void Analyzer::unbind(const Var& v) { ranges_.erase(v.get()); }

PrimExpr Analyzer::simplify(const PrimExpr& e) const { return Simplifier(*this)(e); }

PrimExpr simplify(const PrimExpr& e) {
  static const Analyzer empty;
  return empty.simplify(e);
}

std::optional<IntBounds> Analyzer::bounds(const PrimExpr& e) const {
  if (!isIndex(e)) return std::nullopt;
  if (!mentionsBound(e, ranges_)) {
    PrimExpr s = ir::simplify(e);
    return IntBounds{s, s};
  }
  Simplifier simp(*this);
  Linear l = simp.linear(e);
  l.dropZeros();
  PrimExpr lo = makeInt(l.constant), hi = makeInt(l.constant);
  for (const auto& t : l.terms) {
    std::optional<IntBounds> b;
    if (const auto* v = t.atom->as<VarNode>()) {
      auto it = ranges_.find(v);
      if (it == ranges_.end()) {
        b = IntBounds{t.atom, t.atom};
      } else {
        b = IntBounds{
            it->second.min,
            ir::simplify(makeBinary(
                BinaryOp::Sub, makeBinary(BinaryOp::Add, it->second.min, it->second.extent), makeInt(1)))};
      }
    } else if (!mentionsBound(t.atom, ranges_)) {
      b = IntBounds{t.atom, t.atom};
    } else if (const auto* bin = t.atom->as<BinaryNode>()) {
      int64_t d;
      if ((bin->op == BinaryOp::Div || bin->op == BinaryOp::Mod) && constOf(bin->b, &d) && d > 0) {
        auto inner = bounds(bin->a);
        if (bin->op == BinaryOp::Div) {
          if (inner)
            b = IntBounds{ir::simplify(makeBinary(BinaryOp::Div, inner->min, bin->b)),
                          ir::simplify(makeBinary(BinaryOp::Div, inner->max, bin->b))};
        } else {
          b = IntBounds{makeInt(0), makeInt(d - 1)};
          int64_t x, y;
          if (inner && asConstInt(inner->min, &x) && asConstInt(inner->max, &y) &&
              floorDiv(x, d) == floorDiv(y, d))
            b = IntBounds{makeInt(floorMod(x, d)), makeInt(floorMod(y, d))};
        }
      } else if (bin->op == BinaryOp::Min || bin->op == BinaryOp::Max) {
        auto x = bounds(bin->a), y = bounds(bin->b);
        if (x && y) {
          b = bin->op == BinaryOp::Min ? IntBounds{minExpr(x->min, y->min), minExpr(x->max, y->max)}
                                       : IntBounds{maxExpr(x->min, y->min), maxExpr(x->max, y->max)};
        }
      }
    } else if (const auto* sel = t.atom->as<SelectNode>()) {
      auto x = bounds(sel->true_value), y = bounds(sel->false_value);
      if (x && y) b = IntBounds{minExpr(x->min, y->min), maxExpr(x->max, y->max)};
    }
    if (!b) return std::nullopt;
    if (t.coeff > 0) {
      lo = addExpr(lo, mulConst(b->min, t.coeff));
      hi = addExpr(hi, mulConst(b->max, t.coeff));
    } else {
      lo = addExpr(lo, mulConst(b->max, t.coeff));
      hi = addExpr(hi, mulConst(b->min, t.coeff));
    }
  }
  return IntBounds{lo, hi};
}

std::optional<std::pair<int64_t, int64_t>> Analyzer::constBounds(const PrimExpr& e) const {
  auto b = bounds(e);
  int64_t lo, hi;
  if (!b || !constOf(b->min, &lo) || !constOf(b->max, &hi)) return std::nullopt;
  return std::make_pair(lo, hi);
}

bool Analyzer::canProve(const PrimExpr& cond) const {
  if (!cond || cond->dtype != DType::boolean) return false;
  int64_t v;
  if (asConstInt(cond, &v)) return v != 0;
  if (const auto* u = cond->as<UnaryNode>(); u && u->op == UnaryOp::Not) {
    const auto* b = u->a->as<BinaryNode>();
    if (!b) return false;
    switch (b->op) {
      case BinaryOp::LT: return canProve(makeBinary(BinaryOp::GE, b->a, b->b));
      case BinaryOp::LE: return canProve(makeBinary(BinaryOp::GT, b->a, b->b));
      case BinaryOp::GT: return canProve(makeBinary(BinaryOp::LE, b->a, b->b));
      case BinaryOp::GE: return canProve(makeBinary(BinaryOp::LT, b->a, b->b));
      case BinaryOp::EQ: return canProve(makeBinary(BinaryOp::NE, b->a, b->b));
      case BinaryOp::NE: return canProve(makeBinary(BinaryOp::EQ, b->a, b->b));
      default: return false;
    }
  }
  const auto* b = cond->as<BinaryNode>();
  if (!b) return false;
  if (b->op == BinaryOp::And) return canProve(b->a) && canProve(b->b);
  if (b->op == BinaryOp::Or) return canProve(b->a) || canProve(b->b);
  if (!isComparison(b->op) || !isIndex(b->a) || !isIndex(b->b)) return false;
  // Bounds of a - b; one constant end is enough for an inequality (with i in
  // [0, n), i - n lies in [-n, -1], so i < n holds).
  auto d = bounds(makeBinary(BinaryOp::Sub, b->a, b->b));
  if (!d) return false;
  int64_t lo, hi;
  const bool has_lo = constOf(d->min, &lo), has_hi = constOf(d->max, &hi);
  switch (b->op) {
    case BinaryOp::LT: return has_hi && hi < 0;
    case BinaryOp::LE: return has_hi && hi <= 0;
    case BinaryOp::GT: return has_lo && lo > 0;
    case BinaryOp::GE: return has_lo && lo >= 0;
    case BinaryOp::EQ: return has_lo && has_hi && lo == 0 && hi == 0;
    case BinaryOp::NE: return (has_lo && lo > 0) || (has_hi && hi < 0);
    default: return false;
  }
}

}  // namespace mlcc::ir
