// Target::describe (see target.h): what the compiler assumes about the
// target, one fact a line, for `mlcc-inspect --target-info`.
#include <sstream>

#include "mlcc/target/target.h"

namespace mlcc::target {

namespace {

// The features that change the code mlcc-codegen emits (vector widths, FMA,
// half and bfloat16 arithmetic), of those the CPU has.
std::string codegenFeatures(const CpuInfo& cpu) {
  std::string out;
  for (const char* f : {"sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                        "avx512vnni", "avx512bf16", "avx512fp16", "amx-tile", "neon", "sve", "sve2"})
    if (cpu.has(f)) out += (out.empty() ? "" : " ") + std::string(f);
  return out.empty() ? "(none of the vector features)" : out;
}

std::string bytes(int64_t n) {
  if (n <= 0) return "unknown";
  if (n % (1024 * 1024) == 0) return std::to_string(n / (1024 * 1024)) + " MiB";
  if (n % 1024 == 0) return std::to_string(n / 1024) + " KiB";
  return std::to_string(n) + " bytes";
}

}  // namespace

std::string Target::describe() const {
  std::ostringstream out;
  out << "target: " << str() << "\n";
  if (kind == Kind::llvm) {
    out << "triple: " << cpu.triple << "\n"
        << "cpu: " << cpu.name << (mcpu.empty() || mcpu == "native" ? " (this machine)" : "") << "\n"
        << "features: " << codegenFeatures(cpu) << " (" << cpu.features.size() << " enabled in all)\n"
        << "vector bits: " << vector_bits << (vector_bits == cpu.vector_bits ? "" : " (-vector-bits)")
        << (cpu.split_512bit_fma ? " (512-bit FMAs issue as two 256-bit halves)" : "") << "\n"
        << "cores: " << num_cores << (num_cores == cpu.cores ? "" : " (-num-cores)") << "\n"
        << "parallel grain: " << parallel_grain << " multiply-adds"
        << (parallel_grain == kDefaultParallelGrain ? "" : " (-parallel-grain)") << "\n"
        << "l1d cache: " << bytes(cpu.l1d_cache_bytes) << "\n"
        << "l2 cache: " << bytes(cpu.l2_cache_bytes) << "\n"
        << "l3 cache: " << bytes(cpu.l3_cache_bytes) << "\n";
  } else {
    out << "arch: " << arch << " (compute capability " << gpu.compute_major << "." << gpu.compute_minor
        << ")\n"
        << "max threads per block: " << max_threads_per_block << "\n"
        << "max threads per SM: " << gpu.max_threads_per_sm << "\n"
        << "warp size: " << gpu.warp_size << "\n"
        << "shared memory per block: " << bytes(max_shared_memory_bytes) << " (static), "
        << bytes(gpu.max_shared_memory_optin_bytes) << " (opt-in)\n"
        << "shared memory per SM: " << bytes(gpu.shared_memory_per_sm_bytes) << "\n"
        << "fast math: " << (fast_math ? "on (-fast-math: --use_fast_math)" : "off") << "\n";
  }
  return out.str();
}

}  // namespace mlcc::target
