// The prim func compiler (PrimFunc -> closure tree) and the compiled form's
// calling convention. Internal to libs/interp.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlcc/extern.h"
#include "mlcc/ir/stmt.h"
#include "mlcc/ir/tensor.h"
#include "tir_nodes.h"

namespace mlcc::interp {

namespace tir {

// While compiling the leaf of a loop nest (tir_nest.cpp): the buffer
// accesses with affine indices, each read/written through a cursor slot
// holding its byte offset, which the nest advances incrementally.
struct NestAccess {
  int buf;
  std::vector<Affine> idx;
  int slot;  // the cursor: byte offset into f.bufs[buf].base
};
struct NestScope {
  std::vector<NestAccess> accesses;
};

// Compiles expressions and statements of one prim func, assigning a slot to
// each variable and an id to each buffer as it meets them.
class Compiler {
 public:
  int varSlot(const ir::Var& v);  // existing slot, or a new one
  int newSlot() { return num_slots++; }
  int bufferId(const ir::Buffer& b);
  IPtr intExpr(const ir::PrimExpr& e);    // integer or bool dtype
  FPtr floatExpr(const ir::PrimExpr& e);  // f32, f16 or bf16
  SPtr stmt(const ir::Stmt& s);
  // A block that tensorize marked with `tensor_intrin` = name.
  SPtr tensorIntrinCall(const ir::BlockNode& b, const std::string& name);
  // The access buffer[indices...] (affine fast path where possible).
  Index index(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices);
  // Adds scale * e to `out` when e is affine in bound i64 variables.
  bool affine(const ir::PrimExpr& e, Affine& out, int64_t scale);

  // A perfect loop nest ending in a simple block or store, compiled to
  // advance cursors instead of computing indices (tir_nest.cpp); nullptr
  // when `s` is no such nest.
  SPtr nest(const ir::Stmt& s);
  // The cursor slot of buffer[indices...] inside a nest's leaf, or -1.
  int cursor(const ir::Buffer& buf, const std::vector<ir::PrimExpr>& indices);
  // Loads and stores through cursors (tir_nest.cpp).
  FPtr cursorFloatLoad(ir::DType t, int buf, int slot);
  IPtr cursorIntLoad(ir::DType t, int buf, int slot);
  SPtr cursorStore(ir::DType t, int buf, int slot, const ir::PrimExpr& value);

  // While a nest is built: integer sub-expressions of indices, bindings and
  // extents that cannot change inside the nest (no loads, no nest loop or
  // block variable; e.g. `%f / 8` of a fused outer loop) become slots the
  // nest computes on entry, so the rest stays affine.
  struct Invariant {
    int slot;
    IPtr expr;
  };
  struct InvariantSink {
    std::vector<int> varying;  // slots that change inside the nest
    std::vector<Invariant> list;
  };
  InvariantSink* invariants = nullptr;

  // The routine of a tensor intrinsic a block calls (its `tensor_intrin`
  // attribute); unset: such a block is an error.
  std::function<mlcc_tensor_intrin_fn(const std::string& name)> tensor_intrin;

  std::unordered_map<const ir::VarNode*, int> slots;
  int num_slots = 0;           // variables' slots and cursor slots
  NestScope* scope = nullptr;  // set while compiling a nest's leaf
  bool no_nests = false;       // set while compiling a nest's fallback
  std::unordered_map<const ir::BufferNode*, int> buffer_ids;
  std::vector<BufInfo> buffers;
  // Each buffer's shape as compiled expressions, by id.
  std::vector<std::vector<IPtr>> buffer_shapes;

 private:
  IPtr intCall(const ir::PrimExpr& e);
  bool invariantTerm(const ir::PrimExpr& e, Affine& out, int64_t scale);
  bool isInvariant(const ir::PrimExpr& e) const;
  FPtr floatCall(const ir::PrimExpr& e);
};

// Allocates buffer `id` zero-filled into `storage`, its shape and strides
// into `dims`, and points f.bufs[id] at them.
void allocateBuffer(Frame& f, int id, const Compiler& c, std::vector<int64_t>& dims,
                    std::unique_ptr<std::byte[]>& storage);

}  // namespace tir

// A prim func compiled for interpretation. run() may be called many times.
class CompiledPrimFunc {
 public:
  // `tensor_intrin` finds the routines of tensorized blocks (Compiler).
  static std::unique_ptr<CompiledPrimFunc> compile(
      const ir::PrimFunc& f,
      std::function<mlcc_tensor_intrin_fn(const std::string& name)> tensor_intrin = nullptr);

  // Runs the function on its parameters (inputs, then outputs, written in
  // place). Checks dtypes and binds/checks symbolic dimensions.
  void run(const std::vector<ir::Tensor*>& args) const;

  // The concrete shapes of all parameters, given those of the parameters in
  // `known` (nullptr: unknown): symbolic dimensions bind from known shapes.
  // Throws mlcc::Error when a shape cannot be determined or is inconsistent.
  std::vector<std::vector<int64_t>> paramShapes(const std::vector<const std::vector<int64_t>*>& known) const;

  const ir::PrimFunc& func() const { return *func_; }
  // Whether parameter i is stored to / loaded from anywhere in the body.
  bool writes(size_t i) const { return written_[i]; }
  bool reads(size_t i) const { return read_[i]; }

 private:
  // Binds symbolic dims into `slots` from the known shapes; returns false
  // (with `why`) when inconsistent.
  void bindShapes(const std::vector<const std::vector<int64_t>*>& known, std::vector<int64_t>& slots,
                  std::vector<char>& bound) const;

  const ir::PrimFunc* func_ = nullptr;
  tir::Compiler c_;
  tir::SPtr body_;
  std::vector<int> alloc_ids_;  // function-level alloc_buffer ids
  std::vector<bool> written_, read_;
};

}  // namespace mlcc::interp
