// Checks reference kernels of the op registry against numpy/torch: each case
// is an op call on random tensors and a python lambda computing the
// expected result. All cases of a test run in ONE python process: inputs
// are written as .npy files to a temp dir, the script writes <case>_ref.npy,
// and the C++ side compares them with computeOp's results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/npy.h"
#include "tensor_files.h"

namespace mlcc::test {

struct RefCase {
  std::string op;
  std::vector<ir::Tensor> inputs;
  ir::Attrs attrs;
  std::string fn;  // python callable over the inputs, e.g. "lambda a, b: np.add(a, b)"
  double rtol = 1e-5, atol = 1e-5;
  std::string label;  // extra text naming the case in failures
};

inline bool torchAvailable() {
  static int ok = -1;
  if (ok < 0) ok = std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
  return ok == 1;
}

// Random tensors: floats uniform in [lo, hi), ints uniform in [lo, hi], bools fair.
inline ir::Tensor randTensor(std::mt19937& rng, ir::DType t, std::vector<int64_t> shape, double lo = -3,
                             double hi = 3) {
  ir::Tensor x = ir::Tensor::zeros(t, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v;
    if (ir::isFloat(t))
      v = std::uniform_real_distribution<double>(lo, hi)(rng);
    else if (t == ir::DType::boolean)
      v = static_cast<double>(rng() & 1);
    else
      v = static_cast<double>(
          std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
    x.set(i, v);
  }
  return x;
}

inline NpyArray toNpy(const ir::Tensor& t) {
  NpyArray a;
  a.shape = t.shape();
  const char* descr = "<f4";
  switch (t.dtype()) {
    case ir::DType::f32: descr = "<f4"; break;
    case ir::DType::f16: descr = "<f2"; break;
    case ir::DType::i8: descr = "|i1"; break;
    case ir::DType::i32: descr = "<i4"; break;
    case ir::DType::i64: descr = "<i8"; break;
    case ir::DType::boolean: descr = "|b1"; break;
    case ir::DType::bf16: {  // no numpy dtype: written as f32 (exact)
      a.dtype = "<f4";
      a.data.resize(static_cast<size_t>(t.numel()) * 4);
      for (int64_t i = 0; i < t.numel(); ++i) {
        float f = static_cast<float>(t.at(i));
        std::memcpy(a.data.data() + i * 4, &f, 4);
      }
      return a;
    }
  }
  a.dtype = descr;
  a.data.assign(t.bytes(), t.bytes() + t.nbytes());
  return a;
}

inline std::vector<double> npyValues(const NpyArray& a) {
  std::vector<double> out;
  int64_t n = a.numElements();
  const std::byte* p = a.data.data();
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    if (a.dtype == "<f4") {
      float f;
      std::memcpy(&f, p + i * 4, 4);
      v = f;
    } else if (a.dtype == "<f8") {
      std::memcpy(&v, p + i * 8, 8);
    } else if (a.dtype == "<f2") {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      v = ir::detail::halfBitsToDouble(h);
    } else if (a.dtype == "<i8") {
      int64_t x;
      std::memcpy(&x, p + i * 8, 8);
      v = static_cast<double>(x);
    } else if (a.dtype == "<i4") {
      int32_t x;
      std::memcpy(&x, p + i * 4, 4);
      v = x;
    } else if (a.dtype == "|i1") {
      v = static_cast<int8_t>(p[i]);
    } else if (a.dtype == "|b1" || a.dtype == "|u1") {
      v = static_cast<uint8_t>(p[i]);
    } else {
      ADD_FAILURE() << "unexpected reference dtype " << a.dtype;
      break;
    }
    out.push_back(v);
  }
  return out;
}

inline std::string shapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Runs every case; returns the number compared (0 when python is missing).
inline int runRefCases(const std::vector<RefCase>& cases) {
  std::string why = pythonNumpyUnavailable();
  if (!why.empty()) return 0;
  bool torch = torchAvailable();
  TempDir dir;
  std::string script =
      "import numpy as np\nimport math\ntry:\n    import torch\nexcept ImportError:\n    torch = None\n"
      "def run(name, n, f):\n"
      "    args = [np.load(f'{name}_{i}.npy') for i in range(n)]\n"
      "    np.save(f'{name}_ref.npy', np.asarray(f(*args)))\n";
  std::vector<bool> used(cases.size(), false);
  for (size_t c = 0; c < cases.size(); ++c) {
    const RefCase& rc = cases[c];
    if (!torch && rc.fn.find("torch") != std::string::npos) continue;
    used[c] = true;
    std::string name = "c" + std::to_string(c);
    for (size_t i = 0; i < rc.inputs.size(); ++i)
      writeNpy(dir.file(name + "_" + std::to_string(i) + ".npy"), toNpy(rc.inputs[i]));
    script += "run('" + name + "', " + std::to_string(rc.inputs.size()) + ", " + rc.fn + ")\n";
  }
  if (runPython(script, dir.path()) != 0) return 0;
  int compared = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    if (!used[c]) continue;
    const RefCase& rc = cases[c];
    std::string what = "case " + std::to_string(c) + ": " + rc.op + " " + rc.label + " (" + rc.fn + ")";
    std::vector<ir::Tensor> got;
    try {
      got = ops::computeOp(rc.op, rc.inputs, rc.attrs);
    } catch (const Error& e) {
      ADD_FAILURE() << what << " threw: " << e.message();
      continue;
    }
    NpyArray ref = readNpy(dir.file("c" + std::to_string(c) + "_ref.npy"));
    if (got.size() != 1) {
      ADD_FAILURE() << what << ": " << got.size() << " results";
      continue;
    }
    const ir::Tensor& y = got[0];
    if (y.shape() != ref.shape) {
      ADD_FAILURE() << what << ": shape " << shapeText(y.shape()) << ", numpy " << shapeText(ref.shape);
      continue;
    }
    std::vector<double> want = npyValues(ref);
    int bad = 0;
    for (int64_t i = 0; i < y.numel() && bad < 5; ++i) {
      double g = y.at(i), w = want[static_cast<size_t>(i)];
      bool ok =
          (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= rc.atol + rc.rtol * std::fabs(w);
      if (!ok) {
        ++bad;
        ADD_FAILURE() << what << ": element " << i << " is " << g << ", numpy says " << w;
      }
    }
    ++compared;
  }
  return compared;
}

// EXPECT that `fn` throws an mlcc::Error whose message contains `text`.
inline void expectOpError(const std::function<void()>& fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << text;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(text), std::string::npos)
        << "message: " << e.message() << "\nexpected: " << text;
  }
}

}  // namespace mlcc::test
