// Shape helpers over symbolic dimensions (see shape.h).
#include "mlcc/ops/shape.h"

#include <functional>
#include <unordered_map>

#include "mlcc/ir/structural.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ops {

using ir::BinaryOp;
using ir::PrimExpr;

namespace {
bool constOf(const PrimExpr& e, int64_t* v) { return ir::asConstInt(e, v); }
}  // namespace

PrimExpr dimConst(int64_t v) { return ir::makeInt(v); }

bool isConstDim(const PrimExpr& d, int64_t value) {
  int64_t c;
  return constOf(d, &c) && c == value;
}

PrimExpr dimAdd(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return dimConst(addOrThrow(x, y, "a dimension"));
  if (isConstDim(a, 0)) return b;
  if (isConstDim(b, 0)) return a;
  if (constOf(b, &y) && y < 0 && y != INT64_MIN) return ir::makeBinary(BinaryOp::Sub, a, dimConst(-y));
  return ir::makeBinary(BinaryOp::Add, a, b);
}

PrimExpr dimSub(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) {
    if (y == INT64_MIN) throw Error("a dimension overflows");
    return dimConst(addOrThrow(x, -y, "a dimension"));
  }
  if (isConstDim(b, 0)) return a;
  if (dimEqual(a, b)) return dimConst(0);
  // (e + c1) - c2 -> e + (c1 - c2)
  if (constOf(b, &y)) {
    if (const auto* bin = a->as<ir::BinaryNode>();
        bin && (bin->op == BinaryOp::Add || bin->op == BinaryOp::Sub)) {
      int64_t c1;
      if (constOf(bin->b, &c1) && c1 != INT64_MIN && y != INT64_MIN)
        return dimAdd(bin->a, dimConst(addOrThrow(bin->op == BinaryOp::Add ? c1 : -c1, -y, "a dimension")));
    }
  }
  return ir::makeBinary(BinaryOp::Sub, a, b);
}

PrimExpr dimMul(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return dimConst(mulOrThrow(x, y, "a dimension"));
  if (isConstDim(a, 1)) return b;
  if (isConstDim(b, 1)) return a;
  if (isConstDim(a, 0) || isConstDim(b, 0)) return dimConst(0);
  if (constOf(a, &x)) return ir::makeBinary(BinaryOp::Mul, b, a);  // constants on the right
  return ir::makeBinary(BinaryOp::Mul, a, b);
}

PrimExpr dimFloorDiv(const PrimExpr& a, const PrimExpr& b) {
  int64_t x, y;
  if (constOf(b, &y) && y == 0) throw Error("division of a dimension by zero");
  if (constOf(a, &x) && constOf(b, &y)) {
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return dimConst(q);
  }
  if (isConstDim(b, 1)) return a;
  return ir::makeBinary(BinaryOp::Div, a, b);
}

bool dimEqual(const PrimExpr& a, const PrimExpr& b) {
  if (a == b) return true;
  int64_t x, y;
  if (constOf(a, &x) && constOf(b, &y)) return x == y;
  if (a->kind != b->kind) return false;
  if (a->as<ir::VarNode>()) return false;  // distinct variable nodes
  // Same shape of expression over the same variables.
  if (const auto* ba = a->as<ir::BinaryNode>()) {
    const auto* bb = b->as<ir::BinaryNode>();
    return ba->op == bb->op && dimEqual(ba->a, bb->a) && dimEqual(ba->b, bb->b);
  }
  return false;
}

Shape broadcastShapes(const Shape& a, const Shape& b, const char* op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const PrimExpr* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const PrimExpr* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (isConstDim(*da, 1)) {
      out[i] = *db;
    } else if (isConstDim(*db, 1) || dimEqual(*da, *db)) {
      out[i] = *da;
    } else {
      throw Error(std::string("op '") + op + "': shapes cannot be broadcast together (dimension " +
                  std::to_string(i) + " differs)");
    }
  }
  return out;
}

bool staticShape(const Shape& s, std::vector<int64_t>* out) {
  std::vector<int64_t> dims;
  for (const auto& d : s) {
    int64_t c;
    if (!constOf(d, &c)) return false;
    dims.push_back(c);
  }
  if (out) *out = std::move(dims);
  return true;
}

Shape constShape(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(dimConst(d));
  return s;
}

const ir::Type& tensorOperand(const std::vector<ir::Type>& inputs, size_t i, const char* op) {
  if (i >= inputs.size()) throw Error(std::string("op '") + op + "': missing operand " + std::to_string(i));
  if (!inputs[i].isTensor())
    throw Error(std::string("op '") + op + "': operand " + std::to_string(i) + " is a tuple, not a tensor");
  return inputs[i];
}

}  // namespace mlcc::ops

namespace mlcc::ops {

namespace {

// Evaluates an i64 dimension expression with each variable given
// `value_of(var)`; false when the expression is not integer arithmetic.
bool evalDim(const PrimExpr& e, const std::function<int64_t(const ir::VarNode*)>& value_of, int64_t* out) {
  if (const auto* imm = e->as<ir::IntImmNode>()) return *out = imm->value, true;
  if (const auto* v = e->as<ir::VarNode>()) return *out = value_of(v), true;
  const auto* b = e->as<ir::BinaryNode>();
  int64_t x, y;
  if (!b || !evalDim(b->a, value_of, &x) || !evalDim(b->b, value_of, &y)) return false;
  switch (b->op) {
    case BinaryOp::Add: *out = x + y; return true;
    case BinaryOp::Sub: *out = x - y; return true;
    case BinaryOp::Mul: *out = x * y; return true;
    case BinaryOp::Div:
      if (y == 0) return false;
      *out = x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);
      return true;
    case BinaryOp::Mod:
      if (y == 0) return false;
      *out = ((x % y) + y) % y;
      return true;
    case BinaryOp::Min: *out = std::min(x, y); return true;
    case BinaryOp::Max: *out = std::max(x, y); return true;
    default: return false;
  }
}

}  // namespace

bool dimsEquivalent(const PrimExpr& a, const PrimExpr& b) {
  if (dimEqual(a, b)) return true;
  // Distinct primes per variable, at a few scales, keep accidental agreement
  // of different polynomials out of reach in practice.
  static constexpr int64_t kPrimes[] = {1009, 2003, 3001, 4001, 5003, 6007, 7001, 8009};
  for (int64_t scale : {1, 7, 131}) {
    std::unordered_map<const ir::VarNode*, int64_t> values;
    auto value_of = [&](const ir::VarNode* v) {
      auto it = values.find(v);
      if (it != values.end()) return it->second;
      int64_t val = kPrimes[values.size() % 8] * scale + static_cast<int64_t>(values.size());
      values.emplace(v, val);
      return val;
    };
    int64_t x, y;
    if (!evalDim(a, value_of, &x) || !evalDim(b, value_of, &y) || x != y) return false;
  }
  return true;
}

bool typesEquivalent(const ir::Type& a, const ir::Type& b) {
  if (a.kind != b.kind) return false;
  if (a.isTuple()) {
    if (a.fields.size() != b.fields.size()) return false;
    for (size_t i = 0; i < a.fields.size(); ++i)
      if (!typesEquivalent(a.fields[i], b.fields[i])) return false;
    return true;
  }
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!dimsEquivalent(a.shape[i], b.shape[i])) return false;
  return true;
}

}  // namespace mlcc::ops
