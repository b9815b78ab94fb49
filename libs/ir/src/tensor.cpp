// Host tensors (see tensor.h).
#include "mlcc/ir/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "mlcc/ir/float_bits.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

namespace {

std::shared_ptr<std::byte> allocateZeroed(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Double to integer with truncation toward zero, saturating (NaN -> 0).
template <class T>
T toInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  return static_cast<T>(v);
}

}  // namespace

int64_t Tensor::numel() const { return elementCount(shape_); }

size_t Tensor::nbytes() const { return static_cast<size_t>(byteSize(shape_, dtypeBytes(dtype_))); }

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  auto storage = allocateZeroed(t.nbytes());  // nbytes() checks the shape
  t.data_ = storage.get();
  t.owner_ = std::move(storage);
  return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, const void* data,
                    std::shared_ptr<const void> owner) {
  byteSize(shape, dtypeBytes(dtype));  // checks the shape
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = const_cast<std::byte*>(static_cast<const std::byte*>(data));
  t.owner_ = std::move(owner);
  t.read_only_ = true;
  return t;
}

Tensor Tensor::copyOf(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes) {
  // The size is checked before anything is allocated.
  const int64_t need = byteSize(shape, dtypeBytes(dtype));
  if (bytes.size() != static_cast<uint64_t>(need))
    throw Error("tensor data has " + std::to_string(bytes.size()) + " bytes, but its type needs " +
                std::to_string(need));
  Tensor t = zeros(dtype, std::move(shape));
  if (!bytes.empty()) std::memcpy(t.data_, bytes.data(), bytes.size());
  t.canonicalizeBools();
  return t;
}

void Tensor::canonicalizeBools() {
  if (dtype_ != DType::boolean) return;
  std::byte* p = mutableBytes();
  for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = std::byte{p[i] != std::byte{0}};
}

Tensor Tensor::scalar(DType dtype, double value) {
  Tensor t = zeros(dtype, {});
  t.set(0, value);
  return t;
}

Tensor Tensor::fromValues(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t = zeros(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error("tensor of " + std::to_string(t.numel()) + " elements given " +
                std::to_string(values.size()) + " values");
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::byte* Tensor::mutableBytes() {
  if (read_only_) throw Error("internal: write to a read-only tensor view");
  return data_;
}

double elementAt(DType dtype, const std::byte* data, int64_t i) {
  const std::byte* p = data + i * dtypeBytes(dtype);
  switch (dtype) {
    case DType::f32: return load<float>(p);
    case DType::f16: return detail::halfBitsToDouble(load<uint16_t>(p));
    case DType::bf16: return detail::bf16BitsToDouble(load<uint16_t>(p));
    case DType::i8: return load<int8_t>(p);
    case DType::i32: return load<int32_t>(p);
    case DType::i64: return static_cast<double>(load<int64_t>(p));
    case DType::boolean: return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::u8: return load<uint8_t>(p);
    case DType::f64: return load<double>(p);
    case DType::i16: return load<int16_t>(p);
    case DType::u16: return load<uint16_t>(p);
    case DType::u32: return load<uint32_t>(p);
  }
  return 0;
}

double Tensor::at(int64_t i) const { return elementAt(dtype_, data_, i); }

void Tensor::set(int64_t i, double v) {
  std::byte* p = mutableBytes() + i * dtypeBytes(dtype_);
  switch (dtype_) {
    case DType::f32: put<float>(p, static_cast<float>(v)); break;
    case DType::f16: put<uint16_t>(p, detail::doubleToHalfBits(v)); break;
    case DType::bf16: put<uint16_t>(p, detail::doubleToBF16Bits(v)); break;
    case DType::i8: put<int8_t>(p, toInt<int8_t>(v)); break;
    case DType::i32: put<int32_t>(p, toInt<int32_t>(v)); break;
    case DType::i64: put<int64_t>(p, toInt<int64_t>(v)); break;
    case DType::boolean: put<uint8_t>(p, v != 0 ? 1 : 0); break;
    case DType::u8: put<uint8_t>(p, toInt<uint8_t>(v)); break;
    case DType::f64: put<double>(p, v); break;
    case DType::i16: put<int16_t>(p, toInt<int16_t>(v)); break;
    case DType::u16: put<uint16_t>(p, toInt<uint16_t>(v)); break;
    case DType::u32: put<uint32_t>(p, toInt<uint32_t>(v)); break;
  }
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  if (elementCount(shape) != numel())
    throw Error("cannot reshape a tensor of " + std::to_string(numel()) + " elements to " +
                std::to_string(elementCount(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = zeros(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

}  // namespace mlcc::ir
