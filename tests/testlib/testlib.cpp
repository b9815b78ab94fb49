// Shared unit-test helpers (see testlib.h).
#include "testlib.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

}  // namespace mlcc::test
