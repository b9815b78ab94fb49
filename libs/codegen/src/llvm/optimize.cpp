// The -O pipeline over a module of kernels, with vector math intrinsics
// mapped to glibc's libmvec (LIBMVEC-X86) so that exp/log/tanh/... loops
// vectorize.
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/TargetParser/Triple.h>

#include <mutex>
#include <string>
#include <vector>

#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

namespace {

// LLVM 19's LIBMVEC-X86 table knows sin, cos, tan, exp, log and pow; glibc's
// libmvec has the other f32 functions the math intrinsics call too, in SSE
// (b, 4 lanes), AVX2 (d, 8) and AVX-512 (e, 16) variants.
void addLibmvecF32(llvm::TargetLibraryInfoImpl& tlii) {
  static const char* const unary[] = {"expf",  "exp2f", "expm1f", "logf",   "log2f", "log1pf", "tanhf",
                                      "erff",  "sinf",  "cosf",   "tanf",   "asinf", "acosf",  "atanf",
                                      "sinhf", "coshf", "asinhf", "acoshf", "atanhf"};
  static const char* const binary[] = {"powf", "atan2f"};
  static std::vector<std::string> names;  // VecDesc keeps StringRefs
  static std::vector<llvm::VecDesc> descs;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::pair<char, int> isas[] = {{'b', 4}, {'d', 8}, {'e', 16}};
    names.reserve(3 * 2 * (std::size(unary) + std::size(binary)));
    auto add = [&](const char* fn, const char* params) {
      for (auto [isa, lanes] : isas) {
        names.push_back(std::string("_ZGV") + isa + "N" + std::to_string(lanes) + params + "_" + fn);
        const std::string& vec = names.back();
        names.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + params);
        descs.emplace_back(fn, vec, llvm::ElementCount::getFixed(lanes), false, names.back());
      }
    };
    for (const char* fn : unary) add(fn, "v");
    for (const char* fn : binary) add(fn, "vv");
  });
  tlii.addVectorizableFunctions(descs);
}

}  // namespace

void optimizeModule(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level) {
  mod.setTargetTriple(tm.getTargetTriple().str());
  mod.setDataLayout(tm.createDataLayout());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  pto.LoopUnrolling = opt_level >= 1;
  llvm::PassBuilder pb(&tm, pto);

  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(mod.getTargetTriple()));
  tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86,
                                          llvm::Triple(mod.getTargetTriple()));
  addLibmvecF32(tlii);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });

  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  llvm::OptimizationLevel level = opt_level <= 0   ? llvm::OptimizationLevel::O0
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm =
      opt_level <= 0 ? pb.buildO0DefaultPipeline(level) : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(mod, mam);
}

}  // namespace mlcc::codegen
