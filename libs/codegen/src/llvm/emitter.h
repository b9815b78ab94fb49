// The state of emitting one prim func as an LLVM kernel, shared by the
// files of the emitter: expressions (emit_expr.cpp), buffer accesses
// (emit_buffer.cpp), 16-bit floats (emit_float16.cpp), math intrinsics
// (emit_math.cpp), statements and loops (kernel_emitter.cpp) and parallel
// loop outlining (emit_parallel.cpp).
//
// Values live in "register types": f32/f16/bf16 as float (f16/bf16 rounded
// to their precision after every operation, as the interpreter does), f64
// as double, i8, i32, i64 as themselves, bool as i1. In memory bool is one byte and f16/bf16
// are 16-bit patterns.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "llvm/kernel_emitter.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::codegen {

struct BufferBinding {
  llvm::Value* base = nullptr;      // the first element (its shape: the buffer's, through expr())
  llvm::MDNode* scope = nullptr;    // !alias.scope: this buffer
  llvm::MDNode* noalias = nullptr;  // !noalias: every other buffer of the kernel
};

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& mod, const ir::PrimFunc& f);
  llvm::Function* emit(const std::string& symbol, KernelInfo* info);

  // ---- expressions (emit_expr.cpp) ----
  llvm::Value* expr(const ir::PrimExpr& e);
  llvm::Type* regType(ir::DType t);
  llvm::Value* cast(llvm::Value* v, ir::DType from, ir::DType to);
  // f32 a * b +/- c as llvm.fmuladd (null when `bn` is not of that form).
  llvm::Value* multiplyAdd(const ir::BinaryNode& bn);

  // ---- 16-bit floats (emit_float16.cpp) ----
  // `v` (a float) rounded to the precision of `t` (no-op for f32).
  llvm::Value* roundFloat(llvm::Value* v, ir::DType t);
  llvm::Value* f16BitsToFloat(llvm::Value* bits);
  llvm::Value* bf16BitsToFloat(llvm::Value* bits);
  llvm::Value* floatToF16Bits(llvm::Value* v);
  llvm::Value* floatToBF16Bits(llvm::Value* v);
  // A double rounded once to bf16, as a float (for integer -> bf16 casts).
  llvm::Value* doubleToBF16(llvm::Value* d);

  // ---- math intrinsics (emit_math.cpp) ----
  llvm::Value* call(const ir::CallNode& c);
  // The integer intrinsics (bitwise_*, shift_left/right) on `args` of dtype t.
  llvm::Value* bitwise(const std::string& name, const std::vector<llvm::Value*>& args, ir::DType t);
  llvm::Value* intPow(llvm::Value* x, llvm::Value* n, ir::DType t);

  // ---- buffers (emit_buffer.cpp) ----
  // Registers every buffer of the function (for the alias scopes): its
  // parameters, its allocs and the block alloc_buffers in `body`.
  void collectBuffers(const ir::Stmt& body);
  llvm::Value* load(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices);
  void store(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices, llvm::Value* v);
  // With bounds_check: branches to a new block where every index of the
  // access is within the buffer's shape and returns the block after the
  // access (where both paths meet), having reported the access through
  // mlcc_rt_bounds_error on the other path. Without: returns null.
  llvm::BasicBlock* checkBounds(const ir::Buffer& buf, const std::vector<llvm::Value*>& index,
                                const std::vector<llvm::Value*>& shape, const char* what);
  // Storage for a function alloc or block alloc_buffer, zeroed unless
  // `zero` is false: an alloca in the entry block when small, else the next
  // scratch buffer of args (function allocs when info is set; also those of
  // symbolic shape), else calloc'd (to be freed through freeAll). Binds buf.
  void allocate(const ir::Buffer& buf, std::vector<llvm::Value*>& to_free, bool function_level = false,
                bool zero = true);
  void freeAll(const std::vector<llvm::Value*>& to_free);

  // ---- statements (kernel_emitter.cpp) ----
  void stmt(const ir::Stmt& s);
  void loop(const ir::ForNode& f);
  void block(const ir::BlockNode& b);
  // A block tensorize marked (attribute tensor_intrin = name): one call of
  // the routine on its regions (emit_tensor_intrin.cpp).
  void tensorIntrinCall(const ir::BlockNode& b, const std::string& name);
  // Emits a counted loop over [begin, end) with `body` called for each
  // value of the loop variable; `md` are extra loop metadata operands.
  void countedLoop(llvm::Value* begin, llvm::Value* end, const ir::Var& var, const ir::Stmt& body,
                   const std::vector<llvm::Metadata*>& md);

  // ---- parallel loops (emit_parallel.cpp) ----
  void parallelLoop(const ir::ForNode& f);

  [[noreturn]] void fail(const std::string& message) const;

  llvm::Module& mod;
  llvm::LLVMContext& ctx;
  llvm::IRBuilder<> b;
  const ir::PrimFunc& func;
  std::string symbol;
  std::string block_name;    // the innermost block being emitted, for errors
  int64_t vector_lanes = 0;  // the innermost `vectorized` loop's extent around what is being
                             // emitted (INT64_MAX when not constant; 0: none)

  llvm::Function* fn = nullptr;          // the function being emitted into
  llvm::Value* rt_ctx = nullptr;         // the runtime context argument
  llvm::Value* args = nullptr;           // the kernel's argument array
  std::vector<const ir::VarNode*> dims;  // its symbolic dimensions (kernelDims), after the parameters
  KernelInfo* info = nullptr;            // scratch buffers come from args when set
  bool bounds_check = false;             // check every access (LLVMOptions::bounds_check)
  llvm::BasicBlock* entry = nullptr;     // where allocas go
  std::unordered_map<const ir::VarNode*, llvm::Value*> vars;
  std::unordered_map<const ir::BufferNode*, BufferBinding> buffers;
  AllocPlan alloc_plan;  // where function allocs go (compacted per loop iteration, zeroed or not)
  int outlined = 0;      // counter for names of outlined parallel bodies

 private:
  std::vector<const ir::BufferNode*> all_buffers_;
  std::vector<llvm::MDNode*> scopes_;
};

}  // namespace mlcc::codegen
