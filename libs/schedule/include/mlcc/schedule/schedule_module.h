// Scheduling a whole module, as mlcc-schedule does: a schedule script first,
// for the prim funcs it names, then a target's default rules for the prim
// funcs still without a trace.
//
//   auto how = scheduleModule(m, {&script, &target, seed});   // {{"dense", "script"}, ...}
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/parser.h"
#include "mlcc/schedule/rules.h"

namespace mlcc::schedule {

struct ModuleScheduleOptions {
  const ir::ScheduleScript* script = nullptr;  // null: none
  const target::Target* target = nullptr;      // null: no rules
  uint64_t seed = 0;                           // of sampling instructions without a decision
};

// Schedules `m` in place. Returns, for each prim func in module order, what
// scheduled it: "script", the rule's name, "already scheduled" (it had a
// trace) or "none".
std::vector<std::pair<std::string, std::string>> scheduleModule(ir::Module& m,
                                                                const ModuleScheduleOptions& options);

// `mlcc-schedule --list-rules` for one target kind: "llvm:\n  rule\n...".
std::string ruleList(target::Target::Kind kind);

}  // namespace mlcc::schedule
