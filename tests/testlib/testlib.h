// Small helpers shared by the unit tests.
#pragma once

#include <string>

namespace mlcc::test {

// Path of a file under tests/ (e.g. "ir/valid/mlp.ir").
std::string dataPath(const std::string& rel);

// Reads a whole file; fails the current test (and returns "") when it can't.
std::string readFile(const std::string& path);

}  // namespace mlcc::test
