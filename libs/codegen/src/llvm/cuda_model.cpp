// compileModule for the cuda target: the kernels as CUDA C (emitCudaSource)
// compiled with NVRTC to PTX, and a host object holding the PTX, the
// weights and the launch table of abi.h's mlcc_abi_cuda, over the same
// memory plan as the CPU entry (the workspace is one device allocation).
// The runtime walks the table with the CUDA driver; there is no host code
// to compile, so the object holds data only.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <functional>
#include <map>
#include <optional>
#include <variant>

#include "llvm/entry_emitter.h"
#include "llvm/kernel_emitter.h"
#include "mlcc/codegen/cuda.h"
#include "mlcc/runtime/abi.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/target/target.h"

namespace mlcc::codegen {

namespace {

class CudaTableEmitter {
 public:
  CudaTableEmitter(llvm::Module& mod, const EntryPlan& plan, const EmbeddedWeights& weights)
      : mod_(mod), c_(mod.getContext()), plan_(plan), weights_(weights) {
    ptr_ = llvm::PointerType::getUnqual(c_);
    i32_ = llvm::Type::getInt32Ty(c_);
    i64_ = llvm::Type::getInt64Ty(c_);
    auto* dims = llvm::ArrayType::get(i32_, 3);
    arg_ty_ = llvm::StructType::create(c_, {i32_, i32_, i64_}, "mlcc_abi_cuda_arg");
    step_ty_ = llvm::StructType::create(
        c_, {i32_, i32_, ptr_, dims, dims, i32_, ptr_, i64_, i64_, i64_, i64_, i64_, i32_},
        "mlcc_abi_cuda_step");
    cuda_ty_ = llvm::StructType::create(c_, {ptr_, ptr_, ptr_, i64_, i32_, ptr_}, "mlcc_abi_cuda");
    null_ = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(c_));
  }

  void kernelStep(const EntryStep& s, const CudaFunction& fn) {
    for (size_t i = 0; i < fn.scratch_bytes.size(); ++i)
      if (fn.scratch_zeroed[i])
        step(MLCC_ABI_CUDA_ZERO, -1, "", {}, {}, {s.args.at(s.num_params + i)},
             static_cast<uint64_t>(fn.scratch_bytes[i]));
    for (const CudaKernel& k : fn.kernels)
      step(MLCC_ABI_CUDA_LAUNCH, s.kernel, k.name, k.grid, k.block, s.args, 0);
  }
  void copyStep(const EntryStep& s) { step(MLCC_ABI_CUDA_COPY, -1, "", {}, {}, s.args, s.bytes); }
  // A library GEMM (cuBLAS) and its epilogue kernel, if any.
  void gemmStep(const EntryStep& s, const CudaKernel* epilogue) {
    const bool dense = s.kind == EntryStep::Kind::blas_dense;
    step(MLCC_ABI_CUDA_GEMM, s.kernel, "", {}, {}, {s.args[0], s.args[1], s.args.back()}, 0,
         {s.B, s.M, s.N, s.K}, dense);
    if (!epilogue) return;
    std::vector<Location> args = {s.args.back()};
    if (s.bias) args.push_back(s.args[2]);
    step(MLCC_ABI_CUDA_LAUNCH, s.kernel, epilogue->name, epilogue->grid, epilogue->block, args, 0);
  }

  llvm::Constant* table(const std::string& ptx, const std::string& arch) {
    llvm::Constant* blob = null_;
    uint64_t blob_bytes = 0;
    if (weights_.global) {
      blob = weights_.global;
      blob_bytes = mod_.getDataLayout().getTypeAllocSize(weights_.global->getValueType());
    }
    llvm::Constant* steps =
        steps_.empty()
            ? null_
            : global(llvm::ConstantArray::get(llvm::ArrayType::get(step_ty_, steps_.size()), steps_),
                     "cuda_steps");
    llvm::Constant* init = llvm::ConstantStruct::get(
        cuda_ty_,
        {cstring(ptx, "cuda_ptx"), cstring(arch, ".str"), blob, llvm::ConstantInt::get(i64_, blob_bytes),
         llvm::ConstantInt::get(i32_, static_cast<int64_t>(steps_.size())), steps});
    return global(init, "cuda_model");
  }

 private:
  llvm::Constant* global(llvm::Constant* init, const std::string& name) {
    return new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                    name);
  }
  llvm::Constant* cstring(const std::string& s, const std::string& name) {
    return global(llvm::ConstantDataArray::getString(c_, s), name);
  }

  llvm::Constant* arg(const Location& l) {
    int32_t kind = MLCC_ABI_LOC_WORKSPACE;
    uint64_t offset = 0;
    switch (l.kind) {
      case Location::Kind::input: kind = MLCC_ABI_LOC_INPUT; break;
      case Location::Kind::output: kind = MLCC_ABI_LOC_OUTPUT; break;
      case Location::Kind::constant:
        kind = MLCC_ABI_LOC_CONSTANT;
        offset = weights_.offsets.at(l.index);
        break;
      case Location::Kind::workspace: offset = l.offset; break;
    }
    return llvm::ConstantStruct::get(
        arg_ty_, {llvm::ConstantInt::get(i32_, kind), llvm::ConstantInt::get(i32_, l.index),
                  llvm::ConstantInt::get(i64_, offset)});
  }

  void step(int32_t kind, int kernel, const std::string& function, const std::array<int64_t, 3>& grid,
            const std::array<int64_t, 3>& block, const std::vector<Location>& args, uint64_t bytes,
            const std::array<int64_t, 4>& gemm = {0, 0, 0, 0}, bool dense = false) {
    auto dims = [&](const std::array<int64_t, 3>& d) {
      std::vector<llvm::Constant*> v;
      for (int64_t x : d) v.push_back(llvm::ConstantInt::get(i32_, x == 0 ? 1 : x));
      return llvm::ConstantArray::get(llvm::ArrayType::get(i32_, 3), v);
    };
    std::vector<llvm::Constant*> items;
    for (const Location& l : args) items.push_back(arg(l));
    llvm::Constant* arr =
        items.empty() ? null_
                      : global(llvm::ConstantArray::get(llvm::ArrayType::get(arg_ty_, items.size()), items),
                               "cuda_args");
    steps_.push_back(llvm::ConstantStruct::get(
        step_ty_, {llvm::ConstantInt::get(i32_, kind), llvm::ConstantInt::get(i32_, kernel),
                   function.empty() ? null_ : cstring(function, ".str"), dims(grid), dims(block),
                   llvm::ConstantInt::get(i32_, static_cast<int64_t>(items.size())), arr,
                   llvm::ConstantInt::get(i64_, bytes), llvm::ConstantInt::get(i64_, gemm[0]),
                   llvm::ConstantInt::get(i64_, gemm[1]), llvm::ConstantInt::get(i64_, gemm[2]),
                   llvm::ConstantInt::get(i64_, gemm[3]), llvm::ConstantInt::get(i32_, dense ? 1 : 0)}));
  }

  llvm::Module& mod_;
  llvm::LLVMContext& c_;
  const EntryPlan& plan_;
  const EmbeddedWeights& weights_;
  llvm::Type *ptr_, *i32_, *i64_;
  llvm::StructType *arg_ty_, *step_ty_, *cuda_ty_;
  llvm::Constant* null_;
  std::vector<llvm::Constant*> steps_;
};

// The end of both paths: --emit cuda writes the CUDA C, anything else
// compiles it with NVRTC; --emit ptx writes the PTX, an object gets it back.
std::string writeSourceOrPtx(const CudaSource& src, const target::Target& target, Emit emit,
                             const std::string& output_path,
                             const std::function<void(const std::string&)>& progress) {
  if (emit == Emit::cuda) {
    writeOutputAtomic(output_path, src.code);
    return {};
  }
  progress("NVRTC (" + target.arch + (target.fast_math ? ", fast math" : "") + ")");
  std::string ptx = compileWithNvrtc(src.code, target.arch, target.fast_math);
  if (emit == Emit::ptx) writeOutputAtomic(output_path, ptx);
  return ptx;
}

}  // namespace

CodegenStats compileCudaModule(const ir::Module& m, const LLVMOptions& opts, Emit emit,
                               const std::string& output_path) {
  const std::function<void(const std::string&)> progress = [&](const std::string& what) {
    if (opts.progress) opts.progress(what);
  };
  bool has_graph = false;
  for (const auto& f : m.functions) has_graph |= std::holds_alternative<ir::GraphFunc>(f);
  if (!has_graph || (!opts.entry.empty() && !m.findGraph(opts.entry))) {
    // Prim funcs alone (a kernel written and scheduled by hand, as in the
    // MLC course): their kernels' CUDA C or PTX, for reading.
    if (emit != Emit::cuda && emit != Emit::ptx)
      throw Error(
          "the cuda target compiles a model's graph entry into an object; a module of prim funcs only (or "
          "--entry naming a prim func) is not supported by it yet (--emit cuda or --emit ptx writes its "
          "kernels)");
    std::vector<const ir::PrimFunc*> prims;
    for (const auto& f : m.functions)
      if (const auto* p = std::get_if<ir::PrimFunc>(&f); p && (opts.entry.empty() || p->name == opts.entry))
        prims.push_back(p);
    if (prims.empty())
      throw Error("the module has no prim func" + (opts.entry.empty() ? "" : " @" + opts.entry));
    const target::Target target = target::Target::parse(opts.cuda_target);
    progress("CUDA C");
    const CudaSource src = emitCudaSource(prims, target);
    CodegenStats stats;
    for (const CudaFunction& fn : src.functions)
      for (const CudaKernel& k : fn.kernels) stats.kernel_names.push_back(k.name);
    stats.kernels = static_cast<int>(stats.kernel_names.size());
    writeSourceOrPtx(src, target, emit, output_path, progress);
    return stats;
  }
  EntryPlan plan = planEntry(m, opts.entry, {}, "cublas");
  if (plan.symbolic())
    throw Error(
        "the model has symbolic dimensions, which the cuda target does not support yet; import it "
        "with --shape NAME=DIMS");
  std::vector<const ir::PrimFunc*> prims;
  std::map<std::string, size_t> index;
  for (const EntryKernel& k : plan.kernels)
    if (!k.prim.empty() && index.emplace(k.prim, prims.size()).second) prims.push_back(m.findPrim(k.prim));

  const target::Target target = target::Target::parse(opts.cuda_target);
  progress("CUDA C");
  CudaSource src = emitCudaSource(prims, target);
  // The epilogues of the cuBLAS calls with a bias or relu, one kernel per step.
  std::vector<std::optional<CudaKernel>> epilogues(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const EntryStep& s = plan.steps[i];
    if (s.kind != EntryStep::Kind::blas_dense && s.kind != EntryStep::Kind::blas_matmul) continue;
    for (int64_t v : {s.B, s.M, s.N, s.K})
      if (v >= (int64_t{1} << 31))
        throw Error(s.what + ": a dimension of " + std::to_string(v) +
                    " is too large for cuBLAS's int sizes");
    if (s.bias || s.relu)
      epilogues[i] =
          gemmEpilogue("mlcc_gemm_epilogue" + std::to_string(i), s.B * s.M, s.N, s.bias, s.relu, src.code);
  }
  CodegenStats stats;
  stats.kernels = static_cast<int>(plan.kernels.size());
  for (const EntryKernel& k : plan.kernels) stats.kernel_names.push_back(k.name);
  const std::string ptx = writeSourceOrPtx(src, target, emit, output_path, progress);
  if (emit == Emit::cuda || emit == Emit::ptx) return stats;
  const ScratchFn scratch_of = [&](const ir::PrimFunc& f) {
    std::vector<ir::PrimExpr> bytes;
    for (int64_t b : src.functions.at(index.at(f.name)).scratch_bytes) bytes.push_back(ir::makeInt(b));
    return bytes;
  };
  plan = planEntry(m, opts.entry, scratch_of, "cublas");

  LLVMOptions host = opts;
  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(host);
  llvm::LLVMContext ctx;
  llvm::Module mod("mlcc_model", ctx);
  mod.setTargetTriple(tm->getTargetTriple().str());
  mod.setDataLayout(tm->createDataLayout());
  progress("weights");
  EmbeddedWeights weights = embedWeights(mod, m, plan);
  CudaTableEmitter table(mod, plan, weights);
  if (plan.steps.size() != epilogues.size()) throw Error("the second plan has other steps (a bug in mlcc)");
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const EntryStep& s = plan.steps[i];
    if (s.kind == EntryStep::Kind::kernel)
      table.kernelStep(s, src.functions.at(index.at(plan.kernels.at(s.kernel).prim)));
    else if (s.kind == EntryStep::Kind::copy)
      table.copyStep(s);
    else
      table.gemmStep(s, epilogues[i] ? &*epilogues[i] : nullptr);
  }
  CompiledPlan compiled{&plan, nullptr, nullptr, table.table(ptx, target.arch)};
  emitModelInfo(mod, compiled, {});
  std::string problems;
  llvm::raw_string_ostream ps(problems);
  if (llvm::verifyModule(mod, &ps))
    throw Error("codegen produced invalid LLVM IR (a bug in mlcc): " + problems);
  progress("emitting the object");
  writeModule(mod, *tm, emit, output_path);
  stats.planned_bytes = plan.memory.workspace_bytes;
  stats.intermediate_bytes = plan.memory.sum_bytes - plan.scratch_bytes;
  stats.scratch_bytes = plan.scratch_bytes;
  stats.weight_bytes = weights.bytes;
  return stats;
}

}  // namespace mlcc::codegen
