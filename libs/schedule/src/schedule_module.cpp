// Scheduling a whole module: script, then default rules (see schedule_module.h).
#include "mlcc/schedule/schedule_module.h"

#include <algorithm>

#include "mlcc/schedule/script.h"

namespace mlcc::schedule {

std::vector<std::pair<std::string, std::string>> scheduleModule(ir::Module& m,
                                                                const ModuleScheduleOptions& options) {
  std::vector<std::string> by_script;
  if (options.script) by_script = applyScheduleScript(m, *options.script, options.seed);
  std::vector<RuleReport> report;
  if (options.target) report = applyDefaultRules(m, *options.target, options.seed);
  std::vector<std::pair<std::string, std::string>> how;
  for (const auto& f : m.functions) {
    const auto* prim = std::get_if<ir::PrimFunc>(&f);
    if (!prim) continue;
    std::string by = "none";
    if (std::find(by_script.begin(), by_script.end(), prim->name) != by_script.end()) {
      by = "script";
    } else {
      auto it =
          std::find_if(report.begin(), report.end(), [&](const auto& r) { return r.func == prim->name; });
      if (it != report.end())
        by = it->rule;
      else if (!prim->trace.empty())
        by = "already scheduled";
    }
    how.emplace_back(prim->name, by);
  }
  return how;
}

std::string ruleList(target::Target::Kind kind) {
  using target::Target;
  std::string out = std::string(kind == Target::Kind::llvm ? "llvm" : "cuda") + ":\n";
  const auto names = ruleNames(kind);
  if (names.empty()) out += "  (no rules yet: every prim func is left unscheduled)\n";
  for (const auto& n : names) out += "  " + n + "\n";
  return out;
}

}  // namespace mlcc::schedule
