// A host tensor: dtype, concrete shape and contiguous row-major data. The
// data is either owned (heap, 64-byte aligned, zero-initialized) or a
// read-only view of memory kept alive by an owner (an mmap'ed weights file).
// Used by the reference kernels, the interpreter and constant folding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mlcc/ir/dtype.h"

namespace mlcc::ir {

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled tensor. Throws mlcc::Error when a dim is negative or
  // the byte size overflows (before allocating anything).
  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  // A read-only view of `data`, which `owner` keeps alive; the shape is checked
  // as by zeros().
  static Tensor view(DType dtype, std::vector<int64_t> shape, const void* data,
                     std::shared_ptr<const void> owner);
  // A new tensor holding a copy of `bytes` (must be numel * element size),
  // bools made 0 or 1 (canonicalizeBools).
  static Tensor copyOf(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes);
  // A scalar (rank 0) or vector tensor from values (converted to dtype).
  static Tensor scalar(DType dtype, double value);
  static Tensor fromValues(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Element count and byte size; a tensor's shape is checked when it is made
  // (mlcc/support/checked_math.h), so these never overflow.
  int64_t numel() const;
  size_t nbytes() const;
  bool isView() const { return read_only_; }

  const std::byte* bytes() const { return data_; }
  // Mutable access; throws mlcc::Error on a read-only view.
  std::byte* mutableBytes();
  // Of a bool tensor read from bytes: each byte other than 0 becomes 1 (a
  // file may hold any byte; numpy's astype(bool) and ONNX Runtime read it as
  // true, and a C++ bool that is neither 0 nor 1 is undefined behaviour).
  // Does nothing to other dtypes.
  void canonicalizeBools();
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <class T>
  T* mutableData() {
    return reinterpret_cast<T*>(mutableBytes());
  }

  // Element `flat` (row-major index) as a double, and store from a double
  // (rounded/converted to the dtype: f16/bf16 round to nearest even, ints
  // truncate toward zero, bool is value != 0). For generic kernels and tests.
  double at(int64_t flat) const;
  void set(int64_t flat, double value);

  // The same data with another shape of equal element count (shares storage).
  Tensor reshaped(std::vector<int64_t> shape) const;
  // A deep copy that owns its data.
  Tensor clone() const;

 private:
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  std::byte* data_ = nullptr;
  bool read_only_ = false;
};

// Element `flat` of row-major data of `dtype` as a double, as Tensor::at
// reads it (for buffers that are not Tensors, e.g. a kernel's arguments).
double elementAt(DType dtype, const std::byte* data, int64_t flat);

}  // namespace mlcc::ir
