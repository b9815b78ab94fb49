// Navigating and rewriting the statement tree of a prim func. Statements are
// immutable and shared, so a rewrite copies the path from the root to the
// changed node (replaceAt). ForParts/BlockParts are editable copies of a
// loop or block that rebuild the node.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

// The statements from the root (first) down to a target (last).
struct StmtPath {
  std::vector<ir::Stmt> nodes;
  const ir::Stmt& target() const { return nodes.back(); }
};

std::optional<StmtPath> findBlock(const ir::Stmt& root, const std::string& name);
std::optional<StmtPath> findLoop(const ir::Stmt& root, const ir::VarNode* loop_var);

// The loops on `path` above its target, below the nearest enclosing block
// (or the root), outermost first.
std::vector<const ir::ForNode*> loopsAbove(const StmtPath& path);
// The nearest block strictly above the target, or nullptr.
const ir::BlockNode* enclosingBlock(const StmtPath& path);

// The root with path.nodes[index] replaced by `replacement` (default: the
// target). A null replacement removes the node from its parent (a loop
// whose body becomes empty is removed too, a removed root gives null).
ir::Stmt replaceAt(const StmtPath& path, ir::Stmt replacement);
ir::Stmt replaceAt(const StmtPath& path, size_t index, ir::Stmt replacement);

// The direct children of a statement (Seq items, loop/block body, block
// init first, if branches).
std::vector<ir::Stmt> children(const ir::Stmt& s);
// Statements as a list: a Seq's items, or the single statement.
std::vector<ir::Stmt> flattenSeq(const ir::Stmt& s);

// Pre-order visit of every block under `root`, with its path from `root`.
void forEachBlock(const ir::Stmt& root, const std::function<void(const ir::BlockNode&, const StmtPath&)>& fn);
// The blocks directly under `s` (not nested in another block), in order.
std::vector<const ir::BlockNode*> childBlocks(const ir::Stmt& s);

// Whether `e` / `s` mentions the variable.
bool usesVar(const ir::PrimExpr& e, const ir::VarNode* v);
bool usesVar(const ir::Stmt& s, const ir::VarNode* v);

// Buffers a block reads / writes (from its regions), without duplicates.
std::vector<ir::Buffer> readBuffers(const ir::BlockNode& b);
std::vector<ir::Buffer> writeBuffers(const ir::BlockNode& b);

struct ForParts {
  explicit ForParts(const ir::ForNode& f);
  ir::Var loop_var;
  ir::PrimExpr extent;
  ir::LoopKind loop_kind;
  std::string thread_tag;
  ir::Stmt body;
  ir::Attrs attrs;
  ir::Stmt build() const;
};

struct BlockParts {
  explicit BlockParts(const ir::BlockNode& b);
  std::string name;
  std::vector<ir::IterVar> iter_vars;
  ir::PrimExpr predicate;
  std::vector<ir::BufferRegion> reads, writes;
  std::vector<ir::Buffer> alloc_buffers;
  ir::Stmt init, body;
  ir::Attrs attrs;
  ir::Stmt build() const;
};

}  // namespace mlcc::schedule
