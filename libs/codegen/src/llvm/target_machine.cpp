// The LLVM target machine for the host (or the CPU named by --mcpu, with the
// features of --mattr), the check of those names against LLVM's tables (a
// CPU or feature LLVM does not know, or a CPU without 64-bit mode, would
// otherwise end in an LLVM fatal error), and the fatal-error handler that
// turns LLVM's report_fatal_error into an mlcc::Error.
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <algorithm>
#include <mutex>

#include "llvm/kernel_emitter.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

// LLVM calls this instead of printing "LLVM ERROR: ..." and exiting. The
// exception unwinds through LLVM's frames (they have unwind tables), so the
// tool reports it like any other error instead of aborting.
void throwFatalError(void*, const char* reason, bool) {
  throw Error(std::string("LLVM error: ") + (reason ? reason : "unknown"));
}

// The native target, initialized (with the fatal-error handler) once.
const llvm::Target& nativeTarget(std::string& triple) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    llvm::install_fatal_error_handler(throwFatalError);
  });
  triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw Error("LLVM has no target for " + triple + ": " + error);
  return *target;
}

std::unique_ptr<llvm::MCSubtargetInfo> subtarget(const llvm::Target& t, const std::string& triple,
                                                 const std::string& cpu, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t.createMCSubtargetInfo(triple, cpu, features));
  if (!sti) throw Error("LLVM cannot describe cpu '" + cpu + "' of " + triple);
  return sti;
}

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

}  // namespace

std::vector<std::string> validCpuNames() {
  std::string triple;
  const llvm::Target& t = nativeTarget(triple);
  auto sti = subtarget(t, triple, "", "");
  std::vector<std::string> names;
  for (const auto& kv : sti->getAllProcessorDescriptions())
    if (subtarget(t, triple, kv.Key, "")->checkFeatures("+64bit")) names.emplace_back(kv.Key);
  return names;
}

void checkTargetCpu(const std::string& mcpu, const std::string& mattr) {
  std::string triple;
  const llvm::Target& t = nativeTarget(triple);
  const bool host = mcpu.empty() || mcpu == "native";
  auto sti = subtarget(t, triple, "", "");  // the names are checked before LLVM sees (and warns about) them
  if (!host && !sti->isCPUStringValid(mcpu)) {
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
  if (!host || !mattr.empty()) {
    const std::string cpu = host ? llvm::sys::getHostCPUName().str() : mcpu;
    if (!subtarget(t, triple, cpu, mattr)->checkFeatures("+64bit"))
      throw Error("CPU '" + cpu + "'" + (mattr.empty() ? "" : " with -mattr=" + mattr) +
                  " cannot run 64-bit code, which " + triple +
                  " needs (e.g. x86-64, x86-64-v3, haswell, skylake-avx512, znver4)");
  }
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const LLVMOptions& opts) {
  checkTargetCpu(opts.mcpu, opts.mattr);
  std::string triple;
  const llvm::Target& target = nativeTarget(triple);
  std::string cpu = opts.mcpu;
  llvm::SubtargetFeatures f;
  if (cpu.empty() || cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures()) f.AddFeature(name, on);
  }
  for (const std::string& feature : splitFeatures(opts.mattr)) f.AddFeature(feature);
  const std::string features = f.getString();
  llvm::TargetOptions to;
  to.UnsafeFPMath = false;
  llvm::CodeGenOptLevel level = opts.opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : opts.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : opts.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                      : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      target.createTargetMachine(triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw Error("LLVM cannot create a target machine for " + triple + " cpu " + cpu);
  return tm;
}

}  // namespace mlcc::codegen
