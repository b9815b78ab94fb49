// The cuda rules, one per file (cuda_<rule>.cpp), listed in cuda_rules.cpp.
// Each returns false, leaving the schedule unchanged, when it does not
// apply (the driver then discards the schedule anyway).
#pragma once

#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"

namespace mlcc::schedule {

bool applyCudaScan(Schedule& sch, const target::Target& target);
bool applyCudaMatmul(Schedule& sch, const target::Target& target);
bool applyCudaGemv(Schedule& sch, const target::Target& target);
bool applyCudaReduction(Schedule& sch, const target::Target& target);
bool applyCudaGeneralReduction(Schedule& sch, const target::Target& target);
bool applyCudaFallback(Schedule& sch, const target::Target& target);

}  // namespace mlcc::schedule
