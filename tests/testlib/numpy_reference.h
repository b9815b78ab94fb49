// Checking the op registry's reference kernels against numpy/torch, shared by
// every tests/unit/ops_*_test: seeded random tensors, .npy exchange, type
// inference helpers, and running all cases of a test in ONE python process
// (inputs are written as .npy files to a temp dir, the script writes the
// references, and the C++ side compares them with computeOp's results).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/graph.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/support/npy.h"
#include "tensor_files.h"

namespace mlcc::test {

// Random tensors: floats uniform in [lo, hi), integers uniform in
// [int_lo, int_hi], booleans fair.
struct RandomRange {
  double lo = -3, hi = 3;
  int64_t int_lo = -3, int_hi = 3;
};
ir::Tensor randomTensor(std::mt19937& rng, ir::DType t, std::vector<int64_t> shape, const RandomRange& range);
// The same with integers uniform in [lo, hi] too.
ir::Tensor randomTensor(std::mt19937& rng, ir::DType t, std::vector<int64_t> shape, double lo = -3,
                        double hi = 3);

// "[2, 3]"
std::string shapeText(const std::vector<int64_t>& shape);

// The .npy dtype of `t` (throws for bf16, which numpy lacks).
const char* npyDescr(ir::DType t);
// `t` as a .npy array; bf16 is written as f32 (exact).
NpyArray toNpy(const ir::Tensor& t);
// The elements of a numeric .npy array as doubles.
std::vector<double> npyValues(const NpyArray& a);

// One op call and a python callable over its operands (numpy arrays) that
// computes the expected result, e.g. "lambda a, b: np.add(a, b)". The script
// imports numpy as np, math, and (when installed; else None) torch and
// torch.nn.functional as F.
struct RefCase {
  std::string op;
  std::vector<ir::Tensor> inputs;
  ir::Attrs attrs;
  std::string fn;
  double rtol = 1e-5, atol = 1e-5;
  std::string label = "";  // extra text naming the case in failures
};

struct RefOptions {
  std::string prelude = "";   // python definitions the callables use
  bool results_list = false;  // each callable returns a list: one array per result of the op
  bool same_dtype = false;    // each reference must have the dtype of its result
  bool same_bytes = false;    // results must equal the references byte for byte (implies same_dtype)
};

// A RefCase::fn from a python expression over n0, n1, ... (the operands as
// numpy arrays) and t0, t1, ... (the same as torch tensors, when torch is
// installed); the value is returned as an array of n0's dtype.
std::string operandExpr(const std::string& expr);

bool torchAvailable();
// An empty string when python3 with numpy and torch can run; else why not
// (for GTEST_SKIP).
std::string torchUnavailable();

// Runs every case (skipping those whose callable mentions torch when torch is
// missing) and compares; returns the number compared (0 when python with
// numpy is missing).
int runRefCases(const std::vector<RefCase>& cases, const RefOptions& options = {});

// The printed type inferOpType gives.
std::string inferred(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs = {});
// The message of the mlcc::Error that inferOpType throws, or "no error
// (inferred T)".
std::string inferError(const std::string& op, const std::vector<ir::Type>& inputs,
                       const ir::Attrs& attrs = {});
// EXPECT that `fn` throws an mlcc::Error whose message contains `text`.
void expectOpError(const std::function<void()>& fn, const std::string& text);

}  // namespace mlcc::test
