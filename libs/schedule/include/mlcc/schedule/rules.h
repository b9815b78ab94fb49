// Default schedule rules per target (like TVM's DLight for GPUs and the
// MetaSchedule default space for CPUs): each unscheduled prim func of a
// module is scheduled by the first rule of the target that applies to it.
// The rules read the vector width, cores and GPU limits from libs/target's
// Target.
//
//   target::Target t = target::Target::parse("llvm -num-cores=2");
//   auto report = applyDefaultRules(module, t);   // report[i]: {func, rule}
//
// Rules only use Schedule primitives, so every scheduled function carries
// its trace and keeps its meaning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/target/target.h"

namespace mlcc::schedule {

struct RuleReport {
  std::string func;  // the prim func
  std::string rule;  // the rule that scheduled it ("none": left as is)
};

// Schedules one unscheduled prim func with the first of the target's rules
// that applies: the scheduled function (with its trace) and the rule's name;
// nullopt when no rule applies.
struct RuleResult {
  ir::PrimFunc func;
  std::string rule;
};
std::optional<RuleResult> scheduleWithRules(const ir::PrimFunc& f, const target::Target& target,
                                            uint64_t seed = 0);

// Schedules every prim func of `m` whose trace is empty with the target's
// default rules; functions that already have a trace are left alone
// (reported with rule "already scheduled"). `seed` drives any sampling.
std::vector<RuleReport> applyDefaultRules(ir::Module& m, const target::Target& target, uint64_t seed = 0);

// The rules of a target, in the order they are tried.
std::vector<std::string> ruleNames(target::Target::Kind kind);

}  // namespace mlcc::schedule
