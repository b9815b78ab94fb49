// The IR verifier (see verifier.h). Layout:
//  - reporting: errors read "in prim @f, block "B": message" and carry the
//    source location of the offending node when a SourceMap knows it;
//  - expression helpers shared by both levels: a pre-order walk, the
//    factories' dtype rules rechecked per node, structural equality of dims;
//  - GraphChecker: SSA, call targets and types of one graph function;
//  - PrimChecker: one scope-tracking walk over a prim func, checking the
//    visibility of variables and buffers, dtypes, accesses and the trace;
//    then accesses provably out of bounds (access_bounds.cpp).
#include "mlcc/ir/verifier.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "access_bounds.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/entry.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/intrinsics.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

namespace {

// structuralChecksOnly(): no op is known, none is checked.
class NoOpTypes final : public OpTypeInfo {
 public:
  void checkBinding(const GraphFunc&, const Binding&) const override {}
  int64_t flops(const Binding&) const override { return 0; }
};

std::string dt(DType t) { return std::string(dtypeName(t)); }
std::string pct(const std::string& name) { return "%" + name; }
std::string quoted(const std::string& name) { return "\"" + name + "\""; }

// ---------------------------------------------------------------------------
// Reporting

// Throws the error for `message`, located at `node` when the source map knows
// it. (SourceMap::errorAt belongs to the parser; only its fields are used.)
[[noreturn]] void throwAt(const SourceMap* source_map, const void* node, const std::string& message) {
  if (source_map && node) {
    auto it = source_map->locs.find(node);
    if (it != source_map->locs.end()) {
      SourceLoc loc = it->second;
      if (loc.file.empty()) loc.file = source_map->file;
      throw Error(loc, message, lineOf(source_map->text, loc.line));
    }
  }
  throw Error(message);
}

// Formats "in <function>[, <where>]: <message>" and locates it at the first
// of `nodes` (then the function itself) that the source map knows.
class Reporter {
 public:
  Reporter(const SourceMap* source_map, std::string function_label, const void* function_node)
      : source_map_(source_map), label_(std::move(function_label)), function_node_(function_node) {}

  [[noreturn]] void fail(const std::string& where, const std::string& message,
                         std::initializer_list<const void*> nodes = {}) const {
    std::string text = "in " + label_ + (where.empty() ? "" : ", " + where) + ": " + message;
    if (source_map_)
      for (const void* node : nodes)
        if (node && source_map_->locs.count(node)) throwAt(source_map_, node, text);
    throwAt(source_map_, function_node_, text);
  }

  const SourceMap* sourceMap() const { return source_map_; }

 private:
  const SourceMap* source_map_;
  std::string label_;
  const void* function_node_;
};

// ---------------------------------------------------------------------------
// Expressions

// Calls `visit` on `e` and on each of its subexpressions, parents first.
// A null child is visited too (as nullptr) and not descended into.
void forEachExpr(const PrimExpr& e, const std::function<void(const PrimExpr&)>& visit) {
  visit(e);
  if (!e) return;
  auto all = [&](const std::vector<PrimExpr>& es) {
    for (const auto& x : es) forEachExpr(x, visit);
  };
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var: break;
    case ExprKind::Binary: all({e->as<BinaryNode>()->a, e->as<BinaryNode>()->b}); break;
    case ExprKind::Unary: forEachExpr(e->as<UnaryNode>()->a, visit); break;
    case ExprKind::Select: {
      const auto* s = e->as<SelectNode>();
      all({s->cond, s->true_value, s->false_value});
      break;
    }
    case ExprKind::Cast: forEachExpr(e->as<CastNode>()->value, visit); break;
    case ExprKind::Load: all(e->as<LoadNode>()->indices); break;
    case ExprKind::Call: all(e->as<CallNode>()->args); break;
  }
}

// The factories' dtype rules (expr.h), rechecked on one node whose children
// are non-null, since nodes can be built without the factories. Returns an
// error message, or "" when the node is consistent.
std::string exprDTypeError(const ExprNode& e) {
  auto expect = [&](DType want) {
    return e.dtype == want ? std::string() : "expression has dtype " + dt(e.dtype) + ", expected " + dt(want);
  };
  switch (e.kind) {
    case ExprKind::IntImm: {
      if (!isInt(e.dtype) && e.dtype != DType::boolean) return "integer literal of dtype " + dt(e.dtype);
      int64_t v = e.as<IntImmNode>()->value;
      if (e.dtype == DType::boolean && v != 0 && v != 1)
        return "bool literal with value " + std::to_string(v);
      return {};
    }
    case ExprKind::FloatImm:
      return isFloat(e.dtype) ? std::string() : "float literal of dtype " + dt(e.dtype);
    case ExprKind::Var: return {};
    case ExprKind::Binary: {
      const auto* b = e.as<BinaryNode>();
      std::string op = binaryOpName(b->op);
      if (b->a->dtype != b->b->dtype)
        return "operands of '" + op + "' have different dtypes: " + dt(b->a->dtype) + " and " +
               dt(b->b->dtype);
      if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
        if (b->a->dtype != DType::boolean)
          return "operands of '" + op + "' must be bool, not " + dt(b->a->dtype);
        return expect(DType::boolean);
      }
      if (isComparison(b->op)) return expect(DType::boolean);
      if (b->a->dtype == DType::boolean) return "arithmetic '" + op + "' on bool operands";
      return expect(b->a->dtype);
    }
    case ExprKind::Unary: {
      const auto* u = e.as<UnaryNode>();
      if (u->op == UnaryOp::Not && u->a->dtype != DType::boolean)
        return "operand of '!' must be bool, not " + dt(u->a->dtype);
      if (u->op == UnaryOp::Neg && u->a->dtype == DType::boolean) return "operand of '-' is bool";
      return expect(u->a->dtype);
    }
    case ExprKind::Select: {
      const auto* s = e.as<SelectNode>();
      if (s->cond->dtype != DType::boolean) return "select condition must be bool, not " + dt(s->cond->dtype);
      if (s->true_value->dtype != s->false_value->dtype)
        return "select arms have different dtypes: " + dt(s->true_value->dtype) + " and " +
               dt(s->false_value->dtype);
      return expect(s->true_value->dtype);
    }
    case ExprKind::Cast: return {};
    case ExprKind::Load: {
      const auto* l = e.as<LoadNode>();
      if (!l->buffer) return "load from a null buffer";
      return expect(l->buffer->dtype);
    }
    case ExprKind::Call: {
      const auto* c = e.as<CallNode>();
      const IntrinsicInfo* info = findIntrinsic(c->name);
      if (!info) return "unknown intrinsic '" + c->name + "'";
      if (static_cast<int>(c->args.size()) != info->arity)
        return "intrinsic '" + c->name + "' takes " + std::to_string(info->arity) + " argument(s), not " +
               std::to_string(c->args.size());
      for (const auto& a : c->args)
        if (a->dtype != c->args[0]->dtype) return "arguments of '" + c->name + "' have different dtypes";
      DType arg = c->args.empty() ? DType::f32 : c->args[0]->dtype;
      if (!intrinsicAccepts(*info, arg))
        return "intrinsic '" + c->name + "' needs " + intrinsicArgsText(*info) + " argument, not " +
               std::string(dtypeName(arg));
      return expect(info->result == IntrinsicResult::Bool ? DType::boolean : arg);
    }
  }
  return "unknown expression kind";
}

// A short spelling of a dimension for messages: 784, n, or <expr>.
std::string dimText(const PrimExpr& d) {
  int64_t c;
  if (asConstInt(d, &c)) return std::to_string(c);
  if (const auto* v = d ? d->as<VarNode>() : nullptr) return v->name;
  return "<expr>";
}

std::string shapeText(DType t, const std::vector<PrimExpr>& shape) {
  std::string s = dt(t) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + dimText(shape[i]);
  return s + "]";
}

std::string typeText(const Type& t) {
  if (t.isTensor()) return shapeText(t.dtype, t.shape);
  std::string s = "(";
  for (size_t i = 0; i < t.fields.size(); ++i) s += (i ? ", " : "") + typeText(t.fields[i]);
  return s + ")";
}

bool typeEqual(const Type& a, const Type& b) {
  if (a.kind != b.kind) return false;
  if (a.isTuple()) {
    if (a.fields.size() != b.fields.size()) return false;
    for (size_t i = 0; i < a.fields.size(); ++i)
      if (!typeEqual(a.fields[i], b.fields[i])) return false;
    return true;
  }
  if (a.dtype != b.dtype || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!sameExpr(a.shape[i], b.shape[i])) return false;
  return true;
}

// Same kind, dtype and rank (dimensions may differ), recursively.
bool typeCompatible(const Type& a, const Type& b) {
  if (a.kind != b.kind) return false;
  if (a.isTuple()) {
    if (a.fields.size() != b.fields.size()) return false;
    for (size_t i = 0; i < a.fields.size(); ++i)
      if (!typeCompatible(a.fields[i], b.fields[i])) return false;
    return true;
  }
  return a.dtype == b.dtype && a.rank() == b.rank();
}

// The symbolic variables a list of shapes binds: those that appear as a
// whole dimension.
void collectSymbolicDims(const std::vector<PrimExpr>& shape, std::unordered_set<const VarNode*>& out) {
  for (const auto& d : shape)
    if (const auto* v = d ? d->as<VarNode>() : nullptr) out.insert(v);
}

void collectSymbolicDims(const Type& t, std::unordered_set<const VarNode*>& out) {
  collectSymbolicDims(t.shape, out);
  for (const auto& f : t.fields) collectSymbolicDims(f, out);
}

// Checks one shape dimension: non-null, i64, consistent dtypes, and built of
// literals, arithmetic and `bound` symbolic variables only. Returns an error
// message or "".
std::string dimError(const PrimExpr& d, const std::unordered_set<const VarNode*>& bound) {
  std::string error;
  forEachExpr(d, [&](const PrimExpr& x) {
    if (!error.empty()) return;
    if (!x) {
      error = "null shape dimension";
    } else if (std::string e = exprDTypeError(*x); !e.empty()) {
      error = e;
    } else if (x->kind == ExprKind::Load) {
      error = "shape dimension reads buffer " + pct(x->as<LoadNode>()->buffer->name);
    } else if (const auto* v = x->as<VarNode>(); v && !bound.count(v)) {
      error = "symbolic dimension " + v->name + " is not bound by a parameter";
    }
  });
  if (error.empty() && d->dtype != DType::i64)
    error = "shape dimension has dtype " + dt(d->dtype) + ", not i64";
  return error;
}

}  // namespace

std::string sizeError(DType dtype, const std::vector<PrimExpr>& shape) {
  std::vector<int64_t> dims;
  for (const auto& d : shape) {
    int64_t c;
    if (!asConstInt(d, &c)) continue;
    if (c < 0) return "negative dimension " + std::to_string(c) + " in " + shapeText(dtype, shape);
    dims.push_back(c);
  }
  if (checkedByteSize(dims, dtypeBytes(dtype))) return {};
  return shapeText(dtype, shape) + " is too large: its size in bytes overflows a 64-bit integer";
}

std::string typeSizeError(const Type& t) {
  if (!t.isTuple()) return sizeError(t.dtype, t.shape);
  for (const auto& f : t.fields)
    if (std::string e = typeSizeError(f); !e.empty()) return e;
  return {};
}

namespace {

// The byte size of a static shape, or -1 when a dimension is symbolic (or the
// shape has no valid size: see sizeError).
int64_t staticByteSize(DType dtype, const std::vector<PrimExpr>& shape) {
  std::vector<int64_t> dims;
  for (const auto& d : shape) {
    int64_t c;
    if (!asConstInt(d, &c)) return -1;
    dims.push_back(c);
  }
  return checkedByteSize(dims, dtypeBytes(dtype)).value_or(-1);
}

// The AttrValue invariant (attrs.h): an expression value is never an i64
// literal (that is a plain integer, and the text reads it back as one).
// Returns an error message for the first bad value of `attrs`, or "".
std::string attrValueError(const std::string& key, const AttrValue& v) {
  if (v.isExpr()) {
    int64_t c;
    if (!v.asExpr()) return "attribute '" + key + "' holds a null expression";
    if (v.asExpr()->dtype == DType::i64 && asConstInt(v.asExpr(), &c))
      return "attribute '" + key + "' holds the i64 literal expression " + std::to_string(c) +
             "; an i64 constant is a plain integer attribute";
  }
  if (v.isList())
    for (const auto& item : v.asList())
      if (std::string e = attrValueError(key, item); !e.empty()) return e;
  return {};
}

std::string attrsError(const Attrs& attrs) {
  for (const auto& [key, v] : attrs)
    if (std::string e = attrValueError(key, v); !e.empty()) return e;
  return {};
}

// ---------------------------------------------------------------------------
// Graph functions

class GraphChecker {
 public:
  GraphChecker(const Module& m, const GraphFunc& f, const OpTypeInfo& op_types, const SourceMap* source_map)
      : m_(m), f_(f), op_types_(op_types), report_(source_map, "graph @" + f.name, &f) {}

  void run() {
    for (const auto& p : f_.params)
      if (p) collectSymbolicDims(p->type, symbolic_);
    for (const auto& block : f_.blocks)
      for (const auto& b : block.bindings)
        if (b.var) all_defined_.insert(b.var.get());
    for (const auto& p : f_.params) {
      if (!p) fail("", "null parameter");
      where_ = "parameter " + pct(p->name);
      define(p);
    }
    where_ = "return type";
    checkType(f_.ret_type, &f_);
    if (std::string e = attrsError(f_.attrs); !e.empty()) fail("", e, &f_);
    for (const auto& block : f_.blocks)
      for (const auto& b : block.bindings) checkBinding(b);
    checkReturn();
    if (f_.attrs.count("output_names")) {
      try {
        entryOutputs(f_);
      } catch (const Error& e) {
        fail("", e.message(), &f_);
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& message,
                         const void* node = nullptr) const {
    report_.fail(where, message, {node});
  }
  [[noreturn]] void fail(const std::string& message, const void* node = nullptr) const {
    fail(where_, message, node);
  }

  void checkType(const Type& t, const void* node) const {
    if (t.isTuple()) {
      for (const auto& field : t.fields) checkType(field, node);
      return;
    }
    for (const auto& d : t.shape)
      if (std::string e = dimError(d, symbolic_); !e.empty()) fail(e, node);
    if (std::string e = sizeError(t.dtype, t.shape); !e.empty()) fail(e, node);
  }

  void checkNotDefined(const GraphVar& v) const {
    if (defined_.count(v.get())) fail("variable " + pct(v->name) + " is defined twice", v.get());
  }

  void define(const GraphVar& v) {
    checkNotDefined(v);
    checkType(v->type, v.get());
    defined_.insert(v.get());
  }

  // Every use: non-null and defined earlier in this function.
  void checkUse(const GraphVar& v, const void* at) const {
    if (!v) fail("null argument", at);
    if (defined_.count(v.get())) return;
    if (all_defined_.count(v.get())) fail(pct(v->name) + " is used before its definition", at);
    fail(pct(v->name) + " is not defined in this function", at);
  }

  void checkArgCount(const Binding& b, size_t n) const {
    if (b.value.args.size() != n)
      fail(std::string(valueKindName(b.value.kind)) + " takes " + std::to_string(n) + " argument(s), not " +
               std::to_string(b.value.args.size()),
           b.var.get());
  }

  void checkBinding(const Binding& b) {
    if (!b.var) fail("", "binding of a null variable");
    where_ = "binding " + pct(b.var->name);
    checkNotDefined(b.var);
    for (const auto& a : b.value.args) checkUse(a, b.var.get());
    checkType(b.var->type, b.var.get());  // before the value, whose checks use its size
    checkValue(b);
    define(b.var);
  }

  void checkValue(const Binding& b) const {
    const GraphValue& v = b.value;
    const Type& type = b.var->type;
    const void* at = b.var.get();
    // Only calls have keyword arguments; the text has no place for others.
    const bool call = v.kind == ValueKind::Op || v.kind == ValueKind::CallTir ||
                      v.kind == ValueKind::CallExtern || v.kind == ValueKind::CallGraph;
    if (!call && !v.attrs.empty())
      fail(std::string(valueKindName(v.kind)) + " value has attributes ('" + v.attrs.begin()->first +
               "'); only calls take keyword arguments",
           at);
    if (std::string e = attrsError(v.attrs); !e.empty()) fail(e, at);
    switch (v.kind) {
      case ValueKind::Alias:
        checkArgCount(b, 1);
        if (!typeEqual(type, v.args[0]->type))
          fail("alias of " + pct(v.args[0]->name) + ": the binding has type " + typeText(type) + ", but " +
                   pct(v.args[0]->name) + " has type " + typeText(v.args[0]->type),
               at);
        break;
      case ValueKind::Const: checkConst(b); break;
      case ValueKind::Tuple: {
        if (!type.isTuple() || type.fields.size() != v.args.size())
          fail("tuple of " + std::to_string(v.args.size()) + " field(s) has type " + typeText(type), at);
        for (size_t i = 0; i < v.args.size(); ++i)
          if (!typeEqual(type.fields[i], v.args[i]->type))
            fail("tuple field " + std::to_string(i) + " is " + pct(v.args[i]->name) + " of type " +
                     typeText(v.args[i]->type) + ", but the binding type says " + typeText(type.fields[i]),
                 at);
        break;
      }
      case ValueKind::TupleGet: {
        checkArgCount(b, 1);
        const GraphVar& t = v.args[0];
        if (!t->type.isTuple()) fail(pct(t->name) + " is not a tuple but " + typeText(t->type), at);
        if (v.index < 0 || v.index >= static_cast<int64_t>(t->type.fields.size()))
          fail("tuple index " + std::to_string(v.index) + " is out of range for " + pct(t->name) + " with " +
                   std::to_string(t->type.fields.size()) + " field(s)",
               at);
        if (!typeEqual(type, t->type.fields[v.index]))
          fail("item " + std::to_string(v.index) + " of " + pct(t->name) + " has type " +
                   typeText(t->type.fields[v.index]) + ", not " + typeText(type),
               at);
        break;
      }
      case ValueKind::Op:
        if (v.callee.empty()) fail("op call without an op name", at);
        runOpChecker(b);
        break;
      case ValueKind::CallTir: checkCallTir(b); break;
      case ValueKind::CallExtern:
        if (v.callee.empty()) fail("call_extern without a symbol", at);
        if (const ExternFunc* decl = m_.findExtern(v.callee)) checkCallDeclaredExtern(b, *decl);
        break;
      case ValueKind::CallGraph: checkCallGraph(b); break;
    }
  }

  void checkConst(const Binding& b) const {
    const GraphValue& v = b.value;
    const Type& type = b.var->type;
    const void* at = b.var.get();
    checkArgCount(b, 0);
    if (!type.isTensor()) fail("constant of tuple type " + typeText(type), at);
    if (!v.is_inline) {
      if (v.weight.empty()) fail("constant without a weight name", at);
      return;
    }
    int64_t expected = staticByteSize(type.dtype, type.shape);
    if (expected < 0) fail("inline constant needs a static shape, not " + typeText(type), at);
    if (v.data.size() != static_cast<uint64_t>(expected))
      fail("inline constant has " + std::to_string(v.data.size()) + " bytes, but " + typeText(type) +
               " needs " + std::to_string(expected),
           at);
  }

  // A call of a declared user library function: its operands fit the
  // declaration and the binding has the result type the operands give.
  void checkCallDeclaredExtern(const Binding& b, const ExternFunc& decl) const {
    const void* at = b.var.get();
    if (!b.value.attrs.empty())
      fail("call_extern \"" + decl.name + "\": a user extern takes no attributes ('" +
               b.value.attrs.begin()->first + "')",
           at);
    std::vector<Type> args;
    for (const auto& a : b.value.args) args.push_back(a->type);
    std::string why;
    std::optional<Type> result = externCallType(decl, args, &why);
    if (!result) fail("call_extern " + why, at);
    const Type& type = b.var->type;
    bool same = type.isTensor() && type.dtype == result->dtype && type.rank() == result->rank();
    for (size_t k = 0; same && k < type.rank(); ++k)
      same = sameExpr(simplify(type.shape[k]), result->shape[k]);
    if (!same)
      fail("call_extern \"" + decl.name + "\" gives " + printType(*result) + " for these operands, not " +
               printType(type),
           at);
  }

  void checkCallTir(const Binding& b) const {
    const GraphValue& v = b.value;
    const Type& type = b.var->type;
    const void* at = b.var.get();
    const PrimFunc* callee = m_.findPrim(v.callee);
    if (!callee) {
      if (m_.findGraph(v.callee))
        fail("call_tir callee @" + v.callee + " is a graph function, not a prim func", at);
      fail("call_tir callee @" + v.callee + " is not a function of the module", at);
    }
    // Arguments, then the outputs the binding's type describes.
    std::vector<std::pair<const Type*, std::string>> operands;
    for (const auto& a : v.args) operands.emplace_back(&a->type, "argument " + pct(a->name));
    if (type.isTensor()) {
      operands.emplace_back(&type, "output");
    } else {
      for (size_t i = 0; i < type.fields.size(); ++i)
        operands.emplace_back(&type.fields[i], "output " + std::to_string(i));
    }
    if (operands.size() != callee->params.size())
      fail("call_tir @" + v.callee + " has " + std::to_string(v.args.size()) + " argument(s) and " +
               std::to_string(operands.size() - v.args.size()) + " output(s), but the prim func has " +
               std::to_string(callee->params.size()) + " parameter(s)",
           at);
    for (size_t i = 0; i < operands.size(); ++i) {
      const Type& t = *operands[i].first;
      const Buffer& buf = callee->params[i];
      const std::string& what = operands[i].second;
      if (!t.isTensor()) fail("call_tir @" + v.callee + " " + what + " is a tuple, not a tensor", at);
      if (!buf) fail("call_tir callee @" + v.callee + " has a null parameter", at);
      bool same = t.dtype == buf->dtype && t.rank() == buf->shape.size();
      for (size_t d = 0; same && d < t.rank(); ++d) {
        int64_t x, y;
        if (asConstInt(t.shape[d], &x) && asConstInt(buf->shape[d], &y) && x != y) same = false;
      }
      if (!same)
        fail("call_tir @" + v.callee + " " + what + " has type " + typeText(t) + ", but buffer " +
                 pct(buf->name) + " is " + shapeText(buf->dtype, buf->shape),
             at);
    }
  }

  void checkCallGraph(const Binding& b) const {
    const GraphValue& v = b.value;
    const void* at = b.var.get();
    const GraphFunc* callee = m_.findGraph(v.callee);
    if (!callee) {
      if (m_.findPrim(v.callee)) fail("call callee @" + v.callee + " is a prim func; use call_tir", at);
      fail("call callee @" + v.callee + " is not a function of the module", at);
    }
    if (v.args.size() != callee->params.size())
      fail("call @" + v.callee + " has " + std::to_string(v.args.size()) + " argument(s), but @" + v.callee +
               " takes " + std::to_string(callee->params.size()),
           at);
    for (size_t i = 0; i < v.args.size(); ++i) {
      const GraphVar& param = callee->params[i];
      if (param && !typeCompatible(v.args[i]->type, param->type))
        fail("call @" + v.callee + " argument " + pct(v.args[i]->name) + " has type " +
                 typeText(v.args[i]->type) + ", but parameter " + pct(param->name) + " is " +
                 typeText(param->type),
             at);
    }
    if (!typeCompatible(b.var->type, callee->ret_type))
      fail("call @" + v.callee + " returns " + typeText(callee->ret_type) + ", not " + typeText(b.var->type),
           at);
  }

  // Runs the op registry's checker; its errors get this binding's context.
  void runOpChecker(const Binding& b) const {
    try {
      op_types_.checkBinding(f_, b);
    } catch (const Error& e) {
      if (e.loc().line > 0) throw;
      // The op registry's messages name the op already ("op 'concat' ...").
      bool names_op = e.message().rfind("op '", 0) == 0;
      fail((names_op ? "" : "op " + b.value.callee + ": ") + e.message(), b.var.get());
    }
  }

  void checkReturn() {
    where_ = "return";
    for (const auto& r : f_.ret) checkUse(r, &f_);
    if (f_.ret_is_tuple) {
      if (!f_.ret_type.isTuple() || f_.ret_type.fields.size() != f_.ret.size())
        fail("returns a tuple of " + std::to_string(f_.ret.size()) + " value(s), but the return type is " +
                 typeText(f_.ret_type),
             &f_);
      for (size_t i = 0; i < f_.ret.size(); ++i)
        if (!typeEqual(f_.ret[i]->type, f_.ret_type.fields[i]))
          fail("returned " + pct(f_.ret[i]->name) + " has type " + typeText(f_.ret[i]->type) +
                   ", but field " + std::to_string(i) + " of the return type is " +
                   typeText(f_.ret_type.fields[i]),
               f_.ret[i].get());
      return;
    }
    if (f_.ret.size() != 1) fail("returns " + std::to_string(f_.ret.size()) + " values without a tuple", &f_);
    if (!typeEqual(f_.ret[0]->type, f_.ret_type))
      fail("returned " + pct(f_.ret[0]->name) + " has type " + typeText(f_.ret[0]->type) +
               ", but the return type is " + typeText(f_.ret_type),
           f_.ret[0].get());
  }

  const Module& m_;
  const GraphFunc& f_;
  const OpTypeInfo& op_types_;
  Reporter report_;
  std::string where_;                                    // "binding %h", for messages
  std::unordered_set<const VarNode*> symbolic_;          // bound by the parameters' types
  std::unordered_set<const GraphVarNode*> defined_;      // defined so far
  std::unordered_set<const GraphVarNode*> all_defined_;  // by any binding of the function
};

// ---------------------------------------------------------------------------
// Prim funcs

// One walk over the statements with the scope of variables and buffers.
// Visibility follows TensorIR: inside a (non-opaque) block only its own
// iteration variables, loops nested in the block, symbolic dimensions and
// buffers are visible; the block's bindings and predicate are evaluated
// outside it. A block without iteration variables is opaque and hides
// nothing.
class PrimChecker {
 public:
  PrimChecker(const PrimFunc& f, const SourceMap* source_map)
      : f_(f), report_(source_map, "prim @" + f.name, &f) {}

  void run() {
    if (std::string e = attrsError(f_.attrs); !e.empty()) fail(e);
    checkParams();
    for (const auto& b : f_.allocs) declareBuffer(b, "allocated buffer");
    if (f_.body) visit(f_.body);
    checkTrace();
  }

 private:
  enum class VarRole { Symbolic, Loop, Iter };
  struct VarInfo {
    VarRole role;
    int level;               // the block depth at which it is visible
    const BlockNode* owner;  // Iter: its block; Loop: the enclosing block (or null)
  };

  [[noreturn]] void fail(const std::string& message, const void* node = nullptr) const {
    std::string where = blocks_.empty() ? "" : "block " + quoted(blocks_.back()->name);
    report_.fail(where, message, {node, stmt_});
  }

  // ---- scope

  void checkParams() {
    std::unordered_set<const VarNode*> symbolic;
    for (const auto& b : f_.params)
      if (b) collectSymbolicDims(b->shape, symbolic);
    for (const auto& b : f_.params) {
      if (!b) fail("null parameter buffer");
      if (b->scope != StorageScope::global)
        fail("parameter " + pct(b->name) + " has scope " + scopeName(b->scope) + "; parameters are global",
             b.get());
      for (const auto& d : b->shape)
        if (std::string e = dimError(d, symbolic); !e.empty())
          fail("parameter " + pct(b->name) + ": " + e, b.get());
      if (std::string e = sizeError(b->dtype, b->shape); !e.empty())
        fail("parameter " + pct(b->name) + ": " + e, b.get());
      if (!buffers_.insert(b.get()).second) fail("parameter " + pct(b->name) + " is listed twice", b.get());
    }
    for (const VarNode* v : symbolic) vars_[v] = VarInfo{VarRole::Symbolic, 0, nullptr};
  }

  void defineVar(const Var& v, VarRole role, const std::string& what, int level) {
    if (!v) fail("null " + what);
    if (v->dtype != DType::i64)
      fail(what + " " + pct(v->name) + " has dtype " + dt(v->dtype) + ", not i64", v.get());
    const BlockNode* owner = blocks_.empty() ? nullptr : blocks_.back();
    if (!vars_.emplace(v.get(), VarInfo{role, level, owner}).second)
      fail(what + " " + pct(v->name) + " is already defined in an enclosing scope", v.get());
  }

  void declareBuffer(const Buffer& b, const std::string& what) {
    if (!b) fail("null " + what);
    for (const auto& d : b->shape) {
      checkExpr(d);
      if (d->dtype != DType::i64)
        fail("dimension of buffer " + pct(b->name) + " has dtype " + dt(d->dtype) + ", not i64", b.get());
    }
    if (std::string e = sizeError(b->dtype, b->shape); !e.empty())
      fail(what + " " + pct(b->name) + ": " + e, b.get());
    if (!buffers_.insert(b.get()).second) fail(what + " " + pct(b->name) + " is already defined", b.get());
  }

  // Why `v` may not be used here, or "" when it may.
  std::string visibilityError(const VarNode* v) const {
    auto it = vars_.find(v);
    const bool visible =
        it != vars_.end() && (it->second.role == VarRole::Symbolic || it->second.level == depth_);
    if (binding_) {
      // Visible here are enclosing loops (inside the enclosing block) and that
      // block's iteration variables; the block's own are not defined yet.
      if (visible) return {};
      return "iteration variable " + pct(binding_->var->name) + " is bound to " + pct(v->name) +
             ", which is not a loop variable of an enclosing loop";
    }
    if (it == vars_.end())
      return "variable " + pct(v->name) +
             " is not in scope (not a loop variable, an iteration variable of the enclosing block, or a "
             "symbolic "
             "dimension of a parameter)";
    if (visible) return {};
    const VarInfo& info = it->second;
    if (info.role == VarRole::Iter)
      return "iteration variable " + pct(v->name) + " of block " + quoted(info.owner->name) +
             " is used inside a nested block; use that block's own iteration variables";
    return "loop variable " + pct(v->name) +
           " of a loop outside the block is used inside it; use the block's " + "iteration variables";
  }

  // ---- expressions

  void checkExpr(const PrimExpr& e) const {
    forEachExpr(e, [&](const PrimExpr& x) {
      if (!x) fail("null expression");
      if (std::string err = exprDTypeError(*x); !err.empty()) fail(err);
      if (const auto* v = x->as<VarNode>()) {
        if (std::string err = visibilityError(v); !err.empty()) fail(err);
      } else if (const auto* l = x->as<LoadNode>()) {
        checkAccess(l->buffer, l->indices, "load from");
      }
    });
  }

  void checkTyped(const PrimExpr& e, DType want, const std::string& what) const {
    if (!e) fail("null " + what);
    checkExpr(e);
    if (e->dtype != want) fail(what + " has dtype " + dt(e->dtype) + ", not " + dt(want));
  }

  // i64 and, where constant, positive.
  void checkExtent(const PrimExpr& e, const std::string& what) const {
    checkTyped(e, DType::i64, what);
    int64_t c;
    if (asConstInt(e, &c) && c <= 0) fail(what + " is " + std::to_string(c) + "; it must be positive");
  }

  void checkBufferVisible(const Buffer& b, const std::string& what) const {
    if (!b) fail(what + " a null buffer");
    if (!buffers_.count(b.get()))
      fail(what + " buffer " + pct(b->name) +
           ", which is not a parameter, an allocation of the function, or of an enclosing block");
  }

  // Loads and stores: a visible buffer, one integer index per dimension,
  // constant indices within constant dimensions. (Indices are checked as
  // expressions by the caller's walk.)
  void checkAccess(const Buffer& b, const std::vector<PrimExpr>& indices, const std::string& what) const {
    checkBufferVisible(b, what);
    if (indices.size() != b->shape.size())
      fail(what + " " + pct(b->name) + " has " + std::to_string(indices.size()) +
           " index(es), but the buffer has rank " + std::to_string(b->shape.size()));
    for (size_t i = 0; i < indices.size(); ++i) {
      if (!indices[i]) fail("null index of " + pct(b->name));
      if (!isInt(indices[i]->dtype))
        fail("index " + std::to_string(i) + " of " + pct(b->name) + " has dtype " + dt(indices[i]->dtype) +
             ", not an integer");
      int64_t idx, dim;
      if (asConstInt(indices[i], &idx) && asConstInt(b->shape[i], &dim) && (idx < 0 || idx >= dim))
        fail("index " + std::to_string(idx) + " of " + pct(b->name) + " is out of bounds [0, " +
             std::to_string(dim) + ") in dimension " + std::to_string(i));
    }
  }

  void checkRegion(const BufferRegion& r, const char* what, const BlockNode& block) const {
    for (const auto& own : block.alloc_buffers)
      if (r.buffer && r.buffer == own)
        fail(std::string(what) + " region of " + pct(r.buffer->name) +
             ", which the block allocates itself; a block's regions only name buffers from outside it");
    checkBufferVisible(r.buffer, std::string(what) + " region of");
    if (r.region.size() != r.buffer->shape.size())
      fail(std::string(what) + " region of " + pct(r.buffer->name) + " has " +
           std::to_string(r.region.size()) + " range(s), but the buffer has rank " +
           std::to_string(r.buffer->shape.size()));
    for (const auto& range : r.region) {
      checkTyped(range.min, DType::i64, std::string(what) + " region min of " + pct(r.buffer->name));
      checkTyped(range.extent, DType::i64, std::string(what) + " region extent of " + pct(r.buffer->name));
    }
  }

  // ---- statements

  void visit(const Stmt& s) {
    if (!s) fail("null statement");
    const StmtNode* saved = stmt_;
    stmt_ = s.get();
    switch (s->kind) {
      case StmtKind::For: visitFor(*s->as<ForNode>()); break;
      case StmtKind::Block: visitBlock(*s->as<BlockNode>()); break;
      case StmtKind::Store: visitStore(*s->as<StoreNode>()); break;
      case StmtKind::Seq:
        for (const auto& child : s->as<SeqNode>()->stmts) visit(child);
        break;
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        checkTyped(i->cond, DType::boolean, "if condition");
        visit(i->then_case);
        if (i->else_case) visit(i->else_case);
        break;
      }
    }
    stmt_ = saved;
  }

  void visitFor(const ForNode& f) {
    const std::string name = f.loop_var ? pct(f.loop_var->name) : "<null>";
    checkExtent(f.extent, "extent of loop " + name);
    if (f.loop_kind == LoopKind::thread_binding) {
      if (!isValidThreadTag(f.thread_tag))
        fail("loop " + name + " is bound to invalid thread tag " + quoted(f.thread_tag));
    } else if (!f.thread_tag.empty()) {
      fail("loop " + name + " is " + loopKindName(f.loop_kind) + " but has thread tag " +
           quoted(f.thread_tag));
    }
    defineVar(f.loop_var, VarRole::Loop, "loop variable", depth_);
    if (std::string e = attrsError(f.attrs); !e.empty()) fail("loop " + name + ": " + e);
    visit(f.body);
    vars_.erase(f.loop_var.get());
  }

  void visitBlock(const BlockNode& b) {
    blocks_.push_back(&b);
    if (std::string e = attrsError(b.attrs); !e.empty()) fail(e);
    // Bindings, domains and predicate are evaluated outside the block.
    bool has_reduce = false;
    for (const auto& iv : b.iter_vars) {
      const std::string name = iv.var ? pct(iv.var->name) : "<null>";
      checkExtent(iv.extent, "extent of iteration variable " + name);
      binding_ = &iv;
      checkTyped(iv.binding, DType::i64, "binding of iteration variable " + name);
      binding_ = nullptr;
      has_reduce = has_reduce || iv.kind == IterKind::reduce;
    }
    if (b.predicate) checkTyped(b.predicate, DType::boolean, "block predicate");

    const bool opaque = b.iter_vars.empty();
    if (!opaque) ++depth_;
    for (const auto& iv : b.iter_vars) defineVar(iv.var, VarRole::Iter, "iteration variable", depth_);
    // The regions describe what the block reads and writes from outside it
    // (as in TVM): they are checked before its own buffers come into scope.
    for (const auto& r : b.reads) checkRegion(r, "read", b);
    for (const auto& r : b.writes) checkRegion(r, "write", b);
    for (const auto& buf : b.alloc_buffers) declareBuffer(buf, "block buffer");
    if (b.init) {
      if (!has_reduce) fail("block has an init part but no reduce iteration variable");
      visit(b.init);
    }
    visit(b.body);

    for (const auto& buf : b.alloc_buffers) buffers_.erase(buf.get());
    for (const auto& iv : b.iter_vars) vars_.erase(iv.var.get());
    if (!opaque) --depth_;
    blocks_.pop_back();
  }

  void visitStore(const StoreNode& s) {
    checkAccess(s.buffer, s.indices, "store to");
    for (const auto& i : s.indices) checkExpr(i);
    if (!s.value) fail("store of a null value into " + pct(s.buffer->name));
    checkExpr(s.value);
    if (s.value->dtype != s.buffer->dtype)
      fail("stores a value of dtype " + dt(s.value->dtype) + " into " + pct(s.buffer->name) + " of dtype " +
           dt(s.buffer->dtype));
  }

  // ---- trace

  void checkTrace() const {
    std::unordered_set<std::string> defined;
    std::function<void(const AttrValue&, size_t)> checkRefs = [&](const AttrValue& v, size_t inst) {
      if (v.isRef() && !defined.count(v.asRef().name))
        report_.fail("trace", "instruction " + std::to_string(inst) + " (" + f_.trace.insts[inst].name +
                                  ") uses " + pct(v.asRef().name) + ", which no earlier instruction defines");
      if (v.isList())
        for (const auto& x : v.asList()) checkRefs(x, inst);
    };
    for (size_t i = 0; i < f_.trace.insts.size(); ++i) {
      const TraceInst& inst = f_.trace.insts[i];
      for (const auto& v : inst.inputs) checkRefs(v, i);
      for (const auto& [key, v] : inst.attrs) checkRefs(v, i);
      if (inst.decision) checkRefs(*inst.decision, i);
      for (const auto& out : inst.outputs)
        if (!defined.insert(out).second)
          report_.fail("trace",
                       "instruction " + std::to_string(i) + " (" + inst.name + ") redefines " + pct(out));
    }
  }

  const PrimFunc& f_;
  Reporter report_;
  std::unordered_map<const VarNode*, VarInfo> vars_;  // in scope
  std::unordered_set<const BufferNode*> buffers_;     // in scope
  std::vector<const BlockNode*> blocks_;              // enclosing blocks, innermost last
  int depth_ = 0;                                     // enclosing non-opaque blocks
  const StmtNode* stmt_ = nullptr;                    // innermost statement, for locations
  const IterVar* binding_ = nullptr;                  // the binding being checked, if any
};

}  // namespace

const OpTypeInfo& structuralChecksOnly() {
  static const NoOpTypes none;
  return none;
}

void verifyPrimFunc(const PrimFunc& f, const SourceMap* source_map) {
  PrimChecker(f, source_map).run();
  if (auto oob = findOutOfBoundsAccess(f))
    Reporter(source_map, "prim @" + f.name, &f)
        .fail(oob->block ? "block " + quoted(oob->block->name) : "", oob->message, {oob->node, oob->stmt});
}

namespace {

// Blocks that tensorize marked (attribute tensor_intrin = "NAME"): opaque,
// and their regions (reads, then one write) fit the declaration of NAME,
// a tensor intrinsic of the module: one region per parameter, then the
// result, each of the parameter's dtype and rank with its constant shape
// as extents.
void checkTensorIntrinCalls(const Module& m, const PrimFunc& f, const Stmt& s, const SourceMap* source_map) {
  if (!s) return;
  if (const auto* fr = s->as<ForNode>()) return checkTensorIntrinCalls(m, f, fr->body, source_map);
  if (const auto* q = s->as<SeqNode>()) {
    for (const auto& x : q->stmts) checkTensorIntrinCalls(m, f, x, source_map);
    return;
  }
  if (const auto* i = s->as<IfNode>()) {
    checkTensorIntrinCalls(m, f, i->then_case, source_map);
    checkTensorIntrinCalls(m, f, i->else_case, source_map);
    return;
  }
  const auto* b = s->as<BlockNode>();
  if (!b) return;
  auto it = b->attrs.find("tensor_intrin");
  if (it == b->attrs.end()) {
    checkTensorIntrinCalls(m, f, b->init, source_map);
    checkTensorIntrinCalls(m, f, b->body, source_map);
    return;
  }
  auto bad = [&](const std::string& why) {
    throwAt(source_map, s.get(), "prim @" + f.name + ": block " + quoted(b->name) + ": " + why);
  };
  if (!it->second.isString()) bad("attribute tensor_intrin is the name of a tensor intrinsic (a string)");
  const std::string& name = it->second.asString();
  const ExternFunc* decl = m.findExtern(name);
  if (!decl || !decl->tensor_intrin)
    bad("calls tensor intrinsic " + quoted(name) +
        ", which the module does not declare (extern ... attrs(kind = \"tensor_intrin\"))");
  if (!b->iter_vars.empty() || b->init || b->predicate || !b->alloc_buffers.empty())
    bad("a block that calls a tensor intrinsic is opaque: no iteration variables, init, predicate or "
        "buffers");
  if (b->reads.size() != decl->params.size() || b->writes.size() != 1)
    bad("calls " + quoted(name) + " with " + std::to_string(b->reads.size()) + " read region(s) and " +
        std::to_string(b->writes.size()) + " write region(s); it takes " +
        std::to_string(decl->params.size()) + " and 1");
  for (size_t i = 0; i <= b->reads.size(); ++i) {
    const BufferRegion& r = i < b->reads.size() ? b->reads[i] : b->writes[0];
    const Type& t = i < b->reads.size() ? decl->params[i]->type : decl->ret_type;
    const std::string what = i < b->reads.size() ? "parameter %" + decl->params[i]->name : "result";
    bool fits = r.buffer->dtype == t.dtype && r.region.size() == t.shape.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d) {
      int64_t x, y;
      fits = asConstInt(r.region[d].extent, &x) && asConstInt(t.shape[d], &y) && x == y;
    }
    if (!fits)
      bad("the region of %" + r.buffer->name + " does not fit " + what + " of " + quoted(name) + " (" +
          std::string(dtypeName(r.buffer->dtype)) + " with rank " + std::to_string(r.region.size()) + " vs " +
          typeText(t) + ")");
  }
}

}  // namespace

void verifyModule(const Module& m, const OpTypeInfo& op_types, const SourceMap* source_map) {
  std::unordered_set<std::string> files;
  for (const auto& file : m.weight_files) {
    if (file.empty()) throw Error("empty weights file name");
    if (!files.insert(file).second) throw Error("weights file \"" + file + "\" is listed twice");
  }
  std::unordered_set<std::string> extern_names;
  for (const auto& e : m.externs) {
    auto bad = [&](const std::string& why) { throwAt(source_map, &e, "extern \"" + e.name + "\": " + why); };
    if (e.name.empty()) bad("empty name");
    if (!extern_names.insert(e.name).second) bad("declared twice");
    if (e.library.empty() || e.symbol.empty()) bad("needs a library and a symbol");
    if (e.tensor_intrin && e.name != e.symbol)
      bad("a tensor intrinsic is named after its C function (symbol \"" + e.symbol + "\")");
    std::unordered_set<const VarNode*> bound;
    for (const auto& p : e.params) {
      if (!p || !p->type.isTensor()) bad("parameters are tensors");
      for (const auto& d : p->type.shape)
        if (!d->as<VarNode>() && !d->as<IntImmNode>())
          bad("the dimensions of parameter %" + p->name + " are constants or variables, not " + dimText(d));
      collectSymbolicDims(p->type, bound);
    }
    if (!e.ret_type.isTensor()) bad("the result is one tensor");
    for (const auto& d : e.ret_type.shape)
      if (std::string why = dimError(d, bound); !why.empty())
        bad("result dimension " + dimText(d) + ": " + why);
  }
  std::unordered_set<std::string> names;
  for (const auto& fn : m.functions) {
    const std::string& name = functionName(fn);
    const void* node = std::visit([](const auto& x) -> const void* { return &x; }, fn);
    if (name.empty()) throwAt(source_map, node, "function without a name");
    if (!names.insert(name).second) throwAt(source_map, node, "function @" + name + " is defined twice");
  }
  for (const auto& fn : m.functions) {
    if (const auto* g = std::get_if<GraphFunc>(&fn))
      GraphChecker(m, *g, op_types, source_map).run();
    else {
      verifyPrimFunc(std::get<PrimFunc>(fn), source_map);
      checkTensorIntrinCalls(m, std::get<PrimFunc>(fn), std::get<PrimFunc>(fn).body, source_map);
    }
  }
}

}  // namespace mlcc::ir
