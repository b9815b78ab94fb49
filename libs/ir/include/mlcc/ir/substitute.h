// Substitution in TensorIR: replaces variables (loop, block-iteration or
// symbolic shape variables) by expressions and buffers by buffers, throughout
// expressions, statements (loads, stores, block regions, iteration domains and
// bindings, predicates, alloc_buffers, Expr-valued attributes) and buffer
// shapes. Optionally renames blocks. Used by FuseTIR (merging the prim funcs
// of a fused group) and by schedule primitives.
//
//   Substituter sub;
//   sub.mapVar(op_n, group_n);          // unify a symbolic dimension
//   sub.mapBuffer(op_param, group_buf);  // an op's parameter -> the group's buffer
//   Stmt body = sub(op_func.body);
//
// A buffer that is not mapped but whose shape mentions a substituted variable
// is rebuilt once with the substituted shape (same name, dtype and scope), and
// that rebuilt buffer is used for every later occurrence (see rebuiltBuffers()).
// Nodes that do not change are shared, not copied.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::ir {

class Substituter {
 public:
  void mapVar(const Var& from, PrimExpr to);
  void mapBuffer(const Buffer& from, Buffer to);
  bool hasVar(const Var& v) const { return vars_.count(v.get()) != 0; }
  bool hasBuffer(const Buffer& b) const { return buffers_.count(b.get()) != 0; }
  // Renames every block (called once per block, in program order).
  std::function<std::string(const std::string&)> rename_block;

  PrimExpr operator()(const PrimExpr& e);
  Stmt operator()(const Stmt& s);
  Buffer operator()(const Buffer& b);
  Attrs operator()(const Attrs& a);

  // Buffers rebuilt because their shapes changed: original -> new.
  const std::unordered_map<const BufferNode*, Buffer>& rebuiltBuffers() const { return rebuilt_; }

 private:
  AttrValue attr(const AttrValue& v);
  BufferRegion region(const BufferRegion& r);
  std::unordered_map<const VarNode*, PrimExpr> vars_;
  std::unordered_map<const BufferNode*, Buffer> buffers_;
  std::unordered_map<const BufferNode*, Buffer> rebuilt_;
};

// One-shot helpers.
PrimExpr substitute(const PrimExpr& e, const std::unordered_map<const VarNode*, PrimExpr>& vars);
Stmt substitute(const Stmt& s, const std::unordered_map<const VarNode*, PrimExpr>& vars,
                const std::unordered_map<const BufferNode*, Buffer>& buffers = {});

}  // namespace mlcc::ir
