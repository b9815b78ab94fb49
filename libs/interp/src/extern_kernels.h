// Reference semantics of the library kernels that fusion dispatches with
// call_extern (ops/library_kernels.h; pipelines/patterns/blas.yaml, cublas.yaml): a symbol
// LIB.BASE[_bias][_relu] with LIB blas or cublas and BASE dense or matmul
// is BASE(x, w), then + bias (the third operand), then relu — the ops of
// the pattern it replaced, run by their reference kernels.
#pragma once

#include <string>
#include <vector>

#include "mlcc/ir/tensor.h"

namespace mlcc::interp {

// Throws mlcc::Error for an unknown symbol or a wrong operand count.
ir::Tensor runExtern(const std::string& symbol, const std::vector<ir::Tensor>& operands);

}  // namespace mlcc::interp
