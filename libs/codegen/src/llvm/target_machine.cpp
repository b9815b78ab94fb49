// The LLVM target machine for the host (or the CPU named by --mcpu).
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include <mutex>

#include "llvm/kernel_emitter.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const LLVMOptions& opts) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
  std::string triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw Error("LLVM has no target for " + triple + ": " + error);
  std::string cpu = opts.mcpu;
  std::string features;
  if (cpu.empty() || cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures f;
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures()) f.AddFeature(name, on);
    features = f.getString();
  }
  llvm::TargetOptions to;
  to.UnsafeFPMath = false;
  llvm::CodeGenOptLevel level = opts.opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : opts.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : opts.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                      : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, cpu, features, to, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw Error("LLVM cannot create a target machine for " + triple + " cpu " + cpu);
  return tm;
}

}  // namespace mlcc::codegen
