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

std::optional<RuleResult> scheduleWithRules(const ir::PrimFunc& f, const target::Target& target,
                                            uint64_t seed) {
  for (const auto& rule : target.kind == target::Target::Kind::llvm ? llvmRules() : cudaRules()) {
    Schedule sch(f, seed);
    if (rule.apply(sch, target)) return RuleResult{sch.func(), rule.name};
  }
  return std::nullopt;
}

std::vector<RuleReport> applyDefaultRules(ir::Module& m, const target::Target& target, uint64_t seed) {
  std::vector<RuleReport> report;
  for (auto& f : m.functions) {
    auto* prim = std::get_if<ir::PrimFunc>(&f);
    if (!prim) continue;
    if (!prim->trace.empty()) {
      report.push_back({prim->name, "already scheduled"});
      continue;
    }
    std::string used = "none";
    if (auto r = scheduleWithRules(*prim, target, seed)) {
      *prim = std::move(r->func);
      used = r->rule;
    }
    report.push_back({prim->name, used});
  }
  return report;
}

}  // namespace mlcc::schedule
