// The op pattern kind of a prim func (TVM's AnnotateTIROpPattern), so that
// fuse-ops can group a call_tir of a kernel a user wrote with the ops around
// it as it groups ops (MLC 7.7), and legalize's FuseTIR then merges them.
//
// Derived from the function's one block (a single loop nest, no
// allocations, no predicate, one store to the last parameter at its spatial
// iteration variables in order, each over the whole output dimension; an
// init only in a reduction):
//   - elementwise: every load reads its buffer at the same variables;
//   - broadcast: every load reads a subsequence of them in order (or 0);
//   - injective: other indices (a transpose, a gather of a fixed pattern);
//   - reduction: the block also has reduce variables, an init, and reads
//     the output it accumulates into;
//   - opaque: anything else (several blocks or stores, loads in indices).
// The `op_pattern` attribute of the prim func ("elementwise", ..., one of
// ops::patternName), when present, is taken as it is: a user may state it.
#pragma once

#include "mlcc/ir/module.h"
#include "mlcc/ops/op.h"

namespace mlcc::transform {

// The pattern derived from the body (ignoring any attribute).
ops::OpPattern derivePrimFuncPattern(const ir::PrimFunc& f);

// The `op_pattern` attribute when present and valid, else the derived one.
ops::OpPattern primFuncPattern(const ir::PrimFunc& f);

}  // namespace mlcc::transform
