// The default rules for NVIDIA GPUs (cuda target), tried in order; the
// last, Fallback, applies to every function.
#include "cuda_rules.h"

#include "rule.h"

namespace mlcc::schedule {

namespace {

// A rule whose primitive refuses midway does not apply (the driver drops
// its schedule).
template <bool (*Apply)(Schedule&, const Target&)>
bool guarded(Schedule& sch, const Target& target) {
  try {
    return Apply(sch, target);
  } catch (const ScheduleError&) {
    return false;
  }
}

}  // namespace

const std::vector<Rule>& cudaRules() {
  static const std::vector<Rule> rules = {
      {"Matmul", guarded<applyCudaMatmul>},       {"GEMV", guarded<applyCudaGemv>},
      {"Reduction", guarded<applyCudaReduction>}, {"GeneralReduction", guarded<applyCudaGeneralReduction>},
      {"Fallback", guarded<applyCudaFallback>},
  };
  return rules;
}

}  // namespace mlcc::schedule
