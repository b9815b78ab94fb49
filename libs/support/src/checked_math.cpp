// Checked size arithmetic (see checked_math.h).
#include "mlcc/support/checked_math.h"

#include "mlcc/support/diagnostic.h"

namespace mlcc {

namespace {

std::string shapeText(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::optional<int64_t> checkedByteSize(std::span<const int64_t> shape, int64_t elem_bytes) {
  if (elem_bytes < 0) return std::nullopt;
  int64_t n = elem_bytes;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d == 0 ? 1 : d, &n)) return std::nullopt;
    empty = empty || d == 0;
  }
  return empty ? 0 : n;
}

std::string shapeSizeError(std::span<const int64_t> shape, int64_t elem_bytes) {
  for (int64_t d : shape)
    if (d < 0) return "negative dimension " + std::to_string(d) + " in shape " + shapeText(shape);
  if (checkedByteSize(shape, elem_bytes)) return {};
  if (elem_bytes > 1 && checkedElementCount(shape))
    return "shape " + shapeText(shape) + " is too large: its size in bytes (" + std::to_string(elem_bytes) +
           " per element) overflows a 64-bit integer";
  return "shape " + shapeText(shape) + " is too large: its element count overflows a 64-bit integer";
}

int64_t elementCount(std::span<const int64_t> shape) { return byteSize(shape, 1); }

int64_t byteSize(std::span<const int64_t> shape, int64_t elem_bytes) {
  if (std::optional<int64_t> n = checkedByteSize(shape, elem_bytes)) return *n;
  throw Error(shapeSizeError(shape, elem_bytes));
}

int64_t mulOrThrow(int64_t a, int64_t b, std::string_view what) {
  if (std::optional<int64_t> r = checkedMul(a, b)) return *r;
  throw Error(std::string(what) + " overflows a 64-bit integer (" + std::to_string(a) + " * " +
              std::to_string(b) + ")");
}

int64_t addOrThrow(int64_t a, int64_t b, std::string_view what) {
  if (std::optional<int64_t> r = checkedAdd(a, b)) return *r;
  throw Error(std::string(what) + " overflows a 64-bit integer (" + std::to_string(a) + " + " +
              std::to_string(b) + ")");
}

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer division by zero");
  if (b == -1) return static_cast<int64_t>(0ull - static_cast<uint64_t>(a));  // INT64_MIN wraps
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floorMod(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer modulo by zero");
  if (b == -1) return 0;
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace mlcc
