// TensorIR statements and prim funcs.
//
// A prim func is a loop program over buffers in destination-passing style:
// its parameters are the input buffers followed by the output buffers.
// Computation happens in blocks: a block has iteration variables, each with
// a domain [0, extent) and a kind (spatial or reduce), bound to expressions
// of the enclosing loop variables; it declares the buffer regions it reads
// and writes, and may have an `init` statement that runs on the first
// iteration of its reduce variables. Loops always start at 0.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/expr.h"
#include "mlcc/ir/trace.h"

namespace mlcc::ir {

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

enum class StmtKind : uint8_t { For, Block, Store, Seq, If };

struct StmtNode {
  const StmtKind kind;
  template <class T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  explicit StmtNode(StmtKind k) : kind(k) {}
};

enum class LoopKind : uint8_t { serial, parallel, vectorized, unrolled, thread_binding };
const char* loopKindName(LoopKind k);

// Thread axes a `thread_binding` loop may bind to.
// "blockIdx.x|y|z", "threadIdx.x|y|z", "vthread".
bool isValidThreadTag(const std::string& tag);

struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  ForNode(Var v, PrimExpr e, LoopKind k, std::string tag, Stmt b, Attrs a)
      : StmtNode(kKind),
        loop_var(std::move(v)),
        extent(std::move(e)),
        loop_kind(k),
        thread_tag(std::move(tag)),
        body(std::move(b)),
        attrs(std::move(a)) {}
  const Var loop_var;  // runs over [0, extent)
  const PrimExpr extent;
  const LoopKind loop_kind;
  const std::string thread_tag;  // only for thread_binding
  const Stmt body;
  const Attrs attrs;  // annotations, e.g. pragma_auto_unroll_max_step
};

enum class IterKind : uint8_t { spatial, reduce, opaque };
const char* iterKindName(IterKind k);

struct IterVar {
  Var var;          // the block-local variable
  PrimExpr extent;  // domain [0, extent)
  IterKind kind;
  PrimExpr binding;  // value, in terms of the enclosing loop variables
};

// [min, min + extent) along one buffer dimension.
struct Range {
  PrimExpr min;
  PrimExpr extent;
};

struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;  // one Range per buffer dimension
};

struct BlockNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Block;
  BlockNode(std::string n, std::vector<IterVar> iv, PrimExpr pred, std::vector<BufferRegion> r,
            std::vector<BufferRegion> w, std::vector<Buffer> alloc, Stmt i, Stmt b, Attrs a)
      : StmtNode(kKind),
        name(std::move(n)),
        iter_vars(std::move(iv)),
        predicate(std::move(pred)),
        reads(std::move(r)),
        writes(std::move(w)),
        alloc_buffers(std::move(alloc)),
        init(std::move(i)),
        body(std::move(b)),
        attrs(std::move(a)) {}
  const std::string name;
  const std::vector<IterVar> iter_vars;
  const PrimExpr predicate;  // nullptr: always true
  const std::vector<BufferRegion> reads;
  const std::vector<BufferRegion> writes;
  const std::vector<Buffer> alloc_buffers;  // buffers that live in this block
  const Stmt init;                          // nullptr: none
  const Stmt body;
  const Attrs attrs;
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  StoreNode(Buffer buf, std::vector<PrimExpr> idx, PrimExpr v)
      : StmtNode(kKind), buffer(std::move(buf)), indices(std::move(idx)), value(std::move(v)) {}
  const Buffer buffer;
  const std::vector<PrimExpr> indices;
  const PrimExpr value;
};

struct SeqNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
};

struct IfNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::If;
  IfNode(PrimExpr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const PrimExpr cond;
  const Stmt then_case;
  const Stmt else_case;  // nullptr: none
};

// Factories (no checking beyond non-null; the verifier checks meaning).
Stmt makeFor(Var v, PrimExpr extent, Stmt body, LoopKind kind = LoopKind::serial, std::string thread_tag = {},
             Attrs attrs = {});
Stmt makeBlock(std::string name, std::vector<IterVar> iter_vars, std::vector<BufferRegion> reads,
               std::vector<BufferRegion> writes, Stmt body, Stmt init = nullptr, PrimExpr predicate = nullptr,
               std::vector<Buffer> alloc_buffers = {}, Attrs attrs = {});
Stmt makeStore(Buffer buffer, std::vector<PrimExpr> indices, PrimExpr value);
// A Seq of `stmts`; a single statement is returned as is.
Stmt makeSeq(std::vector<Stmt> stmts);
Stmt makeIf(PrimExpr cond, Stmt then_case, Stmt else_case = nullptr);

// A prim func. Symbolic shape variables are introduced by the parameters'
// shapes (the first occurrence of a Var as a whole dimension binds it).
struct PrimFunc {
  std::string name;
  std::vector<Buffer> params;  // inputs, then outputs
  std::vector<Buffer> allocs;  // function-level intermediate buffers
  Stmt body;
  Attrs attrs;
  Trace trace;  // the schedule instructions that produced this function
};

}  // namespace mlcc::ir
