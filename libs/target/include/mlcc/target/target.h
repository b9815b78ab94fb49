// The one Target of mlcc: what `--target` means for every tool (mlcc-schedule,
// mlcc-codegen, mlcc-pipeline's up-front check, the tuner), parsed by one
// parser, with one description of the CPU (from LLVM's host info) or of the
// GPU (from a table of CUDA architectures).
//
//   Target t = Target::parse("llvm -mcpu=x86-64-v3 -num-cores=4");
//   t.vector_bits;        // 256: the widest vectors of the CPU's features
//   t.cpu.name;           // "x86-64-v3" (the host's name for "llvm")
//   Target g = Target::parse("cuda -arch=sm_90");
//   g.gpu.max_shared_memory_optin_bytes;   // 232448
//
// A string one tool accepts, every tool accepts with the same meaning:
//   llvm [-mcpu=CPU] [-mattr=+a,-b] [-num-cores=N] [-vector-bits=N] [-parallel-grain=N]
//   cuda [-arch=sm_XX] [-max-threads-per-block=N]
// -mcpu and -mattr are checked against LLVM's tables (an unknown CPU or
// feature, or a CPU without 64-bit mode, is refused, with close names
// suggested); -arch against the architectures CUDA 13 supports (sm_75 and
// newer). Errors are mlcc::Error at the location the caller names
// (`--target` by default) and name the bad part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlcc/support/diagnostic.h"

namespace mlcc::target {

// The CPU code is compiled for (always of the host's architecture: mlcc
// compiles for the process triple).
struct CpuInfo {
  std::string triple;                 // "x86_64-pc-linux-gnu"
  std::string name;                   // LLVM's CPU name: the host's when -mcpu is absent or native
  std::string llvm_features;          // the feature string mlcc-codegen hands LLVM ("+avx2,-fma,...")
  std::vector<std::string> features;  // the enabled LLVM features, sorted ("avx2", "fma", ...)
  int vector_bits = 128;              // widest vectors the features give: avx512f 512, avx/avx2 256, else 128
  // 512-bit FMAs issue as two 256-bit halves, one a cycle (AMD Zen 4,
  // znver4), where AVX-512 Xeons issue two whole ones: half the FLOPs a
  // cycle of such vectors, so their operands can stream from L2 (the CPU
  // rules' L1 blocking of convolution weights is left out).
  bool split_512bit_fma = false;
  int cores = 1;                // hardware threads of this machine
  int64_t l1d_cache_bytes = 0;  // this machine's caches, 0 when unknown
  int64_t l2_cache_bytes = 0;
  int64_t l3_cache_bytes = 0;

  bool has(const std::string& feature) const;
  bool operator==(const CpuInfo&) const = default;
};

// A CUDA architecture's limits (CUDA programming guide, table of compute
// capabilities).
struct GpuInfo {
  std::string arch;                          // "sm_80"
  int compute_major = 0, compute_minor = 0;  // 8, 0
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int warp_size = 32;
  int64_t max_shared_memory_bytes = 48 * 1024;        // static __shared__ per block
  int64_t max_shared_memory_optin_bytes = 48 * 1024;  // dynamic, with the opt-in attribute
  int64_t shared_memory_per_sm_bytes = 64 * 1024;
  bool operator==(const GpuInfo&) const = default;
};

struct Target {
  enum class Kind { llvm, cuda };
  Kind kind = Kind::llvm;

  // llvm: the options as given ("" when absent) and what they resolve to.
  std::string mcpu;       // "", "native" or an LLVM CPU name
  std::string mattr;      // "+avx2,-fma" or ""
  int vector_bits = 128;  // -vector-bits=, else cpu.vector_bits
  int num_cores = 1;      // -num-cores=, else cpu.cores
  // -parallel-grain=: the least work a loop nest needs for the CPU rules to
  // make it parallel, in multiply-adds (an element of an elementwise nest
  // counts 4). Below it, waking the other cores and moving the data into
  // their caches costs more than the split saves (llvm_common.h). 256 Ki
  // (about 2-4 us of one core): measured with the runtime's thread pool,
  // whose workers spin briefly between loops. (At 128 Ki the 16-token
  // transformer's three parallel dense layers, 128-192 Ki each, made it
  // slower at 2 threads than at 1: 24-27 us against 24; at 256 Ki the 18
  // bench models' geomean against ONNX Runtime at 2 threads read 0.363,
  // 0.38-0.39 at 128 Ki in the same afternoon.)
  int64_t parallel_grain = kDefaultParallelGrain;
  static constexpr int64_t kDefaultParallelGrain = 1 << 18;
  CpuInfo cpu;

  // cuda: -arch (default sm_80) and the limits the rules respect.
  std::string arch;
  int max_threads_per_block = 1024;  // -max-threads-per-block=, else gpu.max_threads_per_block
  int64_t max_shared_memory_bytes = 48 * 1024;
  GpuInfo gpu;
  // -fast-math: NVRTC's --use_fast_math (approximate exp, log, sin, cos,
  // division and square root, denormals flushed to zero): faster, and no
  // longer equal to the interpreter to the last bits. Off unless asked.
  bool fast_math = false;

  // Throws mlcc::Error at `where` naming the bad part.
  static Target parse(const std::string& text, const SourceLoc& where = {"--target", 0, 0});
  // Parses back to an equal Target: "llvm -mcpu=haswell -num-cores=4 -vector-bits=256".
  std::string str() const;
  // What the compiler assumes, one fact a line ("cpu: skylake-avx512", ...).
  std::string describe() const;
  bool operator==(const Target&) const = default;
};

// The description of CPU `mcpu` ("" or "native": the host) with features
// `mattr` ("+avx2,-fma"). Throws mlcc::Error (no location) unless LLVM can
// compile 64-bit code for it: an unknown CPU (the message suggests close
// names and lists common ones), an unknown feature, or a CPU without 64-bit
// mode.
CpuInfo describeCpu(const std::string& mcpu, const std::string& mattr = "");
// The CPUs LLVM can compile 64-bit code for on this host's architecture.
std::vector<std::string> validCpuNames();

// The limits of CUDA architecture `arch` ("sm_80"; "sm_90a": sm_90's).
// Throws mlcc::Error for one CUDA 13 does not support.
GpuInfo describeGpu(const std::string& arch);
// The architectures describeGpu knows, oldest first.
std::vector<std::string> knownGpuArchs();

// Initializes LLVM's native target once, and makes LLVM's fatal errors
// throw mlcc::Error instead of exiting ("LLVM error: ...").
void initializeNativeLLVM();

}  // namespace mlcc::target
