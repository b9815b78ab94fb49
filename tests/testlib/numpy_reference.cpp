#include "numpy_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::test {

ir::Tensor randomTensor(std::mt19937& rng, ir::DType t, std::vector<int64_t> shape,
                        const RandomRange& range) {
  ir::Tensor x = ir::Tensor::zeros(t, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v;
    if (ir::isFloat(t))
      v = std::uniform_real_distribution<double>(range.lo, range.hi)(rng);
    else if (t == ir::DType::boolean)
      v = static_cast<double>(rng() & 1);
    else
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(range.int_lo, range.int_hi)(rng));
    x.set(i, v);
  }
  return x;
}

ir::Tensor randomTensor(std::mt19937& rng, ir::DType t, std::vector<int64_t> shape, double lo, double hi) {
  return randomTensor(rng, t, std::move(shape), {lo, hi, static_cast<int64_t>(lo), static_cast<int64_t>(hi)});
}

const char* npyDescr(ir::DType t) {
  switch (t) {
    case ir::DType::f32: return "<f4";
    case ir::DType::f16: return "<f2";
    case ir::DType::i8: return "|i1";
    case ir::DType::i32: return "<i4";
    case ir::DType::i64: return "<i8";
    case ir::DType::boolean: return "|b1";
    case ir::DType::u8: return "|u1";
    case ir::DType::f64: return "<f8";
    case ir::DType::i16: return "<i2";
    case ir::DType::u16: return "<u2";
    case ir::DType::u32: return "<u4";
    case ir::DType::bf16: break;
  }
  throw Error("no .npy dtype for " + std::string(ir::dtypeName(t)));
}

NpyArray toNpy(const ir::Tensor& t) {
  NpyArray a;
  a.shape = t.shape();
  if (t.dtype() == ir::DType::bf16) {  // no numpy dtype: written as f32 (exact)
    a.dtype = "<f4";
    a.data.resize(static_cast<size_t>(t.numel()) * 4);
    for (int64_t i = 0; i < t.numel(); ++i) {
      float f = static_cast<float>(t.at(i));
      std::memcpy(a.data.data() + i * 4, &f, 4);
    }
    return a;
  }
  a.dtype = npyDescr(t.dtype());
  a.data.assign(t.bytes(), t.bytes() + t.nbytes());
  return a;
}

std::vector<double> npyValues(const NpyArray& a) {
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
    } else if (a.dtype == "<i2" || a.dtype == "<u2") {
      uint16_t x;
      std::memcpy(&x, p + i * 2, 2);
      v = a.dtype == "<u2" ? x : static_cast<int16_t>(x);
    } else if (a.dtype == "<u4") {
      uint32_t x;
      std::memcpy(&x, p + i * 4, 4);
      v = x;
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

std::string shapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string operandExpr(const std::string& expr) { return "operand_expr(\"\"\"" + expr + "\"\"\")"; }

bool torchAvailable() {
  static int ok = -1;
  if (ok < 0) ok = std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
  return ok == 1;
}

std::string torchUnavailable() {
  if (std::string why = pythonNumpyUnavailable(); !why.empty()) return why;
  return torchAvailable() ? "" : "python3 with torch is unavailable";
}

namespace {

const char* kScript = R"(import numpy as np
import math
try:
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(1)
except ImportError:
    torch = None
    F = None

def operand_expr(e):
    def f(*n):
        env = {'np': np, 'math': math, 'torch': torch, 'F': F}
        for i, a in enumerate(n):
            env['n%d' % i] = a
            if torch is not None:
                env['t%d' % i] = torch.from_numpy(a)
        r = eval(e, env)
        if torch is not None and torch.is_tensor(r):
            r = r.numpy()
        return np.array(r, dtype=n[0].dtype, order='C')
    return f

def run(name, n, f, many):
    args = [np.load(f'{name}_{i}.npy') for i in range(n)]
    r = f(*args)
    for k, o in enumerate(r if many else [r]):
        if torch is not None and torch.is_tensor(o):
            o = o.numpy()
        np.save(f'{name}_ref{k}.npy', np.array(o, order='C'))

)";

// Compares one result with its reference; failures name `what`.
void compare(const ir::Tensor& y, const NpyArray& ref, const RefCase& rc, const RefOptions& options,
             const std::string& what) {
  if (y.shape() != ref.shape) {
    ADD_FAILURE() << what << ": shape " << shapeText(y.shape()) << ", reference " << shapeText(ref.shape);
    return;
  }
  if (options.same_dtype || options.same_bytes) {
    std::string want = y.dtype() == ir::DType::bf16 ? "bf16 (no .npy dtype)" : npyDescr(y.dtype());
    if (ref.dtype != want) {
      ADD_FAILURE() << what << ": dtype " << want << ", reference " << ref.dtype;
      return;
    }
  }
  if (options.same_bytes) {
    EXPECT_TRUE(ref.data == std::vector<std::byte>(y.bytes(), y.bytes() + y.nbytes()))
        << what << ": differs from the reference";
    return;
  }
  std::vector<double> want = npyValues(ref);
  if (static_cast<int64_t>(want.size()) != y.numel()) return;  // npyValues reported it
  int bad = 0;
  for (int64_t i = 0; i < y.numel() && bad < 5; ++i) {
    double g = y.at(i), w = want[static_cast<size_t>(i)];
    bool ok =
        (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= rc.atol + rc.rtol * std::fabs(w);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", the reference says " << w;
    }
  }
}

}  // namespace

int runRefCases(const std::vector<RefCase>& cases, const RefOptions& options) {
  if (!pythonNumpyUnavailable().empty()) return 0;
  bool torch = torchAvailable();
  TempDir dir;
  std::string script = kScript + options.prelude + "\n";
  std::vector<bool> used(cases.size(), false);
  for (size_t c = 0; c < cases.size(); ++c) {
    const RefCase& rc = cases[c];
    if (!torch && rc.fn.find("torch") != std::string::npos) continue;
    used[c] = true;
    std::string name = "c" + std::to_string(c);
    for (size_t i = 0; i < rc.inputs.size(); ++i)
      writeNpy(dir.file(name + "_" + std::to_string(i) + ".npy"), toNpy(rc.inputs[i]));
    script += "run('" + name + "', " + std::to_string(rc.inputs.size()) + ", " + rc.fn + ", " +
              (options.results_list ? "True" : "False") + ")\n";
  }
  if (runPython(script, dir.path()) != 0) {
    ADD_FAILURE() << "the reference script failed";
    return 0;
  }
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
    std::string prefix = dir.file("c" + std::to_string(c) + "_ref");
    size_t refs = 0;
    while (fileExists(prefix + std::to_string(refs) + ".npy")) ++refs;
    if (got.size() != refs) {
      ADD_FAILURE() << what << ": " << got.size() << " results, " << refs << " references";
      continue;
    }
    for (size_t k = 0; k < got.size(); ++k)
      compare(got[k], readNpy(prefix + std::to_string(k) + ".npy"), rc, options,
              got.size() == 1 ? what : what + ", result " + std::to_string(k));
    ++compared;
  }
  return compared;
}

std::string inferred(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs) {
  return ir::printType(ops::inferOpType(op, inputs, attrs));
}

std::string inferError(const std::string& op, const std::vector<ir::Type>& inputs, const ir::Attrs& attrs) {
  try {
    return "no error (inferred " + inferred(op, inputs, attrs) + ")";
  } catch (const Error& e) {
    return e.message();
  }
}

void expectOpError(const std::function<void()>& fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << text;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(text), std::string::npos)
        << "message: " << e.message() << "\nexpected: " << text;
  }
}

}  // namespace mlcc::test
