// The LLVM target machine for the CPU libs/target describes: the host's (or
// the CPU named by --mcpu) with the features of --mattr, checked by
// target::describeCpu against LLVM's tables first.
#include <llvm/MC/TargetRegistry.h>

#include "llvm/kernel_emitter.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/target/target.h"

namespace mlcc::codegen {

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const LLVMOptions& opts) {
  const target::CpuInfo cpu = target::describeCpu(opts.mcpu, opts.mattr);
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(cpu.triple, error);
  if (!t) throw Error("LLVM has no target for " + cpu.triple + ": " + error);
  llvm::TargetOptions to;
  to.UnsafeFPMath = false;
  llvm::CodeGenOptLevel level = opts.opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : opts.opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : opts.opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                      : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(cpu.triple, cpu.name, cpu.llvm_features, to,
                                                                 llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw Error("LLVM cannot create a target machine for " + cpu.triple + " cpu " + cpu.name);
  return tm;
}

}  // namespace mlcc::codegen
