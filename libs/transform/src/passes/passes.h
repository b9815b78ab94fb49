// Factories of the passes, one per file in this directory.
#pragma once

#include "mlcc/transform/pass.h"

namespace mlcc::transform {

PassInfo makeDeadCodeEliminationPass();   // dead_code_elimination.cpp
PassInfo makeLegalizePass();              // legalize.cpp (+ fuse_tir.cpp)
PassInfo makeAnnotateTirOpPatternPass();  // annotate_tir_op_pattern.cpp
PassInfo makeCanonicalizePass();          // canonicalize.cpp
PassInfo makeConvertLayoutPass();         // convert_layout.cpp
PassInfo makeFoldConstantsPass();         // fold_constants.cpp
PassInfo makeFuseByPatternPass();         // fuse_by_pattern.cpp
PassInfo makeFuseLayerNormPass();         // fuse_layer_norm.cpp
PassInfo makeFuseOpsPass();               // fuse_ops.cpp
PassInfo makeFuseTirPass();               // legalize.cpp (+ fuse_tir.cpp)
PassInfo makeRewritePass();               // rewrite.cpp

// Removes the bindings of `f` whose values are never used (in dataflow
// blocks; constants, tuples, aliases and op calls elsewhere) and that
// `may_remove` accepts (any, when empty); returns how many. The binding
// sweep of dead-code-elimination (dead_code_elimination.cpp), which other
// passes call for their own leftovers.
int eliminateDeadBindings(ir::GraphFunc& f, const std::function<bool(const ir::Binding&)>& may_remove = {});

// Whether `op` is one of the reductions over an `axes` attribute (with
// `keepdims`) that the layout passes move: sum, mean, max, min.
inline bool isAxesReduction(const std::string& op) {
  return op == "sum" || op == "mean" || op == "max" || op == "min";
}

}  // namespace mlcc::transform
