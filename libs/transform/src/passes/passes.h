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

}  // namespace mlcc::transform
