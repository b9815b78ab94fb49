// The runtime functions of abi.h for kernels compiled in memory by
// JitKernel (the model runtime, libs/runtime, serves model.so instead):
// mlcc_rt_parallel_for runs chunks on a thread pool, mlcc_rt_set_error
// records the message for JitKernel::run to throw.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mlcc::codegen {

// What the JIT passes as the mlcc_rt_context* of a kernel call.
struct JitContext {
  int num_threads = 1;
  std::string error;
};

// Symbol name -> address of each runtime function the JIT defines.
std::vector<std::pair<const char*, void*>> jitRuntimeSymbols();

}  // namespace mlcc::codegen
