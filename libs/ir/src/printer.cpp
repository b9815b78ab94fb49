// The IR text printer (see printer.h; syntax: artifacts_schema/ir-grammar.md).
//
// Output is canonical: 2-space indentation, attributes sorted by key,
// parentheses only where precedence needs them, shortest round-trip floats.
// Names are printed as stored, except that a variable, buffer or graph
// variable whose name is already visible in its scope gets a suffix _1, _2,
// ..., so the text always parses back to the same structure.
#include "mlcc/ir/printer.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlcc/ir/dtype_storage.h"
#include "mlcc/ir/float_bits.h"
#include "names.h"

namespace mlcc::ir {

namespace {

using detail::globalName;
using detail::localName;
using detail::quoteString;
using detail::symbolicName;

// Binding strength of expression forms, loosest first.
enum Prec : int { kOr = 1, kAnd, kCompare, kAdd, kMul, kUnary, kPrimary };

int binaryPrecedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or: return kOr;
    case BinaryOp::And: return kAnd;
    case BinaryOp::Add:
    case BinaryOp::Sub: return kAdd;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod: return kMul;
    case BinaryOp::Min:
    case BinaryOp::Max: return kPrimary;
    default: return kCompare;
  }
}

int precedence(const PrimExpr& e) {
  if (!e) return kPrimary;
  if (const auto* b = e->as<BinaryNode>()) return binaryPrecedence(b->op);
  if (e->kind == ExprKind::Unary) return kUnary;
  return kPrimary;
}

bool isLiteral(const PrimExpr& e) {
  return e && (e->kind == ExprKind::IntImm || e->kind == ExprKind::FloatImm);
}

class Printer {
 public:
  std::string out;

  // ---- names ----

  void pushScope() { scopes_.emplace_back(); }

  void popScope() {
    for (auto it = scopes_.back().rbegin(); it != scopes_.back().rend(); ++it) {
      if (--local_used_[it->printed] == 0) local_used_.erase(it->printed);
      if (it->had_prev)
        local_names_[it->node] = it->prev;
      else
        local_names_.erase(it->node);
    }
    scopes_.pop_back();
  }

  // Gives `node` (a TIR Var bound by a loop or block, a Buffer or a
  // GraphVar) a printed name that is not visible yet, and returns it.
  const std::string& bindLocal(const void* node, const std::string& name) {
    std::string printed = uniqueName(name, [&](const std::string& n) { return local_used_.count(n) > 0; });
    Rebind r{node, printed, false, {}};
    if (auto it = local_names_.find(node); it != local_names_.end()) {
      r.had_prev = true;
      r.prev = it->second;
    }
    if (scopes_.empty()) pushScope();
    scopes_.back().push_back(std::move(r));
    ++local_used_[printed];
    return local_names_[node] = printed;
  }

  // Symbolic shape variables: bound by their first whole-dimension
  // appearance in the parameters; one namespace per function.
  void bindSymbolic(const Var& v) {
    if (!v || sym_names_.count(v.get())) return;
    std::string printed = uniqueName(v->name, [&](const std::string& n) { return sym_used_.count(n) > 0; });
    sym_used_.insert(printed);
    sym_names_[v.get()] = printed;
  }
  void bindSymbolicDims(const std::vector<PrimExpr>& shape) {
    for (const auto& d : shape)
      if (d && d->kind == ExprKind::Var) bindSymbolic(std::static_pointer_cast<const VarNode>(d));
  }
  void bindSymbolicDims(const Type& t) {
    if (t.isTuple())
      for (const auto& f : t.fields) bindSymbolicDims(f);
    else
      bindSymbolicDims(t.shape);
  }

  std::string localRef(const void* node, const std::string& name) const {
    auto it = local_names_.find(node);
    return localName(it != local_names_.end() ? it->second : name);
  }

  // ---- expressions ----

  void expr(const PrimExpr& e) {
    if (!e) {
      out += "<null>";
      return;
    }
    switch (e->kind) {
      case ExprKind::IntImm: intLiteral(*e->as<IntImmNode>()); break;
      case ExprKind::FloatImm: {
        const auto* f = e->as<FloatImmNode>();
        out += formatFloat(f->value, f->dtype);
        if (f->dtype != DType::f32) out += dtypeName(f->dtype);
        break;
      }
      case ExprKind::Var: var(e->as<VarNode>()); break;
      case ExprKind::Binary: binary(*e->as<BinaryNode>()); break;
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        out += unaryOpName(u->op);
        bool paren = precedence(u->a) < kUnary || (u->op == UnaryOp::Neg && isLiteral(u->a));
        operand(u->a, paren);
        break;
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        call("select", {s->cond, s->true_value, s->false_value});
        break;
      }
      case ExprKind::Cast: {
        const auto* c = e->as<CastNode>();
        out += "cast<";
        out += dtypeName(c->dtype);
        out += ">(";
        expr(c->value);
        out += ")";
        break;
      }
      case ExprKind::Load: {
        const auto* l = e->as<LoadNode>();
        bufferRef(l->buffer);
        indices(l->indices);
        break;
      }
      case ExprKind::Call: {
        const auto* c = e->as<CallNode>();
        call(c->name, c->args);
        break;
      }
    }
  }

  // An expression as an attribute value: a lone literal or %var that would
  // read back as a plain attribute (int, float, bool, trace reference) is
  // put in parentheses.
  void attrExpr(const PrimExpr& e) {
    bool ambiguous = false;
    if (e && e->kind == ExprKind::IntImm) ambiguous = e->dtype == DType::i64 || e->dtype == DType::boolean;
    if (e && e->kind == ExprKind::FloatImm) ambiguous = e->dtype == DType::f32;
    if (e && e->kind == ExprKind::Var) ambiguous = local_names_.count(e.get()) > 0;
    if (ambiguous) out += "(";
    expr(e);
    if (ambiguous) out += ")";
  }

  void type(const Type& t) {
    if (t.isTuple()) {
      out += "(";
      for (size_t i = 0; i < t.fields.size(); ++i) {
        if (i) out += ", ";
        type(t.fields[i]);
      }
      out += ")";
      return;
    }
    tensorType(t.dtype, t.shape);
  }

  void attrValue(const AttrValue& v) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) {
            out += x ? "true" : "false";
          } else if constexpr (std::is_same_v<T, int64_t>) {
            out += std::to_string(x);
          } else if constexpr (std::is_same_v<T, double>) {
            out += detail::shortestFloatText(x, DType::i64);
          } else if constexpr (std::is_same_v<T, std::string>) {
            out += quoteString(x);
          } else if constexpr (std::is_same_v<T, PrimExpr>) {
            attrExpr(x);
          } else if constexpr (std::is_same_v<T, TraceRef>) {
            out += localName(x.name);
          } else {
            out += "[";
            for (size_t i = 0; i < x.size(); ++i) {
              if (i) out += ", ";
              attrValue(x[i]);
            }
            out += "]";
          }
        },
        v.v);
  }

  void kwargs(const Attrs& attrs, bool leading_comma) {
    for (const auto& [key, value] : attrs) {
      if (leading_comma) out += ", ";
      leading_comma = true;
      out += key;
      out += " = ";
      attrValue(value);
    }
  }

  // ` attrs(k = v, ...)`, or nothing when empty.
  void attrsClause(const Attrs& attrs) {
    if (attrs.empty()) return;
    out += " attrs(";
    kwargs(attrs, false);
    out += ")";
  }

  // ---- statements ----

  void stmt(const Stmt& s, int depth) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& c : s->as<SeqNode>()->stmts) stmt(c, depth);
        break;
      case StmtKind::For: forStmt(*s->as<ForNode>(), depth); break;
      case StmtKind::Block: blockStmt(*s->as<BlockNode>(), depth); break;
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        indent(depth);
        bufferRef(st->buffer);
        indices(st->indices);
        out += " = ";
        expr(st->value);
        out += "\n";
        break;
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        indent(depth);
        out += "if ";
        expr(i->cond);
        out += " {\n";
        scopedBody(i->then_case, depth + 1);
        indent(depth);
        if (i->else_case) {
          out += "} else {\n";
          scopedBody(i->else_case, depth + 1);
          indent(depth);
        }
        out += "}\n";
        break;
      }
    }
  }

  void trace(const Trace& t, int depth) {
    indent(depth);
    out += "trace {\n";
    for (const auto& inst : t.insts) {
      indent(depth + 1);
      for (size_t i = 0; i < inst.outputs.size(); ++i) {
        out += i ? ", " : "";
        out += localName(inst.outputs[i]);
      }
      if (!inst.outputs.empty()) out += " = ";
      out += inst.name;
      out += "(";
      for (size_t i = 0; i < inst.inputs.size(); ++i) {
        if (i) out += ", ";
        attrValue(inst.inputs[i]);
      }
      kwargs(inst.attrs, !inst.inputs.empty());
      out += ")";
      if (inst.decision) {
        out += " decision ";
        attrValue(*inst.decision);
      }
      out += "\n";
    }
    indent(depth);
    out += "}\n";
  }

  // ---- functions ----

  // `(%p: type, ...) -> ` (the caller pushes the scope that binds their dims).
  void graphParams(const std::vector<GraphVar>& params) {
    for (const auto& p : params)
      if (p) bindSymbolicDims(p->type);
    out += "(";
    for (size_t i = 0; i < params.size(); ++i) {
      if (i) out += ", ";
      graphVarDecl(params[i]);
    }
    out += ") -> ";
  }

  void externFunc(const ExternFunc& f) {
    pushScope();
    out += "extern " + quoteString(f.name);
    graphParams(f.params);
    type(f.ret_type);
    Attrs attrs{{"library", AttrValue(f.library)}, {"symbol", AttrValue(f.symbol)}};
    if (f.tensor_intrin) attrs.emplace("kind", AttrValue(std::string("tensor_intrin")));
    attrsClause(attrs);
    out += "\n";
    popScope();
  }

  void graphFunc(const GraphFunc& f) {
    pushScope();
    out += "graph ";
    out += globalName(f.name);
    graphParams(f.params);
    type(f.ret_type);
    attrsClause(f.attrs);
    out += " {\n";
    for (const auto& block : f.blocks) {
      int depth = 1;
      if (block.dataflow) {
        indent(1);
        out += "dataflow {\n";
        depth = 2;
      }
      for (const auto& b : block.bindings) binding(b, depth);
      if (block.dataflow) {
        indent(1);
        out += "}\n";
      }
    }
    indent(1);
    out += "return ";
    if (f.ret_is_tuple) out += "(";
    for (size_t i = 0; i < f.ret.size(); ++i) {
      if (i) out += ", ";
      graphVarRef(f.ret[i]);
    }
    if (f.ret_is_tuple) out += ")";
    out += "\n}\n";
    popScope();
  }

  void primFunc(const PrimFunc& f) {
    pushScope();
    for (const auto& p : f.params)
      if (p) bindSymbolicDims(p->shape);
    out += "prim ";
    out += globalName(f.name);
    out += "(";
    for (size_t i = 0; i < f.params.size(); ++i) {
      if (i) out += ", ";
      bufferDecl(f.params[i]);
    }
    out += ")";
    attrsClause(f.attrs);
    out += " {\n";
    if (!f.trace.empty()) trace(f.trace, 1);
    allocs(f.allocs, 1);
    stmt(f.body, 1);
    out += "}\n";
    popScope();
  }

 private:
  struct Rebind {
    const void* node;
    std::string printed;
    bool had_prev;
    std::string prev;
  };

  template <class Used>
  static std::string uniqueName(const std::string& base, Used&& used) {
    if (!used(base)) return base;
    for (int k = 1;; ++k) {
      std::string candidate = base + "_" + std::to_string(k);
      if (!used(candidate)) return candidate;
    }
  }

  void indent(int depth) { out.append(static_cast<size_t>(depth) * 2, ' '); }

  void intLiteral(const IntImmNode& i) {
    if (i.dtype == DType::boolean) {
      out += i.value ? "true" : "false";
      return;
    }
    out += std::to_string(i.value);
    if (i.dtype != DType::i64) out += dtypeName(i.dtype);
  }

  void var(const VarNode* v) {
    if (auto it = local_names_.find(v); it != local_names_.end()) {
      out += localName(it->second);
    } else if (auto s = sym_names_.find(v); s != sym_names_.end()) {
      out += symbolicName(s->second);
    } else {
      out += symbolicName(v->name);
    }
  }

  void operand(const PrimExpr& e, bool paren) {
    if (paren) out += "(";
    expr(e);
    if (paren) out += ")";
  }

  void binary(const BinaryNode& b) {
    if (b.op == BinaryOp::Min || b.op == BinaryOp::Max) {
      call(binaryOpName(b.op), {b.a, b.b});
      return;
    }
    int p = binaryPrecedence(b.op);
    operand(b.a, precedence(b.a) < p);
    out += " ";
    out += binaryOpName(b.op);
    out += " ";
    operand(b.b, precedence(b.b) <= p);
  }

  void call(std::string_view name, const std::vector<PrimExpr>& args) {
    out += name;
    out += "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) out += ", ";
      expr(args[i]);
    }
    out += ")";
  }

  void indices(const std::vector<PrimExpr>& idx) {
    out += "[";
    for (size_t i = 0; i < idx.size(); ++i) {
      if (i) out += ", ";
      expr(idx[i]);
    }
    out += "]";
  }

  void bufferRef(const Buffer& b) { out += b ? localRef(b.get(), b->name) : "%<null>"; }

  void tensorType(DType t, const std::vector<PrimExpr>& shape) {
    out += dtypeName(t);
    indices(shape);
  }

  void bufferDecl(const Buffer& b) {
    if (!b) {
      out += "%<null>";
      return;
    }
    out += localName(bindLocal(b.get(), b->name));
    out += ": ";
    tensorType(b->dtype, b->shape);
    if (b->scope != StorageScope::global) {
      out += " ";
      out += scopeName(b->scope);
    }
  }

  void allocs(const std::vector<Buffer>& buffers, int depth) {
    for (const auto& b : buffers) {
      indent(depth);
      out += "alloc_buffer ";
      bufferDecl(b);
      out += "\n";
    }
  }

  void scopedBody(const Stmt& s, int depth) {
    pushScope();
    stmt(s, depth);
    popScope();
  }

  void forStmt(const ForNode& f, int depth) {
    indent(depth);
    out += "for ";
    std::string extent_text;
    std::swap(out, extent_text);
    expr(f.extent);  // printed before the loop variable is visible
    std::swap(out, extent_text);
    pushScope();
    out += localName(bindLocal(f.loop_var.get(), f.loop_var ? f.loop_var->name : "<null>"));
    out += " in 0..";
    out += extent_text;
    if (f.loop_kind == LoopKind::thread_binding) {
      out += " thread_binding(";
      out += f.thread_tag;
      out += ")";
    } else if (f.loop_kind != LoopKind::serial) {
      out += " ";
      out += loopKindName(f.loop_kind);
    }
    attrsClause(f.attrs);
    out += " {\n";
    stmt(f.body, depth + 1);
    popScope();
    indent(depth);
    out += "}\n";
  }

  void regions(const char* what, const std::vector<BufferRegion>& rs, int depth) {
    indent(depth);
    out += what;
    out += "(";
    for (size_t i = 0; i < rs.size(); ++i) {
      if (i) out += ", ";
      bufferRef(rs[i].buffer);
      out += "[";
      for (size_t k = 0; k < rs[i].region.size(); ++k) {
        if (k) out += ", ";
        const Range& r = rs[i].region[k];
        expr(r.min);
        int64_t extent = 0;
        if (!(r.extent && r.extent->dtype == DType::i64 && asConstInt(r.extent, &extent) && extent == 1)) {
          out += " +: ";
          expr(r.extent);
        }
      }
      out += "]";
    }
    out += ")\n";
  }

  void blockStmt(const BlockNode& b, int depth) {
    indent(depth);
    out += "block ";
    out += quoteString(b.name);
    out += " (";
    // Extents and bindings refer to the enclosing scope; render them first.
    std::vector<std::string> domains;
    for (const auto& iv : b.iter_vars) {
      std::string text;
      std::swap(out, text);
      out += iterKindName(iv.kind);
      out += "(";
      expr(iv.extent);
      out += ", ";
      expr(iv.binding);
      out += ")";
      std::swap(out, text);
      domains.push_back(std::move(text));
    }
    pushScope();
    for (size_t i = 0; i < b.iter_vars.size(); ++i) {
      if (i) out += ", ";
      const Var& v = b.iter_vars[i].var;
      out += localName(bindLocal(v.get(), v ? v->name : "<null>"));
      out += " = ";
      out += domains[i];
    }
    out += ")";
    attrsClause(b.attrs);
    out += " {\n";
    if (b.predicate) {
      indent(depth + 1);
      out += "where(";
      expr(b.predicate);
      out += ")\n";
    }
    regions("reads", b.reads, depth + 1);
    regions("writes", b.writes, depth + 1);
    allocs(b.alloc_buffers, depth + 1);
    if (b.init) {
      indent(depth + 1);
      out += "init {\n";
      scopedBody(b.init, depth + 2);
      indent(depth + 1);
      out += "}\n";
    }
    stmt(b.body, depth + 1);
    popScope();
    indent(depth);
    out += "}\n";
  }

  void graphVarDecl(const GraphVar& v) {
    if (!v) {
      out += "%<null>: ()";
      return;
    }
    out += localName(bindLocal(v.get(), v->name));
    out += ": ";
    type(v->type);
  }

  void graphVarRef(const GraphVar& v) { out += v ? localRef(v.get(), v->name) : "%<null>"; }

  void graphArgs(const GraphValue& value) {
    out += "(";
    for (size_t i = 0; i < value.args.size(); ++i) {
      if (i) out += ", ";
      graphVarRef(value.args[i]);
    }
    kwargs(value.attrs, !value.args.empty());
    out += ")";
  }

  void binding(const Binding& b, int depth) {
    indent(depth);
    graphVarDecl(b.var);
    out += " = ";
    const GraphValue& v = b.value;
    auto arg = [&](size_t i) {
      if (i < v.args.size())
        graphVarRef(v.args[i]);
      else
        out += "%<missing>";
    };
    switch (v.kind) {
      case ValueKind::Alias: arg(0); break;
      case ValueKind::Const:
        out += "const ";
        if (v.is_inline)
          inlineData(b.var ? b.var->type : Type{}, v.data);
        else
          out += quoteString(v.weight);
        break;
      case ValueKind::Tuple:
        out += "(";
        for (size_t i = 0; i < v.args.size(); ++i) {
          if (i) out += ", ";
          arg(i);
        }
        out += ")";
        break;
      case ValueKind::TupleGet:
        arg(0);
        out += "[" + std::to_string(v.index) + "]";
        break;
      case ValueKind::Op:
        out += v.callee;
        graphArgs(v);
        break;
      case ValueKind::CallTir:
        out += "call_tir " + globalName(v.callee);
        graphArgs(v);
        break;
      case ValueKind::CallExtern:
        out += "call_extern " + quoteString(v.callee);
        graphArgs(v);
        break;
      case ValueKind::CallGraph:
        out += "call " + globalName(v.callee);
        graphArgs(v);
        break;
    }
    out += "\n";
  }

  void inlineElement(DType t, const uint8_t* p) {
    switch (t) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p, 4);
        out += detail::shortestFloatText(f, DType::f32);
        break;
      }
      case DType::f16:
      case DType::bf16: {
        uint16_t bits = static_cast<uint16_t>(p[0] | (p[1] << 8));
        double d = t == DType::f16 ? detail::halfBitsToDouble(bits) : detail::bf16BitsToDouble(bits);
        out += detail::shortestFloatText(d, t);
        break;
      }
      case DType::f64: {
        double d;
        std::memcpy(&d, p, 8);
        out += detail::shortestFloatText(d, DType::f64);
        break;
      }
      case DType::boolean: out += p[0] ? "true" : "false"; break;
      default:  // the integers, as their storage type (little-endian, as the data)
        withStorageType(t, [&](auto e) {
          decltype(e) v;
          std::memcpy(&v, p, sizeof v);
          out += std::to_string(+v);
        });
    }
  }

  // Inline constant data, read as the binding type's dtype: one number for
  // a scalar, else a flat row-major list.
  void inlineData(const Type& t, const std::vector<uint8_t>& data) {
    const size_t width = static_cast<size_t>(dtypeBytes(t.dtype));
    const size_t count = width ? data.size() / width : 0;
    if (t.isTensor() && t.rank() == 0 && count == 1) {
      inlineElement(t.dtype, data.data());
      return;
    }
    out += "[";
    for (size_t i = 0; i < count; ++i) {
      if (i) out += ", ";
      inlineElement(t.dtype, data.data() + i * width);
    }
    out += "]";
  }

  std::vector<std::vector<Rebind>> scopes_;
  std::unordered_map<const void*, std::string> local_names_;
  std::unordered_map<std::string, int> local_used_;
  std::unordered_map<const void*, std::string> sym_names_;
  std::unordered_set<std::string> sym_used_;
};

}  // namespace

std::string formatFloat(double v, DType t) {
  return detail::shortestFloatText(v, isFloat(t) ? t : DType::i64);
}

std::string printExpr(const PrimExpr& e) {
  Printer p;
  p.expr(e);
  return p.out;
}

std::string printStmt(const Stmt& s) {
  Printer p;
  p.stmt(s, 0);
  return p.out;
}

std::string printType(const Type& t) {
  Printer p;
  p.type(t);
  return p.out;
}

std::string printAttrValue(const AttrValue& v) {
  Printer p;
  p.attrValue(v);
  return p.out;
}

std::string printTrace(const Trace& t) {
  Printer p;
  p.trace(t, 0);
  return p.out;
}

std::string printFunction(const Function& f) {
  Printer p;
  if (const auto* g = std::get_if<GraphFunc>(&f))
    p.graphFunc(*g);
  else
    p.primFunc(std::get<PrimFunc>(f));
  return p.out;
}

std::string printExternFunc(const ExternFunc& f) {
  Printer p;
  p.externFunc(f);
  return p.out;
}

std::string printModule(const Module& m) {
  std::string out = "mlcc.ir 1\n";
  for (const auto& w : m.weight_files) out += "weights " + quoteString(w) + "\n";
  for (const auto& e : m.externs) out += printExternFunc(e);
  for (const auto& f : m.functions) {
    out += "\n";
    out += printFunction(f);
  }
  return out;
}

std::string intsText(const std::vector<int64_t>& v, size_t max_shown) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < max_shown; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > max_shown) s += ", ... (" + std::to_string(v.size()) + " in all)";
  return s + "]";
}

}  // namespace mlcc::ir
