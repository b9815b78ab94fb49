// compileModule (llvm.h): the kernels the entry calls (emitKernel), the
// embedded weights, the entry and the model description in one LLVM module,
// optimized and written atomically as an object file, LLVM IR or assembly.
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cctype>
#include <map>
#include <set>

#include "llvm/entry_emitter.h"
#include "llvm/kernel_emitter.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::codegen {

namespace {

// A symbol for prim func `name`: mlcc_kernel_<name> with characters other
// than [A-Za-z0-9_] replaced by '_', made unique with a suffix.
std::string kernelSymbol(const std::string& name, std::set<std::string>& used) {
  std::string s = "mlcc_kernel_";
  for (char ch : name) s += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  std::string r = s;
  for (int k = 1; !used.insert(r).second; ++k) r = s + "_" + std::to_string(k);
  return r;
}

}  // namespace

CodegenStats compileModule(const ir::Module& m, const LLVMOptions& opts, Emit emit,
                           const std::string& output_path) {
  auto progress = [&](const std::string& what) {
    if (opts.progress) opts.progress(what);
  };
  // Plan once to check the entry and find its kernels, emit them (learning
  // their scratch buffers), then plan the workspace with the scratch too.
  EntryPlan plan = planEntry(m, opts.entry);
  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(opts);
  llvm::LLVMContext ctx;
  llvm::Module mod("mlcc_model", ctx);
  mod.setTargetTriple(tm->getTargetTriple().str());
  mod.setDataLayout(tm->createDataLayout());

  std::map<std::string, llvm::Function*> functions;
  std::map<std::string, std::vector<ir::PrimExpr>> scratch;
  std::set<std::string> used;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const EntryKernel& k = plan.kernels[i];
    if (k.prim.empty()) continue;
    progress("kernel " + std::to_string(i + 1) + "/" + std::to_string(plan.kernels.size()) + " @" + k.prim);
    KernelInfo info;
    llvm::Function* fn =
        emitKernel(mod, *m.findPrim(k.prim), kernelSymbol(k.prim, used), &info, opts.bounds_check);
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    functions[k.prim] = fn;
    scratch[k.prim] = info.scratch_bytes;
  }
  plan = planEntry(m, opts.entry, [&](const ir::PrimFunc& f) { return scratch.at(f.name); });
  CodegenStats stats;
  std::vector<llvm::Function*> kernels;
  for (const EntryKernel& k : plan.kernels) {
    stats.kernel_names.push_back(k.name);
    kernels.push_back(k.prim.empty() ? nullptr : functions.at(k.prim));
  }
  progress("weights");
  EmbeddedWeights weights = embedWeights(mod, m, plan);
  llvm::Function* entry = emitEntry(mod, plan, kernels, weights);
  emitModelInfo(mod, plan, entry, plan.symbolic() ? emitShapes(mod, plan) : nullptr);

  std::string problems;
  llvm::raw_string_ostream ps(problems);
  if (llvm::verifyModule(mod, &ps))
    throw Error("codegen produced invalid LLVM IR (a bug in mlcc): " + problems);
  progress("optimizing (-O" + std::to_string(opts.opt_level) + ")");
  optimizeModule(mod, *tm, opts.opt_level);
  progress(emit == Emit::ll    ? "writing LLVM IR"
           : emit == Emit::obj ? "emitting the object"
                               : "emitting assembly");

  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  if (emit == Emit::ll) {
    mod.print(os, nullptr);
  } else {
    llvm::legacy::PassManager pm;
    auto type = emit == Emit::obj ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
    if (tm->addPassesToEmitFile(pm, os, nullptr, type))
      throw Error("LLVM cannot emit " + std::string(emit == Emit::obj ? "an object file" : "assembly") +
                  " for this target");
    pm.run(mod);
  }
  writeOutputAtomic(output_path, std::string_view(buffer.data(), buffer.size()));

  stats.kernels = static_cast<int>(plan.kernels.size());
  stats.planned_bytes = plan.memory.workspace_bytes;
  stats.intermediate_bytes = plan.memory.sum_bytes - plan.scratch_bytes;
  stats.scratch_bytes = plan.scratch_bytes;
  stats.weight_bytes = weights.bytes;
  for (const ir::VarNode* v : plan.dims) stats.dims.push_back(v->name);
  return stats;
}

}  // namespace mlcc::codegen
