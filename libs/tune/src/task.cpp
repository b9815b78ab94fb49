// Task extraction: group the module's prim funcs by workload key, count the
// graph's call_tir calls to them, and note why a function cannot be tuned.
#include "mlcc/tune/task.h"

#include <cstdio>
#include <map>

#include "mlcc/codegen/llvm.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/summary.h"

namespace mlcc::tune {

std::string workloadKey(const ir::PrimFunc& f) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(ir::structuralHash(f, {.compare_traces = false})));
  return text;
}

std::vector<Task> extractTasks(const ir::Module& m) {
  std::map<std::string, int64_t> calls;
  for (const auto& fn : m.functions)
    if (const auto* g = std::get_if<ir::GraphFunc>(&fn))
      for (const auto& block : g->blocks)
        for (const auto& b : block.bindings)
          if (b.value.kind == ir::ValueKind::CallTir) ++calls[b.value.callee];

  std::vector<Task> tasks;
  std::map<std::string, size_t> by_key;
  for (const auto& fn : m.functions) {
    const auto* f = std::get_if<ir::PrimFunc>(&fn);
    if (!f) continue;
    const std::string key = workloadKey(*f);
    auto [it, fresh] = by_key.emplace(key, tasks.size());
    if (fresh) {
      Task t;
      t.key = key;
      t.func = *f;
      t.func.trace = {};
      bool symbolic = false;
      t.flops = static_cast<double>(ir::primFuncFlops(*f, &symbolic));
      if (!f->trace.empty())
        t.skip = "already scheduled";
      else if (!codegen::kernelDims(*f).empty() || symbolic)
        t.skip = "symbolic shapes";
      tasks.push_back(std::move(t));
    }
    Task& t = tasks[it->second];
    t.funcs.push_back(f->name);
    t.calls += std::max<int64_t>(1, calls.count(f->name) ? calls[f->name] : 0);
  }
  return tasks;
}

}  // namespace mlcc::tune
