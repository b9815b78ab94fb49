// The -O pipeline over a module of kernels, with the f32 math functions
// mapped to glibc's libmvec so that exp/log/tanh/erf/... loops vectorize
// (model.so links -lmvec; the JIT loads libmvec.so.1).
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/TargetParser/Triple.h>

#include <string>
#include <vector>

#include "llvm/kernel_emitter.h"

namespace mlcc::codegen {

namespace {

// glibc's libmvec variants of the f32 libm functions the math intrinsics
// call (LLVM 19's LIBMVEC-X86 table knows only sin, cos, tan, exp, log, pow
// and no AVX-512 variants): SSE (b, 4 lanes), AVX2 (d, 8) and AVX-512 (e,
// 16), offered only when the target CPU has the instructions they use.
struct VecTable {
  std::vector<std::string> names;  // VecDesc keeps StringRefs
  std::vector<llvm::VecDesc> descs[3];
};

const VecTable& libmvecTable() {
  static const VecTable table = [] {
    static const std::pair<const char*, const char*> unary[] = {
        {"expf", "llvm.exp.f32"}, {"exp2f", "llvm.exp2.f32"}, {"expm1f", nullptr},
        {"logf", "llvm.log.f32"}, {"log2f", "llvm.log2.f32"}, {"log1pf", nullptr},
        {"tanhf", nullptr},       {"erff", nullptr},          {"sinf", "llvm.sin.f32"},
        {"cosf", "llvm.cos.f32"}, {"tanf", "llvm.tan.f32"},   {"asinf", nullptr},
        {"acosf", nullptr},       {"atanf", nullptr},         {"sinhf", nullptr},
        {"coshf", nullptr},       {"asinhf", nullptr},        {"acoshf", nullptr},
        {"atanhf", nullptr}};
    static const std::pair<const char*, const char*> binary[] = {{"powf", "llvm.pow.f32"},
                                                                 {"atan2f", nullptr}};
    const std::pair<char, int> isas[] = {{'b', 4}, {'d', 8}, {'e', 16}};
    VecTable t;
    t.names.reserve(3 * 2 * (std::size(unary) + std::size(binary)));
    auto add = [&](const std::pair<const char*, const char*>& fn, const char* params) {
      for (int k = 0; k < 3; ++k) {
        auto [isa, lanes] = isas[k];
        t.names.push_back(std::string("_ZGV") + isa + "N" + std::to_string(lanes) + params + "_" + fn.first);
        const std::string& vec = t.names.back();
        t.names.push_back("_ZGV_LLVM_N" + std::to_string(lanes) + params);
        const std::string& abi = t.names.back();
        for (const char* scalar : {fn.first, fn.second})
          if (scalar) t.descs[k].emplace_back(scalar, vec, llvm::ElementCount::getFixed(lanes), false, abi);
      }
    };
    for (const auto& fn : unary) add(fn, "v");
    for (const auto& fn : binary) add(fn, "vv");
    return t;
  }();
  return table;
}

void addLibmvec(llvm::TargetLibraryInfoImpl& tlii, const llvm::TargetMachine& tm) {
  const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
  const VecTable& t = libmvecTable();
  tlii.addVectorizableFunctions(t.descs[0]);
  if (sti->checkFeatures("+avx2")) tlii.addVectorizableFunctions(t.descs[1]);
  if (sti->checkFeatures("+avx512f")) tlii.addVectorizableFunctions(t.descs[2]);
}

// The schedule chose the vector widths (a vectorized loop of 16 f32 lanes
// for AVX-512): LLVM's vectorizers are told to prefer the CPU's widest
// vectors, not the narrower ones its tuning of some CPUs prefers. Without
// it, on a Xeon whose tuning prefers 256-bit vectors, the parallel loops'
// outlined bodies came out with 256-bit FMAs while the kernels kept 512-bit
// ones: a transformer's 16x128x64 dense at 1 thread took 2x as long once
// parallelized.
void preferWidestVectors(llvm::Module& mod, const llvm::TargetMachine& tm) {
  const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
  const char* bits = sti->checkFeatures("+avx512f") ? "512" : sti->checkFeatures("+avx") ? "256" : nullptr;
  if (!bits) return;
  for (llvm::Function& f : mod)
    if (!f.isDeclaration() && !f.hasFnAttribute("prefer-vector-width"))
      f.addFnAttr("prefer-vector-width", bits);
}

}  // namespace

void optimizeModule(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level) {
  mod.setTargetTriple(tm.getTargetTriple().str());
  mod.setDataLayout(tm.createDataLayout());
  preferWidestVectors(mod, tm);

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
  addLibmvec(tlii, tm);
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
