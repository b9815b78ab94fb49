// The default rules for CPUs (llvm target), tried in order.
#include "rule.h"

namespace mlcc::schedule {

const std::vector<Rule>& llvmRules() {
  static const std::vector<Rule> rules = {};
  return rules;
}

}  // namespace mlcc::schedule
