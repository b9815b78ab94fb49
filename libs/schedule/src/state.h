// The state behind a Schedule, shared by the primitives' implementations:
// the function being scheduled, the values of the trace's random variables,
// the sampler, and the instruction table (instructions.def).
//
// A primitive is one apply function:
//   std::vector<RVValue> applySplit(ScheduleState& s, const InstArgs& args,
//                                   std::optional<ir::AttrValue>& decision);
// It reads its inputs through `args` (which resolves trace references and
// reports bad arguments), checks legality (s.fail(...) on violation),
// installs the new body with s.setBody(...) (or s.func fields), and returns
// its outputs. Sampling instructions read and fill `decision`. The Schedule
// records the instruction in the trace and re-verifies the function.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "mlcc/ir/stmt.h"
#include "mlcc/schedule/schedule.h"

namespace mlcc::schedule {

struct BlockHandle {
  std::string block;  // the block's name
};
struct LoopHandle {
  ir::Var var;  // the loop's variable; nullptr: the root ("no loop")
};
using RVValue = std::variant<BlockHandle, LoopHandle, int64_t>;

class ScheduleState {
 public:
  ScheduleState(ir::PrimFunc f, uint64_t seed);

  ir::PrimFunc func;
  std::map<std::string, RVValue> rvs;
  std::mt19937_64 rng;
  std::set<std::string> used_names;  // every trace variable name so far
  int next_name = 0;

  // The block named `name` / the loop with variable `var`; fail() if absent.
  const ir::BlockNode& block(const std::string& name) const;
  const ir::ForNode& loop(const ir::Var& var) const;

  void setBody(ir::Stmt body) { func.body = std::move(body); }

  // Throws ScheduleError "in prim @f: <message>".
  [[noreturn]] void fail(const std::string& message) const;

  // For messages: `loop %i0`, `block "dense"`.
  static std::string describe(const ir::Var& loop_var);
  static std::string describe(const ir::BlockNode& block);

  // A fresh trace variable name with the given prefix ("b", "l", "v").
  std::string freshName(const char* prefix);

  // A uniformly random integer in [0, n).
  int64_t randomIndex(int64_t n);
};

// The resolved arguments of one instruction.
class InstArgs {
 public:
  InstArgs(const ScheduleState& s, const ir::TraceInst& inst) : s_(s), inst_(inst) {}
  const ir::TraceInst& inst() const { return inst_; }
  size_t size() const { return inst_.inputs.size(); }
  // Fails unless there are exactly n positional inputs.
  void expectCount(size_t n) const;

  // Positional input i as a block name, a loop variable (a LoopRV bound to
  // the root gives nullptr only when allow_root), an integer (literal or
  // ExprRV), a string, or lists of those.
  std::string block(size_t i) const;
  // Whether positional input i refers to a block (else: a loop or other value).
  bool isBlock(size_t i) const;
  ir::Var loop(size_t i, bool allow_root = false) const;
  int64_t integer(size_t i) const;
  std::string string(size_t i) const;
  std::vector<ir::Var> loops(size_t i) const;
  // A non-empty list of loops, each given once (`verb` names the primitive
  // in the message: "cannot fuse: loop %i is given twice").
  std::vector<ir::Var> distinctLoops(size_t i, const std::string& verb) const;
  const ir::AttrValue& input(size_t i) const;

  // The value of a single AttrValue (an element of a list input).
  int64_t integerOf(const ir::AttrValue& v) const;
  ir::Var loopOf(const ir::AttrValue& v, bool allow_root = false) const;

  // Keyword arguments with defaults.
  int64_t intAttr(const std::string& key, int64_t fallback) const;
  bool boolAttr(const std::string& key, bool fallback) const;
  std::string stringAttr(const std::string& key, const std::string& fallback) const;
  const ir::AttrValue* attr(const std::string& key) const;
  // Fails if a keyword argument other than `known` is present.
  void allowAttrs(const std::vector<std::string>& known) const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  const RVValue& rv(const ir::AttrValue& v) const;
  const ScheduleState& s_;
  const ir::TraceInst& inst_;
};

using ApplyFn = std::vector<RVValue> (*)(ScheduleState&, const InstArgs&,
                                         std::optional<ir::AttrValue>& decision);

struct InstructionKind {
  const char* name;
  ApplyFn apply;
};
const InstructionKind* findInstruction(const std::string& name);

#define MLCC_INSTRUCTION(name, fn) \
  std::vector<RVValue> fn(ScheduleState&, const InstArgs&, std::optional<ir::AttrValue>&);
#include "instructions.def"
#undef MLCC_INSTRUCTION

// Building instructions for the Schedule's methods.
inline ir::AttrValue ref(const BlockRV& b) { return ir::TraceRef{b.name}; }
inline ir::AttrValue ref(const LoopRV& l) { return ir::TraceRef{l.name}; }
inline ir::AttrValue ref(const ExprRV& v) { return ir::TraceRef{v.name}; }
template <class RV>
ir::AttrValue refs(const std::vector<RV>& rvs) {
  ir::AttrValue::List l;
  for (const auto& r : rvs) l.push_back(ref(r));
  return l;
}
ir::TraceInst makeInst(std::string name, std::vector<ir::AttrValue> inputs, ir::Attrs attrs = {});

template <class RV>
std::vector<RV> asRVs(const std::vector<std::string>& names) {
  std::vector<RV> out;
  for (const auto& n : names) out.push_back(RV{n});
  return out;
}

}  // namespace mlcc::schedule
