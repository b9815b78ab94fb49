// Statement factories and enum names (see stmt.h).
#include "mlcc/ir/stmt.h"

#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

const char* loopKindName(LoopKind k) {
  switch (k) {
    case LoopKind::serial: return "serial";
    case LoopKind::parallel: return "parallel";
    case LoopKind::vectorized: return "vectorized";
    case LoopKind::unrolled: return "unrolled";
    case LoopKind::thread_binding: return "thread_binding";
  }
  return "?";
}

const char* iterKindName(IterKind k) {
  switch (k) {
    case IterKind::spatial: return "spatial";
    case IterKind::reduce: return "reduce";
    case IterKind::opaque: return "opaque";
  }
  return "?";
}

bool isValidThreadTag(const std::string& tag) {
  return tag == "blockIdx.x" || tag == "blockIdx.y" || tag == "blockIdx.z" || tag == "threadIdx.x" ||
         tag == "threadIdx.y" || tag == "threadIdx.z" || tag == "vthread";
}

Stmt makeFor(Var v, PrimExpr extent, Stmt body, LoopKind kind, std::string thread_tag, Attrs attrs) {
  if (!v || !extent || !body) throw Error("internal: null part of a for loop");
  return std::make_shared<ForNode>(std::move(v), std::move(extent), kind, std::move(thread_tag),
                                   std::move(body), std::move(attrs));
}

Stmt makeBlock(std::string name, std::vector<IterVar> iter_vars, std::vector<BufferRegion> reads,
               std::vector<BufferRegion> writes, Stmt body, Stmt init, PrimExpr predicate,
               std::vector<Buffer> alloc_buffers, Attrs attrs) {
  if (!body) throw Error("internal: block '" + name + "' without a body");
  return std::make_shared<BlockNode>(std::move(name), std::move(iter_vars), std::move(predicate),
                                     std::move(reads), std::move(writes), std::move(alloc_buffers),
                                     std::move(init), std::move(body), std::move(attrs));
}

Stmt makeStore(Buffer buffer, std::vector<PrimExpr> indices, PrimExpr value) {
  if (!buffer || !value) throw Error("internal: null part of a store");
  return std::make_shared<StoreNode>(std::move(buffer), std::move(indices), std::move(value));
}

Stmt makeSeq(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts[0];
  return std::make_shared<SeqNode>(std::move(stmts));
}

Stmt makeIf(PrimExpr cond, Stmt then_case, Stmt else_case) {
  if (!cond || !then_case) throw Error("internal: null part of an if");
  return std::make_shared<IfNode>(std::move(cond), std::move(then_case), std::move(else_case));
}

}  // namespace mlcc::ir
