// Structural equality and hashing, insensitive to the names of local
// variables, buffers and symbolic dimensions (alpha-equivalence): two
// functions are equal when they are the same program up to renaming.
// Function names are ignored when comparing two functions; modules compare
// function by function in order, with calls matched by callee name.
// Attributes, weights names and traces take part. Graph bindings outside
// dataflow blocks compare as one plain block per run: empty plain blocks and
// the split of adjacent plain blocks are ignored (as the text format does;
// dataflow block boundaries do take part). The hash is consistent
// with equality and stable across runs and platforms (the tuning database
// keys workloads by it).
#pragma once

#include <cstdint>

#include "mlcc/ir/module.h"

namespace mlcc::ir {

struct StructuralOptions {
  bool compare_traces = true;  // false: a scheduled func equals its schedule-free twin
};

bool structuralEqual(const Module& a, const Module& b, StructuralOptions opts = {});
bool structuralEqual(const PrimFunc& a, const PrimFunc& b, StructuralOptions opts = {});
bool structuralEqual(const GraphFunc& a, const GraphFunc& b, StructuralOptions opts = {});
bool structuralEqual(const PrimExpr& a, const PrimExpr& b);

uint64_t structuralHash(const Module& m, StructuralOptions opts = {});
uint64_t structuralHash(const PrimFunc& f, StructuralOptions opts = {});
uint64_t structuralHash(const GraphFunc& f, StructuralOptions opts = {});
uint64_t structuralHash(const PrimExpr& e);

}  // namespace mlcc::ir
