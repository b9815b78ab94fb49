// Checked size arithmetic: the one place where mlcc multiplies and adds the
// sizes it reads from input (element counts, byte sizes, offset + length,
// FLOP estimates). A dimension of 2^62 must make an error, never a product
// that wraps to a small number and lets a size check pass.
//
// The optional-returning forms are for callers that build their own message;
// the throwing forms throw mlcc::Error (without a location: callers that know
// the file or node catch and locate it, or let the tool print it).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mlcc {

// a * b and a + b, or nullopt when the result overflows int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a * b and a + b clamped to the int64 range: for estimates (FLOP counts) that
// may say "huge" but must not wrap.
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return a < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

// Whether the byte range [offset, offset + length) lies within [0, size),
// computed without overflow.
inline bool rangeWithin(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// prod(shape) * elem_bytes of a row-major tensor, or nullopt when a dimension
// is negative or the size overflows int64. The product of the non-zero dims
// must fit too (an empty tensor gets the same check), so that the row-major
// strides of any shape accepted here fit in int64.
std::optional<int64_t> checkedByteSize(std::span<const int64_t> shape, int64_t elem_bytes);
// prod(shape), with the same rules (elem_bytes = 1).
inline std::optional<int64_t> checkedElementCount(std::span<const int64_t> shape) {
  return checkedByteSize(shape, 1);
}

// Why `shape` of `elem_bytes`-byte elements has no valid size ("negative
// dimension -1 in shape [-1, 4]", "shape [...] is too large: ..."), or ""
// when checkedByteSize accepts it.
std::string shapeSizeError(std::span<const int64_t> shape, int64_t elem_bytes = 1);

// The throwing forms: mlcc::Error with shapeSizeError's message, or
// "<what> overflows" for a single product or sum.
int64_t elementCount(std::span<const int64_t> shape);
int64_t byteSize(std::span<const int64_t> shape, int64_t elem_bytes);
int64_t mulOrThrow(int64_t a, int64_t b, std::string_view what);
int64_t addOrThrow(int64_t a, int64_t b, std::string_view what);

// Floor division and modulo on int64: the IR's integer `/` and `%`, the one
// definition the simplifier, the interpreter and the legalizations use (the
// LLVM backend emits the same rule). The quotient rounds toward negative
// infinity and the remainder has the divisor's sign: floorDiv(-7, 2) == -4,
// floorMod(-7, 2) == 1, floorMod(7, -2) == -1. INT64_MIN / -1 wraps to
// INT64_MIN (two's complement, as the compiled code does) and INT64_MIN % -1
// is 0. Division by zero throws mlcc::Error ("integer division by zero");
// compiled code, which cannot throw, yields 0 there.
int64_t floorDiv(int64_t a, int64_t b);
int64_t floorMod(int64_t a, int64_t b);

}  // namespace mlcc
