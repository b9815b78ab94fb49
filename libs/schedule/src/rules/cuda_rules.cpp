// The default rules for NVIDIA GPUs (cuda target), tried in order; the
// last, Fallback, applies to every function it can bind (not to a
// reduction to a scalar: no loop to bind).
#include "cuda_rules.h"

#include "mlcc/schedule/gpu_check.h"
#include "rule.h"

namespace mlcc::schedule {

namespace {

// A rule applies when it scheduled the function into one that is valid
// for the GPU (verifyGpuFunc); a primitive refusing midway or an invalid
// result means it does not apply (the driver drops its schedule and tries
// the next rule).
template <bool (*Apply)(Schedule&, const target::Target&)>
bool guarded(Schedule& sch, const target::Target& target) {
  try {
    if (!Apply(sch, target)) return false;
    verifyGpuFunc(sch.func(), target);
    return true;
  } catch (const mlcc::Error&) {
    return false;
  }
}

}  // namespace

const std::vector<Rule>& cudaRules() {
  static const std::vector<Rule> rules = {
      {"Scan", guarded<applyCudaScan>},
      {"Matmul", guarded<applyCudaMatmul>},
      {"GEMV", guarded<applyCudaGemv>},
      {"Reduction", guarded<applyCudaReduction>},
      {"GeneralReduction", guarded<applyCudaGeneralReduction>},
      {"Fallback", guarded<applyCudaFallback>},
  };
  return rules;
}

}  // namespace mlcc::schedule
