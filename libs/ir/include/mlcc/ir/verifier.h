// The IR verifier: the well-formedness rules every stage must keep.
// Graph level: SSA (each variable defined once, before its uses, in scope),
// call targets exist (call_tir -> prim func, call -> graph func), arity and
// types of call_tir arguments agree with the prim func's buffers, tuple
// indices are in range, return matches the declared type, inline constants
// have as many elements as their type, only calls carry keyword arguments.
// Every tensor type and buffer (both levels) has no negative constant
// dimension, and its constant dimensions' size in bytes fits in int64.
// Attributes keep the AttrValue invariant (no i64 literal expressions). Op
// bindings have the type the op registry infers (`op_types`, see op_type_info.h).
// TensorIR: every variable and buffer used is in scope; loop extents and
// iteration domains are i64; block bindings are expressions of enclosing loop
// variables only; thread tags are valid; loads/stores have one index per
// dimension, the buffer's dtype and constant indices within constant
// bounds; no access is provably out of bounds (an unguarded access under
// loops of constant extent whose index leaves a constant dimension at some
// iteration); expression dtypes are consistent.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/op_type_info.h"

namespace mlcc::ir {

struct SourceMap;

// Throws mlcc::Error for the first violation, naming the function (and the
// block or variable), with a source location when `source_map` knows it.
// `op_types` checks each op binding after the structural checks (pass
// ops::opTypeInfo(), or structuralChecksOnly()).
void verifyModule(const Module& m, const OpTypeInfo& op_types, const SourceMap* source_map = nullptr);
void verifyPrimFunc(const PrimFunc& f, const SourceMap* source_map = nullptr);

// Why a tensor of `dtype` and `shape` cannot exist: a negative constant
// dimension, or constant dimensions whose size in bytes overflows int64
// (checked_math.h; symbolic dimensions are not counted). "" when it can.
// typeSizeError: the same for a tensor or every field of a tuple.
std::string sizeError(DType dtype, const std::vector<PrimExpr>& shape);
std::string typeSizeError(const Type& t);

}  // namespace mlcc::ir
