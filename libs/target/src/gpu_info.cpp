// The limits of the CUDA architectures mlcc targets (target.h GpuInfo), from
// the CUDA programming guide's table of compute capabilities: CUDA 13
// supports sm_75 (Turing) and newer. An arch-specific variant ("sm_90a",
// "sm_100f") has the limits of its base architecture.
#include <algorithm>

#include "mlcc/support/diagnostic.h"
#include "mlcc/target/target.h"

namespace mlcc::target {

namespace {

constexpr int64_t KiB = 1024;

GpuInfo gpu(const char* arch, int major, int minor, int threads_per_sm, int64_t optin_kib,
            int64_t per_sm_kib) {
  GpuInfo g;
  g.arch = arch;
  g.compute_major = major;
  g.compute_minor = minor;
  g.max_threads_per_sm = threads_per_sm;
  g.max_shared_memory_optin_bytes = optin_kib * KiB;
  g.shared_memory_per_sm_bytes = per_sm_kib * KiB;
  return g;
}

const std::vector<GpuInfo>& table() {
  static const std::vector<GpuInfo> archs = {
      gpu("sm_75", 7, 5, 1024, 64, 64),      // Turing
      gpu("sm_80", 8, 0, 2048, 163, 164),    // A100
      gpu("sm_86", 8, 6, 1536, 99, 100),     // Ampere (GeForce 30, A10)
      gpu("sm_87", 8, 7, 1536, 163, 164),    // Jetson Orin
      gpu("sm_89", 8, 9, 1536, 99, 100),     // Ada (GeForce 40, L4, L40)
      gpu("sm_90", 9, 0, 2048, 227, 228),    // H100, H200
      gpu("sm_100", 10, 0, 2048, 227, 228),  // B200
      gpu("sm_103", 10, 3, 2048, 227, 228),  // B300
      gpu("sm_120", 12, 0, 1536, 99, 100),   // Blackwell (GeForce 50, RTX PRO)
      gpu("sm_121", 12, 1, 1536, 99, 100),   // DGX Spark
  };
  return archs;
}

}  // namespace

std::vector<std::string> knownGpuArchs() {
  std::vector<std::string> names;
  for (const auto& g : table()) names.push_back(g.arch);
  return names;
}

GpuInfo describeGpu(const std::string& arch) {
  std::string base = arch;
  if (base.size() > 5 && (base.back() == 'a' || base.back() == 'f')) base.pop_back();  // sm_90a, sm_100f
  for (const auto& g : table())
    if (g.arch == base && (base == arch || g.compute_major >= 9)) {
      GpuInfo described = g;
      described.arch = arch;
      return described;
    }
  std::string known;
  for (const auto& name : knownGpuArchs()) known += (known.empty() ? "" : ", ") + name;
  throw Error("unknown CUDA architecture '" + arch + "' (known: " + known +
              "; CUDA 13 supports sm_75 and newer, with an a or f suffix from sm_90)");
}

}  // namespace mlcc::target
