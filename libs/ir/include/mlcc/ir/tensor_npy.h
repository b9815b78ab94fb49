// Tensors as NumPy .npy files: the inputs and outputs of mlcc-run and of
// mlcc-pipeline verify. bf16 (no numpy dtype) is written as f32.
#pragma once

#include <string>

#include "mlcc/ir/tensor.h"

namespace mlcc {
class AtomicFileWriter;
}

namespace mlcc::ir {

// Reads a .npy file as a tensor of the file's dtype. A numpy dtype that is
// not an mlcc one is an error naming `what` (e.g. "input 'x'") and the file.
Tensor readNpyTensor(const std::string& path, const std::string& what);

// Writes `t` atomically as a .npy file.
void writeNpyTensor(const std::string& path, const Tensor& t);
// Writes `t` as .npy bytes into `out`, which the caller commits (several
// outputs at once: AtomicFileSet).
void writeNpyTensor(AtomicFileWriter& out, const Tensor& t);

}  // namespace mlcc::ir
