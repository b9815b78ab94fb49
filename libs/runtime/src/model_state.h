// The state of a loaded model: the mlcc_model behind include/mlcc/runtime.h
// and the mlcc_rt_context the generated entry passes back to the runtime
// (thread pool, profiling counters, the error of the current run).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda.h"
#include "mlcc/runtime.h"
#include "mlcc/runtime/abi.h"
#include "parallel_choice.h"
#include "thread_pool.h"

namespace mlcc::rt {

struct KernelStat {
  int64_t calls = 0;
  int64_t total_ns = 0;
};

// Monotonic nanoseconds (never 0, so 0 can mean "not profiling").
int64_t nowNs();

// The last error of this thread (mlcc_last_error).
void setLastError(std::string message);

}  // namespace mlcc::rt

struct mlcc_rt_context {
  std::unique_ptr<mlcc::rt::ThreadPool> pool;
  mlcc::rt::ParallelChoice parallel_choice;  // per parallel loop: the pool or serially, as measured
  bool profiling = false;
  std::vector<mlcc::rt::KernelStat> stats;  // one per kernel of the ABI
  std::mutex error_mu;                      // mlcc_rt_set_error may come from pool threads
  std::string error;                        // the first error of the current run
};

struct mlcc_model {
  const mlcc_abi_model* abi = nullptr;
  void* workspace = nullptr;     // 64-byte aligned
  uint64_t workspace_bytes = 0;  // its size: abi->workspace_bytes, or what the dims need
  mlcc_rt_context ctx;
  // Symbolic dimensions (abi->num_dims): their values, -1 while not set,
  // and the current input and output shapes (-1 where not known).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;
  mlcc::rt::CudaModel* cuda = nullptr;  // a CUDA model's device state (cuda.h)
  bool flush_denormals = true;          // mlcc_model_set_flush_denormals
};
