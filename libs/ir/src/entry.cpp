// The default entry of a module, the flattened, named outputs of a graph
// function and the parameter uses of a prim func (shared by the interpreter
// and codegen).
#include "mlcc/ir/entry.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "mlcc/ir/expr_functor.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

std::string defaultEntry(const Module& m) {
  if (m.hasFunction("main")) return "main";
  std::vector<std::string> entries, all;
  for (const auto& f : m.functions) {
    all.push_back("@" + functionName(f));
    if (auto* g = std::get_if<GraphFunc>(&f)) {
      auto it = g->attrs.find("entry");
      if (it != g->attrs.end() && it->second.isBool() && it->second.asBool()) entries.push_back(g->name);
    }
  }
  if (entries.size() == 1) return entries[0];
  if (all.size() == 1) return all[0].substr(1);
  std::string list;
  for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
  throw Error("no @main and no single entry function; choose one of: " + (list.empty() ? "(none)" : list));
}

namespace {

void flatten(const std::string& name, std::vector<size_t>& path, const Type& type,
             std::vector<EntryOutput>& out) {
  if (!type.isTuple()) {
    std::string n = name;
    for (int k = 1; std::any_of(out.begin(), out.end(), [&](const EntryOutput& o) { return o.name == n; });
         ++k)
      n = name + "_" + std::to_string(k);
    out.push_back({n, path, type});
    return;
  }
  for (size_t i = 0; i < type.fields.size(); ++i) {
    path.push_back(i);
    flatten(name + "_" + std::to_string(i), path, type.fields[i], out);
    path.pop_back();
  }
}

}  // namespace

namespace {

// The outputs named after the returned variables.
std::vector<EntryOutput> outputsByVariable(const GraphFunc& g) {
  std::vector<EntryOutput> out;
  std::vector<size_t> path;
  if (g.ret_is_tuple) {
    for (size_t i = 0; i < g.ret.size(); ++i) {
      path = {i};
      flatten(g.ret[i]->name, path, g.ret[i]->type, out);
    }
    return out;
  }
  const GraphVar& r = g.ret.at(0);
  if (!r->type.isTuple()) {
    flatten(r->name, path, r->type, out);
    return out;
  }
  const Binding* def = nullptr;
  for (const auto& blk : g.blocks)
    for (const auto& b : blk.bindings)
      if (b.var == r) def = &b;
  for (size_t i = 0; i < r->type.fields.size(); ++i) {
    std::string n = def && def->value.kind == ValueKind::Tuple ? def->value.args[i]->name
                                                               : r->name + "_" + std::to_string(i);
    path = {i};
    flatten(n, path, r->type.fields[i], out);
  }
  return out;
}

}  // namespace

std::vector<EntryOutput> entryOutputs(const GraphFunc& g) {
  std::vector<EntryOutput> out = outputsByVariable(g);
  auto it = g.attrs.find("output_names");
  if (it == g.attrs.end()) return out;
  auto bad = [&](const std::string& why) {
    return Error("@" + g.name + ": attribute output_names " + why + " (the function has " +
                 std::to_string(out.size()) + " output(s))");
  };
  if (!it->second.isList() || it->second.asList().size() != out.size())
    throw bad("must list one name per output");
  for (size_t i = 0; i < out.size(); ++i) {
    const AttrValue& name = it->second.asList()[i];
    if (!name.isString() || name.asString().empty()) throw bad("must list non-empty strings");
    out[i].name = name.asString();
    for (size_t j = 0; j < i; ++j)
      if (out[j].name == out[i].name) throw bad("names '" + out[i].name + "' twice");
  }
  return out;
}

std::vector<std::string> outputNames(const GraphFunc& g) {
  std::vector<std::string> names;
  for (const auto& o : entryOutputs(g)) names.push_back(o.name);
  return names;
}

bool pinOutputNames(GraphFunc& g, const std::vector<std::string>& before) {
  std::vector<std::string> now;
  for (const auto& o : outputsByVariable(g)) now.push_back(o.name);
  if (g.attrs.count("output_names") || now.size() != before.size() || now == before) return false;
  AttrValue::List names;
  for (const auto& n : before) names.push_back(AttrValue(n));
  g.attrs["output_names"] = AttrValue(names);
  return true;
}

namespace {

// Notes the buffers loaded from and stored to in `s`.
void collectAccesses(const Stmt& s, std::unordered_set<const BufferNode*>& loads,
                     std::unordered_set<const BufferNode*>& stores) {
  std::function<void(const PrimExpr&)> expr = [&](const PrimExpr& e) {
    if (!e) return;
    if (auto* l = e->as<LoadNode>()) loads.insert(l->buffer.get());
    forEachChild(e, expr);
  };
  if (!s) return;
  switch (s->kind) {
    case StmtKind::For: collectAccesses(s->as<ForNode>()->body, loads, stores); break;
    case StmtKind::Seq:
      for (const auto& x : s->as<SeqNode>()->stmts) collectAccesses(x, loads, stores);
      break;
    case StmtKind::If: {
      auto* i = s->as<IfNode>();
      expr(i->cond);
      collectAccesses(i->then_case, loads, stores);
      collectAccesses(i->else_case, loads, stores);
      break;
    }
    case StmtKind::Store: {
      auto* st = s->as<StoreNode>();
      stores.insert(st->buffer.get());
      for (const auto& i : st->indices) expr(i);
      expr(st->value);
      break;
    }
    case StmtKind::Block: {
      auto* b = s->as<BlockNode>();
      expr(b->predicate);
      collectAccesses(b->init, loads, stores);
      collectAccesses(b->body, loads, stores);
      break;
    }
  }
}

}  // namespace

std::vector<ParamUse> paramUses(const PrimFunc& f) {
  std::unordered_set<const BufferNode*> loads, stores;
  collectAccesses(f.body, loads, stores);
  std::vector<ParamUse> uses;
  for (const auto& p : f.params) uses.push_back({loads.count(p.get()) > 0, stores.count(p.get()) > 0});
  return uses;
}

}  // namespace mlcc::ir
