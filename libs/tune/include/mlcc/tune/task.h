// Tuning tasks: the distinct prim funcs of a module. Functions that are the
// same program up to names (ResNet-18's repeated blocks) are one task, keyed
// by their workload key (the structural hash of the unscheduled function).
// A task is weighted by how often the graph calls its functions.
//
//   for (const Task& t : extractTasks(module)) ... t.key, t.func, t.calls, t.flops
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::tune {

struct Task {
  std::string key;                 // workloadKey(func)
  ir::PrimFunc func;               // the unscheduled function (the first of `funcs`)
  std::vector<std::string> funcs;  // every prim func of the module with this key, in module order
  int64_t calls = 0;               // calls from the graph functions, over all of `funcs` (at least 1)
  double flops = 0;                // floating-point operations of one call
  std::string skip;                // why it is not tuned ("" when it is): symbolic shapes, already scheduled
};

// The workload key of a prim func: the hex structural hash of the function
// (traces ignored), 16 digits. Tasks are unscheduled functions, so records
// are keyed by the unscheduled form.
std::string workloadKey(const ir::PrimFunc& f);

// The tasks of a module, in module order of their first function.
std::vector<Task> extractTasks(const ir::Module& m);

}  // namespace mlcc::tune
