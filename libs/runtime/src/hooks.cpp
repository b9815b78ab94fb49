// The mlcc_rt_* functions generated code calls (abi.h): parallel loops,
// profiling hooks and errors. Library kernels are in blas.cpp.
#include <ctime>

#include "mlcc/runtime/bounds_error.h"
#include "model_state.h"

namespace mlcc::rt {

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec + 1;
}

}  // namespace mlcc::rt

extern "C" {

void mlcc_rt_parallel_for(mlcc_rt_context* ctx, int64_t n,
                          void (*fn)(void* closure, int64_t begin, int64_t end), void* closure) {
  if (ctx && ctx->pool) {
    ctx->parallel_choice.run(*ctx->pool, n, fn, closure);
  } else if (n > 0) {
    fn(closure, 0, n);
  }
}

int64_t mlcc_rt_kernel_begin(mlcc_rt_context* ctx, int32_t kernel_id) {
  if (!ctx->profiling) return 0;
  return mlcc::rt::nowNs();
}

void mlcc_rt_kernel_end(mlcc_rt_context* ctx, int32_t kernel_id, int64_t begin_token) {
  if (begin_token == 0 || !ctx->profiling) return;
  if (kernel_id < 0 || static_cast<size_t>(kernel_id) >= ctx->stats.size()) return;
  auto& s = ctx->stats[kernel_id];
  s.calls += 1;
  s.total_ns += mlcc::rt::nowNs() - begin_token;
}

void mlcc_rt_set_error(mlcc_rt_context* ctx, const char* message) {
  std::lock_guard<std::mutex> lk(ctx->error_mu);
  if (ctx->error.empty()) ctx->error = message && *message ? message : "error in the model";
}

void mlcc_rt_extern_failed(mlcc_rt_context* ctx, const char* call, int32_t code) {
  mlcc_rt_set_error(ctx, (std::string(call) + " returned " + std::to_string(code)).c_str());
}

void mlcc_rt_bounds_error(mlcc_rt_context* ctx, const char* access, int32_t rank, const int64_t* index,
                          const int64_t* shape) {
  mlcc_rt_set_error(ctx, mlcc::rt::boundsErrorMessage(access, rank, index, shape).c_str());
}

}  // extern "C"
