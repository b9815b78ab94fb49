// A default schedule rule: tries to schedule one prim func for a target.
// `apply` returns false, changing nothing, when the rule does not apply to
// the function; true when it scheduled it. Rules use only Schedule
// primitives. The targets' rule lists are tried in order (rules.cpp).
#pragma once

#include <vector>

#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"

namespace mlcc::schedule {

struct Rule {
  const char* name;
  bool (*apply)(Schedule& sch, const target::Target& target);
};

// The rules of each target, in the order they are tried
// (rules/llvm_rules.cpp, rules/cuda_rules.cpp).
const std::vector<Rule>& llvmRules();
const std::vector<Rule>& cudaRules();

}  // namespace mlcc::schedule
