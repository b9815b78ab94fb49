// The dataflow graph of one dataflow block and its post-dominator tree, as
// TVM's IndexedForwardGraph and DominatorTree (src/relay/analysis/
// graph_partitioner.h), for fuse-ops.
//
// Nodes are the block's bindings in block order (a topological order). A node
// has the op pattern kind of its op (any binding that is not an op call:
// constants, tuples, tuple items, calls of sub-functions, call_tir,
// call_extern, aliases, is Opaque). Each use of a value by a later binding of
// the block is an edge carrying the consumer's pattern, except that a
// Broadcast consumer whose result has the operand's shape makes an
// Elementwise edge (conv2d -> add(bias) of the same shape is elementwise).
// Uses outside the block (the return, other blocks) are not edges; they set
// `extern_ref`.
//
// The immediate post-dominator of a node is the least common ancestor, in the
// tree built so far (nodes in reverse order), of its consumers; `pattern` is
// the most restrictive edge pattern on the paths up to it. A node without
// consumers in the block has none (it is a root). Unlike TVM, a node that is
// also used outside the block still gets its post-dominator from its
// consumers in the block: fuse-ops then makes it an extra output of its
// group instead of keeping it out of every group.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ops/op.h"

namespace mlcc::transform {

struct DataflowGraph {
  struct Edge {
    size_t node;
    ops::OpPattern pattern;
  };
  struct Node {
    ops::OpPattern pattern = ops::OpPattern::Opaque;
    std::vector<Edge> outputs;
    bool extern_ref = false;
  };
  std::vector<Node> nodes;  // one per binding of the block, in order

  // `escapes(var)`: whether the variable is used outside the block. With
  // `m`, a call_tir has the pattern of the prim func it calls.
  template <class Escapes>
  static DataflowGraph build(const ir::BindingBlock& block, Escapes escapes, const ir::Module* m = nullptr);
};

struct PostDomTree {
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Node {
    size_t parent = kNone;
    int depth = 1;
    ops::OpPattern pattern = ops::OpPattern::Elementwise;  // along the path to parent
  };
  std::vector<Node> nodes;
  static PostDomTree build(const DataflowGraph& g);
};

ops::OpPattern combinePattern(ops::OpPattern a, ops::OpPattern b);  // the less fusable
ops::OpPattern bindingPattern(const ir::Binding& b, const ir::Module* m = nullptr);
bool sameShape(const ir::Type& a, const ir::Type& b);

template <class Escapes>
DataflowGraph DataflowGraph::build(const ir::BindingBlock& block, Escapes escapes, const ir::Module* m) {
  DataflowGraph g;
  g.nodes.resize(block.bindings.size());
  std::unordered_map<const ir::GraphVarNode*, size_t> index;
  for (size_t i = 0; i < block.bindings.size(); ++i) {
    const ir::Binding& b = block.bindings[i];
    g.nodes[i].pattern = bindingPattern(b, m);
    g.nodes[i].extern_ref = escapes(b.var);
    for (const auto& a : b.value.args) {
      auto it = index.find(a.get());
      if (it == index.end()) continue;
      ops::OpPattern p = g.nodes[i].pattern;
      if (p == ops::OpPattern::Broadcast && sameShape(a->type, b.var->type)) p = ops::OpPattern::Elementwise;
      g.nodes[it->second].outputs.push_back({i, p});
    }
    index[b.var.get()] = i;
  }
  return g;
}

}  // namespace mlcc::transform
