// The graph entry as a straight-line program: what the compiled entry does,
// step by step, and where every tensor lives. Independent of LLVM. A prim
// func compiled as a function of model.so (abi.h) gets such a plan too.
//
// Every value of the entry function gets a storage location: an input
// buffer, an output buffer, an embedded constant, or an offset in the
// workspace (the static memory plan over the intermediates' live ranges).
// Aliases (`%y = %x`), tuples and tuple fields name the storage of their
// operands (no copy). A computed value that is returned is written by its
// kernel straight into the output buffer; a returned input or constant (or
// a value returned twice) is copied into the output after the last step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memory_plan.h"
#include "mlcc/ir/module.h"

namespace mlcc::codegen {

// A tensor: a static shape, or one with symbolic dimensions.
struct TensorDesc {
  std::string name;
  ir::DType dtype = ir::DType::f32;
  std::vector<int64_t> shape;  // -1 for a symbolic dimension
  uint64_t bytes = 0;          // static tensors
  // Symbolic tensors: the shape as expressions of EntryPlan::dims, and the
  // byte size as one (null for static tensors).
  std::vector<ir::PrimExpr> sym_shape;
  ir::PrimExpr sym_bytes;
  bool symbolic() const { return sym_bytes != nullptr; }
};

struct Location {
  enum class Kind { input, output, constant, workspace };
  Kind kind = Kind::workspace;
  int index = 0;        // input, output or constant index
  uint64_t offset = 0;  // workspace: byte offset (64-byte aligned)
  int sym_tensor = -1;  // workspace of a symbolic plan: the tensor's index in EntryPlan::sym_memory
};

// A constant the entry uses (each weight once, however often it is bound).
struct EntryConstant {
  TensorDesc desc;
  std::string weight;                       // a weights-file tensor; "" for inline data
  const std::vector<uint8_t>* inline_data;  // inline: the binding's data (lives in the module)
};

// A kernel of the model description: a prim func, or a library kernel with
// its shapes. Ids are indices into EntryPlan::kernels.
struct EntryKernel {
  std::string name;  // the prim func's name, or e.g. "blas.dense_bias 4x256x784"
  std::string prim;  // the prim func; "" for a library kernel
  double flops = 0;  // per call
};

struct EntryStep {
  enum class Kind { kernel, blas_dense, blas_matmul, user_extern, copy };
  Kind kind = Kind::kernel;
  int kernel = -1;        // kernel id (not for copies)
  size_t num_params = 0;  // kernel: the prim func's parameters among args
  // kernel: one per prim func parameter (inputs, then outputs; num_params), then its scratch buffers;
  // blas_dense: x, w, [bias,] out; blas_matmul: a, b, [bias,] out; user_extern: operands, result;
  // copy: source, destination.
  std::vector<Location> args;
  std::string symbol;               // user_extern: the C function (include/mlcc/extern.h)
  std::vector<TensorDesc> tensors;  // user_extern: the types of args
  std::string what;                 // for errors and comments: "%y = call_tir @f"
  // blas: out[B, M, N] = x[M, K] w[N, K]^T, or a[B, M, K] b[B, K, N]; (+ bias) (relu)
  int64_t B = 1, M = 0, N = 0, K = 0;
  bool bias = false, relu = false;
  uint64_t bytes = 0;      // copy
  ir::PrimExpr sym_bytes;  // copy of a symbolic tensor
  // kernel: the values of the prim func's symbolic dimensions (kernelDims),
  // as expressions of the plan's dims.
  std::vector<ir::PrimExpr> dims;
};

struct EntryPlan {
  std::string entry;
  std::vector<TensorDesc> inputs, outputs;
  std::vector<EntryConstant> constants;
  std::vector<EntryKernel> kernels;
  std::vector<EntryStep> steps;
  // The workspace: intermediates and kernels' scratch buffers. sum_bytes
  // counts both without reuse; scratch_bytes is the scratch part of it.
  MemoryPlan memory;
  uint64_t scratch_bytes = 0;
  int intermediates = 0;  // how many graph tensors live in the workspace
  // Symbolic dimensions: the variables that are whole dimensions of the
  // inputs, in order of first appearance; every input dimension is a
  // constant or one of them. When there are any, tensors may be symbolic,
  // `sym_memory` is the workspace plan (offsets computed when the dims are
  // known) and `memory` that plan for every dimension 1, for reports.
  std::vector<const ir::VarNode*> dims;
  SymbolicMemoryPlan sym_memory;
  bool symbolic() const { return !dims.empty(); }
};

// The scratch buffers kernel `prim` needs after its parameters (bytes each:
// constants, or expressions of the prim func's symbolic dimensions), asked
// once per prim func the entry calls; each lives in the workspace for the
// duration of its call.
using ScratchFn = std::function<std::vector<ir::PrimExpr>(const ir::PrimFunc& prim)>;

// Plans graph function `entry` of `m` ("": ir::defaultEntry). Throws
// mlcc::Error naming the binding for what codegen cannot compile: graph ops
// that were not legalized, calls of graph functions, input dimensions that
// are symbolic expressions (not one variable), symbolic shapes in extern
// calls, unknown externs or extern operands BLAS cannot take, and prim funcs
// whose parameters do not match their call. `library` is the library whose
// kernels call_extern may name ("blas" for the CPU, "cublas" for cuda).
EntryPlan planEntry(const ir::Module& m, const std::string& entry, const ScratchFn& scratch = {},
                    const std::string& library = "blas");

// Plans prim func `f` as a function of model.so: its inputs are the
// parameters it reads or does not write, its outputs those it writes
// (ir::paramUses; in parameter order, named after them); the steps copy
// each input that is also an output into it, then call `f` (kernel 0) with
// its scratch buffers in the workspace. Its symbolic dimensions are the
// variables that are whole input dimensions. Throws mlcc::Error naming `f`
// for an input dimension that is an expression, or a parameter dimension
// that uses a variable no input gives.
EntryPlan planFunction(const ir::PrimFunc& f, const ScratchFn& scratch = {});

}  // namespace mlcc::codegen
