// Private helper of the tensor file readers/writers: the byte size of a
// row-major tensor, computed with overflow checks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace mlcc::detail {

// prod(shape) * elem_bytes, or nullopt when a dim is negative or the product
// overflows int64 (so every valid size also fits in an int64 element count).
inline std::optional<uint64_t> tensorByteSize(const std::vector<int64_t>& shape, int elem_bytes) {
  int64_t n = elem_bytes;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return static_cast<uint64_t>(n);
}

}  // namespace mlcc::detail
