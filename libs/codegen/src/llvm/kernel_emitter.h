// Internal interface between the parts of the LLVM backend: emitting one
// prim func as a kernel, declaring the runtime's functions, the target
// machine and the optimization pipeline. (Private: includes LLVM headers.)
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlcc/codegen/llvm.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::codegen {

// What a kernel needs from its caller besides its parameters and symbolic
// dimensions.
struct KernelInfo {
  // Scratch buffers: the kernel's function-level allocations too large for
  // the stack or of symbolic shape, in order; the caller passes one pointer
  // for each after the parameters and the symbolic dimensions
  // (args[num_params + num_dims + i], 64-byte aligned, scratch_bytes[i]
  // bytes: a constant, or an expression of the kernel's symbolic
  // dimensions; no need to be zeroed: the kernel zeroes them).
  std::vector<ir::PrimExpr> scratch_bytes;
};

// Emits prim func `f` into `mod` as
//   void @symbol(ptr noalias %args, ptr %ctx)
// where args[i] points to parameter i (dense row-major; parameters must not
// overlap each other), args[num_params + k] holds the value of symbolic
// dimension k of kernelDims(f) as an int64 (>= 0), and ctx is passed to the
// runtime (mlcc_rt_parallel_for). Function-level allocations larger than
// 64 KiB or of symbolic shape are scratch buffers in args when `info` is
// given (see KernelInfo), else calloc'd and freed on each call. With
// `bounds_check`, every access is checked (LLVMOptions::bounds_check).
// Throws mlcc::Error naming the function (and block) for what it cannot
// compile.
llvm::Function* emitKernel(llvm::Module& mod, const ir::PrimFunc& f, const std::string& symbol,
                           KernelInfo* info = nullptr, bool bounds_check = false);

// Floor division (or modulo) of i64 values as the IR defines them; a zero
// divisor gives 0, -1 wraps (emit_expr.cpp).
llvm::Value* floorDivMod(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, bool mod);

// Rewrites of loads and stores before emission (rewrite_accesses.cpp).
// rewriteAccesses calls fn on every access (loads inside indices first) with
// the loops' ranges and the block bindings (iteration variable -> its value
// in loop variables) in scope; fn may change the indices and returns the
// buffer to access.
using AccessRewrite =
    std::function<ir::Buffer(const ir::Buffer&, std::vector<ir::PrimExpr>& indices, const ir::Analyzer&,
                             const std::unordered_map<const ir::VarNode*, ir::PrimExpr>&)>;
ir::Stmt rewriteAccesses(const ir::Stmt& body, const AccessRewrite& fn);
// `body` with each load and store index that divides or takes the
// remainder of a block iteration variable rewritten in the loop variables
// where the loops' ranges remove every division; with `flatten`, an access
// whose indices keep divisions but whose row-major offset loses them gets
// that offset as its last index, the others 0.
ir::Stmt resolveIndexDivisions(const ir::Stmt& body, bool flatten);
// How the emitter stores f's function allocs (ir::analyzeAllocs, run once):
// a compactable one is replaced by a buffer of its box's shape, indexed from
// the box's base, which the emitter allocates on the stack, unzeroed, under
// the loop whose variable keys it in per_loop; the others are zeroed unless
// written before read.
struct AllocPlan {
  std::unordered_map<const ir::BufferNode*, ir::Buffer> compacted;  // alloc -> its box's buffer
  std::unordered_map<const ir::VarNode*, std::vector<ir::Buffer>> per_loop;
  std::unordered_set<const ir::BufferNode*> written_before_read;
};
// f's body with the compacted allocs' accesses rewritten; fills `plan`.
ir::Stmt planAllocations(const ir::PrimFunc& f, AllocPlan* plan);
// The widest vectorized loop the emitter makes one vector of exactly its
// width (a power of two of contiguous accesses; see KernelEmitter::loop):
// register_tiles.cpp splits wider tile loops into vectors of it.
inline constexpr int64_t kMaxTileLanes = 16;
// `body` with each reduction's register tile accumulated in a small block
// alloc_buffer (added to plan->written_before_read: not zeroed) across its
// reduction loops, copied in before and out after them (register_tiles.cpp).
ir::Stmt promoteRegisterTiles(const ir::Stmt& body, AllocPlan* plan);
// `body` with each serial loop of constant extent N >= 8 whose blocks inside a
// vectorized loop have predicates that hold over its first N - 1
// iterations run as those iterations without the predicates, then its last
// one as written (peel_masked_tails.cpp); loops keying plan.per_loop stay.
ir::Stmt peelMaskedTails(const ir::Stmt& body, const AllocPlan& plan);

// How far `e` moves per step of a loop: the coefficients of the variables
// that move with it (the loop variable's 1, and those of variables bound to
// expressions of it) summed through additions and multiplications by
// constants; nullopt where a moving variable enters otherwise (a product
// of two, a division, a select, a load) (unit_stride.cpp).
using Coeffs = std::unordered_map<const ir::VarNode*, int64_t>;
std::optional<int64_t> coefficient(const ir::PrimExpr& e, const Coeffs& c);
// Whether every load and store under a loop moves by at most one element
// of its last index per iteration of the loop (unit_stride.cpp).
bool contiguousAlongLoop(const ir::ForNode& f);
// Whether a block with a reduce iteration variable runs under the loop.
bool updatesReduction(const ir::ForNode& f);
// Whether stores under `s` compute an f64 libm call (exp, tanh, ...): glibc's
// vector variants are not the interpreter's results, so such loops stay
// scalar (emit_math.cpp).
bool callsScalarMath(const ir::Stmt& s);

// The declaration of runtime function `name` of abi.h in `mod` (created on
// first use with the right signature).
llvm::FunctionCallee runtimeFunction(llvm::Module& mod, const std::string& name);

// A target machine for the options (host CPU and features by default), and
// the -O pipeline (with vector math mapped to glibc's libmvec).
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const LLVMOptions& opts);
void optimizeModule(llvm::Module& mod, llvm::TargetMachine& tm, int opt_level);

}  // namespace mlcc::codegen
