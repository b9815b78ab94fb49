// CUDA code generation: prim funcs scheduled for the cuda target become
// CUDA C kernels (emitCudaSource), compiled with NVRTC to PTX
// (compileWithNvrtc); compileCudaModule puts the PTX, the weights and the
// launch table a model runs into model.o (the runtime loads it with the CUDA
// driver, libs/runtime/src/cuda.cpp).
//
//   CudaSource src = emitCudaSource({&func}, target::Target::parse("cuda"));
//   std::string ptx = compileWithNvrtc(src.code, "sm_90");
//
// Each kernel of a prim func (a loop nest under an outermost loop bound to
// a thread axis, see schedule/gpu_check.h) becomes an
// `extern "C" __global__` function taking one pointer per parameter, then
// one per global-scope allocation of the function (scratch, in the
// workspace). Loops bound to threadIdx/blockIdx read the hardware indices;
// function-level `shared` and `local` allocations are declared per kernel,
// compacted to the box one thread block (shared) or one thread (local)
// touches (the rule verifyGpuFunc sizes them by); `__syncthreads()` is
// placed between statements where a shared buffer written by one is read
// (or read, then written) by a later one, and at the top of loops that read
// and write one. Under MLCC_CUDA_EMULATION (cuda_emulation.h) the same
// source compiles as C++ for the CPU and each kernel gets a launcher
// `mlcc_emu_launch_<kernel>(void** params)`.
//
// Not supported yet (a clear mlcc::Error naming the function): symbolic
// shapes, f16/bf16, vthread, loops outside kernels, block-level shared
// allocations, shared/local buffers read before they are written.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "mlcc/target/target.h"

namespace mlcc::codegen {

struct CudaKernel {
  std::string name;  // the __global__ function
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t shared_bytes = 0;  // static __shared__ memory
};

struct CudaFunction {
  std::string prim;                 // the prim func
  std::vector<CudaKernel> kernels;  // launched in order, each with all parameters and scratch buffers
  // The global-scope allocations passed after the parameters: their bytes,
  // and whether each must be zero-filled before the kernels run (read
  // before written somewhere).
  std::vector<int64_t> scratch_bytes;
  std::vector<bool> scratch_zeroed;
};

struct CudaSource {
  std::string code;  // CUDA C (a prelude of helpers, then the kernels)
  std::vector<CudaFunction> functions;
};

// Throws mlcc::Error naming the function and block for what it cannot
// generate, and for kernels verifyGpuFunc rejects.
CudaSource emitCudaSource(const std::vector<const ir::PrimFunc*>& funcs, const target::Target& target);

// The epilogue of a library GEMM (cuBLAS) whose output out[rows, n] gets a
// bias (out[i, j] += bias[j]) and/or a relu: a kernel `name(out[, bias])`
// of one thread per element, launched on ceil(rows * n / 256) blocks of 256.
CudaKernel gemmEpilogue(const std::string& name, int64_t rows, int64_t n, bool bias, bool relu,
                        std::string& code);

// PTX for `arch` ("sm_90": compute_90) from CUDA C, with NVRTC loaded at
// run time (libnvrtc.so of CUDA 12 or 13, or /usr/local/cuda); with
// --use_fast_math when `fast_math` (the target's -fast-math). Throws
// mlcc::Error with NVRTC's log, or when NVRTC cannot be found.
std::string compileWithNvrtc(const std::string& code, const std::string& arch, bool fast_math = false,
                             const std::string& name = "model.cu");
// Whether NVRTC can be loaded here (tests skip the PTX checks without it).
bool nvrtcAvailable();

}  // namespace mlcc::codegen
