// safetensors reading and writing: round trips of every dtype, writer
// determinism, interop with files written and read by Python, rejection of
// corrupt files, and atomic output.
#include "mlcc/support/safetensors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "mlcc/support/diagnostic.h"
#include "tensor_files.h"
#include "testlib.h"

using mlcc::SafetensorsFile;
using mlcc::SafetensorsTensorToWrite;
using mlcc::test::TempDir;

namespace {

// A tensor with owned data, to build SafetensorsTensorToWrite lists from.
struct OwnedTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

std::vector<std::byte> patternBytes(size_t n, int seed) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::byte(static_cast<uint8_t>(i * 37 + seed));
  return out;
}

OwnedTensor makeTensor(std::string name, std::string dtype, std::vector<int64_t> shape, int seed = 1) {
  int64_t n = *mlcc::safetensorsDTypeBytes(dtype);
  for (int64_t d : shape) n *= d;
  return {std::move(name), std::move(dtype), std::move(shape), patternBytes(static_cast<size_t>(n), seed)};
}

std::vector<SafetensorsTensorToWrite> views(const std::vector<OwnedTensor>& tensors) {
  std::vector<SafetensorsTensorToWrite> out;
  for (const OwnedTensor& t : tensors) out.push_back({t.name, t.dtype, t.shape, t.bytes});
  return out;
}

std::vector<OwnedTensor> everyDType() {
  return {makeTensor("a.f32", "F32", {3, 5}),   makeTensor("b.f16", "F16", {7}),
          makeTensor("c.bf16", "BF16", {2, 3}), makeTensor("d.i8", "I8", {5, 1, 3}),
          makeTensor("e.i32", "I32", {4}),      makeTensor("f.i64", "I64", {2, 2}),
          makeTensor("g.bool", "BOOL", {3}),    makeTensor("h.u8", "U8", {9}),
          makeTensor("i.f64", "F64", {3}),      makeTensor("scalar", "F32", {}),
          makeTensor("empty", "I64", {0}),      makeTensor("empty2d", "F16", {4, 0})};
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A file with the given header text and data bytes.
std::string fileWithHeader(const std::string& header, const std::string& data = std::string(16, 'x')) {
  return le64(header.size()) + header + data;
}

// Writes `bytes` and expects open() to throw an mlcc::Error whose text
// contains `expected`.
void expectOpenFails(const std::string& bytes, const std::string& expected) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  mlcc::test::writeBytes(path, bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "opened a corrupt file; expected an error containing '" << expected << "'";
  } catch (const mlcc::Error& e) {
    EXPECT_NE(e.format().find(expected), std::string::npos) << e.format();
    EXPECT_NE(e.format().find(path), std::string::npos) << "error does not name the file: " << e.format();
  }
}

std::string validFileBytes() {
  TempDir dir;
  auto tensors = everyDType();
  mlcc::writeSafetensors(dir.file("ok.safetensors"), views(tensors), {{"k", "v"}});
  return mlcc::test::readFile(dir.file("ok.safetensors"));
}

}  // namespace

TEST(Safetensors, RoundTripEveryDType) {
  TempDir dir;
  std::string path = dir.file("w.safetensors");
  auto tensors = everyDType();
  std::map<std::string, std::string> metadata = {{"format", "pt"}, {"producer", "mlcc"}};
  mlcc::writeSafetensors(path, views(tensors), metadata);

  SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.metadata(), metadata);
  std::vector<std::string> names = file.names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  ASSERT_EQ(names.size(), tensors.size());
  for (const OwnedTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    const mlcc::SafetensorsTensorInfo* info = file.find(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    std::span<const std::byte> data = file.data(t.name);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), t.bytes.begin(), t.bytes.end()));
    // Each tensor is aligned to its element size (the mapping is page-aligned).
    if (!data.empty()) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(data.data()) % *mlcc::safetensorsDTypeBytes(t.dtype), 0u);
    }
  }
  EXPECT_EQ(file.find("nosuch"), nullptr);
  EXPECT_THROW(file.data("nosuch"), mlcc::Error);
}

TEST(Safetensors, NoTensors) {
  TempDir dir;
  mlcc::writeSafetensors(dir.file("e.safetensors"), {});
  SafetensorsFile file = SafetensorsFile::open(dir.file("e.safetensors"));
  EXPECT_TRUE(file.names().empty());
  EXPECT_TRUE(file.metadata().empty());
}

TEST(Safetensors, WriterIsDeterministic) {
  TempDir dir;
  auto tensors = everyDType();
  mlcc::writeSafetensors(dir.file("a"), views(tensors), {{"x", "1"}});
  std::reverse(tensors.begin(), tensors.end());
  mlcc::writeSafetensors(dir.file("b"), views(tensors), {{"x", "1"}});
  std::string a = mlcc::test::readFile(dir.file("a"));
  EXPECT_EQ(a, mlcc::test::readFile(dir.file("b")));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(a[i]);
  EXPECT_EQ(header_len % 8, 0u) << "data buffer must start 8-byte aligned";
}

TEST(Safetensors, MoveKeepsMappingAlive) {
  TempDir dir;
  auto tensors = everyDType();
  mlcc::writeSafetensors(dir.file("w"), views(tensors));
  SafetensorsFile a = SafetensorsFile::open(dir.file("w"));
  std::span<const std::byte> before = a.data("a.f32");
  SafetensorsFile b = std::move(a);
  EXPECT_EQ(b.data("a.f32").data(), before.data());
  EXPECT_EQ(b.data("a.f32")[0], tensors[0].bytes[0]);
  SafetensorsFile c = SafetensorsFile::open(dir.file("w"));
  c = std::move(b);  // unmaps c's old mapping
  EXPECT_EQ(c.data("a.f32")[0], tensors[0].bytes[0]);
}

TEST(Safetensors, WriterRejectsBadTensors) {
  TempDir dir;
  std::string path = dir.file("w");
  auto t = makeTensor("t", "F32", {2});
  auto write = [&](std::vector<OwnedTensor> ts) { mlcc::writeSafetensors(path, views(ts)); };
  EXPECT_THROW(write({t, t}), mlcc::Error);                         // duplicate name
  EXPECT_THROW(write({{"t", "F32", {3}, t.bytes}}), mlcc::Error);   // wrong size
  EXPECT_THROW(write({{"t", "C64", {2}, t.bytes}}), mlcc::Error);   // unknown dtype
  EXPECT_THROW(write({{"t", "F32", {-2}, t.bytes}}), mlcc::Error);  // negative dim
  EXPECT_THROW(write({{"", "F32", {2}, t.bytes}}), mlcc::Error);    // empty name
  EXPECT_THROW(write({{"__metadata__", "F32", {2}, t.bytes}}), mlcc::Error);
  EXPECT_THROW(write({{"t", "F32", {INT64_MAX, 2}, t.bytes}}), mlcc::Error);  // overflow
  EXPECT_FALSE(mlcc::test::fileExists(path));
  EXPECT_EQ(mlcc::test::listDir(dir.path()).size(), 0u) << "a temporary file was left behind";
}

TEST(Safetensors, AtomicWrite) {
  TempDir dir;
  auto tensors = everyDType();
  // A nonexistent directory: an error, and nothing is created.
  EXPECT_THROW(mlcc::writeSafetensors(dir.file("nosuch/w.safetensors"), views(tensors)), mlcc::Error);
  EXPECT_TRUE(mlcc::test::listDir(dir.path()).empty());
  // A failed write leaves an existing file untouched.
  std::string path = dir.file("w.safetensors");
  mlcc::test::writeBytes(path, "previous contents");
  std::vector<OwnedTensor> bad = {{"t", "F32", {3}, patternBytes(4, 0)}};
  EXPECT_THROW(mlcc::writeSafetensors(path, views(bad)), mlcc::Error);
  EXPECT_EQ(mlcc::test::readFile(path), "previous contents");
  EXPECT_EQ(mlcc::test::listDir(dir.path()), std::vector<std::string>{"w.safetensors"});
  // A successful write replaces it.
  mlcc::writeSafetensors(path, views(tensors));
  EXPECT_EQ(SafetensorsFile::open(path).names().size(), tensors.size());
  EXPECT_EQ(mlcc::test::listDir(dir.path()), std::vector<std::string>{"w.safetensors"});
}

TEST(Safetensors, OpenMissingFile) {
  TempDir dir;
  EXPECT_THROW(SafetensorsFile::open(dir.file("nosuch")), mlcc::Error);
  EXPECT_THROW(SafetensorsFile::open(dir.path()), mlcc::Error);  // a directory
}

TEST(SafetensorsCorrupt, TruncatedAtEveryOffset) {
  std::string bytes = validFileBytes();
  TempDir dir;
  std::string path = dir.file("t");
  for (size_t n = 0; n < bytes.size(); ++n) {
    mlcc::test::writeBytes(path, bytes.substr(0, n));
    EXPECT_THROW(SafetensorsFile::open(path), mlcc::Error) << "truncated to " << n << " bytes";
  }
}

TEST(SafetensorsCorrupt, RandomByteFlipsNeverCrash) {
  std::string bytes = validFileBytes();
  TempDir dir;
  std::string path = dir.file("t");
  std::mt19937 rng(42);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string b = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % std::min<size_t>(b.size(), 600)] = static_cast<char>(rng());
    mlcc::test::writeBytes(path, b);
    try {
      SafetensorsFile file = SafetensorsFile::open(path);
      for (const std::string& name : file.names()) (void)file.data(name).size();
    } catch (const mlcc::Error&) {
    }
  }
}

TEST(SafetensorsCorrupt, HeaderLength) {
  expectOpenFails(le64(1000) + "{}", "header length 1000 exceeds");
  expectOpenFails(le64(UINT64_MAX) + "{}", "exceeds");
  expectOpenFails("abc", "too short");
  expectOpenFails(le64(0), "malformed");
}

TEST(SafetensorsCorrupt, BadJson) {
  expectOpenFails(fileWithHeader("{\"a\": {"), "malformed");
  expectOpenFails(fileWithHeader("not json"), "malformed");
  expectOpenFails(fileWithHeader("[1, 2]"), "not a JSON object");
  expectOpenFails(fileWithHeader("{\"a\": \"\xff\xfe\"}"), "malformed");
  expectOpenFails(fileWithHeader("{\"a\": 3}"), "tensor 'a': header entry is not an object");
  expectOpenFails(fileWithHeader(std::string(100000, '[')), "malformed");
}

TEST(SafetensorsCorrupt, BadEntries) {
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
    return "\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
           ", \"data_offsets\": " + offsets + "}";
  };
  auto header = [](const std::vector<std::string>& entries) {
    std::string s = "{";
    for (size_t i = 0; i < entries.size(); ++i) s += (i ? ", " : "") + entries[i];
    return s + "}";
  };
  // The data buffer has 16 bytes.
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[2]", "[0, 32]")})), "tensor 'w': data_offsets");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[2]", "[8, 0]")})), "out of bounds");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[2]", "[-8, 0]")})), "'data_offsets'");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[2]", "[0]")})), "'data_offsets'");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[3]", "[0, 8]")})), "need 12");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[-2]", "[0, 8]")})), "bad dimension -2");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[2.5]", "[0, 8]")})), "bad dimension 2.5");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[NaN]", "[0, 8]")})), "malformed");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[\"2\"]", "[0, 8]")})), "bad dimension");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "2", "[0, 8]")})), "'shape' is not an array");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[4294967296, 4294967296]", "[0, 8]")})),
                  "overflows");
  expectOpenFails(fileWithHeader(header({entry("w", "U8", "[18446744073709551615]", "[0, 8]")})),
                  "bad dimension");
  expectOpenFails(fileWithHeader(header({entry("w", "F32", "[0, 9223372036854775807, 2]", "[0, 0]")})),
                  "overflows");
  expectOpenFails(fileWithHeader(header({entry("w", "Q4", "[2]", "[0, 8]")})), "unknown dtype 'Q4'");
  expectOpenFails(
      fileWithHeader(header({entry("a", "F32", "[2]", "[0, 8]"), entry("b", "F32", "[2]", "[4, 12]")})),
      "tensor 'b': data overlaps tensor 'a'");
  expectOpenFails(
      fileWithHeader(header({entry("a", "F32", "[2]", "[0, 8]"), entry("a", "F32", "[2]", "[8, 16]")})),
      "tensor 'a': appears twice");
  expectOpenFails(fileWithHeader("{\"w\": {\"dtype\": \"F32\", \"shape\": [2]}}"), "missing 'data_offsets'");
  expectOpenFails(fileWithHeader("{\"__metadata__\": {\"a\": 1}}"), "'__metadata__' value of 'a'");
  expectOpenFails(fileWithHeader("{\"__metadata__\": []}"), "'__metadata__' is not an object");
}

TEST(SafetensorsCorrupt, LenientButValid) {
  // Gaps and zero-size tensors anywhere in the buffer are fine.
  TempDir dir;
  std::string path = dir.file("ok");
  mlcc::test::writeBytes(
      path, fileWithHeader("{\"b\": {\"dtype\": \"I8\", \"shape\": [2], \"data_offsets\": [10, 12]}, \"e\": "
                           "{\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [11, 11]}}"));
  SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.data("b").size(), 2u);
  EXPECT_EQ(file.data("e").size(), 0u);
}

// Python writes a reference file by hand (struct + json, following the layout
// writeSafetensors documents) and a differently laid out one; C++ writes the
// same tensors byte-identically, reads both, and Python checks the C++ file
// the way the reference safetensors reader validates it.
TEST(SafetensorsInterop, Python) {
  if (std::string why = mlcc::test::pythonNumpyUnavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string common = R"PY(
import json, struct, sys
import numpy as np
ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1, "I32": 4, "I64": 8, "BOOL": 1, "U8": 1, "F64": 8}
META = {"format": "pt", "producer": "python"}
def make():
    rng = np.random.default_rng(7)
    return {
        "fc1.weight": ("F32", rng.standard_normal((3, 4)).astype(np.float32)),
        "fc1.bias": ("F32", np.array([1.5, -2.0, np.inf], dtype=np.float32)),
        "emb": ("F16", (np.arange(6, dtype=np.float16) - 2.5).reshape(2, 3)),
        "bf": ("BF16", np.array([0x3F80, 0x4000, 0xBF80], dtype=np.uint16)),
        "q": ("I8", np.array([-128, 0, 127, 5, 9], dtype=np.int8)),
        "idx": ("I32", np.array([[1, -2], [3, 4]], dtype=np.int32)),
        "big": ("I64", np.array([2**40, -1], dtype=np.int64)),
        "mask": ("BOOL", np.array([True, False, True])),
        "scalar": ("F32", np.array(3.5, dtype=np.float32)),
        "empty": ("F32", np.zeros((0, 4), dtype=np.float32)),
        "u": ("U8", np.array([0, 255, 7], dtype=np.uint8)),
        "d": ("F64", np.array([np.pi, -0.0], dtype=np.float64)),
    }
def header_entry(dtype, a, begin):
    n = a.nbytes
    return {"dtype": dtype, "shape": list(a.shape), "data_offsets": [begin, begin + n]}, begin + n
)PY";
  const std::string gen = common + R"PY(
tensors = make()
# The reference layout: data by element size (largest first), then name;
# compact JSON with sorted keys, padded with spaces to a multiple of 8.
header, off, data = {}, 0, b""
for name in sorted(tensors, key=lambda n: (-ITEMSIZE[tensors[n][0]], n)):
    dtype, a = tensors[name]
    header[name], off = header_entry(dtype, a, off)
    data += a.tobytes()
header["__metadata__"] = META
text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open("reference.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
# Another writer's layout: metadata first, data in reverse name order,
# spaced JSON, unaligned header length.
header, off, data = {"__metadata__": META}, 0, b""
for name in sorted(tensors, reverse=True):
    dtype, a = tensors[name]
    header[name], off = header_entry(dtype, a, off)
    data += a.tobytes()
text = json.dumps(header, indent=1).encode() + b"   "
if len(text) % 8 == 0: text += b" "
open("foreign.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
manifest = []
for name, (dtype, a) in tensors.items():
    open(name + ".bin", "wb").write(a.tobytes())
    manifest.append({"name": name, "dtype": dtype, "shape": list(a.shape)})
json.dump({"tensors": manifest, "metadata": META}, open("manifest.json", "w"))
)PY";
  ASSERT_EQ(mlcc::test::runPython(gen, dir.path()), 0);

  nlohmann::json manifest = nlohmann::json::parse(mlcc::test::readFile(dir.file("manifest.json")));
  std::vector<OwnedTensor> tensors;
  for (const auto& t : manifest["tensors"]) {
    std::string bin = mlcc::test::readFile(dir.file(t["name"].get<std::string>() + ".bin"));
    auto bytes = std::as_bytes(std::span(bin));
    tensors.push_back(
        {t["name"], t["dtype"], t["shape"].get<std::vector<int64_t>>(), {bytes.begin(), bytes.end()}});
  }
  auto metadata = manifest["metadata"].get<std::map<std::string, std::string>>();

  mlcc::writeSafetensors(dir.file("cpp.safetensors"), views(tensors), metadata);
  EXPECT_EQ(mlcc::test::readFile(dir.file("cpp.safetensors")),
            mlcc::test::readFile(dir.file("reference.safetensors")))
      << "C++ writer differs from the Python reference bytes";

  for (const char* name : {"reference.safetensors", "foreign.safetensors"}) {
    SCOPED_TRACE(name);
    SafetensorsFile file = SafetensorsFile::open(dir.file(name));
    EXPECT_EQ(file.metadata(), metadata);
    EXPECT_EQ(file.names().size(), tensors.size());
    for (const OwnedTensor& t : tensors) {
      const mlcc::SafetensorsTensorInfo* info = file.find(t.name);
      ASSERT_NE(info, nullptr) << t.name;
      EXPECT_EQ(info->dtype, t.dtype);
      EXPECT_EQ(info->shape, t.shape);
      auto data = file.data(*info);
      EXPECT_TRUE(std::equal(data.begin(), data.end(), t.bytes.begin(), t.bytes.end())) << t.name;
    }
  }

  const std::string check = common + R"PY(
buf = open("cpp.safetensors", "rb").read()
(n,) = struct.unpack("<Q", buf[:8])
assert n % 8 == 0, n
header = json.loads(buf[8:8 + n])
data = buf[8 + n:]
assert header.pop("__metadata__") == META
# What the reference reader validates: contiguous offsets covering the buffer.
entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"])
end = 0
for name, e in entries:
    b, e_ = e["data_offsets"]
    assert b == end, (name, b, end)
    assert b % ITEMSIZE[e["dtype"]] == 0, name
    end = e_
assert end == len(data), (end, len(data))
for name, (dtype, a) in make().items():
    e = header[name]
    assert e["dtype"] == dtype and e["shape"] == list(a.shape), name
    b, e_ = e["data_offsets"]
    got = np.frombuffer(data[b:e_], dtype=a.dtype).reshape(a.shape)
    assert np.array_equal(got, a), name
print("ok")
)PY";
  EXPECT_EQ(mlcc::test::runPython(check, dir.path()), 0);
}
