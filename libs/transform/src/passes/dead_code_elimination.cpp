// dead-code-elimination: removes bindings whose value is never used (in
// dataflow blocks, where every binding is free of side effects, and for
// constants, tuples, aliases and op calls elsewhere), then functions that
// no entry function reaches. Entries: @main and functions with the
// attribute `entry = true`; a module with neither keeps every function.
#include <set>
#include <string>
#include <unordered_set>

#include "../pass_registry.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

bool pureOutsideDataflow(const ir::GraphValue& v) {
  // call_tir, call_extern and call may write their outputs only, but a
  // non-dataflow block is where a user keeps what must stay: keep calls.
  return v.kind != ir::ValueKind::CallTir && v.kind != ir::ValueKind::CallExtern &&
         v.kind != ir::ValueKind::CallGraph;
}

}  // namespace

int eliminateDeadBindings(ir::GraphFunc& f, const std::function<bool(const ir::Binding&)>& may_remove) {
  std::unordered_set<const ir::GraphVarNode*> used;
  for (const auto& r : f.ret) used.insert(r.get());
  int removed = 0;
  for (auto block = f.blocks.rbegin(); block != f.blocks.rend(); ++block) {
    std::vector<ir::Binding> kept;
    for (auto b = block->bindings.rbegin(); b != block->bindings.rend(); ++b) {
      bool removable = (block->dataflow || pureOutsideDataflow(b->value)) && (!may_remove || may_remove(*b));
      if (removable && !used.count(b->var.get())) {
        ++removed;
        continue;
      }
      for (const auto& a : b->value.args) used.insert(a.get());
      kept.push_back(*b);
    }
    block->bindings.assign(kept.rbegin(), kept.rend());
  }
  std::erase_if(f.blocks, [](const ir::BindingBlock& b) { return b.bindings.empty(); });
  return removed;
}

namespace {

bool isEntry(const ir::Function& fn) {
  const auto* g = std::get_if<ir::GraphFunc>(&fn);
  if (!g) return false;
  auto it = g->attrs.find("entry");
  return g->name == "main" || (it != g->attrs.end() && it->second.isBool() && it->second.asBool());
}

// Removes functions not reachable from an entry; returns how many.
int eliminateFunctions(ir::Module& m) {
  std::set<std::string> live, work;
  for (const auto& fn : m.functions)
    if (isEntry(fn)) work.insert(ir::functionName(fn));
  if (work.empty()) return 0;
  while (!work.empty()) {
    std::string name = *work.begin();
    work.erase(work.begin());
    if (!live.insert(name).second) continue;
    const ir::GraphFunc* g = m.findGraph(name);
    if (!g) continue;
    for (const auto& block : g->blocks)
      for (const auto& b : block.bindings)
        if (b.value.kind == ir::ValueKind::CallTir || b.value.kind == ir::ValueKind::CallGraph)
          work.insert(b.value.callee);
  }
  size_t before = m.functions.size();
  std::erase_if(m.functions, [&](const ir::Function& fn) { return !live.count(ir::functionName(fn)); });
  return static_cast<int>(before - m.functions.size());
}

}  // namespace

PassInfo makeDeadCodeEliminationPass() {
  PassInfo p;
  p.name = "dead-code-elimination";
  p.summary = "Remove unused bindings and functions no entry function reaches";
  p.run = [](ir::Module& m, const PassOptions&, PassContext&) -> std::string {
    int bindings = 0;
    for (auto& fn : m.functions)
      if (auto* g = std::get_if<ir::GraphFunc>(&fn)) bindings += eliminateDeadBindings(*g);
    int functions = eliminateFunctions(m);
    if (bindings == 0 && functions == 0) return "";
    return "removed " + std::to_string(bindings) + " binding(s), " + std::to_string(functions) +
           " function(s)";
  };
  return p;
}

}  // namespace mlcc::transform
