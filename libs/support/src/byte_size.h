// Private helper of the tensor file readers/writers: the byte size of a
// row-major tensor, computed with overflow checks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace mlcc::detail {

// prod(shape) * elem_bytes, or nullopt when a dim is negative or the product
// of the non-zero dims (times elem_bytes) overflows int64. Empty tensors get
// the same check, so that strides computed from any valid shape fit in int64.
inline std::optional<uint64_t> tensorByteSize(const std::vector<int64_t>& shape, int elem_bytes) {
  int64_t n = elem_bytes;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d == 0 ? 1 : d, &n)) return std::nullopt;
    empty = empty || d == 0;
  }
  return empty ? 0 : static_cast<uint64_t>(n);
}

}  // namespace mlcc::detail
