// fuse-ops: groups the op bindings of each graph function into primitive
// sub-functions by op pattern kind, as TVM's FuseOps (GraphPartitioner).
//
// Per dataflow block (bindings outside dataflow blocks are left alone; so
// are functions with `primitive = true`, i.e. groups made before, by
// fuse-by-pattern or an earlier fuse-ops, and calls of them, which are
// opaque nodes here), on the block's dataflow graph and post-dominator tree
// (dominator.h), visiting the bindings in order:
//
// - phase 0: an out-elementwise-fusable op (matmul, dense, conv2d) fuses with
//   its post-dominator when every path to it is elementwise (edge patterns:
//   a broadcast whose result has the operand's shape, e.g. the bias or the
//   residual add, counts as elementwise) and every op on the way is at most
//   broadcast: conv2d + add(bias) + add(residual) + relu is one group.
//   An elementwise/broadcast group fuses into its post-dominator when the
//   paths are at most injective, or the post-dominator is a reduction; ops on
//   the way must be at most injective, and the post-dominator's group may be
//   anything but opaque (it may already hold a conv2d: relu -> add joins it).
// - phase 1: an injective group fuses into its post-dominator when every op
//   on the paths, the post-dominator's group included, is at most injective;
//   a crop (a strided_slice of unit steps, isCrop) also fuses into a
//   reduction post-dominator (softmax over a matmul's padded columns, read
//   through the crop instead of a copy of the scores: a Whisper-style
//   encoder's attention, 1 thread, 6.7 ms a call less; a graph attention
//   network's masked softmax with its score ops, 21 -> 16.6 ms).
// - A reduction's group never fuses into its consumers: reductions end a
//   group (an elementwise/injective producer may fuse into it: TVM's
//   kCommReduce rule; softmax is one). Opaque ops (pooling, ...) stay alone.
// - Fusing a node into its post-dominator takes every node on the paths
//   between them, so a group is convex and a value is computed once: a
//   producer used by two groups stays in its own group, whose output it is.
//   A value also used outside the block (the return, a later block) becomes
//   an extra output of its group (a tuple return plus tuple-get bindings).
// - `max-depth` bounds the number of ops in one group (TVM's
//   max_fuse_depth counts fused nodes the same way); a fusion that would
//   exceed it is refused. max-depth=1 makes every op its own group.
//
// Every group, single ops included (legalize treats all primitive functions
// alike), becomes `graph @fused_<op1>_<op2>...(params) -> T attrs(primitive =
// true)` named after its ops in block order (`_1`, `_2`, ... for a different
// body under the same name; a structurally identical group shares the
// function) and the block gets `%v = call @fused_...(args)` in place of the
// group's last op. Constants the group reads become parameters; their
// bindings stay in the caller. Only op bindings are grouped, and call_tir of
// an unscheduled prim func whose pattern is not opaque (tir_op_pattern.h: a
// kernel a user wrote, fused like an op of that pattern; legalize's FuseTIR
// merges its body with the group's): constants, tuples, tuple items,
// aliases and calls stay in the caller as they are.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include "../dominator.h"
#include "../outline.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

using ops::OpPattern;

// TVM's GraphPartitioner over one block: union-find groups.
class Partitioner {
 public:
  Partitioner(const DataflowGraph& g, const PostDomTree& t, int64_t max_depth, std::vector<bool> crops)
      : g_(g), t_(t), max_(max_depth), crops_(std::move(crops)) {
    for (const auto& n : g.nodes) {
      Group gr;
      gr.pattern = n.pattern;
      gr.anchor = n.pattern == OpPattern::OutEwiseFusable;
      groups_.push_back(gr);
    }
  }

  void run() {
    for (int phase = 0; phase < 2; ++phase) runPhase(phase);
  }

  size_t root(size_t i) {
    while (groups_[i].parent != kNone) i = groups_[i].parent;
    return i;
  }

 private:
  static constexpr size_t kNone = PostDomTree::kNone;
  struct Group {
    size_t parent = kNone;
    OpPattern pattern;
    bool anchor = false;
    int64_t num_nodes = 1;
  };

  template <class F>
  bool checkPathRec(size_t src, size_t sink, F fcond, std::unordered_set<size_t>& visited) {
    if (!visited.insert(src).second) return true;
    if (!fcond(groups_[root(src)].pattern, src == sink)) return false;
    if (src == sink) return true;
    for (const auto& e : g_.nodes[src].outputs)
      if (!checkPathRec(e.node, sink, fcond, visited)) return false;
    return true;
  }
  // Whether every node on the paths from src (excluded) to sink satisfies fcond.
  template <class F>
  bool checkPath(size_t src, size_t sink, F fcond) {
    std::unordered_set<size_t> visited;
    for (const auto& e : g_.nodes[src].outputs)
      if (!checkPathRec(e.node, sink, fcond, visited)) return false;
    return true;
  }

  void mergeFromTo(size_t child, size_t parent) {
    child = root(child);
    parent = root(parent);
    if (child == parent) return;
    groups_[parent].num_nodes += groups_[child].num_nodes;
    groups_[child].parent = parent;
    if (groups_[child].anchor) {
      groups_[parent].anchor = true;
      groups_[parent].pattern = combinePattern(groups_[child].pattern, groups_[parent].pattern);
    }
  }
  void commitFuseRec(size_t src, size_t sink, size_t target, std::unordered_set<size_t>& visited) {
    if (src == sink || !visited.insert(src).second) return;
    mergeFromTo(src, target);
    for (const auto& e : g_.nodes[src].outputs) commitFuseRec(e.node, sink, target, visited);
  }
  void commitFuse(size_t src, size_t sink) {
    std::unordered_set<size_t> visited;
    commitFuseRec(src, sink, sink, visited);
  }

  // The size of sink's group after fusing src (and the paths) into it.
  int64_t countWithNewChild(size_t src, size_t sink) {
    std::set<size_t> roots;
    std::unordered_set<size_t> visited;
    size_t sink_root = root(sink);
    std::vector<size_t> stack{src};
    while (!stack.empty()) {
      size_t n = stack.back();
      stack.pop_back();
      if (n == sink || !visited.insert(n).second) continue;
      if (root(n) != sink_root) roots.insert(root(n));
      for (const auto& e : g_.nodes[n].outputs) stack.push_back(e.node);
    }
    int64_t count = groups_[sink_root].num_nodes;
    for (size_t r : roots) count += groups_[r].num_nodes;
    return count;
  }

  void runPhase(int phase) {
    for (size_t nid = 0; nid < g_.nodes.size(); ++nid) {
      const Group& group = groups_[nid];
      const auto& dom = t_.nodes[nid];
      if (group.pattern == OpPattern::Opaque || dom.parent == kNone) continue;
      size_t sink = dom.parent;
      if (root(nid) == root(sink)) continue;
      if (countWithNewChild(nid, sink) > max_) continue;
      if (group.pattern == OpPattern::OutEwiseFusable) {
        if (phase != 0) continue;
        if (dom.pattern == OpPattern::Elementwise) {
          auto fcond = [](OpPattern k, bool) { return k <= OpPattern::Broadcast; };
          if (checkPath(nid, sink, fcond)) commitFuse(nid, sink);
        }
      } else if (group.pattern <= OpPattern::Broadcast) {
        if (dom.pattern <= OpPattern::Injective || dom.pattern == OpPattern::Reduction) {
          auto fcond = [](OpPattern k, bool is_sink) {
            if (!is_sink) return k <= OpPattern::Injective;
            return k != OpPattern::Opaque;
          };
          if (checkPath(nid, sink, fcond)) commitFuse(nid, sink);
        }
      } else if (group.pattern == OpPattern::Injective) {
        if (phase != 1) continue;
        const bool into_reduction = crops_[nid] && dom.pattern == OpPattern::Reduction;
        auto fcond = [into_reduction](OpPattern k, bool is_sink) {
          return is_sink && into_reduction ? k == OpPattern::Reduction : k <= OpPattern::Injective;
        };
        if (checkPath(nid, sink, fcond)) commitFuse(nid, sink);
      }
      // Reduction: ends its group.
    }
  }

  const DataflowGraph& g_;
  const PostDomTree& t_;
  int64_t max_;
  std::vector<bool> crops_;  // per node: a strided_slice of unit steps (isCrop)
  std::vector<Group> groups_;
};

// A strided_slice whose steps are all 1: what it keeps of each row is
// contiguous, so a reduction reading through it reads as contiguously as
// from the sliced value (the crop of a matmul's padded columns before a
// softmax).
bool isCrop(const ir::Binding& b) {
  if (b.value.kind != ir::ValueKind::Op || b.value.callee != "strided_slice") return false;
  auto it = b.value.attrs.find("strides");
  if (it == b.value.attrs.end()) return true;
  for (int64_t s : it->second.asInts())
    if (s != 1) return false;
  return true;
}

std::vector<OutlineGroup> findGroups(int64_t max_depth, const ir::Module& m, const ir::BindingBlock& block,
                                     size_t bi, const UseInfo& uses) {
  auto escapes = [&](const ir::GraphVar& v) {
    if (uses.returned.count(v.get())) return true;
    auto it = uses.uses.find(v.get());
    if (it == uses.uses.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const UseInfo::Use& u) { return u.block != bi; });
  };
  DataflowGraph g = DataflowGraph::build(block, escapes, &m);
  PostDomTree t = PostDomTree::build(g);
  std::vector<bool> crops;
  for (const auto& b : block.bindings) crops.push_back(isCrop(b));
  Partitioner part(g, t, max_depth, std::move(crops));
  part.run();
  std::map<size_t, OutlineGroup> by_root;
  for (size_t i = 0; i < block.bindings.size(); ++i) {
    const ir::ValueKind kind = block.bindings[i].value.kind;
    if (kind != ir::ValueKind::Op &&
        !(kind == ir::ValueKind::CallTir && g.nodes[i].pattern != OpPattern::Opaque))
      continue;
    OutlineGroup& og = by_root[part.root(i)];
    og.members.push_back(i);
    og.attrs["primitive"] = ir::AttrValue(true);
  }
  std::vector<OutlineGroup> list;
  for (auto& [r, og] : by_root) list.push_back(std::move(og));
  std::sort(list.begin(), list.end(),
            [](const OutlineGroup& a, const OutlineGroup& b) { return a.members.back() < b.members.back(); });
  return list;
}

}  // namespace

PassInfo makeFuseOpsPass() {
  PassInfo p;
  p.name = "fuse-ops";
  p.summary = "Group op bindings into primitive sub-functions by op pattern kind (TVM FuseOps)";
  p.options = {{"max-depth", OptionKind::Int, "16", "most ops in one fused group (>= 1)"}};
  p.run = [](ir::Module& m, const PassOptions& opts, PassContext&) -> std::string {
    int64_t max_depth = opts.getInt("max-depth");
    if (max_depth < 1) throw Error("max-depth must be at least 1, not " + std::to_string(max_depth));
    return outlineModule(m, "group(s)", [&](const ir::BindingBlock& block, size_t bi, const UseInfo& uses) {
      return findGroups(max_depth, m, block, bi, uses);
    });
  };
  return p;
}

}  // namespace mlcc::transform
