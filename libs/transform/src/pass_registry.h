// Every pass of libs/transform, one factory per file under passes/; the
// registry (pass_manager.cpp) collects them through allPassInfos().
#pragma once

#include <vector>

#include "mlcc/transform/pass.h"

namespace mlcc::transform {

std::vector<PassInfo> allPassInfos();  // pass_registry.cpp

}  // namespace mlcc::transform
