// The graph-level interpreter: evaluates a graph function binding by binding.
// Ops run through the reference kernels (ops::computeOp); call_tir allocates
// the outputs from the binding's type (symbolic dimensions from the graph's
// bindings, else unified from the prim func's parameters) and runs the
// compiled prim func in destination-passing style; `call` recurses; weight
// constants are zero-copy views of the mmap'ed weights files. Every value is
// checked against its binding's type, and intermediates are freed after their
// last use.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "extern_kernels.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/entry.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/weights.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "tir_compile.h"
#include "user_externs.h"

namespace mlcc::interp {

namespace {

// A graph value: a tensor or a tuple of values.
struct Value {
  ir::Tensor tensor;
  std::vector<Value> fields;
  bool is_tuple = false;
};

using SymEnv = std::unordered_map<const ir::VarNode*, int64_t>;
// Where each symbolic variable got its value ("input 'x'"), for conflicts.
using SymSource = std::unordered_map<const ir::VarNode*, std::string>;

// The value of a shape expression, or nullopt when it uses an unbound var.
std::optional<int64_t> evalDim(const ir::PrimExpr& e, const SymEnv& env) {
  if (auto* i = e->as<ir::IntImmNode>()) return i->value;
  if (auto* v = e->as<ir::VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  if (auto* b = e->as<ir::BinaryNode>()) {
    auto x = evalDim(b->a, env), y = evalDim(b->b, env);
    if (!x || !y) return std::nullopt;
    switch (b->op) {
      case ir::BinaryOp::Add: return *x + *y;
      case ir::BinaryOp::Sub: return *x - *y;
      case ir::BinaryOp::Mul: return *x * *y;
      case ir::BinaryOp::Div:
        if (*y == 0) throw Error("division by zero in a shape");
        return (*x / *y) - ((*x % *y != 0) && ((*x < 0) != (*y < 0)));
      case ir::BinaryOp::Mod: {
        if (*y == 0) throw Error("modulo by zero in a shape");
        int64_t r = *x % *y;
        return (r != 0 && ((r < 0) != (*y < 0))) ? r + *y : r;
      }
      case ir::BinaryOp::Min: return std::min(*x, *y);
      case ir::BinaryOp::Max: return std::max(*x, *y);
      default: break;
    }
  }
  throw Error("cannot evaluate shape expression " + ir::printExpr(e));
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
std::string tensorText(const ir::Tensor& t) {
  return std::string(ir::dtypeName(t.dtype())) + shapeText(t.shape());
}

// Checks `v` against `type`, binding symbolic variables not yet in `env`
// (recording `who` as their source). Throws with `who` in the message.
void matchType(const Value& v, const ir::Type& type, SymEnv& env, SymSource& src, const std::string& who) {
  if (type.isTuple()) {
    if (!v.is_tuple || v.fields.size() != type.fields.size())
      throw Error(who + ": expected " + ir::printType(type) + ", got " +
                  (v.is_tuple ? "a tuple of " + std::to_string(v.fields.size()) : tensorText(v.tensor)));
    for (size_t i = 0; i < v.fields.size(); ++i)
      matchType(v.fields[i], type.fields[i], env, src, who + "[" + std::to_string(i) + "]");
    return;
  }
  auto bad = [&] {
    return Error(who + ": expected " + ir::printType(type) + ", got " +
                 (v.is_tuple ? std::string("a tuple") : tensorText(v.tensor)));
  };
  if (v.is_tuple || v.tensor.dtype() != type.dtype || v.tensor.rank() != static_cast<int>(type.rank()))
    throw bad();
  for (size_t d = 0; d < type.rank(); ++d) {
    const int64_t actual = v.tensor.shape()[d];
    if (auto* var = type.shape[d]->as<ir::VarNode>()) {
      auto it = env.find(var);
      if (it == env.end()) {
        env[var] = actual;
        src[var] = who;
      } else if (it->second != actual) {
        throw Error(who + ": dimension " + std::to_string(d) + " is " + std::to_string(actual) + " but '" +
                    var->name + "' is " + std::to_string(it->second) + " from " + src[var]);
      }
    }
  }
  for (size_t d = 0; d < type.rank(); ++d) {
    if (type.shape[d]->as<ir::VarNode>()) continue;
    auto want = evalDim(type.shape[d], env);
    if (want && *want != v.tensor.shape()[d]) throw bad();
  }
}

std::vector<int64_t> concreteShape(const ir::Type& t, const SymEnv& env) {
  std::vector<int64_t> s;
  for (const auto& d : t.shape) {
    auto v = evalDim(d, env);
    if (!v) throw Error("shape " + ir::printType(t) + " uses an unbound symbolic dimension");
    s.push_back(*v);
  }
  return s;
}

// `a` with the symbolic dimensions of expression items (a `dims` attribute
// such as reshape's or broadcast_to's shape) replaced by their values, so the
// op's kernel sees a concrete shape; unbound ones are left for it to report.
ir::AttrValue bindAttr(const ir::AttrValue& a, const SymEnv& env, bool* changed) {
  if (a.isExpr()) {
    if (auto v = evalDim(a.asExpr(), env)) {
      *changed = true;
      return ir::AttrValue(*v);
    }
    return a;
  }
  if (!a.isList()) return a;
  ir::AttrValue::List l;
  for (const auto& item : a.asList()) l.push_back(bindAttr(item, env, changed));
  return ir::AttrValue(std::move(l));
}

std::string describe(const ir::Binding& b) {
  const auto& v = b.value;
  std::string what;
  switch (v.kind) {
    case ir::ValueKind::Op: what = v.callee + "(...)"; break;
    case ir::ValueKind::CallTir: what = "call_tir @" + v.callee; break;
    case ir::ValueKind::CallGraph: what = "call @" + v.callee; break;
    case ir::ValueKind::CallExtern: what = "call_extern \"" + v.callee + "\""; break;
    case ir::ValueKind::Const: what = v.is_inline ? "const" : "const \"" + v.weight + "\""; break;
    default: what = ir::valueKindName(v.kind); break;
  }
  return "%" + b.var->name + " = " + what;
}

}  // namespace

struct Interpreter::Impl {
  explicit Impl(const ir::Module& m) : module(m) {}
  const ir::Module& module;
  std::shared_ptr<ir::WeightStore> weights;
  std::unordered_map<std::string, std::unique_ptr<CompiledPrimFunc>> prims;

  const CompiledPrimFunc& prim(const std::string& name) {
    auto it = prims.find(name);
    if (it != prims.end()) return *it->second;
    const ir::PrimFunc* f = module.findPrim(name);
    if (!f) throw Error("no prim func @" + name);
    auto tensor_intrin = [this](const std::string& intrin) {
      const ir::ExternFunc* decl = module.findExtern(intrin);
      if (!decl || !decl->tensor_intrin)
        throw Error("tensor intrinsic \"" + intrin +
                    "\" is not declared in the module (extern ... attrs(kind = \"tensor_intrin\"))");
      return reinterpret_cast<mlcc_tensor_intrin_fn>(userSymbol(*decl, module.base_dir));
    };
    return *prims.emplace(name, CompiledPrimFunc::compile(*f, tensor_intrin)).first->second;
  }

  ir::Tensor constant(const ir::Binding& b, const SymEnv& env) {
    const ir::Type& t = b.var->type;
    if (!t.isTensor()) throw Error("a constant must have a tensor type");
    if (b.value.is_inline) {
      std::vector<int64_t> shape = concreteShape(t, env);
      return ir::Tensor::copyOf(t.dtype, shape, std::as_bytes(std::span(b.value.data)));
    }
    if (!weights) weights = std::make_shared<ir::WeightStore>(ir::WeightStore::open(module));
    ir::WeightView w = weights->get(b.value.weight);
    const auto* p = w.data.data();
    // Bools are copied (copyOf makes every byte 0 or 1); others are viewed
    // in place where aligned.
    if (reinterpret_cast<uintptr_t>(p) % ir::dtypeBytes(w.dtype) == 0 && w.dtype != ir::DType::boolean)
      return ir::Tensor::view(w.dtype, w.shape, p, weights);
    return ir::Tensor::copyOf(w.dtype, w.shape, w.data);
  }

  Value eval(const ir::GraphFunc& g, const ir::Binding& b,
             std::unordered_map<const ir::GraphVarNode*, Value>& vars, SymEnv& env, int depth) {
    const auto& v = b.value;
    auto arg = [&](size_t i) -> const Value& {
      auto it = vars.find(v.args.at(i).get());
      if (it == vars.end()) throw Error("%" + v.args[i]->name + " has no value here");
      return it->second;
    };
    auto tensorArgs = [&](size_t n) {
      std::vector<ir::Tensor> ts;
      for (size_t i = 0; i < n; ++i) {
        if (arg(i).is_tuple) throw Error("argument %" + v.args[i]->name + " is a tuple");
        ts.push_back(arg(i).tensor);
      }
      return ts;
    };
    switch (v.kind) {
      case ir::ValueKind::Alias: return arg(0);
      case ir::ValueKind::Const: return Value{constant(b, env), {}, false};
      case ir::ValueKind::Tuple: {
        Value t;
        t.is_tuple = true;
        for (size_t i = 0; i < v.args.size(); ++i) t.fields.push_back(arg(i));
        return t;
      }
      case ir::ValueKind::TupleGet: {
        const Value& t = arg(0);
        if (!t.is_tuple || v.index < 0 || v.index >= static_cast<int64_t>(t.fields.size()))
          throw Error("tuple index " + std::to_string(v.index) + " out of range");
        return t.fields[v.index];
      }
      case ir::ValueKind::Op: {
        const ir::Attrs* attrs = &v.attrs;
        ir::Attrs bound;
        bool changed = false;
        for (const auto& [k, a] : v.attrs) bound.emplace(k, bindAttr(a, env, &changed));
        if (changed) attrs = &bound;
        std::vector<ir::Tensor> outs = ops::computeOp(v.callee, tensorArgs(v.args.size()), *attrs);
        if (!b.var->type.isTuple()) {
          if (outs.size() != 1)
            throw Error("op gave " + std::to_string(outs.size()) + " results, expected one");
          return Value{std::move(outs[0]), {}, false};
        }
        Value t;
        t.is_tuple = true;
        for (auto& o : outs) t.fields.push_back(Value{std::move(o), {}, false});
        return t;
      }
      case ir::ValueKind::CallTir: return callTir(b, tensorArgs(v.args.size()), env);
      case ir::ValueKind::CallGraph: {
        const ir::GraphFunc* callee = module.findGraph(v.callee);
        if (!callee) throw Error("no graph function @" + v.callee);
        std::vector<Value> args;
        for (size_t i = 0; i < v.args.size(); ++i) args.push_back(arg(i));
        return call(*callee, args, {}, depth + 1);
      }
      case ir::ValueKind::CallExtern: {
        if (b.var->type.isTuple())
          throw Error("call_extern \"" + v.callee + "\" has one result, not a tuple");
        if (const ir::ExternFunc* decl = module.findExtern(v.callee))
          return Value{runUserExtern(*decl, module.base_dir, tensorArgs(v.args.size())), {}, false};
        return Value{runExtern(v.callee, tensorArgs(v.args.size())), {}, false};
      }
    }
    (void)g;
    throw Error("unknown binding kind");
  }

  Value callTir(const ir::Binding& b, std::vector<ir::Tensor> ins, const SymEnv& env) {
    const CompiledPrimFunc& f = prim(b.value.callee);
    const ir::Type& type = b.var->type;
    std::vector<const ir::Type*> out_types;
    if (type.isTuple())
      for (const auto& t : type.fields) out_types.push_back(&t);
    else
      out_types.push_back(&type);
    const size_t n = ins.size() + out_types.size();
    if (n != f.func().params.size())
      throw Error("@" + b.value.callee + " takes " + std::to_string(f.func().params.size()) +
                  " buffers, got " + std::to_string(ins.size()) + " inputs and " +
                  std::to_string(out_types.size()) + " outputs");
    // Output shapes: from the binding's type, else from the prim func's params.
    std::vector<std::vector<int64_t>> shapes;
    bool resolved = true;
    for (const auto* t : out_types) {
      std::vector<int64_t> s;
      for (const auto& d : t->shape) {
        auto x = evalDim(d, env);
        if (!x) resolved = false;
        s.push_back(x.value_or(0));
      }
      shapes.push_back(std::move(s));
    }
    if (!resolved) {
      std::vector<const std::vector<int64_t>*> known(n, nullptr);
      for (size_t i = 0; i < ins.size(); ++i) known[i] = &ins[i].shape();
      auto all = f.paramShapes(known);
      for (size_t o = 0; o < out_types.size(); ++o) shapes[o] = all[ins.size() + o];
    }
    std::vector<ir::Tensor> outs;
    for (size_t o = 0; o < out_types.size(); ++o)
      outs.push_back(ir::Tensor::zeros(out_types[o]->dtype, shapes[o]));
    std::vector<ir::Tensor*> args;
    for (auto& t : ins) args.push_back(&t);
    for (auto& t : outs) args.push_back(&t);
    f.run(args);
    if (!type.isTuple()) return Value{std::move(outs[0]), {}, false};
    Value t;
    t.is_tuple = true;
    for (auto& o : outs) t.fields.push_back(Value{std::move(o), {}, false});
    return t;
  }

  // Calls graph function `g`. `names` (may be empty) name the arguments in
  // errors ("input 'x'").
  Value call(const ir::GraphFunc& g, const std::vector<Value>& args, const std::vector<std::string>& names,
             int depth) {
    if (depth > 64) throw Error("graph calls nest deeper than 64 (recursion?) at @" + g.name);
    if (args.size() != g.params.size())
      throw Error("@" + g.name + " takes " + std::to_string(g.params.size()) + " arguments, got " +
                  std::to_string(args.size()));
    SymEnv env;
    SymSource src;
    std::unordered_map<const ir::GraphVarNode*, Value> vars;
    for (size_t i = 0; i < args.size(); ++i) {
      std::string who = i < names.size() ? names[i] : "@" + g.name + " argument %" + g.params[i]->name;
      matchType(args[i], g.params[i]->type, env, src, who);
      vars[g.params[i].get()] = args[i];
    }
    // Liveness: the index of each variable's last use.
    std::vector<const ir::Binding*> order;
    for (const auto& blk : g.blocks)
      for (const auto& b : blk.bindings) order.push_back(&b);
    std::unordered_map<const ir::GraphVarNode*, size_t> last_use;
    for (size_t k = 0; k < order.size(); ++k)
      for (const auto& a : order[k]->value.args) last_use[a.get()] = k;
    std::unordered_set<const ir::GraphVarNode*> returned;
    for (const auto& r : g.ret) returned.insert(r.get());
    for (size_t k = 0; k < order.size(); ++k) {
      const ir::Binding& b = *order[k];
      try {
        Value v = eval(g, b, vars, env, depth);
        matchType(v, b.var->type, env, src, "value");
        vars[b.var.get()] = std::move(v);
      } catch (const Error& e) {
        throw Error("@" + g.name + ": " + describe(b) + ": " + e.message());
      }
      for (const auto& a : b.value.args)
        if (last_use[a.get()] == k && !returned.count(a.get())) vars.erase(a.get());
    }
    auto get = [&](const ir::GraphVar& r) -> Value {
      auto it = vars.find(r.get());
      if (it == vars.end()) throw Error("@" + g.name + ": returned %" + r->name + " has no value");
      return it->second;
    };
    if (!g.ret_is_tuple) return get(g.ret.at(0));
    Value t;
    t.is_tuple = true;
    for (const auto& r : g.ret) t.fields.push_back(get(r));
    return t;
  }
};

Interpreter::Interpreter(const ir::Module& module) : impl_(std::make_unique<Impl>(module)) {}
Interpreter::~Interpreter() = default;

const CompiledPrimFunc& Interpreter::compiled(const std::string& name) { return impl_->prim(name); }

void Interpreter::runPrim(const std::string& name, const std::vector<ir::Tensor*>& args) {
  impl_->prim(name).run(args);
}

std::string Interpreter::defaultEntry() const { return ir::defaultEntry(impl_->module); }

std::vector<InputSpec> Interpreter::inputs(const std::string& entry) const {
  const ir::Module& m = impl_->module;
  std::vector<InputSpec> r;
  if (const ir::GraphFunc* g = m.findGraph(entry)) {
    for (const auto& p : g->params) {
      if (!p->type.isTensor()) throw Error("@" + entry + ": parameter %" + p->name + " is a tuple");
      r.push_back({p->name, p->type.dtype, p->type.shape});
    }
    return r;
  }
  if (m.findPrim(entry)) {
    const CompiledPrimFunc& f = impl_->prim(entry);
    for (size_t i = 0; i < f.func().params.size(); ++i)
      if (f.reads(i) || !f.writes(i)) {
        const auto& p = f.func().params[i];
        r.push_back({p->name, p->dtype, p->shape});
      }
    return r;
  }
  throw Error("no function @" + entry);
}

bool Interpreter::isWrittenParam(const std::string& prim, const std::string& name) {
  const CompiledPrimFunc& f = impl_->prim(prim);
  for (size_t i = 0; i < f.func().params.size(); ++i)
    if (f.func().params[i]->name == name) return f.writes(i);
  return false;
}

std::vector<NamedTensor> Interpreter::run(const std::string& entry, const std::vector<NamedTensor>& given) {
  std::vector<InputSpec> specs = inputs(entry);
  std::vector<const ir::Tensor*> by_pos(specs.size(), nullptr);
  std::string expected;
  for (const auto& s : specs) expected += (expected.empty() ? "" : ", ") + s.name;
  for (const auto& nt : given) {
    auto it = std::find_if(specs.begin(), specs.end(), [&](const InputSpec& s) { return s.name == nt.name; });
    if (it == specs.end())
      throw Error("unknown input '" + nt.name + "'; @" + entry +
                  " takes: " + (expected.empty() ? "(none)" : expected));
    size_t i = it - specs.begin();
    if (by_pos[i]) throw Error("input '" + nt.name + "' given twice");
    by_pos[i] = &nt.tensor;
  }
  const ir::Module& m = impl_->module;
  const bool prim_entry = m.findGraph(entry) == nullptr;
  for (size_t i = 0; i < specs.size(); ++i)
    if (!by_pos[i] && !(prim_entry && isWrittenParam(entry, specs[i].name)))
      throw Error("missing input '" + specs[i].name + "'; @" + entry + " takes: " + expected);

  std::vector<NamedTensor> outs;
  if (const ir::GraphFunc* g = m.findGraph(entry)) {
    std::vector<Value> args;
    std::vector<std::string> names;
    for (size_t i = 0; i < specs.size(); ++i) {
      args.push_back(Value{*by_pos[i], {}, false});
      names.push_back("input '" + specs[i].name + "'");
    }
    Value r = impl_->call(*g, args, names, 0);
    // Outputs: the returned values flattened, named as ir::entryOutputs says.
    for (const ir::EntryOutput& o : ir::entryOutputs(*g)) {
      const Value* v = &r;
      for (size_t i : o.path) v = &v->fields.at(i);
      outs.push_back({o.name, v->tensor});
    }
    return outs;
  }
  // A prim func: inputs as given (copied where written), outputs zero-filled.
  const CompiledPrimFunc& f = impl_->prim(entry);
  const auto& params = f.func().params;
  std::vector<const std::vector<int64_t>*> known(params.size(), nullptr);
  std::vector<ir::Tensor> tensors(params.size());
  for (size_t i = 0, k = 0; i < params.size(); ++i)
    if (f.reads(i) || !f.writes(i)) {
      if (by_pos[k] && by_pos[k]->dtype() != params[i]->dtype)
        throw Error("input '" + params[i]->name + "': expected dtype " +
                    std::string(ir::dtypeName(params[i]->dtype)) + ", got " +
                    std::string(ir::dtypeName(by_pos[k]->dtype())));
      if (by_pos[k]) {  // an output that is also read may be left out: zeros
        tensors[i] = f.writes(i) ? by_pos[k]->clone() : *by_pos[k];
        known[i] = &tensors[i].shape();
      }
      ++k;
    }
  auto shapes = f.paramShapes(known);
  for (size_t i = 0; i < params.size(); ++i)
    if (!known[i]) tensors[i] = ir::Tensor::zeros(params[i]->dtype, shapes[i]);
  std::vector<ir::Tensor*> args;
  for (auto& t : tensors) args.push_back(&t);
  f.run(args);
  for (size_t i = 0; i < params.size(); ++i)
    if (f.writes(i)) outs.push_back({params[i]->name, tensors[i]});
  return outs;
}

}  // namespace mlcc::interp
