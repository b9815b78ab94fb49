// Shared unit-test helpers (see testlib.h).
#include "testlib.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

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

std::string fixture(const std::string& name) {
  const std::string path = dataPath("unit/fixtures/" + name);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read fixture " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::string header = "mlcc.ir 1";
  if (text.compare(0, header.size(), header) != 0)
    throw std::runtime_error("fixture " + path + " does not start with \"" + header + "\"");
  return text.substr(header.size());  // keeps the header's newline
}

ir::Module parseVerified(const std::string& body) {
  ir::Module m = parseUnverified(body);
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  return m;
}

ir::Module parseUnverified(const std::string& body) {
  return ir::parseModule("mlcc.ir 1\n" + body, "test.ir");
}

namespace {
std::string thrownError(const std::function<void()>& fn, bool formatted) {
  try {
    fn();
  } catch (const Error& e) {
    return formatted ? e.format() : e.message();
  }
  return "(no error)";
}
}  // namespace

std::string errorOf(const std::function<void()>& fn) { return thrownError(fn, false); }

std::string errorAt(const std::function<void()>& fn) { return thrownError(fn, true); }

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

ir::Tensor iota(ir::DType t, std::vector<int64_t> shape, double scale, double offset) {
  ir::Tensor x = ir::Tensor::zeros(t, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, offset + scale * static_cast<double>(i % 17));
  return x;
}

}  // namespace mlcc::test
