// The description of the CPU mlcc compiles for (target.h CpuInfo): the CPU
// named by -mcpu (or the host's) with the features of -mattr, checked
// against LLVM's tables first (a CPU or feature LLVM does not know, or a CPU
// without 64-bit mode, would otherwise end in an LLVM fatal error or
// warning); its enabled features and vector width from LLVM; its cores and
// caches from this machine.
#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "mlcc/support/diagnostic.h"
#include "mlcc/target/target.h"
#include "native_llvm.h"

namespace mlcc::target {

namespace {

// The names of `names` closest to `wrong` (edit distance), best first.
std::vector<std::string> closest(const std::vector<std::string>& names, const std::string& wrong, size_t n) {
  std::vector<std::pair<unsigned, std::string>> scored;
  for (const auto& name : names) scored.emplace_back(llvm::StringRef(name).edit_distance(wrong, true), name);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < n; ++i)
    if (scored[i].first <= std::max<size_t>(2, wrong.size() / 3)) out.push_back(scored[i].second);
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// "+avx2,-fma" -> {"+avx2", "-fma"}.
std::vector<std::string> splitFeatures(const std::string& features) {
  std::vector<std::string> out;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(features).split(parts, ',', -1, false);
  for (auto p : parts) out.push_back(p.trim().str());
  return out;
}

bool isHost(const std::string& mcpu) { return mcpu.empty() || mcpu == "native"; }

// Throws unless LLVM can compile 64-bit code for `mcpu` with `mattr`.
void checkCpu(const llvm::Target& t, const std::string& triple, const std::string& mcpu,
              const std::string& mattr) {
  auto sti =
      subtargetInfo(t, triple, "", "");  // the names are checked before LLVM sees (and warns about) them
  if (!isHost(mcpu) && !sti->isCPUStringValid(mcpu)) {
    const std::vector<std::string> names = validCpuNames();
    std::vector<std::string> common;
    for (const char* c : {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake",
                          "skylake-avx512", "icelake-server", "sapphirerapids", "znver3", "znver4"})
      if (std::find(names.begin(), names.end(), c) != names.end()) common.emplace_back(c);
    const std::vector<std::string> near = closest(names, mcpu, 3);
    throw Error("unknown CPU '" + mcpu + "' for " + triple +
                (near.empty() ? "" : "; did you mean " + joined(near) + "?") + " (valid: native, " +
                joined(common) + ", ... " + std::to_string(names.size()) +
                " in all, as `llc -mcpu=help` lists)");
  }
  if (!mattr.empty()) {
    std::vector<std::string> known;
    for (const auto& kv : sti->getAllProcessorFeatures()) known.emplace_back(kv.Key);
    for (const std::string& f : splitFeatures(mattr)) {
      const bool signed_ok = f.size() > 1 && (f[0] == '+' || f[0] == '-');
      const std::string name = signed_ok ? f.substr(1) : f;
      if (!signed_ok || std::find(known.begin(), known.end(), name) == known.end()) {
        const std::vector<std::string> near = closest(known, name, 3);
        throw Error("unknown CPU feature '" + f + "' in -mattr=" + mattr +
                    " (features are +NAME or -NAME, comma-separated" +
                    (near.empty() ? "" : "; did you mean " + joined(near) + "?") + ")");
      }
    }
  }
}

// The cores and caches of this machine (the caches from glibc's sysconf;
// 0 where it does not know them).
void describeMachine(CpuInfo& cpu) {
  cpu.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  auto bytes = [](int name) -> int64_t { return std::max(0L, sysconf(name)); };
  cpu.l1d_cache_bytes = bytes(_SC_LEVEL1_DCACHE_SIZE);
  cpu.l2_cache_bytes = bytes(_SC_LEVEL2_CACHE_SIZE);
  cpu.l3_cache_bytes = bytes(_SC_LEVEL3_CACHE_SIZE);
#endif
}

CpuInfo describe(const std::string& mcpu, const std::string& mattr) {
  CpuInfo cpu;
  const llvm::Target& t = nativeLLVMTarget(cpu.triple);
  checkCpu(t, cpu.triple, mcpu, mattr);
  llvm::SubtargetFeatures f;
  if (isHost(mcpu)) {
    cpu.name = llvm::sys::getHostCPUName().str();
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures()) f.AddFeature(name, on);
  } else {
    cpu.name = mcpu;
  }
  for (const std::string& feature : splitFeatures(mattr)) f.AddFeature(feature);
  cpu.llvm_features = f.getString();
  auto sti = subtargetInfo(t, cpu.triple, cpu.name, cpu.llvm_features);
  if (!sti->checkFeatures("+64bit"))
    throw Error("CPU '" + cpu.name + "'" + (mattr.empty() ? "" : " with -mattr=" + mattr) +
                " cannot run 64-bit code, which " + cpu.triple +
                " needs (e.g. x86-64, x86-64-v3, haswell, skylake-avx512, znver4)");
  for (const auto& kv : sti->getAllProcessorFeatures())
    if (sti->checkFeatures(std::string("+") + kv.Key)) cpu.features.emplace_back(kv.Key);
  std::sort(cpu.features.begin(), cpu.features.end());
  cpu.vector_bits = cpu.has("avx512f") ? 512 : cpu.has("avx") || cpu.has("avx2") ? 256 : 128;
  cpu.split_512bit_fma = cpu.vector_bits == 512 && cpu.name == "znver4";
  describeMachine(cpu);
  return cpu;
}

}  // namespace

bool CpuInfo::has(const std::string& feature) const {
  return std::binary_search(features.begin(), features.end(), feature);
}

std::vector<std::string> validCpuNames() {
  std::string triple;
  const llvm::Target& t = nativeLLVMTarget(triple);
  auto sti = subtargetInfo(t, triple, "", "");
  std::vector<std::string> names;
  for (const auto& kv : sti->getAllProcessorDescriptions())
    if (subtargetInfo(t, triple, kv.Key, "")->checkFeatures("+64bit")) names.emplace_back(kv.Key);
  return names;
}

CpuInfo describeCpu(const std::string& mcpu, const std::string& mattr) {
  if (isHost(mcpu) && mattr.empty()) {  // the common case, asked by every `llvm` target: once
    static const CpuInfo host = describe("", "");
    return host;
  }
  return describe(mcpu, mattr);
}

}  // namespace mlcc::target
