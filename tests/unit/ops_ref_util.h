// Helpers for the op reference tests (ops_linalg_test, ops_conv_test,
// ops_pool_test): seeded random tensors, .npy exchange, and running every
// case of one test file against numpy/torch in a single python invocation.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/npy.h"
#include "tensor_files.h"

namespace mlcc::test {

inline ir::Tensor randomTensor(ir::DType dt, std::vector<int64_t> shape, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::zeros(dt, std::move(shape));
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(-5, 5);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, ir::isFloat(dt) ? real(rng) : integer(rng));
  return t;
}

inline const char* npyDescr(ir::DType dt) {
  switch (dt) {
    case ir::DType::f32: return "<f4";
    case ir::DType::f16: return "<f2";
    case ir::DType::i8: return "|i1";
    case ir::DType::i32: return "<i4";
    case ir::DType::i64: return "<i8";
    case ir::DType::boolean: return "|b1";
    default: break;
  }
  throw Error("no .npy dtype for " + std::string(ir::dtypeName(dt)));
}

inline void saveTensor(const std::string& path, const ir::Tensor& t) {
  NpyArray a{npyDescr(t.dtype()), t.shape(), {}};
  a.data.assign(t.bytes(), t.bytes() + t.nbytes());
  writeNpy(path, a);
}

inline ir::Tensor loadTensor(const std::string& path, ir::DType dt) {
  NpyArray a = readNpy(path);
  EXPECT_EQ(a.dtype, npyDescr(dt)) << path;
  return ir::Tensor::copyOf(dt, a.shape, a.data);
}

inline bool pythonHas(const std::string& module) {
  if (!pythonNumpyUnavailable().empty()) return false;
  std::string cmd = "/usr/bin/python3 -c 'import " + module + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// One op call checked against a python expression over the operands: n0, n1
// (numpy arrays) or t0, t1 (torch tensors); np, torch and F are imported.
struct RefCase {
  std::string name;  // a file-name-safe identifier
  std::string op;
  std::vector<ir::Tensor> inputs;
  ir::Attrs attrs;
  std::string python;
  double rtol = 1e-4, atol = 1e-4;
};

inline void expectClose(const ir::Tensor& got, const ir::Tensor& want, double rtol, double atol,
                        const std::string& name) {
  ASSERT_EQ(got.shape(), want.shape()) << name;
  ASSERT_EQ(got.dtype(), want.dtype()) << name;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    double g = got.at(i), w = want.at(i);
    bool same_nan = std::isnan(g) && std::isnan(w);
    if (!same_nan && !(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      ADD_FAILURE() << name << ": element " << i << " is " << g << ", torch/numpy gives " << w;
      ++bad;
    }
  }
}

// Runs every case through mlcc::ops::computeOp and through one python
// script, and compares the results.
inline void runRefCases(const std::vector<RefCase>& cases, bool need_torch) {
  TempDir dir;
  std::ostringstream py;
  py << "import numpy as np\n";
  if (need_torch) py << "import torch\nimport torch.nn.functional as F\ntorch.set_num_threads(1)\n";
  std::vector<ir::Tensor> got;
  std::vector<bool> ok;
  for (const auto& c : cases) {
    for (size_t i = 0; i < c.inputs.size(); ++i)
      saveTensor(dir.file(c.name + "_" + std::to_string(i) + ".npy"), c.inputs[i]);
    try {
      got.push_back(ops::computeOp(c.op, c.inputs, c.attrs).at(0));
      ok.push_back(true);
    } catch (const Error& e) {
      ADD_FAILURE() << c.name << ": " << e.message();
      got.emplace_back();
      ok.push_back(false);
    }
    py << "# " << c.name << "\n";
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      py << "n" << i << " = np.load('" << c.name << "_" << i << ".npy')\n";
      if (need_torch) py << "t" << i << " = torch.from_numpy(n" << i << ")\n";
    }
    py << "r = " << c.python << "\n";
    if (need_torch) py << "r = r.numpy() if torch.is_tensor(r) else r\n";
    py << "np.save('" << c.name << "_out.npy', np.array(r, dtype=n0.dtype, order='C'))\n";
  }
  ASSERT_EQ(runPython(py.str(), dir.path()), 0);
  for (size_t k = 0; k < cases.size(); ++k) {
    if (!ok[k]) continue;
    ir::Tensor want = loadTensor(dir.file(cases[k].name + "_out.npy"), got[k].dtype());
    expectClose(got[k], want, cases[k].rtol, cases[k].atol, cases[k].name);
  }
}

// The message of the mlcc::Error that inferOpType throws ("" when none).
inline std::string inferError(const std::string& op, const std::vector<ir::Type>& inputs,
                              const ir::Attrs& attrs = {}) {
  try {
    ops::inferOpType(op, inputs, attrs);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace mlcc::test
