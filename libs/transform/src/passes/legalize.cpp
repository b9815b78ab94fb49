// legalize: lowers graph ops to TensorIR (TVM's LegalizeOps + FuseTIR).
//
// In every graph function that is not itself a fused group:
// - an op binding `%y: T = op(args, attrs)` becomes `%y: T = call_tir @op(args)`
//   with a new prim func from the op's compute definition (ops::legalizeOp);
// - a call of a primitive sub-function (`primitive = true`, no `codegen`)
//   becomes one call_tir of the prim func FuseTIR merges from the group's ops
//   (fuse_tir.cpp);
// - a call of a codegen-marked sub-function (`codegen = "blas.dense_bias"`)
//   becomes `call_extern "blas.dense_bias"(x, w, bias)`: the group must compute
//   exactly what the kernel computes, and its operands are passed in the
//   kernel's parameter order, bound by role (ops/library_kernels.h), not in
//   the group's parameter order; anything else is an error. A codegen name
//   that is one of the module's user externs (`extern "mylib.f"(...)`) gets
//   the group's parameters, which fuse-by-pattern put in the extern's order.
// Primitive sub-functions no longer called are then removed.
//
// fuse-tir is the FuseTIR step alone: it merges the calls of primitive
// groups (their ops, and call_tir of prim funcs a user wrote) and leaves op
// bindings and library groups for legalize.
//
// Prim funcs are named after their ops (`relu`, `fused_conv2d_add_relu`) and
// deduplicated structurally (names ignored): repeated blocks of a network
// share their prim funcs, and distinct bodies with the same name are
// numbered `_1`, `_2`, ... (avoiding the names of the module's functions).
// Symbolic dimensions stay symbolic; a variable that an op has only inside
// dimensions (`batch * 17`) is bound through one of them
// (bindSymbolsByMultiples). Ops with no compute definition yet make
// the pass fail with an error naming the op and the binding.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "../outline.h"
#include "../pass_registry.h"
#include "fuse_tir.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ops/library_kernels.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

bool attrTrue(const ir::Attrs& attrs, const std::string& key) {
  auto it = attrs.find(key);
  return it != attrs.end() && it->second.isBool() && it->second.asBool();
}

const std::string* codegenOf(const ir::GraphFunc& g) {
  auto it = g.attrs.find("codegen");
  return it != g.attrs.end() && it->second.isString() ? &it->second.asString() : nullptr;
}

// New prim funcs, deduplicated structurally; final names are given later.
class PrimTable {
 public:
  size_t add(ir::PrimFunc f) {
    uint64_t h = ir::structuralHash(f);
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (ir::structuralEqual(funcs_[it->second], f)) {
        ++reused_;
        return it->second;
      }
    funcs_.push_back(std::move(f));
    by_hash_.emplace(h, funcs_.size() - 1);
    return funcs_.size() - 1;
  }
  std::vector<ir::PrimFunc>& funcs() { return funcs_; }
  int reused() const { return reused_; }

 private:
  std::vector<ir::PrimFunc> funcs_;
  std::unordered_multimap<uint64_t, size_t> by_hash_;
  int reused_ = 0;
};

// Placeholder callee of the i-th new prim func until names are final
// (a name no parsed module can have).
std::string placeholder(size_t i) {
  std::string name = "\x01";  // appended, not operator+: GCC 12 warns falsely (-Wrestrict) on that
  return name.append(std::to_string(i));
}

// The operands of a call of the codegen-marked group `group` in the order of
// its library kernel's parameters (bound by role, library_kernels.h), or of
// the module's user extern of that name (the group's parameters). Throws
// when the group does not compute exactly what the kernel computes.
std::vector<ir::GraphVar> kernelOperands(const ir::GraphFunc& group, const std::string& symbol,
                                         const ir::ExternFunc* user_extern,
                                         const std::vector<ir::GraphVar>& call_args) {
  const std::string where = "@" + group.name + " (codegen = \"" + symbol + "\"): ";
  if (user_extern) {  // the group's parameters are the extern's operands (fuse-by-pattern)
    if (group.params.size() != user_extern->params.size())
      throw Error(where + "the group has " + std::to_string(group.params.size()) +
                  " parameters, the extern " + std::to_string(user_extern->params.size()));
    return call_args;
  }
  std::optional<ops::LibraryKernel> kernel = ops::findLibraryKernel(symbol);
  if (!kernel)
    throw Error(where + "no such library kernel (known: " + ops::libraryKernelList("blas") + ", " +
                ops::libraryKernelList("cublas") + ")");
  std::vector<const ir::Binding*> body;
  for (const auto& block : group.blocks)
    for (const auto& b : block.bindings) body.push_back(&b);
  if (group.ret_is_tuple || group.ret.size() != 1 || body.empty() || group.ret[0] != body.back()->var)
    throw Error(where + "a library kernel has one result, the group's last binding");
  ops::KernelBinding bound = ops::bindLibraryKernel(*kernel, body);
  if (!bound) throw Error(where + bound.mismatch);
  std::vector<ir::GraphVar> operands;
  for (const ir::GraphVar& v : bound.operands) {
    auto it = std::find(group.params.begin(), group.params.end(), v);
    if (it == group.params.end()) throw Error(where + "%" + v->name + " is not a parameter of the group");
    operands.push_back(call_args.at(static_cast<size_t>(it - group.params.begin())));
  }
  return operands;
}

struct Stats {
  int ops = 0, groups = 0, externs = 0;
};

// Whether every symbolic variable of the prim func's parameter shapes is a
// whole dimension of some parameter: a call binds it from there (the
// verifier's rule).
bool paramsBindTheirDims(const ir::PrimFunc& f) {
  std::unordered_set<const ir::VarNode*> bound, used;
  for (const auto& p : f.params) {
    const ir::Type t = ir::Type::tensor(p->dtype, p->shape);
    collectBoundVars(t, bound);
    collectTypeVars(t, used);
  }
  return std::all_of(used.begin(), used.end(), [&](const ir::VarNode* v) { return bound.count(v) > 0; });
}

// An op binding: its operand and result types and attributes.
struct OpSignature {
  std::vector<ir::Type> operands;
  ir::Type result;
  ir::Attrs attrs;
};

void forEachDim(const ir::Type& t, const std::function<void(const ir::PrimExpr&)>& f) {
  for (const auto& d : t.shape) f(d);
  for (const auto& x : t.fields) forEachDim(x, f);
}

ir::Type mapDims(const ir::Type& t, const std::function<ir::PrimExpr(const ir::PrimExpr&)>& f) {
  if (t.isTuple()) {
    std::vector<ir::Type> fields;
    for (const auto& x : t.fields) fields.push_back(mapDims(x, f));
    return ir::Type::tuple(std::move(fields));
  }
  std::vector<ir::PrimExpr> shape;
  for (const auto& d : t.shape) shape.push_back(f(d));
  return ir::Type::tensor(t.dtype, std::move(shape));
}

ir::AttrValue mapExprs(const ir::AttrValue& a, const std::function<ir::PrimExpr(const ir::PrimExpr&)>& f) {
  if (a.isExpr()) return ir::AttrValue(f(a.asExpr()));
  if (!a.isList()) return a;
  ir::AttrValue::List list;
  for (const auto& x : a.asList()) list.push_back(mapExprs(x, f));
  return ir::AttrValue(std::move(list));
}

// An op rewritten so that its prim func binds every symbolic variable: each
// variable that is no whole dimension of the operands or the result (a
// flattening reshape ahead of a dense layer leaves `batch * 17` where
// `batch` was) is renamed through a whole dimension that is a multiple of
// it: that dimension (`batch * 17`) becomes a fresh variable `n0`, the
// variable's other uses `n0 / 17` (a call binds `n0` from its argument). TVM
// passes such variables to the prim func as extra arguments instead.
// Nullopt when some variable is no multiple in any whole dimension.
std::optional<OpSignature> bindSymbolsByMultiples(const OpSignature& op) {
  std::vector<const ir::Type*> types{&op.result};
  for (const auto& t : op.operands) types.push_back(&t);
  std::unordered_set<const ir::VarNode*> bound, used;
  std::vector<ir::PrimExpr> whole;  // the dimensions, simplified
  for (const ir::Type* t : types) {
    collectBoundVars(*t, bound);
    collectTypeVars(*t, used);
    forEachDim(*t, [&](const ir::PrimExpr& d) { whole.push_back(ir::simplify(d)); });
  }
  std::set<std::string> names;
  for (const auto* v : used) names.insert(v->name);
  std::map<std::string, ir::Var> renamed;                        // printed multiple -> its variable
  std::unordered_map<const ir::VarNode*, ir::PrimExpr> through;  // variable -> fresh / multiple
  for (const ir::VarNode* v : used) {
    if (bound.count(v)) continue;
    for (const ir::PrimExpr& d : whole) {
      const auto* mul = d->as<ir::BinaryNode>();
      int64_t c = 0;
      if (!mul || mul->op != ir::BinaryOp::Mul) continue;
      const ir::PrimExpr& other = mul->a.get() == v ? mul->b : mul->a;
      if ((mul->a.get() != v && mul->b.get() != v) || !ir::asConstInt(other, &c) || c < 1) continue;
      std::string name = "n" + std::to_string(renamed.size());
      while (names.count(name)) name += "_";
      names.insert(name);
      ir::Var n = ir::makeVar(name);
      renamed.emplace(ir::printExpr(d), n);
      through[v] = ir::makeBinary(ir::BinaryOp::Div, n, ir::makeInt(c));
      break;
    }
    if (!through.count(v)) return std::nullopt;
  }
  std::function<ir::PrimExpr(const ir::PrimExpr&)> rename = [&](const ir::PrimExpr& e) -> ir::PrimExpr {
    if (auto it = renamed.find(ir::printExpr(ir::simplify(e))); it != renamed.end()) return it->second;
    if (auto it = through.find(e->as<ir::VarNode>()); it != through.end()) return it->second;
    return ir::mapChildren(e, rename);
  };
  auto rewrite = [&](const ir::PrimExpr& e) { return ir::simplify(rename(e)); };
  OpSignature out{{}, mapDims(op.result, rewrite), {}};
  for (const auto& t : op.operands) out.operands.push_back(mapDims(t, rewrite));
  for (const auto& [key, value] : op.attrs) out.attrs[key] = mapExprs(value, rewrite);
  return out;
}

// `lower_ops` false (fuse-tir): only the calls of primitive groups without
// codegen are merged; op bindings and library groups stay for legalize.
void legalizeFunction(ir::GraphFunc& f, const ir::Module& m, PrimTable& table, Stats& stats,
                      const PassContext& ctx, bool lower_ops) {
  for (auto& block : f.blocks)
    for (auto& b : block.bindings) {
      ir::GraphValue& v = b.value;
      try {
        if (v.kind == ir::ValueKind::Op && lower_ops) {
          std::vector<ir::Type> types;
          for (const auto& a : v.args) types.push_back(a->type);
          ir::PrimFunc prim = ops::legalizeOp(v.callee, types, v.attrs, v.callee);
          if (!paramsBindTheirDims(prim))
            if (auto op = bindSymbolsByMultiples({types, b.var->type, v.attrs}))
              prim = ops::legalizeOp(v.callee, op->operands, op->attrs, v.callee);
          size_t i = table.add(std::move(prim));
          v.kind = ir::ValueKind::CallTir;
          v.callee = placeholder(i);
          v.attrs.clear();
          ++stats.ops;
        } else if (v.kind == ir::ValueKind::CallGraph) {
          const ir::GraphFunc* group = m.findGraph(v.callee);
          if (!group || !attrTrue(group->attrs, "primitive")) continue;
          if (const std::string* codegen = codegenOf(*group)) {
            if (!lower_ops) continue;
            v.args = kernelOperands(*group, *codegen, m.findExtern(*codegen), v.args);
            v.kind = ir::ValueKind::CallExtern;
            v.attrs.clear();
            v.callee = *codegen;
            ++stats.externs;
          } else {
            size_t i = table.add(fuseTir(*group, m, ctx));
            v.kind = ir::ValueKind::CallTir;
            v.callee = placeholder(i);
            v.attrs.clear();
            ++stats.groups;
          }
        }
      } catch (const Error& e) {
        if (e.loc().line > 0)  // located in the group it lowers (fuseTir)
          throw Error(e.loc(), "legalize: " + e.message(), e.source_line());
        throw ctx.errorAt(b.var.get(),
                          "legalize: in @" + f.name + ", binding %" + b.var->name + ": " + e.message());
      }
    }
}

std::string runLegalize(ir::Module& m, const PassContext& ctx, bool lower_ops) {
  PrimTable table;
  Stats stats;
  std::set<std::string> groups;  // primitive sub-functions: lowered into their callers
  for (auto& fn : m.functions)
    if (auto* g = std::get_if<ir::GraphFunc>(&fn); g && attrTrue(g->attrs, "primitive"))
      groups.insert(g->name);
  for (auto& fn : m.functions)
    if (auto* g = std::get_if<ir::GraphFunc>(&fn); g && !groups.count(g->name))
      legalizeFunction(*g, m, table, stats, ctx, lower_ops);
  // Remove the primitive sub-functions nothing calls any more.
  std::set<std::string> called;
  for (const auto& fn : m.functions)
    if (const auto* g = std::get_if<ir::GraphFunc>(&fn); g && !groups.count(g->name))
      for (const auto& block : g->blocks)
        for (const auto& b : block.bindings)
          if (b.value.kind == ir::ValueKind::CallGraph) called.insert(b.value.callee);
  size_t before = m.functions.size();
  std::erase_if(m.functions, [&](const ir::Function& fn) {
    const std::string& name = ir::functionName(fn);
    return groups.count(name) && !called.count(name);
  });
  size_t removed = before - m.functions.size();
  // Final names: the base name, else base_1, base_2, ...
  std::set<std::string> used;
  for (const auto& fn : m.functions) used.insert(ir::functionName(fn));
  std::vector<std::string> names;
  for (auto& f : table.funcs()) {
    std::string name = f.name;
    for (int k = 1; used.count(name); ++k) name = f.name + "_" + std::to_string(k);
    used.insert(name);
    names.push_back(name);
    f.name = name;
  }
  std::unordered_map<std::string, const std::string*> rename;
  for (size_t i = 0; i < names.size(); ++i) rename[placeholder(i)] = &names[i];
  for (auto& fn : m.functions)
    if (auto* g = std::get_if<ir::GraphFunc>(&fn))
      for (auto& block : g->blocks)
        for (auto& b : block.bindings)
          if (b.value.kind == ir::ValueKind::CallTir)
            if (auto it = rename.find(b.value.callee); it != rename.end()) b.value.callee = *it->second;
  for (auto& f : table.funcs()) m.functions.emplace_back(std::move(f));
  if (stats.ops == 0 && stats.groups == 0 && stats.externs == 0 && removed == 0) return "";
  return "lowered " + std::to_string(stats.ops) + " op(s) and " + std::to_string(stats.groups) +
         " fused group(s) into " + std::to_string(names.size()) + " prim func(s) (" +
         std::to_string(table.reused()) + " reused), " + std::to_string(stats.externs) +
         " call_extern, removed " + std::to_string(removed) + " sub-function(s)";
}

}  // namespace

PassInfo makeLegalizePass() {
  PassInfo p;
  p.name = "legalize";
  p.summary = "Lower graph ops to call_tir of TensorIR prim funcs; merge each fused group into one (FuseTIR)";
  p.run = [](ir::Module& m, const PassOptions&, PassContext& ctx) { return runLegalize(m, ctx, true); };
  return p;
}

PassInfo makeFuseTirPass() {
  PassInfo p;
  p.name = "fuse-tir";
  p.summary =
      "FuseTIR alone: merge each fused group (ops, call_tir of unscheduled prim funcs) into one prim func";
  p.run = [](ir::Module& m, const PassOptions&, PassContext& ctx) { return runLegalize(m, ctx, false); };
  return p;
}

}  // namespace mlcc::transform
