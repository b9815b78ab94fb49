// The default rules for CPUs (llvm target), tried in order. Each runs
// atomically: a rule that gives up part-way changes nothing.
#include "llvm_common.h"

namespace mlcc::schedule {

namespace {

template <bool (*R)(Schedule&, const target::Target&)>
bool atomically(Schedule& sch, const target::Target& target) {
  return cpu::applyAtomically(sch, target, R);
}

}  // namespace

const std::vector<Rule>& llvmRules() {
  static const std::vector<Rule> rules = {
      {"scan", atomically<cpu::applyScanRule>},           {"matmul", atomically<cpu::applyMatmulRule>},
      {"gemv", atomically<cpu::applyGemvRule>},           {"reduction", atomically<cpu::applyReductionRule>},
      {"injective", atomically<cpu::applyInjectiveRule>}, {"fallback", atomically<cpu::applyFallbackRule>},
  };
  return rules;
}

}  // namespace mlcc::schedule
