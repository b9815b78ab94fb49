// Safetensors reading (mmap + full header validation) and deterministic,
// atomic writing (see safetensors.h).
#include "mlcc/support/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc {

namespace {

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
// The reference implementation's limit; a larger header means a corrupt file.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DTypeEntry {
  std::string_view name;
  int bytes;
};
constexpr std::array<DTypeEntry, 15> kDTypes = {{{"BOOL", 1},
                                                 {"U8", 1},
                                                 {"I8", 1},
                                                 {"F8_E5M2", 1},
                                                 {"F8_E4M3", 1},
                                                 {"I16", 2},
                                                 {"U16", 2},
                                                 {"F16", 2},
                                                 {"BF16", 2},
                                                 {"I32", 4},
                                                 {"U32", 4},
                                                 {"F32", 4},
                                                 {"F64", 8},
                                                 {"I64", 8},
                                                 {"U64", 8}}};

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw Error(SourceLoc{path, 0, 0}, message);
}

[[noreturn]] void failTensor(const std::string& path, std::string_view tensor, const std::string& message) {
  fail(path, "tensor '" + std::string(tensor) + "': " + message);
}

uint64_t readLE64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}

std::string encodeLE64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A non-negative JSON integer, or nullopt (floats, negatives, other types).
std::optional<uint64_t> asUnsigned(const json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

// Parses the header text, rejecting repeated top-level keys (a plain parse
// would keep only the last one).
json parseHeader(const std::string& path, std::string_view text) {
  std::set<std::string> seen;
  auto check_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) {
      std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second) failTensor(path, key, "appears twice in the header");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check_duplicates);
  } catch (const json::exception& e) {
    fail(path, std::string("malformed safetensors header: ") + e.what());
  }
}

SafetensorsTensorInfo parseTensorEntry(const std::string& path, const std::string& name, const json& entry,
                                       uint64_t data_size) {
  if (!entry.is_object()) failTensor(path, name, "header entry is not an object");
  SafetensorsTensorInfo info;
  info.name = name;
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(field)) failTensor(path, name, std::string("missing '") + field + "'");

  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) failTensor(path, name, "'dtype' is not a string");
  info.dtype = dtype.get<std::string>();
  std::optional<int> elem_bytes = safetensorsDTypeBytes(info.dtype);
  if (!elem_bytes) failTensor(path, name, "unknown dtype '" + info.dtype + "'");

  const json& shape = entry["shape"];
  if (!shape.is_array()) failTensor(path, name, "'shape' is not an array");
  for (const json& d : shape) {
    std::optional<uint64_t> dim = asUnsigned(d);
    if (!dim || *dim > static_cast<uint64_t>(INT64_MAX))
      failTensor(path, name, "bad dimension " + d.dump() + " (dims are non-negative integers)");
    info.shape.push_back(static_cast<int64_t>(*dim));
  }
  std::optional<int64_t> expected = checkedByteSize(info.shape, *elem_bytes);
  if (!expected) failTensor(path, name, "shape is too large (its size overflows)");

  const json& offsets = entry["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = asUnsigned(offsets[0]);
    end = asUnsigned(offsets[1]);
  }
  if (!begin || !end) failTensor(path, name, "'data_offsets' is not a pair of non-negative integers");
  if (*begin > *end || *end > data_size)
    failTensor(path, name,
               "data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
                   "] are out of bounds (the data buffer has " + std::to_string(data_size) + " bytes)");
  info.begin = *begin;
  info.end = *end;
  if (info.byteSize() != static_cast<uint64_t>(*expected))
    failTensor(path, name,
               "has " + std::to_string(info.byteSize()) + " bytes of data, but its dtype and shape need " +
                   std::to_string(*expected));
  return info;
}

std::map<std::string, std::string> parseMetadata(const std::string& path, const json& j) {
  if (!j.is_object()) fail(path, "'__metadata__' is not an object");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) fail(path, "'__metadata__' value of '" + key + "' is not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// Tensors are sorted by begin offset; each must end before the next begins.
// Zero-size tensors occupy no bytes and overlap nothing.
void checkNoOverlap(const std::string& path, std::vector<const SafetensorsTensorInfo*> tensors) {
  std::erase_if(tensors, [](const SafetensorsTensorInfo* t) { return t->byteSize() == 0; });
  std::sort(tensors.begin(), tensors.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i]->begin < tensors[i - 1]->end)
      failTensor(path, tensors[i]->name, "data overlaps tensor '" + tensors[i - 1]->name + "'");
  }
}

}  // namespace

std::optional<int> safetensorsDTypeBytes(std::string_view dtype) {
  for (const DTypeEntry& e : kDTypes)
    if (e.name == dtype) return e.bytes;
  return std::nullopt;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  noteInputFile(path);
  file.map_size_ = static_cast<size_t>(st.st_size);
  if (file.map_size_ < 8) {
    ::close(fd);
    fail(path, "too short for a safetensors file (" + std::to_string(file.map_size_) + " bytes)");
  }
  void* map = ::mmap(nullptr, file.map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED) fail(path, std::string("cannot map: ") + std::strerror(map_errno));
  file.map_ = map;  // owned from here: unmapped by ~SafetensorsFile on any error below

  const auto* bytes = static_cast<const std::byte*>(file.map_);
  uint64_t header_size = readLE64(bytes);
  if (header_size > file.map_size_ - 8 || header_size > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_size) + " exceeds the file size (" +
                   std::to_string(file.map_size_) + " bytes)");
  file.data_start_ = 8 + static_cast<size_t>(header_size);
  uint64_t data_size = file.map_size_ - file.data_start_;

  json header = parseHeader(path, std::string_view(reinterpret_cast<const char*>(bytes + 8), header_size));
  if (!header.is_object()) fail(path, "safetensors header is not a JSON object");
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      file.metadata_ = parseMetadata(path, entry);
      continue;
    }
    file.tensors_.emplace(name, parseTensorEntry(path, name, entry, data_size));
  }
  std::vector<const SafetensorsTensorInfo*> infos;
  for (const auto& [name, info] : file.tensors_) infos.push_back(&info);
  checkNoOverlap(path, std::move(infos));
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept { *this = std::move(other); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    data_start_ = std::exchange(other.data_start_, 0);
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

void SafetensorsFile::unmap() {
  if (map_) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : tensors_) out.push_back(name);
  return out;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::span<const std::byte> SafetensorsFile::data(std::string_view name) const {
  const SafetensorsTensorInfo* info = find(name);
  if (!info) failTensor(path_, name, "not found");
  return data(*info);
}

std::span<const std::byte> SafetensorsFile::data(const SafetensorsTensorInfo& info) const {
  const auto* base = static_cast<const std::byte*>(map_) + data_start_;
  return {base + info.begin, static_cast<size_t>(info.byteSize())};
}

void writeSafetensors(const std::string& path, const std::vector<SafetensorsTensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Validate, and lay the data out by element size (largest first), then name.
  struct Placed {
    const SafetensorsTensorToWrite* tensor;
    int elem_bytes;
  };
  std::vector<Placed> order;
  std::set<std::string_view> names;
  for (const SafetensorsTensorToWrite& t : tensors) {
    if (t.name.empty() || t.name == kMetadataKey) fail(path, "invalid tensor name '" + t.name + "'");
    if (!names.insert(t.name).second) failTensor(path, t.name, "written twice");
    std::optional<int> elem_bytes = safetensorsDTypeBytes(t.dtype);
    if (!elem_bytes) failTensor(path, t.name, "unknown dtype '" + t.dtype + "'");
    std::optional<int64_t> size = checkedByteSize(t.shape, *elem_bytes);
    if (!size) failTensor(path, t.name, "invalid shape (a negative dim, or its size overflows)");
    if (static_cast<uint64_t>(*size) != t.data.size())
      failTensor(path, t.name,
                 "has " + std::to_string(t.data.size()) + " bytes of data, but its dtype and shape need " +
                     std::to_string(*size));
    order.push_back({&t, *elem_bytes});
  }
  std::sort(order.begin(), order.end(), [](const Placed& a, const Placed& b) {
    if (a.elem_bytes != b.elem_bytes) return a.elem_bytes > b.elem_bytes;
    return a.tensor->name < b.tensor->name;
  });

  json header = json::object();
  uint64_t offset = 0;
  for (const Placed& p : order) {
    const SafetensorsTensorToWrite& t = *p.tensor;
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::string text;
  try {
    text = header.dump();               // compact, keys sorted: deterministic
  } catch (const json::exception& e) {  // e.g. a name or metadata that is not UTF-8
    fail(path, std::string("cannot encode the safetensors header: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  AtomicFileWriter out(path);
  out.write(encodeLE64(text.size()));
  out.write(text);
  for (const Placed& p : order) out.write(p.tensor->data);
  out.commit();
}

}  // namespace mlcc
