// Random IR for property tests.
//
// randomModule(seed) builds a well-formed module that exercises the whole
// data model: graph functions (dataflow and plain blocks, every value kind,
// inline constants of several dtypes, attributes of every kind, call_tir and
// calls of graph sub-functions, symbolic dimensions) and prim funcs (loops
// of every kind, blocks with iteration variables, regions, init and
// predicates, allocations in every scope, if/else, every expression kind and
// intrinsic, all dtypes, negative, infinite and NaN literals) with traces.
// Only what the text grammar (artifacts_schema/ir-grammar.md) can express is
// generated. Local names deliberately repeat (two loops named %i).
// The same seed gives the same module on every run and platform
// (std::mt19937_64 with our own range reduction).
//
// renameAll(m) is a deep copy with new nodes in which every local (TIR var,
// buffer, symbolic variable, graph variable, trace random variable) has a
// fresh name: structurally equal to m.
// mutateOnce(m) is a copy with one small semantic change (a literal, an
// operator, a loop kind, an attribute, a block name, a dtype-consistent
// operand swap, ...): structurally unequal to m.
#pragma once

#include <cstdint>

#include "mlcc/ir/module.h"

namespace mlcc::test {

struct RandomIrOptions {
  int max_prim_funcs = 3;     // at least one is made
  int max_sub_graphs = 2;     // graph sub-functions called from @main
  int max_stmt_depth = 3;     // nesting of loops, blocks and ifs
  int max_expr_depth = 3;     // nesting of expressions
  double trace_chance = 0.6;  // chance that a prim func carries a trace
};

mlcc::ir::Module randomModule(uint64_t seed, const RandomIrOptions& opts = {});

mlcc::ir::Module renameAll(const mlcc::ir::Module& m, uint64_t seed);

mlcc::ir::Module mutateOnce(const mlcc::ir::Module& m, uint64_t seed);

// A graph value of `kind` (the other fields default), for building graph IR by hand.
mlcc::ir::GraphValue graphValue(mlcc::ir::ValueKind kind, std::string callee = {},
                                std::vector<mlcc::ir::GraphVar> args = {});

}  // namespace mlcc::test
