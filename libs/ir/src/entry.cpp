// The default entry of a module and the flattened, named outputs of a graph
// function (shared by the interpreter and codegen).
#include "mlcc/ir/entry.h"

#include <algorithm>

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

}  // namespace mlcc::ir
