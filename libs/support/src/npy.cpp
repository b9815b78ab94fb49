// NumPy .npy reading and writing (see npy.h). The header is a Python dict
// literal; a small parser for the literals numpy writes (strings, True/False,
// integers, tuples and lists) reads it without evaluating anything.
#include "mlcc/support/npy.h"

#include <array>
#include <cstring>
#include <map>

#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;                 // numpy pads the header so data starts at a multiple of 64
constexpr int kGrowthAxisMaxDigits = 21;      // numpy's spare space after the dict
constexpr size_t kMaxHeaderBytes = 1u << 20;  // far beyond any header of a supported dtype

struct DTypeEntry {
  std::string_view descr;
  int bytes;
};
constexpr std::array<DTypeEntry, 11> kDTypes = {{{"<f4", 4},
                                                 {"<f2", 2},
                                                 {"|i1", 1},
                                                 {"<i4", 4},
                                                 {"<i8", 8},
                                                 {"|b1", 1},
                                                 {"|u1", 1},
                                                 {"<f8", 8},
                                                 {"<i2", 2},
                                                 {"<u2", 2},
                                                 {"<u4", 4}}};

// `name` locates the error; empty when there is no file.
[[noreturn]] void fail(const std::string& name, const std::string& message) {
  if (name.empty()) throw Error(message);
  throw Error(SourceLoc{name, 0, 0}, message);
}

// A Python literal of the kinds an .npy header holds.
struct PyValue {
  enum class Kind { Str, Bool, Int, Seq, None } kind = Kind::None;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;  // tuple or list elements
};

class PyLiteralParser {
 public:
  PyLiteralParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  // The header dict: string keys to values.
  std::map<std::string, PyValue> parseDict() {
    std::map<std::string, PyValue> out;
    expect('{');
    while (!tryConsume('}')) {
      PyValue key = parseValue(0);
      if (key.kind != PyValue::Kind::Str) error("dict key is not a string");
      expect(':');
      PyValue value = parseValue(0);
      if (!out.emplace(key.str, std::move(value)).second) error("key '" + key.str + "' appears twice");
      if (!tryConsume(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (pos_ != text_.size()) error("unexpected text after the dict");
    return out;
  }

 private:
  static constexpr int kMaxDepth = 16;

  [[noreturn]] void error(const std::string& what) {
    fail(name_, "malformed .npy header: " + what + " at offset " + std::to_string(pos_));
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) && text_[pos_] != '\0') ++pos_;
  }
  bool tryConsume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!tryConsume(c)) error(std::string("expected '") + c + "'");
  }
  bool tryWord(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  PyValue parseValue(int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    skipSpace();
    if (pos_ >= text_.size()) error("unexpected end");
    PyValue v;
    char c = text_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::Str;
      v.str = parseString();
    } else if (c == '(' || c == '[') {
      v.kind = PyValue::Kind::Seq;
      char close = c == '(' ? ')' : ']';
      ++pos_;
      while (!tryConsume(close)) {
        v.items.push_back(parseValue(depth + 1));
        if (!tryConsume(',')) {
          expect(close);
          break;
        }
      }
    } else if (tryWord("True") || tryWord("False")) {
      v.kind = PyValue::Kind::Bool;
      v.boolean = c == 'T';
    } else if (tryWord("None")) {
      v.kind = PyValue::Kind::None;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::Int;
      v.integer = parseInt();
    } else {
      error(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  std::string parseString() {
    char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') error("escapes in strings are not supported");
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) error("unterminated string");
    ++pos_;
    return out;
  }

  int64_t parseInt() {
    bool negative = tryWord("-");
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("expected a digit");
    int64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v))
        error("integer too large");
      ++pos_;
    }
    tryWord("L");  // Python 2 long literals, in files written by old numpy
    return negative ? -v : v;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const std::string& name_;
};

// Checks and normalizes a descr: byte order, then the supported list.
std::string checkDescr(const std::string& name, const std::string& descr) {
  std::string d = descr;
  // numpy writes '|' for single-byte types; accept any order mark on those.
  if (d.size() == 3 && d[2] == '1' && std::strchr("<>=|", d[0])) d[0] = '|';
  if (d.size() >= 2 && d[0] == '>') fail(name, "big-endian arrays are not supported (dtype '" + descr + "')");
  if (!npyDTypeBytes(d)) fail(name, "unsupported dtype '" + descr + "'");
  return d;
}

std::vector<int64_t> checkShape(const std::string& name, const PyValue& shape) {
  if (shape.kind != PyValue::Kind::Seq) fail(name, "'shape' is not a tuple");
  std::vector<int64_t> out;
  for (const PyValue& d : shape.items) {
    if (d.kind != PyValue::Kind::Int || d.integer < 0) fail(name, "'shape' has a bad dimension");
    out.push_back(d.integer);
  }
  return out;
}

std::string shapeRepr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Checks that `data_size` matches dtype and shape; `name` locates errors.
void checkSize(const std::string& name, const NpyArray& a, uint64_t data_size) {
  std::optional<int> elem = npyDTypeBytes(a.dtype);
  if (!elem) fail(name, "unsupported dtype '" + a.dtype + "'");
  std::optional<int64_t> expected = checkedByteSize(a.shape, *elem);
  if (!expected)
    fail(name, "shape " + shapeRepr(a.shape) + " is invalid (a negative dim, or its size overflows)");
  if (data_size != static_cast<uint64_t>(*expected))
    fail(name, "has " + std::to_string(data_size) + " bytes of data, but dtype '" + a.dtype + "' and shape " +
                   shapeRepr(a.shape) + " need " + std::to_string(*expected));
}

// The magic, version, header length and header dict, as numpy.save writes them.
std::string npyHeader(const NpyArray& a) {
  std::string dict =
      "{'descr': '" + a.dtype + "', 'fortran_order': False, 'shape': " + shapeRepr(a.shape) + ", }";
  if (!a.shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(a.shape[0]).size(), ' ');
  for (int version : {1, 2}) {
    size_t len_bytes = version == 1 ? 2 : 4;
    size_t unpadded = kMagic.size() + 2 + len_bytes + dict.size() + 1;  // + '\n'
    size_t header_len = dict.size() + 1 + (kAlign - unpadded % kAlign) % kAlign;
    if (version == 1 && header_len > 0xffff) continue;
    std::string out(kMagic);
    out += static_cast<char>(version);
    out += '\0';
    for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
    out += dict;
    out.append(header_len - dict.size() - 1, ' ');
    out += '\n';
    return out;
  }
  throw Error("unreachable: .npy header too large");
}

}  // namespace

int64_t NpyArray::numElements() const { return elementCount(shape); }

std::optional<int> npyDTypeBytes(std::string_view descr) {
  for (const DTypeEntry& e : kDTypes)
    if (e.descr == descr) return e.bytes;
  return std::nullopt;
}

NpyArray parseNpy(std::span<const std::byte> bytes, const std::string& name) {
  auto text = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.substr(0, kMagic.size()) != kMagic) fail(name, "not a .npy file (bad magic)");
  if (text.size() < kMagic.size() + 2) fail(name, "truncated .npy file");
  int major = static_cast<unsigned char>(text[6]);
  size_t len_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3) fail(name, "unsupported .npy format version " + std::to_string(major));
  size_t prefix = kMagic.size() + 2 + len_bytes;
  if (text.size() < prefix) fail(name, "truncated .npy file");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(text[8 + i])) << (8 * i);
  if (header_len > kMaxHeaderBytes) fail(name, ".npy header too large");
  if (text.size() - prefix < header_len) fail(name, "truncated .npy file (header)");

  std::map<std::string, PyValue> dict = PyLiteralParser(text.substr(prefix, header_len), name).parseDict();
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!dict.count(key)) fail(name, std::string(".npy header has no '") + key + "'");
  if (dict.size() != 3) fail(name, ".npy header has unexpected keys");
  const PyValue& descr = dict["descr"];
  if (descr.kind != PyValue::Kind::Str) fail(name, "unsupported dtype (structured arrays are not supported)");
  const PyValue& fortran = dict["fortran_order"];
  if (fortran.kind != PyValue::Kind::Bool) fail(name, "'fortran_order' is not True or False");
  if (fortran.boolean) fail(name, "Fortran-order arrays are not supported");

  NpyArray a;
  a.dtype = checkDescr(name, descr.str);
  a.shape = checkShape(name, dict["shape"]);
  std::span<const std::byte> data = bytes.subspan(prefix + header_len);
  checkSize(name, a, data.size());
  a.data.assign(data.begin(), data.end());
  return a;
}

NpyArray readNpy(const std::string& path) {
  std::string contents = readInput(path);
  return parseNpy(std::as_bytes(std::span(contents)), displayName(path));
}

std::string serializeNpy(const NpyArray& array) {
  checkSize("", array, array.data.size());
  std::string out = npyHeader(array);
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  return out;
}

void writeNpy(AtomicFileWriter& out, const NpyArray& array) {
  checkSize(out.path(), array, array.data.size());
  out.write(npyHeader(array));
  out.write(std::span<const std::byte>(array.data));
}

void writeNpy(const std::string& path, const NpyArray& array) {
  AtomicFileWriter out(path);
  writeNpy(out, array);
  out.commit();
}

}  // namespace mlcc
