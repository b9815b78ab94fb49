// Structural diff of two modules for `mlcc-inspect --diff`: functions are
// matched by name; each is reported as added, removed, unchanged
// (structurally equal, even if renamed locals) or changed, with a unified
// diff of its printed text for changed ones.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::ir {

struct ModuleDiff {
  bool equal = true;  // the modules are structurally equal
  std::string text;   // the report, one section per differing function
};

ModuleDiff diffModules(const Module& a, const Module& b, const std::string& name_a = "a",
                       const std::string& name_b = "b");

// A unified diff (with `context` lines of context) of two texts split into
// lines; empty when they are equal.
std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& name_a,
                        const std::string& name_b, int context = 3);

}  // namespace mlcc::ir
