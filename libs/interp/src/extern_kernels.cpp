// The interpreter's library kernels (see extern_kernels.h).
#include "extern_kernels.h"

#include <optional>

#include "mlcc/ops/library_kernels.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::interp {

ir::Tensor runExtern(const std::string& symbol, const std::vector<ir::Tensor>& operands) {
  std::optional<ops::LibraryKernel> k = ops::findLibraryKernel(symbol);
  if (!k)
    throw Error("call_extern \"" + symbol + "\": no such library kernel (known: " +
                ops::libraryKernelList("blas") + ", " + ops::libraryKernelList("cublas") + ")");
  if (operands.size() != k->params.size())
    throw Error("call_extern \"" + symbol + "\" takes " + std::to_string(k->params.size()) +
                " operands, not " + std::to_string(operands.size()));
  ir::Tensor y = ops::computeOp(k->base, {operands[0], operands[1]}, {})[0];
  if (k->bias) y = ops::computeOp("add", {y, operands[2]}, {})[0];
  if (k->relu) y = ops::computeOp("relu", {y}, {})[0];
  return y;
}

}  // namespace mlcc::interp
