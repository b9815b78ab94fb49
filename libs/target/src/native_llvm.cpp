// LLVM's native target, initialized once, and the fatal-error handler that
// turns LLVM's report_fatal_error into an mlcc::Error (see native_llvm.h).
#include "native_llvm.h"

#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

#include "mlcc/support/diagnostic.h"
#include "mlcc/target/target.h"

namespace mlcc::target {

namespace {

// LLVM calls this instead of printing "LLVM ERROR: ..." and exiting. The
// exception unwinds through LLVM's frames (they have unwind tables), so the
// tool reports it like any other error instead of aborting.
void throwFatalError(void*, const char* reason, bool) {
  throw Error(std::string("LLVM error: ") + (reason ? reason : "unknown"));
}

}  // namespace

void initializeNativeLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    llvm::install_fatal_error_handler(throwFatalError);
  });
}

const llvm::Target& nativeLLVMTarget(std::string& triple) {
  initializeNativeLLVM();
  triple = llvm::sys::getProcessTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) throw Error("LLVM has no target for " + triple + ": " + error);
  return *target;
}

std::unique_ptr<llvm::MCSubtargetInfo> subtargetInfo(const llvm::Target& t, const std::string& triple,
                                                     const std::string& cpu, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> sti(t.createMCSubtargetInfo(triple, cpu, features));
  if (!sti) throw Error("LLVM cannot describe cpu '" + cpu + "' of " + triple);
  return sti;
}

}  // namespace mlcc::target
