// Random operands: numpy_reference.h's randomTensor.
//
// Checks an op's TensorIR compute definition against its reference kernel:
// legalize the op for the operands' types, verify the prim func, run it
// through the interpreter, run ops::computeOp on the same operands, and
// compare element by element.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::test {

struct LegalizeCheckOptions {
  double rtol = 1e-5;
  double atol = 1e-6;
  // Also legalize for these types (e.g. with a symbolic batch) and check
  // the same operands; empty: only the operands' static types.
  bool also_symbolic_batch = true;
};

// f16/bf16 with f32 accumulation (the kernels: double): exact in practice,
// but an f16 result may round to the neighbouring value.
inline constexpr LegalizeCheckOptions kHalfAccumulationOptions{.rtol = 1e-3, .atol = 1e-3};

// Adds a GoogleTest failure describing the first mismatches (or an error).
void expectLegalizeMatchesKernel(const std::string& op, const std::vector<ir::Tensor>& operands,
                                 const ir::Attrs& attrs, const LegalizeCheckOptions& opts = {});

// Legalizes `op` with symbolic input height and width (h, w), verifies the
// prim func and runs it on `operands` (whose first is the NCHW input),
// comparing with the kernel: |out - expected| <= tol * (1 + |expected|).
void expectSymbolicSpatialMatchesKernel(const char* op, const std::vector<ir::Tensor>& operands,
                                        const ir::Attrs& attrs, double tol = 1e-4);

// Each op is registered and has a legalization.
void expectEveryOpHasALegalization(const std::vector<const char*>& ops);

}  // namespace mlcc::test
