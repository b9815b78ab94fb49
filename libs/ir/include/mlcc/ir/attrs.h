// Attribute values: the keyword arguments of graph ops (`strides = [1, 1]`),
// function/loop/block annotations, and the arguments of schedule trace
// instructions. A value is a bool, i64, f64, string, TensorIR expression
// (e.g. a symbolic dimension `n`), a reference to a trace random variable
// (`%l0`), or a list of values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "mlcc/ir/expr.h"

namespace mlcc::ir {

// A reference to a named random variable of a schedule trace (`%b0`).
struct TraceRef {
  std::string name;
  bool operator==(const TraceRef&) const = default;
};

struct AttrValue {
  using List = std::vector<AttrValue>;
  // PrimExpr values are never IntImm of dtype i64: the constructor turns
  // those into plain int64_t, so that printing and parsing agree.
  using Storage = std::variant<bool, int64_t, double, std::string, PrimExpr, TraceRef, List>;

  AttrValue() : v(int64_t{0}) {}
  AttrValue(bool b) : v(b) {}
  AttrValue(int i) : v(int64_t{i}) {}
  AttrValue(int64_t i) : v(i) {}
  AttrValue(double d) : v(d) {}
  AttrValue(const char* s) : v(std::string(s)) {}
  AttrValue(std::string s) : v(std::move(s)) {}
  AttrValue(PrimExpr e);
  AttrValue(TraceRef r) : v(std::move(r)) {}
  AttrValue(List l) : v(std::move(l)) {}
  static AttrValue ints(const std::vector<int64_t>& values);

  bool isBool() const { return std::holds_alternative<bool>(v); }
  bool isInt() const { return std::holds_alternative<int64_t>(v); }
  bool isFloat() const { return std::holds_alternative<double>(v); }
  bool isString() const { return std::holds_alternative<std::string>(v); }
  bool isExpr() const { return std::holds_alternative<PrimExpr>(v); }
  bool isRef() const { return std::holds_alternative<TraceRef>(v); }
  bool isList() const { return std::holds_alternative<List>(v); }

  bool asBool() const { return std::get<bool>(v); }
  int64_t asInt() const { return std::get<int64_t>(v); }
  double asFloat() const { return std::get<double>(v); }
  const std::string& asString() const { return std::get<std::string>(v); }
  const PrimExpr& asExpr() const { return std::get<PrimExpr>(v); }
  const TraceRef& asRef() const { return std::get<TraceRef>(v); }
  const List& asList() const { return std::get<List>(v); }
  // A list of ints (throws mlcc::Error naming `what` otherwise).
  std::vector<int64_t> asInts(const char* what = "attribute") const;

  Storage v;
};

// Attributes are kept sorted by key, so printing is deterministic.
using Attrs = std::map<std::string, AttrValue>;

}  // namespace mlcc::ir
