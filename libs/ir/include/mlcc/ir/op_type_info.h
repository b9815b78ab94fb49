// What libs/ir needs to know about graph ops and cannot know itself: the
// type an op binding must have, and its FLOP count. The op registry
// (libs/ops, ops::opTypeInfo()) implements it; the verifier and the module
// summary take it as an argument, so a caller that forgets the registry gets
// a compile error rather than a silently weaker check.
// structuralChecksOnly() knows no op: for IR without graph op bindings, or
// tests of the structural rules alone.
#pragma once

#include <cstdint>

namespace mlcc::ir {

struct GraphFunc;
struct Binding;

class OpTypeInfo {
 public:
  virtual ~OpTypeInfo() = default;
  // Throws mlcc::Error when op binding `b` of `f` does not have the type the
  // op infers from its arguments and attributes (or the op does not exist).
  virtual void checkBinding(const GraphFunc& f, const Binding& b) const = 0;
  // FLOPs of one execution of op binding `b` (0 when unknown).
  virtual int64_t flops(const Binding& b) const = 0;
};

// Accepts every op binding, counts no FLOPs.
const OpTypeInfo& structuralChecksOnly();

}  // namespace mlcc::ir
