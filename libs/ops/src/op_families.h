// The op families, one source file each; registry.cpp collects them.
#pragma once

#include <vector>

#include "mlcc/ops/op.h"

namespace mlcc::ops {

void registerElementwiseOps(std::vector<OpDef>& ops);  // elementwise.cpp: unary, binary, where, clip, cast
void registerReduceOps(std::vector<OpDef>& ops);       // reduce.cpp: sum ... prod, argmax, argmin, cumsum
void registerNormOps(std::vector<OpDef>& ops);    // norm.cpp: softmax, log_softmax, layer_norm, batch_norm
void registerLinalgOps(std::vector<OpDef>& ops);  // linalg.cpp: matmul, dense
void registerConvOps(std::vector<OpDef>& ops);    // conv.cpp: conv2d, conv2d_nchwc, conv2d_transpose
void registerPoolOps(std::vector<OpDef>& ops);    // pool.cpp: max/avg/global/adaptive pooling
void registerManipulateOps(std::vector<OpDef>& ops);  // manipulate.cpp: reshape ... tile
void registerResizeOps(std::vector<OpDef>& ops);      // resize.cpp: resize2d
void registerLayoutOps(std::vector<OpDef>& ops);      // layout.cpp: layout_transform
void registerScatterOps(std::vector<OpDef>& ops);     // scatter.cpp: gather_nd, scatter_elements, scatter_nd
void registerGridSampleOps(std::vector<OpDef>& ops);  // grid_sample.cpp: grid_sample
void registerTopkOps(std::vector<OpDef>& ops);        // topk.cpp: topk
void registerRecurrenceOps(std::vector<OpDef>& ops);  // recurrence.cpp: recurrence (RNN, GRU, LSTM)

inline std::vector<OpDef> registerAllOpFamilies() {
  std::vector<OpDef> ops;
  registerElementwiseOps(ops);
  registerReduceOps(ops);
  registerNormOps(ops);
  registerLinalgOps(ops);
  registerConvOps(ops);
  registerPoolOps(ops);
  registerManipulateOps(ops);
  registerResizeOps(ops);
  registerLayoutOps(ops);
  registerScatterOps(ops);
  registerGridSampleOps(ops);
  registerTopkOps(ops);
  registerRecurrenceOps(ops);
  return ops;
}

}  // namespace mlcc::ops
