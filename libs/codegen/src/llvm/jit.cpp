// JitKernel: one prim func emitted, optimized (-O pipeline, libmvec) and
// compiled in memory with ORC LLJIT, for tests and the tuner; runs take the
// values of its symbolic dimensions after the parameters. Its scratch
// buffers (large function allocations) are allocated once per JitKernel
// (those of symbolic size once per run);
// runs of one JitKernel are serialized. Kernels find
// libm/libc in the process, libmvec loaded from glibc, and the JIT's own
// runtime functions (jit_runtime.h).
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "llvm/jit_runtime.h"
#include "llvm/kernel_emitter.h"
#include "memory_plan.h"
#include "mlcc/codegen/llvm.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {
using Memory = std::unique_ptr<std::byte, void (*)(void*)>;  // aligned_alloc'd
}  // namespace

struct JitKernel::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<Memory> scratch;      // KernelInfo's buffers of static size
  std::vector<ir::PrimExpr> sizes;  // every scratch buffer's bytes (symbolic ones: allocated per run)
  std::vector<ir::Buffer> params;   // keep the symbolic dimensions' variables alive
  std::vector<const ir::VarNode*> dims;
  std::mutex run_mutex;  // runs share the scratch
  void (*fn)(void* const*, void*) = nullptr;
  std::string ir;
  std::string name;
  size_t num_params = 0;
  std::vector<std::string> dim_names;
  int num_threads = 1;
};

namespace {

template <class T>
T unwrap(llvm::Expected<T> v, const std::string& what) {
  if (!v) throw Error(what + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}
void check(llvm::Error e, const std::string& what) {
  if (e) throw Error(what + ": " + llvm::toString(std::move(e)));
}

Memory allocate(int64_t bytes, const std::string& func) {
  const int64_t size = std::max<int64_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, size);
  if (!p)
    throw Error("prim func @" + func + ": out of memory for a " + std::to_string(bytes) + "-byte buffer");
  // Not zeros: a kernel that reads scratch it did not write (or zero) sees
  // NaNs, as it would see another kernel's leftovers in a model's workspace.
  std::memset(p, 0xff, size);
  return {static_cast<std::byte*>(p), &std::free};
}

}  // namespace

JitKernel JitKernel::compile(const ir::PrimFunc& f, const LLVMOptions& opts) {
  auto impl = std::make_unique<Impl>();
  impl->name = f.name;
  impl->num_params = f.params.size();
  for (const ir::VarNode* v : kernelDims(f)) impl->dim_names.push_back(v->name);
  impl->num_threads =
      opts.num_threads > 0 ? opts.num_threads : std::max(1u, std::thread::hardware_concurrency());

  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(opts);
  auto llctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>(f.name, *llctx);
  mod->setTargetTriple(tm->getTargetTriple().str());
  mod->setDataLayout(tm->createDataLayout());
  const std::string symbol = "mlcc_jit_kernel";
  KernelInfo info;
  emitKernel(*mod, f, symbol, &info, opts.bounds_check);
  impl->params = f.params;
  impl->dims = kernelDims(f);
  impl->sizes = info.scratch_bytes;
  for (const ir::PrimExpr& size : info.scratch_bytes)
    if (int64_t bytes; ir::asConstInt(size, &bytes)) impl->scratch.push_back(allocate(bytes, f.name));
  std::string verify;
  llvm::raw_string_ostream vs(verify);
  if (llvm::verifyModule(*mod, &vs))
    throw Error("prim func @" + f.name + ": internal error: invalid LLVM IR: " + verify);
  optimizeModule(*mod, *tm, opts.opt_level);
  llvm::raw_string_ostream os(impl->ir);
  mod->print(os, nullptr);

  llvm::orc::JITTargetMachineBuilder jtmb(tm->getTargetTriple());
  jtmb.setCPU(tm->getTargetCPU().str());
  jtmb.addFeatures({tm->getTargetFeatureString().str()});
  jtmb.setCodeGenOptLevel(tm->getOptLevel());
  impl->jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(), "LLJIT");
  llvm::orc::LLJIT& jit = *impl->jit;
  llvm::orc::JITDylib& jd = jit.getMainJITDylib();
  const char prefix = jit.getDataLayout().getGlobalPrefix();
  jd.addGenerator(
      unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix), "JIT symbols"));
  if (auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix))
    jd.addGenerator(std::move(*mvec));
  else
    llvm::consumeError(mvec.takeError());  // vector math calls then fail to resolve below
  llvm::orc::SymbolMap runtime;
  for (const auto& [name, addr] : jitRuntimeSymbols())
    runtime[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                                          llvm::JITSymbolFlags::Exported};
  check(jd.define(llvm::orc::absoluteSymbols(std::move(runtime))), "JIT runtime symbols");
  check(jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(llctx))), "JIT module");
  auto addr = unwrap(jit.lookup(symbol), "prim func @" + f.name + ": JIT");
  impl->fn = addr.toPtr<void (*)(void* const*, void*)>();
  return JitKernel(std::move(impl));
}

JitKernel::JitKernel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitKernel::~JitKernel() = default;
JitKernel::JitKernel(JitKernel&&) noexcept = default;
JitKernel& JitKernel::operator=(JitKernel&&) noexcept = default;

void JitKernel::run(const std::vector<void*>& args, const std::vector<int64_t>& dims) const {
  if (args.size() != impl_->num_params)
    throw Error("prim func @" + impl_->name + " expects " + std::to_string(impl_->num_params) +
                " arguments, got " + std::to_string(args.size()));
  if (dims.size() != impl_->dim_names.size())
    throw Error("prim func @" + impl_->name + " expects " + std::to_string(impl_->dim_names.size()) +
                " symbolic dimension values, got " + std::to_string(dims.size()));
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] < 0)
      throw Error("prim func @" + impl_->name + ": symbolic dimension '" + impl_->dim_names[k] + "' is " +
                  std::to_string(dims[k]));
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  std::vector<void*> all = args;
  for (int64_t d : dims) all.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(d)));
  std::vector<Memory> per_run;  // scratch of symbolic size
  size_t next_static = 0;
  for (const ir::PrimExpr& size : impl_->sizes) {
    if (int64_t bytes; ir::asConstInt(size, &bytes)) {
      all.push_back(impl_->scratch[next_static++].get());
    } else {
      per_run.push_back(allocate(evalDims(size, impl_->dims, dims), impl_->name));
      all.push_back(per_run.back().get());
    }
  }
  JitContext ctx;
  ctx.num_threads = impl_->num_threads;
  impl_->fn(all.data(), &ctx);
  if (!ctx.error.empty()) throw Error("prim func @" + impl_->name + ": " + ctx.error);
}

const std::string& JitKernel::llvmIR() const { return impl_->ir; }
const std::vector<std::string>& JitKernel::dimNames() const { return impl_->dim_names; }

}  // namespace mlcc::codegen
