// Tensors as .npy files (see tensor_npy.h).
#include "mlcc/ir/tensor_npy.h"

#include <map>
#include <optional>

#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/npy.h"

namespace mlcc::ir {

namespace {

const std::map<std::string, DType>& descrTypes() {
  static const std::map<std::string, DType> m = {
      {"<f4", DType::f32}, {"<f2", DType::f16},     {"|i1", DType::i8}, {"<i4", DType::i32},
      {"<i8", DType::i64}, {"|b1", DType::boolean}, {"|u1", DType::u8}, {"<f8", DType::f64},
      {"<i2", DType::i16}, {"<u2", DType::u16},     {"<u4", DType::u32}};
  return m;
}

}  // namespace

Tensor readNpyTensor(const std::string& path, const std::string& what) {
  NpyArray a = readNpy(path);
  auto it = descrTypes().find(a.dtype);
  if (it == descrTypes().end()) {
    std::string known;
    for (const auto& [d, t] : descrTypes()) known += (known.empty() ? "" : ", ") + d;
    throw Error(what + " (" + path + "): numpy dtype '" + a.dtype + "' is not an mlcc dtype (" + known + ")");
  }
  return Tensor::copyOf(it->second, a.shape, a.data);
}

void writeNpyTensor(const std::string& path, const Tensor& tensor) {
  AtomicFileWriter out(path);
  writeNpyTensor(out, tensor);
  out.commit();
}

void writeNpyTensor(AtomicFileWriter& out, const Tensor& tensor) {
  Tensor t = tensor;
  if (t.dtype() == DType::bf16) {
    Tensor f = Tensor::zeros(DType::f32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) f.set(i, t.at(i));
    t = f;
  }
  NpyArray a;
  for (const auto& [d, dt] : descrTypes())
    if (dt == t.dtype()) a.dtype = d;
  a.shape = t.shape();
  a.data.assign(t.bytes(), t.bytes() + t.nbytes());
  writeNpy(out, a);
}

}  // namespace mlcc::ir
