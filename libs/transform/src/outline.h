// Outlining groups of bindings into primitive graph sub-functions, shared by
// fuse-ops and fuse-by-pattern.
//
// A group is a set of bindings of one dataflow block that is convex (no path
// leaves the group and comes back) and whose last binding in block order
// depends on no value defined after it. The group becomes
//
//   graph @fused_<op1>_<op2>...(%p...) -> T attrs(primitive = true, ...) {
//     dataflow { ...the group's bindings, copied... }
//     return %out                 // or (%out0, %out1) for several outputs
//   }
//
// and in the caller one `call @fused_...(args)` at the place of the group's
// last binding (plus `%v = %tuple[i]` bindings when it has several outputs,
// which keep the original variables so later uses stay valid). Parameters are
// the values the group reads and does not define, in order of first use
// (constants included: their bindings stay in the caller). Outputs are the
// group's values used outside it (later bindings, other blocks, the return);
// a group whose values are all unused returns its last binding.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mlcc/ir/module.h"

namespace mlcc::transform {

// Names the new sub-functions: `base`, else `base_1`, `base_2`, ...; a
// function of the module (or added before) with the same name and the same
// body (structural equality, attributes included) is shared instead.
class SubFunctionNamer {
 public:
  explicit SubFunctionNamer(const ir::Module& m);
  // Sets fn.name and returns it; keeps fn in added() when it is new.
  std::string intern(ir::GraphFunc fn, const std::string& base);
  std::vector<ir::GraphFunc>& added() { return added_; }

 private:
  const ir::Module& m_;
  std::vector<ir::GraphFunc> added_;
};

// The uses of each variable of a graph function: binding positions in all
// blocks, and whether the return names it.
struct UseInfo {
  struct Use {
    size_t block;
    size_t index;
  };
  std::unordered_map<const ir::GraphVarNode*, std::vector<Use>> uses;
  std::unordered_set<const ir::GraphVarNode*> returned;
  static UseInfo of(const ir::GraphFunc& f);
};

struct OutlineGroup {
  std::vector<size_t> members;  // binding indices in the block, ascending
  ir::Attrs attrs;              // the sub-function's attributes
  // The parameters in this order, when given: exactly the values the group
  // reads and does not define (default: in order of first use).
  std::vector<ir::GraphVar> params;
};

// The symbolic variables a type's dimensions use (collectTypeVars), and
// those it has as whole dimensions: what a parameter of that type binds
// (collectBoundVars).
void collectTypeVars(const ir::Type& t, std::unordered_set<const ir::VarNode*>& out);
void collectBoundVars(const ir::Type& t, std::unordered_set<const ir::VarNode*>& out);

// Outlines the (disjoint) groups of block `block` of `f`; new sub-functions go
// to namer.added() (the caller appends them to the module). A group whose
// types use a symbolic dimension its parameters do not bind is left as it
// is. Returns the number of groups outlined.
int outlineGroups(ir::GraphFunc& f, size_t block, const std::vector<OutlineGroup>& groups,
                  const UseInfo& uses, SubFunctionNamer& namer);

// The groups to outline in one dataflow block (`block` is f.blocks[block_index]).
using GroupFinder = std::function<std::vector<OutlineGroup>(const ir::BindingBlock& block, size_t block_index,
                                                            const UseInfo& uses)>;

// Whether a graph function is marked `primitive = true` (a fused group).
bool isPrimitive(const ir::GraphFunc& f);

// The body of an outlining pass: for each graph function of `m` that is not
// primitive, outlines the groups `find` gives for each of its dataflow blocks
// (UseInfo taken once per function), then appends the new sub-functions to
// the module. Returns "" when nothing was outlined, else
// "<N> <what>, <M> new sub-function(s)".
std::string outlineModule(ir::Module& m, const std::string& what, const GroupFinder& find);

}  // namespace mlcc::transform
