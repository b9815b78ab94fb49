// CPU code generation with LLVM 19. A legalized (usually scheduled) module
// becomes an object file implementing the runtime ABI
// (libs/runtime/include/mlcc/runtime/abi.h): one kernel per prim func, the
// graph entry compiled ahead of time over a static memory plan, the model
// description and the weights embedded as data. mlcc-link turns it into
// model.so. Symbolic input dimensions (`f32[n, 784]`) are set at run time
// (mlcc_model_set_input_shape); the memory plan's offsets are then
// expressions of them. A module of prim funcs only (or `entry` naming a
// prim func) has no graph entry: each prim func becomes a function of the
// model, loaded by name (mlcc_model_load_function), with the buffers it
// reads as inputs and those it writes as outputs.
//
//   LLVMOptions opts;                       // host CPU, -O3
//   CodegenStats st = compileModule(module, opts, Emit::obj, "model.o");
//
// For tests and the tuner, one prim func can be compiled in memory:
//   JitKernel k = JitKernel::compile(func, opts);
//   k.run({a.data(), b.data(), c.data()});  // one pointer per parameter
// A prim func with symbolic shapes (`%x: f32[n, 784]`) takes the values of
// its symbolic dimensions (kernelDims) too:
//   k.run({x.data(), y.data()}, {17});      // n = 17
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::codegen {

struct LLVMOptions {
  // The CPU, as libs/target's Target has it (target.mcpu, target.mattr);
  // compileModule and JitKernel::compile check them with target::describeCpu.
  std::string mcpu;   // "" or "native": the host CPU
  std::string mattr;  // CPU features to add or remove: "+avx2,-fma" ("": the CPU's)
  int opt_level = 3;  // 0..3
  // The graph function to compile, or a prim func to compile alone as a
  // function; "": the default entry, or every prim func of a module without
  // graph functions.
  std::string entry;
  int num_threads = 0;  // JIT only: threads for parallel loops (0: the machine's cores)
  // Check every buffer access against the buffer's shape: an index out of
  // bounds skips the access (a load gives 0) and makes the run fail with
  // "prim func @f, block "b": store to %y[3, 12] is out of bounds of shape
  // [4, 10]" (mlcc_model_run returns -1 with it in mlcc_last_error(); a
  // JitKernel::run throws it). Slower; for finding wrong indices.
  bool bounds_check = false;
  // compileModule only: called with what it starts next ("kernel 3/19 @f",
  // "optimizing", "emitting obj"); tools show it on a terminal.
  std::function<void(const std::string&)> progress;
  // compileModule only: called with each warning ("prim @f: LLVM left a
  // loop its schedule vectorizes scalar (...)"); null: printed on stderr.
  std::function<void(const std::string&)> warn;
  // compileModule only: the cuda target ("cuda -arch=sm_80", as
  // target::Target::str() writes it); "" for the CPU. The kernels become
  // CUDA C compiled with NVRTC to PTX, embedded in the object with the
  // weights and the launch table (cuda.h).
  std::string cuda_target;
};

// ll and asm_text: of the host object; cuda and ptx: a cuda target's
// kernels as CUDA C or PTX.
enum class Emit { obj, ll, asm_text, cuda, ptx };

struct CodegenStats {
  int kernels = 0;
  // A model of functions (no graph entry): the sizes below are the largest
  // of any function's (each has its own workspace: its scratch buffers).
  uint64_t planned_bytes = 0;       // the workspace of the memory plan (symbolic dimensions: for 1 each)
  uint64_t intermediate_bytes = 0;  // the sum of all intermediates (without reuse)
  uint64_t scratch_bytes = 0;       // kernels' scratch buffers, also in the workspace (sum, without reuse)
  uint64_t weight_bytes = 0;        // embedded weights
  std::vector<std::string> kernel_names;  // by kernel id (prim funcs and library kernels)
  std::vector<std::string> dims;          // the model's symbolic dimensions (set at run time)
  std::vector<std::string> functions;     // the prim funcs compiled as functions (none: a graph entry)
};

// Throws mlcc::Error (naming the function/block) for what it cannot compile:
// graph ops that were not legalized, unknown externs, symbolic shapes in
// BLAS calls or input dimensions that are expressions (`f32[n * 2]`), a
// function whose inputs do not give the sizes of its outputs.
CodegenStats compileModule(const ir::Module& m, const LLVMOptions& opts, Emit emit,
                           const std::string& output_path);

// The symbolic dimensions of a prim func, which its kernel takes as
// arguments: the variables that are whole dimensions of its parameters'
// shapes, in order of first appearance (parameter by parameter, dimension
// by dimension). A kernel's args array holds, after one pointer per
// parameter, the value of each as an int64 (see abi.h).
std::vector<const ir::VarNode*> kernelDims(const ir::PrimFunc& f);

class JitKernel {
 public:
  static JitKernel compile(const ir::PrimFunc& f, const LLVMOptions& opts = {});
  ~JitKernel();
  JitKernel(JitKernel&&) noexcept;
  JitKernel& operator=(JitKernel&&) noexcept;
  // One pointer per parameter (buffers of the shapes the dims give) and one
  // value (>= 0) per symbolic dimension, in the order of dimNames().
  void run(const std::vector<void*>& args, const std::vector<int64_t>& dims = {}) const;
  // The names of the symbolic dimensions (kernelDims), in order.
  const std::vector<std::string>& dimNames() const;
  // The optimized LLVM IR of the kernel (for tests and inspection).
  const std::string& llvmIR() const;

 private:
  struct Impl;
  explicit JitKernel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlcc::codegen
