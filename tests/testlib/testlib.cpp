// Shared unit-test helpers (see testlib.h).
#include "testlib.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"

namespace mlcc::test {

std::string dataPath(const std::string& rel) { return std::string(MLCC_TEST_DATA_DIR) + "/" + rel; }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ir::Module parseVerified(const std::string& body) {
  ir::Module m = parseUnverified(body);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  return m;
}

ir::Module parseUnverified(const std::string& body) {
  return ir::parseModule("mlcc.ir 1\n" + body, "test.ir");
}

ir::Tensor iota(ir::DType t, std::vector<int64_t> shape, double scale, double offset) {
  ir::Tensor x = ir::Tensor::zeros(t, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, offset + scale * static_cast<double>(i % 17));
  return x;
}

}  // namespace mlcc::test
