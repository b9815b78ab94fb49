// Outlining groups of bindings into primitive sub-functions (see outline.h).
#include "outline.h"

#include <map>

#include "mlcc/ir/structural.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::transform {

SubFunctionNamer::SubFunctionNamer(const ir::Module& m) : m_(m) {}

std::string SubFunctionNamer::intern(ir::GraphFunc fn, const std::string& base) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : base + "_" + std::to_string(i);
    const ir::GraphFunc* existing = m_.findGraph(name);
    if (!existing)
      for (const auto& a : added_)
        if (a.name == name) existing = &a;
    if (!existing && m_.hasFunction(name)) continue;  // a prim func of that name
    if (!existing) {
      fn.name = name;
      added_.push_back(std::move(fn));
      return name;
    }
    if (ir::structuralEqual(*existing, fn)) return name;
  }
}

UseInfo UseInfo::of(const ir::GraphFunc& f) {
  UseInfo u;
  for (size_t b = 0; b < f.blocks.size(); ++b)
    for (size_t i = 0; i < f.blocks[b].bindings.size(); ++i)
      for (const auto& a : f.blocks[b].bindings[i].value.args) u.uses[a.get()].push_back({b, i});
  for (const auto& r : f.ret) u.returned.insert(r.get());
  return u;
}

namespace {

void collectVars(const ir::PrimExpr& e, std::unordered_set<const ir::VarNode*>& out) {
  if (!e) return;
  if (const auto* v = e->as<ir::VarNode>()) {
    out.insert(v);
  } else if (const auto* b = e->as<ir::BinaryNode>()) {
    collectVars(b->a, out);
    collectVars(b->b, out);
  } else if (const auto* u = e->as<ir::UnaryNode>()) {
    collectVars(u->a, out);
  }
}

std::string baseName(const ir::BindingBlock& block, const std::vector<size_t>& members) {
  std::string name = "fused";
  for (size_t i : members) {
    const ir::GraphValue& v = block.bindings[i].value;
    name += "_" + (v.kind == ir::ValueKind::Op || v.kind == ir::ValueKind::CallTir
                       ? v.callee
                       : std::string(ir::valueKindName(v.kind)));
  }
  return name;
}

}  // namespace

void collectTypeVars(const ir::Type& t, std::unordered_set<const ir::VarNode*>& out) {
  for (const auto& d : t.shape) collectVars(d, out);
  for (const auto& f : t.fields) collectTypeVars(f, out);
}

void collectBoundVars(const ir::Type& t, std::unordered_set<const ir::VarNode*>& out) {
  for (const auto& d : t.shape)
    if (const auto* v = d ? d->as<ir::VarNode>() : nullptr) out.insert(v);
  for (const auto& f : t.fields) collectBoundVars(f, out);
}

int outlineGroups(ir::GraphFunc& f, size_t block_index, const std::vector<OutlineGroup>& groups,
                  const UseInfo& uses, SubFunctionNamer& namer) {
  ir::BindingBlock& block = f.blocks[block_index];
  std::unordered_set<std::string> names;
  for (const auto& p : f.params) names.insert(p->name);
  for (const auto& b : f.blocks)
    for (const auto& x : b.bindings) names.insert(x.var->name);
  auto fresh = [&](const std::string& base) {
    std::string n = base;
    for (int i = 1; names.count(n); ++i) n = base + "_" + std::to_string(i);
    names.insert(n);
    return n;
  };

  // Binding index -> the replacement emitted at the group's last member, or
  // "drop" for the other members.
  std::map<size_t, std::vector<ir::Binding>> replace;
  std::unordered_set<size_t> drop;
  int outlined = 0;
  for (const auto& g : groups) {
    if (g.members.empty()) continue;
    std::unordered_set<size_t> in_group(g.members.begin(), g.members.end());
    std::unordered_set<const ir::GraphVarNode*> defined;
    for (size_t i : g.members) defined.insert(block.bindings[i].var.get());

    ir::GraphFunc fn;
    fn.attrs = g.attrs;
    std::unordered_map<const ir::GraphVarNode*, ir::GraphVar> remap;
    std::vector<ir::GraphVar> args;
    auto addParam = [&](const ir::GraphVar& a) {
      auto p = ir::makeGraphVar(a->name, a->type);
      remap[a.get()] = p;
      fn.params.push_back(p);
      args.push_back(a);
    };
    for (const auto& a : g.params) addParam(a);
    for (size_t i : g.members)
      for (const auto& a : block.bindings[i].value.args)
        if (!defined.count(a.get()) && !remap.count(a.get())) {
          if (!g.params.empty()) throw Error("outlining: %" + a->name + " is read but not a given parameter");
          addParam(a);
        }
    ir::BindingBlock body;
    body.dataflow = true;
    std::vector<ir::GraphVar> outs;  // original variables
    for (size_t i : g.members) {
      const ir::Binding& b = block.bindings[i];
      ir::Binding nb = b;
      nb.var = ir::makeGraphVar(b.var->name, b.var->type);
      for (auto& a : nb.value.args) a = remap.at(a.get());
      remap[b.var.get()] = nb.var;
      body.bindings.push_back(std::move(nb));
      bool escapes = uses.returned.count(b.var.get()) > 0;
      if (auto it = uses.uses.find(b.var.get()); it != uses.uses.end())
        for (const auto& u : it->second)
          if (u.block != block_index || !in_group.count(u.index)) escapes = true;
      if (escapes) outs.push_back(b.var);
    }
    if (outs.empty()) outs.push_back(block.bindings[g.members.back()].var);
    for (const auto& o : outs) fn.ret.push_back(remap.at(o.get()));
    if (outs.size() == 1) {
      fn.ret_type = outs[0]->type;
    } else {
      std::vector<ir::Type> fields;
      for (const auto& o : outs) fields.push_back(o->type);
      fn.ret_type = ir::Type::tuple(std::move(fields));
      fn.ret_is_tuple = true;
    }
    fn.blocks.push_back(std::move(body));

    // Every symbolic dimension must be bound by a parameter's type.
    std::unordered_set<const ir::VarNode*> bound, used;
    for (const auto& p : fn.params) collectBoundVars(p->type, bound);
    for (const auto& b : fn.blocks[0].bindings) collectTypeVars(b.var->type, used);
    bool closed = true;
    for (const auto* v : used) closed = closed && bound.count(v);
    if (!closed) continue;

    std::string callee = namer.intern(std::move(fn), baseName(block, g.members));
    std::vector<ir::Binding> emitted;
    ir::GraphValue call;
    call.kind = ir::ValueKind::CallGraph;
    call.callee = callee;
    call.args = args;
    if (outs.size() == 1) {
      emitted.push_back({outs[0], call});
    } else {
      std::vector<ir::Type> fields;
      for (const auto& o : outs) fields.push_back(o->type);
      auto t = ir::makeGraphVar(fresh(callee + "_out"), ir::Type::tuple(std::move(fields)));
      emitted.push_back({t, call});
      for (size_t k = 0; k < outs.size(); ++k) {
        ir::GraphValue get;
        get.kind = ir::ValueKind::TupleGet;
        get.args = {t};
        get.index = static_cast<int64_t>(k);
        emitted.push_back({outs[k], get});
      }
    }
    for (size_t i : g.members) drop.insert(i);
    replace[g.members.back()] = std::move(emitted);
    ++outlined;
  }
  if (outlined == 0) return 0;
  std::vector<ir::Binding> result;
  for (size_t i = 0; i < block.bindings.size(); ++i) {
    if (auto it = replace.find(i); it != replace.end()) {
      for (auto& b : it->second) result.push_back(std::move(b));
    } else if (!drop.count(i)) {
      result.push_back(std::move(block.bindings[i]));
    }
  }
  block.bindings = std::move(result);
  return outlined;
}

bool isPrimitive(const ir::GraphFunc& f) {
  auto it = f.attrs.find("primitive");
  return it != f.attrs.end() && it->second.isBool() && it->second.asBool();
}

std::string outlineModule(ir::Module& m, const std::string& what, const GroupFinder& find) {
  SubFunctionNamer namer(m);
  int groups = 0;
  for (auto& fn : m.functions) {
    auto* f = std::get_if<ir::GraphFunc>(&fn);
    if (!f) continue;
    if (isPrimitive(*f)) continue;
    UseInfo uses = UseInfo::of(*f);
    for (size_t bi = 0; bi < f->blocks.size(); ++bi) {
      const ir::BindingBlock& block = f->blocks[bi];
      if (!block.dataflow) continue;
      groups += outlineGroups(*f, bi, find(block, bi, uses), uses, namer);
    }
  }
  size_t new_funcs = namer.added().size();
  for (auto& f : namer.added()) m.functions.push_back(std::move(f));
  if (groups == 0) return "";
  return std::to_string(groups) + " " + what + ", " + std::to_string(new_funcs) + " new sub-function(s)";
}

}  // namespace mlcc::transform
