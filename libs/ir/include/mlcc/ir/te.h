// Tensor expressions: build prim funcs from index formulas, as TVM's `te`
// does. Each compute stage becomes one loop nest with one block whose
// iteration variables are bound 1:1 to its loops; read/write regions are
// derived from the loads. This is how the op registry writes each op's
// TensorIR compute definition (legalization).
//
//   te::FuncBuilder fb("dense");
//   Buffer x = fb.input("x", Type x_type), w = fb.input("w", w_type);
//   Buffer y = fb.reduce("dense", {n, N}, DType::f32, {K}, te::ReduceOp::Sum,
//       [&](auto& i, auto& r) { return load(x, {i[0], r[0]}) * load(w, {i[1], r[0]}); });
//   PrimFunc f = fb.build({y});   // params: x, w, y
//
// A scan (a recurrence over steps) puts stages inside one serial loop:
//   Var t = fb.beginScan("step", T);
//   fb.update("state", h, {B, H}, [&](auto& i) { return Indices{i[0], i[1]}; },
//             [&](auto& i) { return load(h, {i[0], i[1]}) + load(x, {t, i[0], i[1]}); });
//   fb.endScan();
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/graph.h"
#include "mlcc/ir/stmt.h"

namespace mlcc::ir::te {

using Indices = std::vector<Var>;
using ComputeFn = std::function<PrimExpr(const Indices& spatial)>;
using ReduceFn = std::function<PrimExpr(const Indices& spatial, const Indices& reduce)>;

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };

class FuncBuilder {
 public:
  explicit FuncBuilder(std::string func_name);

  // A parameter buffer of the given tensor type (inputs, in call order).
  Buffer input(const std::string& name, const Type& type);

  // out[i...] = f(i...) over `shape`. The buffer is an intermediate
  // (allocated in the function) unless it is passed to build() as an output.
  Buffer compute(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                 const ComputeFn& f);

  // out[i...] = op over r... in [0, reduce_extents) of f(i..., r...), with
  // `init` (default: the identity of `op`: 0, 1, -inf/min, +inf/max) in the
  // block's init part, and the reduce loops innermost.
  Buffer reduce(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                const std::vector<PrimExpr>& reduce_extents, ReduceOp op, const ReduceFn& f,
                PrimExpr init = nullptr);

  // A buffer no stage creates, written by update(): an intermediate (an
  // alloc_buffer) unless passed to build() as an output.
  Buffer buffer(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype);

  // buffer[index(i...)] = f(i...) over `domain`, into a buffer that exists
  // (from buffer(), or computed by an earlier stage): a partial or in-place
  // update, e.g. one step of a sequence output or a recurrent state.
  void update(const std::string& name, const Buffer& buffer, const std::vector<PrimExpr>& domain,
              const std::function<std::vector<PrimExpr>(const Indices& spatial)>& index, const ComputeFn& f);

  // A scan: the stages added until endScan() run inside one serial loop
  // `for t in 0..extent`, in order, each step after the previous one (step
  // t reads what step t - 1 wrote). The returned variable stands for t in
  // the stages' formulas; each of their blocks binds it as an opaque
  // iteration variable, so no schedule primitive reorders, splits or
  // parallelizes the steps. Scans do not nest.
  Var beginScan(const std::string& name, const PrimExpr& extent);
  void endScan();

  // The prim func: params are the inputs then `outputs` (in order);
  // every other buffer of a stage or of buffer() becomes a function-level
  // alloc_buffer. Stages run in the order they were added.
  PrimFunc build(const std::vector<Buffer>& outputs);

  // Names the block of each stage after its buffer name, made unique.
 private:
  struct Scan {
    Var placeholder, loop;
    PrimExpr extent;
    std::vector<Stmt> nests;
  };
  std::string name_;
  std::vector<Buffer> inputs_;
  std::vector<Buffer> buffers_;  // of stages and buffer(), in order
  std::vector<Stmt> nests_;
  std::optional<Scan> scan_;
  std::vector<std::string> used_names_;
  std::string uniqueName(const std::string& base);
  // The loop nest of one stage's block (inside the scan when one is open).
  void addStage(const std::string& block_name, const Buffer& out, std::vector<PrimExpr> out_idx,
                std::vector<IterVar> iter_vars, std::vector<Var> loops, PrimExpr value, PrimExpr init,
                std::optional<ReduceOp> op);
};

// The identity element of a reduction for a dtype (0, 1, lowest, highest).
PrimExpr reduceIdentity(ReduceOp op, DType dtype);

// A load that is `fallback` where `in_bounds` is false, without ever
// reading out of bounds: the indices are clamped into the buffer's shape and
// the value selected (select evaluates both arms, so the clamp keeps the
// unused arm's load legal). For padding.
PrimExpr guardedLoad(const Buffer& buffer, const std::vector<PrimExpr>& indices, const PrimExpr& in_bounds,
                     const PrimExpr& fallback);

// A literal of `dtype` with value v (float or int by the dtype).
PrimExpr constant(DType dtype, double v);

}  // namespace mlcc::ir::te
