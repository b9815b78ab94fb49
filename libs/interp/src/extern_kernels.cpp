// The interpreter's library kernels (see extern_kernels.h).
#include "extern_kernels.h"

#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::interp {

ir::Tensor runExtern(const std::string& symbol, const std::vector<ir::Tensor>& operands) {
  const size_t dot = symbol.find('.');
  const std::string lib = dot == std::string::npos ? "" : symbol.substr(0, dot);
  std::string rest = dot == std::string::npos ? "" : symbol.substr(dot + 1);
  const bool relu = rest.ends_with("_relu");
  if (relu) rest.resize(rest.size() - 5);
  const bool bias = rest.ends_with("_bias");
  if (bias) rest.resize(rest.size() - 5);
  if ((lib != "blas" && lib != "cublas") || (rest != "dense" && rest != "matmul"))
    throw Error("call_extern \"" + symbol +
                "\": the interpreter knows LIB.dense|matmul[_bias][_relu] for LIB blas or cublas");
  const size_t want = bias ? 3 : 2;
  if (operands.size() != want)
    throw Error("call_extern \"" + symbol + "\" takes " + std::to_string(want) + " operands, not " +
                std::to_string(operands.size()));
  ir::Tensor y = ops::computeOp(rest, {operands[0], operands[1]}, {})[0];
  if (bias) y = ops::computeOp("add", {y, operands[2]}, {})[0];
  if (relu) y = ops::computeOp("relu", {y}, {})[0];
  return y;
}

}  // namespace mlcc::interp
