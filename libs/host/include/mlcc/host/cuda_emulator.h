// Running generated CUDA C on the CPU (tests without a GPU): the source of
// emitCudaSource compiled with the host C++ compiler under a small
// emulation of CUDA's execution model. Each thread block runs its threads
// as fibers on one CPU thread: a fiber runs until __syncthreads() (or its
// end), then the next one; when all reached the barrier the next phase
// starts. `__shared__` memory is one static array per kernel (blocks run
// one after another), `local` arrays live on each fiber's stack. A barrier
// some threads of a block skip is reported as an error. Threads of a phase
// run in increasing or (Order::reverse) decreasing index order: a missing
// barrier between a write and a read by another thread gives a different
// answer in one of the two orders.
//
//   CudaEmulator emu = CudaEmulator::compile(source.code);   // runs c++
//   emu.launch("fused_dense_kernel0", {&x, &w, &y});          // void* per parameter
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace mlcc::host {

class CudaEmulator {
 public:
  enum class Order { forward, reverse };
  // Compiles `code` (emitCudaSource's) into a shared object in a temporary
  // directory with the host compiler (c++, or $CXX) and loads it. Throws
  // mlcc::Error with the compiler's output when it fails.
  static CudaEmulator compile(const std::string& code);
  ~CudaEmulator();
  CudaEmulator(CudaEmulator&&) noexcept;
  CudaEmulator& operator=(CudaEmulator&&) noexcept;

  // Runs kernel `name` over its grid; `params` holds the address of each
  // parameter's device pointer, as cuLaunchKernel's kernelParams does.
  // Throws mlcc::Error for an unknown kernel or a divergent barrier.
  void launch(const std::string& name, const std::vector<void*>& params, Order order = Order::forward) const;

 private:
  struct Impl;
  explicit CudaEmulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlcc::host
