// compileModule (llvm.h): the kernels the entry calls (emitKernel), the
// embedded weights, the entry and the model description in one LLVM module,
// optimized and written atomically as an object file, LLVM IR or assembly.
// A module of prim funcs only (or --entry naming a prim func) gets no graph
// entry: each prim func becomes a function of the model (abi.h), with an
// entry of its own.
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <set>
#include <variant>

#include "llvm/entry_emitter.h"
#include "llvm/kernel_emitter.h"
#include "llvm/unvectorized_loops.h"
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

// The prim funcs compiled as functions (abi.h): the one --entry names, or
// every prim func of a module without graph functions; none (the graph
// entry) otherwise.
std::vector<const ir::PrimFunc*> functionsOf(const ir::Module& m, const std::string& entry) {
  std::vector<const ir::PrimFunc*> fns;
  if (!entry.empty()) {
    if (m.findGraph(entry)) return fns;
    if (const ir::PrimFunc* f = m.findPrim(entry)) return {f};
    throw Error("no function @" + entry + " in the module");
  }
  for (const auto& f : m.functions) {
    if (std::holds_alternative<ir::GraphFunc>(f)) return {};
    fns.push_back(&std::get<ir::PrimFunc>(f));
  }
  if (fns.empty()) throw Error("the module has no functions to compile");
  return fns;
}

}  // namespace

CodegenStats compileModule(const ir::Module& m, const LLVMOptions& opts, Emit emit,
                           const std::string& output_path) {
  if (!opts.cuda_target.empty()) return compileCudaModule(m, opts, emit, output_path);
  if (emit == Emit::cuda || emit == Emit::ptx)
    throw Error("--emit cuda and ptx need the cuda target (--target cuda)");
  auto progress = [&](const std::string& what) {
    if (opts.progress) opts.progress(what);
  };
  const std::vector<const ir::PrimFunc*> fns = functionsOf(m, opts.entry);
  // Plan once to check the entry and find its kernels, emit them (learning
  // their scratch buffers), then plan the workspace with the scratch too.
  // Prim funcs compiled as functions are planned the same way.
  EntryPlan plan;
  if (fns.empty())
    plan = planEntry(m, opts.entry);
  else
    for (const ir::PrimFunc* f : fns) {
      planFunction(*f);  // can it be a function? (before compiling it)
      plan.kernels.push_back({f->name, f->name, 0});
    }
  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(opts);
  llvm::LLVMContext ctx;
  std::map<std::string, std::string> prim_of_symbol;  // mlcc_kernel_<name> -> name
  reportUnvectorizedLoops(
      ctx,
      [&](const std::string& fn) {
        auto it = prim_of_symbol.find(fn.substr(0, fn.find('.')));  // (a parallel body: <symbol>.parN)
        return it == prim_of_symbol.end() ? std::string() : it->second;
      },
      opts.warn ? opts.warn : [](const std::string& msg) { std::cerr << "warning: " << msg << "\n"; });
  llvm::Module mod("mlcc_model", ctx);
  mod.setTargetTriple(tm->getTargetTriple().str());
  mod.setDataLayout(tm->createDataLayout());

  std::map<std::string, llvm::Function*> functions;
  std::map<std::string, std::vector<ir::PrimExpr>> scratch;
  std::set<std::string> used;
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const EntryKernel& k = plan.kernels[i];
    if (k.prim.empty()) continue;
    progress((fns.empty() ? "kernel " : "function ") + std::to_string(i + 1) + "/" +
             std::to_string(plan.kernels.size()) + " @" + k.prim);
    KernelInfo info;
    const std::string symbol = kernelSymbol(k.prim, used);
    prim_of_symbol[symbol] = k.prim;
    llvm::Function* fn = emitKernel(mod, *m.findPrim(k.prim), symbol, &info, opts.bounds_check);
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    // Each kernel is optimized on its own: inlined into the entry (each is
    // called once), the serial kernels made one huge function whose
    // optimization time grew faster than its size (GoogLeNet, with most of
    // its small kernels serial: codegen 5 -> 16 s of CPU time).
    fn->addFnAttr(llvm::Attribute::NoInline);
    functions[k.prim] = fn;
    scratch[k.prim] = info.scratch_bytes;
  }
  const ScratchFn scratch_of = [&](const ir::PrimFunc& f) { return scratch.at(f.name); };
  CodegenStats stats;
  EmbeddedWeights weights;
  if (fns.empty()) {
    plan = planEntry(m, opts.entry, scratch_of);
    std::vector<llvm::Function*> kernels;
    for (const EntryKernel& k : plan.kernels) {
      stats.kernel_names.push_back(k.name);
      kernels.push_back(k.prim.empty() ? nullptr : functions.at(k.prim));
    }
    progress("weights");
    weights = embedWeights(mod, m, plan);
    llvm::Function* entry = emitEntry(mod, plan, kernels, weights);
    emitModelInfo(mod, {&plan, entry, plan.symbolic() ? emitShapes(mod, plan) : nullptr}, {});
    stats.kernels = static_cast<int>(plan.kernels.size());
    stats.planned_bytes = plan.memory.workspace_bytes;
    stats.intermediate_bytes = plan.memory.sum_bytes - plan.scratch_bytes;
    stats.scratch_bytes = plan.scratch_bytes;
    for (const ir::VarNode* v : plan.dims) stats.dims.push_back(v->name);
  } else {
    // Each function: its entry (and shapes) named after its kernel's symbol.
    std::vector<EntryPlan> fn_plans;
    std::vector<CompiledPlan> compiled;
    fn_plans.reserve(fns.size());  // `compiled` points into it
    for (const ir::PrimFunc* f : fns) {
      const EntryPlan& p = fn_plans.emplace_back(planFunction(*f, scratch_of));
      llvm::Function* kernel = functions.at(f->name);
      const std::string suffix = kernel->getName().str().substr(std::string("mlcc_kernel").size());
      compiled.push_back({&p, emitEntry(mod, p, {kernel}, weights, "mlcc_function" + suffix),
                          p.symbolic() ? emitShapes(mod, p, "mlcc_shapes" + suffix) : nullptr});
      stats.functions.push_back(f->name);
      stats.kernel_names.push_back(f->name);
      stats.planned_bytes = std::max(stats.planned_bytes, p.memory.workspace_bytes);
      stats.scratch_bytes = std::max(stats.scratch_bytes, p.scratch_bytes);
      for (const ir::VarNode* v : p.dims)
        if (std::find(stats.dims.begin(), stats.dims.end(), v->name) == stats.dims.end())
          stats.dims.push_back(v->name);
    }
    emitModelInfo(mod, {}, compiled);
    stats.kernels = static_cast<int>(fns.size());
  }

  std::string problems;
  llvm::raw_string_ostream ps(problems);
  if (llvm::verifyModule(mod, &ps))
    throw Error("codegen produced invalid LLVM IR (a bug in mlcc): " + problems);
  progress("optimizing (-O" + std::to_string(opts.opt_level) + ")");
  optimizeModule(mod, *tm, opts.opt_level);
  progress(emit == Emit::ll    ? "writing LLVM IR"
           : emit == Emit::obj ? "emitting the object"
                               : "emitting assembly");

  writeModule(mod, *tm, emit, output_path);
  stats.weight_bytes = weights.bytes;
  return stats;
}

void writeModule(llvm::Module& mod, llvm::TargetMachine& tm, Emit emit, const std::string& output_path) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  if (emit == Emit::ll) {
    mod.print(os, nullptr);
  } else {
    llvm::legacy::PassManager pm;
    auto type = emit == Emit::obj ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
    if (tm.addPassesToEmitFile(pm, os, nullptr, type))
      throw Error("LLVM cannot emit " + std::string(emit == Emit::obj ? "an object file" : "assembly") +
                  " for this target");
    pm.run(mod);
  }
  writeOutputAtomic(output_path, std::string_view(buffer.data(), buffer.size()));
}

}  // namespace mlcc::codegen
