// Small helpers shared by the unit tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"

namespace mlcc::test {

// Path of a file under tests/ (e.g. "ir/valid/mlp.ir").
std::string dataPath(const std::string& rel);

// Reads a whole file; fails the current test (and returns "") when it can't.
std::string readFile(const std::string& path);

// The text of tests/unit/fixtures/NAME (an IR file, e.g. "matmul_64.ir")
// after its "mlcc.ir 1" header line: what parseVerified, parseUnverified and
// parsePrim take. Throws std::runtime_error when the file cannot be read or
// has no such header, so a missing fixture stops the test that needs it.
std::string fixture(const std::string& name);

// Parses `body` after an "mlcc.ir 1" header line and verifies it.
ir::Module parseVerified(const std::string& body);
// The same without the verifier: for modules it refuses (say, accesses
// provably out of bounds) whose run-time errors a test checks.
ir::Module parseUnverified(const std::string& body);

// What the mlcc::Error that `fn` throws says: errorOf gives its message,
// errorAt its "FILE:LINE:COL: error: message" form (with the source line);
// both "(no error)" when fn returns.
std::string errorOf(const std::function<void()>& fn);
std::string errorAt(const std::function<void()>& fn);

// How often `what` occurs in `text` (overlapping occurrences too).
int occurrences(const std::string& text, const std::string& what);

// `text` with every occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to);

// A tensor whose element i is offset + scale * (i % 17): varied, small,
// exactly representable values.
ir::Tensor iota(ir::DType t, std::vector<int64_t> shape, double scale = 1.0, double offset = 0.0);

}  // namespace mlcc::test
