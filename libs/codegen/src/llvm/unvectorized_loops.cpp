// reportUnvectorizedLoops (unvectorized_loops.h).
#include "llvm/unvectorized_loops.h"

#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/Function.h>

#include <map>
#include <set>

namespace mlcc::codegen {

namespace {

class UnvectorizedLoops : public llvm::DiagnosticHandler {
 public:
  UnvectorizedLoops(std::function<std::string(const std::string&)> prim_of,
                    std::function<void(const std::string&)> warn)
      : prim_of_(std::move(prim_of)), warn_(std::move(warn)) {}

  bool handleDiagnostics(const llvm::DiagnosticInfo& di) override {
    // (Matched by the message: the vectorizer's analysis of a loop whose
    // vectorization is forced goes under an always-printed pass name, the
    // failure under the transform-warning pass.)
    const auto* opt = llvm::dyn_cast<llvm::DiagnosticInfoIROptimization>(&di);
    if (!opt) return false;
    const std::string prefix = "loop not vectorized";
    std::string msg = opt->getMsg();
    if (msg.rfind(prefix, 0) != 0) return false;
    const std::string fn = opt->getFunction().getName().str();
    if (di.getKind() != llvm::DK_OptimizationFailure) {
      // The remark saying why comes first.
      if (di.getKind() == llvm::DK_OptimizationRemarkAnalysis) reason_[fn] = msg;
      return true;
    }
    std::string prim = prim_of_(fn);
    if (prim.empty()) prim = fn;
    if (reported_.insert(prim).second) {
      std::string why = reason_.count(fn) ? reason_[fn] : msg;
      if (why.rfind(prefix + ": ", 0) == 0) why = why.substr(prefix.size() + 2);
      warn_("prim @" + prim + ": LLVM left a loop its schedule vectorizes scalar (" + why +
            "); the code is right, only slower");
    }
    return true;
  }

 private:
  std::function<std::string(const std::string&)> prim_of_;
  std::function<void(const std::string&)> warn_;
  std::map<std::string, std::string> reason_;  // the last reason per LLVM function
  std::set<std::string> reported_;             // prim funcs already warned of
};

}  // namespace

void reportUnvectorizedLoops(llvm::LLVMContext& ctx, std::function<std::string(const std::string&)> prim_of,
                             std::function<void(const std::string&)> warn) {
  ctx.setDiagnosticHandler(std::make_unique<UnvectorizedLoops>(std::move(prim_of), std::move(warn)));
}

}  // namespace mlcc::codegen
