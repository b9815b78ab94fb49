// The two ways mlcc-run runs a model (see run.h): its IR through the
// interpreter, a model.so through its C ABI.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "mlcc/run/input_binding.h"
#include "mlcc/run/run.h"

namespace mlcc::run {

void runIrFile(const RunOptions& options, const InputRequest& inputs,
               const std::map<std::string, int64_t>& dims);
void runCompiledFile(const RunOptions& options, const InputRequest& inputs);

}  // namespace mlcc::run
