// LLVM's native target for libs/target's sources (LLVM types stay out of the
// public header): initialized once, with LLVM's fatal errors thrown as
// mlcc::Error (initializeNativeLLVM in target.h).
#pragma once

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>

#include <memory>
#include <string>

namespace mlcc::target {

// The host's target, initialized; sets `triple` to the process triple.
const llvm::Target& nativeLLVMTarget(std::string& triple);

// LLVM's description of `cpu` with `features` ("+avx2,-fma").
std::unique_ptr<llvm::MCSubtargetInfo> subtargetInfo(const llvm::Target& t, const std::string& triple,
                                                     const std::string& cpu, const std::string& features);

}  // namespace mlcc::target
