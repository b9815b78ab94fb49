// The driver of the default rules (see rules.h).
#include "mlcc/schedule/rules.h"

#include "rule.h"

namespace mlcc::schedule {

std::vector<std::string> ruleNames(target::Target::Kind kind) {
  std::vector<std::string> names;
  for (const auto& r : kind == target::Target::Kind::llvm ? llvmRules() : cudaRules())
    names.emplace_back(r.name);
  return names;
}

std::vector<RuleReport> applyDefaultRules(ir::Module& m, const target::Target& target, uint64_t seed) {
  const auto& rules = target.kind == target::Target::Kind::llvm ? llvmRules() : cudaRules();
  std::vector<RuleReport> report;
  for (auto& f : m.functions) {
    auto* prim = std::get_if<ir::PrimFunc>(&f);
    if (!prim) continue;
    if (!prim->trace.empty()) {
      report.push_back({prim->name, "already scheduled"});
      continue;
    }
    std::string used = "none";
    for (const auto& rule : rules) {
      Schedule sch(*prim, seed);
      if (rule.apply(sch, target)) {
        *prim = sch.func();
        used = rule.name;
        break;
      }
    }
    report.push_back({prim->name, used});
  }
  return report;
}

}  // namespace mlcc::schedule
