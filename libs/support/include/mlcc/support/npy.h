// Reading and writing NumPy .npy files (model inputs and outputs of mlcc-run).
//
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 only when the
// header would not fit 1.0), byte-identical to numpy.save for the same array.
// Supported dtypes (numpy `descr` strings): "<f4", "<f2", "|i1", "<i4", "<i8",
// "|b1", "|u1", "<f8". Only C-order, little-endian arrays: Fortran-order,
// big-endian, structured and other dtypes are rejected with an mlcc::Error
// located at the file. (bf16 has no numpy dtype, so it has no .npy form.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlcc {

class AtomicFileWriter;

struct NpyArray {
  std::string dtype;            // numpy descr, e.g. "<f4"
  std::vector<int64_t> shape;   // empty: a 0-d array (one element)
  std::vector<std::byte> data;  // C order, little-endian

  int64_t numElements() const;
};

// The element size of a supported descr, or nullopt.
std::optional<int> npyDTypeBytes(std::string_view descr);

// Parses .npy bytes; `name` (a path) locates errors.
NpyArray parseNpy(std::span<const std::byte> bytes, const std::string& name);
// Reads a .npy file ("-" for stdin).
NpyArray readNpy(const std::string& path);

// The .npy bytes of an array. Throws mlcc::Error on an unsupported dtype, a
// negative dim, or data whose size does not match dtype and shape.
std::string serializeNpy(const NpyArray& array);
// Writes a .npy file atomically ("-" for stdout).
void writeNpy(const std::string& path, const NpyArray& array);
// Writes the .npy bytes into `out`, which the caller commits.
void writeNpy(AtomicFileWriter& out, const NpyArray& array);

}  // namespace mlcc
