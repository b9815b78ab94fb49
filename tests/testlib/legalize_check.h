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

// Adds a GoogleTest failure describing the first mismatches (or an error).
void expectLegalizeMatchesKernel(const std::string& op, const std::vector<ir::Tensor>& operands,
                                 const ir::Attrs& attrs, const LegalizeCheckOptions& opts = {});

}  // namespace mlcc::test
