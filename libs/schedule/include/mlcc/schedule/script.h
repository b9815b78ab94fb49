// Schedule scripts: hand-written traces applied to the prim funcs they name
// (`mlcc-schedule --trace FILE`). The format is ir::parseScheduleScript's
// (artifacts_schema/ir-grammar.md, "Schedule scripts"):
//
//   ir::ScheduleScript script = ir::parseScheduleScript(text, "s.sched");
//   auto scheduled = applyScheduleScript(module, script);   // {"dense", ...}
//
// A failing instruction is reported at its script line:
//   s.sched:7:3: error: in prim @dense: split: ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/parser.h"

namespace mlcc::schedule {

// Applies each `schedule @f { ... }` block of the script, in order, to the
// prim func @f with a Schedule: its instructions are appended to the
// function's trace (trace variables that clash with the names of an
// existing trace are renamed). Throws mlcc::Error located at the script
// line of the failing instruction, or of a function name that is not a
// prim func of the module; `m` is then left unchanged. `seed` drives
// sampling instructions without a decision. Returns the names of the
// functions the script scheduled, in script order, each once.
std::vector<std::string> applyScheduleScript(ir::Module& m, const ir::ScheduleScript& script,
                                             uint64_t seed = 0);

}  // namespace mlcc::schedule
