// Reading and writing safetensors files, the sidecar format of graph weights.
//
// Layout: an 8-byte little-endian u64 N, N bytes of JSON header
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//    ..., "__metadata__": {"key": "value"}}
// then the data buffer; offsets are relative to the start of the data buffer.
//
// Dtypes are the format's own strings ("F32", "F16", "BF16", "I8", "I32",
// "I64", "BOOL", and the other standard ones: "U8", "F64", "I16", "U16",
// "U32", "U64", "F8_E4M3", "F8_E5M2"). This library checks that a dtype is a
// known safetensors dtype (it must know the element size to validate the
// file); whether a dtype is one mlcc computes with is decided by the caller
// (mlcc/ir/weights.h), when the tensor is used. This library does not depend
// on libs/ir.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlcc {

// The element size in bytes of a safetensors dtype string, or nullopt when
// the string is not a known dtype.
std::optional<int> safetensorsDTypeBytes(std::string_view dtype);

struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;           // "F32", ...
  std::vector<int64_t> shape;  // empty: a 0-d tensor (one element)
  uint64_t begin = 0;          // byte offsets in the data buffer
  uint64_t end = 0;
  uint64_t byteSize() const { return end - begin; }
};

// A safetensors file mapped read-only into memory. open() validates the
// whole header, so every accessor afterwards is safe:
// - the header length fits in the file, and the header is a JSON object;
// - every tensor has a known dtype, non-negative dims whose product does not
//   overflow, and in-bounds, non-overlapping data_offsets whose size is
//   prod(shape) * element size;
// - "__metadata__", if present, maps strings to strings;
// - tensor names are unique (a repeated JSON key is an error).
// Errors are mlcc::Error located at the file and naming the tensor.
//
// The object owns the mapping (move-only); destroying it unmaps the file, so
// spans from data() must not outlive it. Data is not copied: spans point into
// the mapping, and are aligned to their element size when the file was written
// by writeSafetensors (or the reference safetensors library), but may be
// unaligned in files from other writers.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  // Tensor names, sorted.
  std::vector<std::string> names() const;
  // nullptr when the file has no tensor of that name.
  const SafetensorsTensorInfo* find(std::string_view name) const;
  // The tensor's bytes (little-endian, row-major). Throws mlcc::Error when the
  // file has no tensor of that name.
  std::span<const std::byte> data(std::string_view name) const;
  std::span<const std::byte> data(const SafetensorsTensorInfo& info) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  void unmap();

  std::string path_;
  void* map_ = nullptr;  // the whole file
  size_t map_size_ = 0;
  size_t data_start_ = 0;  // 8 + header length
  std::map<std::string, SafetensorsTensorInfo, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor for writeSafetensors. `data` must hold exactly
// prod(shape) * element size bytes, little-endian, row-major.
struct SafetensorsTensorToWrite {
  std::string name;
  std::string dtype;  // a known safetensors dtype ("F32", ...)
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// Writes a safetensors file atomically (temporary file + rename; see
// AtomicFileWriter), streaming the tensor data without copying it.
// The output is deterministic: the JSON header is compact with keys sorted
// (so tensors are listed by name, "__metadata__" omitted when empty) and
// padded with spaces so the data buffer starts at a multiple of 8. The data
// is laid out without gaps by element size, largest first, then by name (the
// order of the reference safetensors writer), so each tensor is aligned to its
// element size and the file is accepted by the reference readers, which
// reject gaps. Throws mlcc::Error on a bad tensor (unknown dtype, duplicate or
// empty name, negative dim, wrong data size) or an IO failure; a failed write
// leaves any existing file at `path` untouched.
void writeSafetensors(const std::string& path, const std::vector<SafetensorsTensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace mlcc
