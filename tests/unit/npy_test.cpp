// .npy reading and writing: round trips of every dtype, byte equality with
// numpy.save, files from numpy (v1/v2/v3) read in C++ and C++ files read by
// numpy, header parsing, rejection of unsupported and corrupt files, and
// atomic output.
#include "mlcc/support/npy.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mlcc/support/diagnostic.h"
#include "tensor_files.h"
#include "testlib.h"

using mlcc::NpyArray;
using mlcc::test::TempDir;

namespace {

NpyArray makeArray(std::string dtype, std::vector<int64_t> shape) {
  NpyArray a{std::move(dtype), std::move(shape), {}};
  size_t n = static_cast<size_t>(a.numElements() * *mlcc::npyDTypeBytes(a.dtype));
  for (size_t i = 0; i < n; ++i) a.data.push_back(std::byte(static_cast<uint8_t>(i * 13 + 5)));
  if (a.dtype == "|b1")
    for (std::byte& b : a.data) b &= std::byte{1};
  return a;
}

std::vector<NpyArray> everyDType() {
  return {makeArray("<f4", {3, 4}), makeArray("<f2", {5}), makeArray("|i1", {2, 3, 2}), makeArray("<i4", {1}),
          makeArray("<i8", {2, 2}), makeArray("|b1", {4}), makeArray("|u1", {3}),       makeArray("<f8", {2}),
          makeArray("<f4", {}),     makeArray("<i8", {0}), makeArray("<f4", {3, 0})};
}

mlcc::NpyArray parse(const std::string& bytes) {
  return mlcc::parseNpy(std::as_bytes(std::span(bytes)), "x.npy");
}

// A v1.0 file with the given header dict text and data.
std::string npyWithHeader(const std::string& dict, const std::string& data = "") {
  std::string h = dict + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xff) +
         static_cast<char>(h.size() >> 8) + h + data;
}

void expectParseFails(const std::string& bytes, const std::string& expected) {
  try {
    parse(bytes);
    ADD_FAILURE() << "parsed a bad file; expected an error containing '" << expected << "'";
  } catch (const mlcc::Error& e) {
    EXPECT_NE(e.format().find(expected), std::string::npos) << e.format();
    EXPECT_NE(e.format().find("x.npy"), std::string::npos) << e.format();
  }
}

void expectSameArray(const NpyArray& a, const NpyArray& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.data, b.data);
}

}  // namespace

TEST(Npy, RoundTripEveryDType) {
  TempDir dir;
  for (const NpyArray& a : everyDType()) {
    SCOPED_TRACE(a.dtype);
    std::string path = dir.file("a.npy");
    mlcc::writeNpy(path, a);
    std::string bytes = mlcc::test::readFile(path);
    EXPECT_EQ(bytes, mlcc::serializeNpy(a));
    EXPECT_EQ(bytes.find("\n") + 1, bytes.size() - a.data.size());
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u) << "data must start 64-byte aligned";
    expectSameArray(mlcc::readNpy(path), a);
  }
}

TEST(Npy, HeaderParsingIsRobust) {
  std::string four(16, '\0');
  // Double quotes, other key order, extra spaces, no trailing comma, Python 2 longs, lists.
  expectSameArray(parse(npyWithHeader("{\"shape\":(2,2),\"fortran_order\":False,\"descr\":\"<f4\"}", four)),
                  NpyArray{"<f4", {2, 2}, std::vector<std::byte>(16)});
  expectSameArray(
      parse(npyWithHeader("{ 'descr' : '<i4' , 'fortran_order' : False , 'shape' : ( 4L , ) , }", four)),
      NpyArray{"<i4", {4}, std::vector<std::byte>(16)});
  expectSameArray(parse(npyWithHeader("{'descr': '<i8', 'fortran_order': False, 'shape': [2]}", four)),
                  NpyArray{"<i8", {2}, std::vector<std::byte>(16)});
  expectSameArray(parse(npyWithHeader("{'descr': '<u1', 'fortran_order': False, 'shape': ()}", "x")),
                  NpyArray{"|u1", {}, {std::byte('x')}});
}

TEST(NpyErrors, Unsupported) {
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}", "12345678"),
                   "Fortran-order arrays are not supported");
  expectParseFails(npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}", "12345678"),
                   "big-endian");
  expectParseFails(npyWithHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", "12345678"),
                   "unsupported dtype '<c8'");
  expectParseFails(npyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "1234"),
                   "structured");
  expectParseFails(std::string("\x93NUMPY\x04\x00\x00\x00", 8), "version 4");
}

TEST(NpyErrors, Corrupt) {
  expectParseFails("PK\x03\x04 not npy", "bad magic");
  expectParseFails("", "bad magic");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", "12345678"),
                   "has 8 bytes of data");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "12345678"),
                   "has 8 bytes of data");  // trailing bytes
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"),
                   "bad dimension");
  expectParseFails(
      npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
      "overflows");
  expectParseFails(
      npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
      "integer too large");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (nan,)}"), "malformed");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False}"), "no 'shape'");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"),
                   "unexpected keys");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'descr': '<f4'}"), "appears twice");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", "1234"),
                   "fortran_order");
  expectParseFails(npyWithHeader("{'descr': '<f4' 'fortran_order': False}"), "malformed");
  expectParseFails(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "1234"),
                   "unexpected text");
  expectParseFails(npyWithHeader("{'a': " + std::string(5000, '(') + "}"), "nesting too deep");
  expectParseFails(npyWithHeader("{'descr: '<f4'}"), "malformed");
  std::string big_len("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
  expectParseFails(big_len, "too large");
  std::string over("\x93NUMPY\x01\x00\xff\x00{}", 12);
  expectParseFails(over, "truncated");
}

TEST(NpyErrors, TruncatedAtEveryOffset) {
  for (const NpyArray& a : everyDType()) {
    std::string bytes = mlcc::serializeNpy(a);
    for (size_t n = 0; n < bytes.size(); ++n)
      EXPECT_THROW(parse(bytes.substr(0, n)), mlcc::Error) << a.dtype << " truncated to " << n;
  }
}

TEST(NpyErrors, WriterRejectsBadArrays) {
  EXPECT_THROW(mlcc::serializeNpy(NpyArray{"<f4", {3}, std::vector<std::byte>(8)}), mlcc::Error);
  EXPECT_THROW(mlcc::serializeNpy(NpyArray{"<u8", {1}, std::vector<std::byte>(8)}), mlcc::Error);
  EXPECT_THROW(mlcc::serializeNpy(NpyArray{"<f4", {-1}, {}}), mlcc::Error);
}

TEST(Npy, AtomicWrite) {
  TempDir dir;
  NpyArray a = makeArray("<f4", {2});
  EXPECT_THROW(mlcc::writeNpy(dir.file("nosuch/a.npy"), a), mlcc::Error);
  EXPECT_TRUE(mlcc::test::listDir(dir.path()).empty());
  std::string path = dir.file("a.npy");
  mlcc::test::writeBytes(path, "old");
  EXPECT_THROW(mlcc::writeNpy(path, NpyArray{"<f4", {3}, std::vector<std::byte>(8)}), mlcc::Error);
  EXPECT_EQ(mlcc::test::readFile(path), "old");
  EXPECT_EQ(mlcc::test::listDir(dir.path()), std::vector<std::string>{"a.npy"});
  EXPECT_THROW(mlcc::readNpy(dir.file("missing.npy")), mlcc::Error);
}

// numpy writes arrays of every dtype (v1, v2 and v3 files, and files mlcc
// must reject); C++ reads them, writes them back byte-identically to
// numpy.save, and numpy loads the C++ files.
TEST(NpyInterop, Python) {
  if (std::string why = mlcc::test::pythonNumpyUnavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::string common = R"PY(
import json
import numpy as np
def arrays():
    rng = np.random.default_rng(3)
    return {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": np.array([1.5, -0.0, np.inf, 65504], dtype=np.float16),
        "i8": np.array([[-128, 127], [0, 1]], dtype=np.int8),
        "i32": np.arange(-5, 5, dtype=np.int32).reshape(2, 5),
        "i64": np.array([2**62, -(2**62)], dtype=np.int64),
        "bool": np.array([[True, False, True]]),
        "u8": np.arange(256, dtype=np.uint8),
        "f64": np.array([np.pi, np.e], dtype=np.float64),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.int32),
        "big_dim": np.zeros((100000,), dtype=np.int8),
        "rank5": np.ones((1, 2, 1, 2, 1), dtype=np.float32),
    }
)PY";
  const std::string gen = common + R"PY(
manifest = {}
for name, a in arrays().items():
    np.save(name + ".npy", a)
    open(name + ".bin", "wb").write(a.tobytes())
    manifest[name] = {"descr": a.dtype.str, "shape": list(a.shape)}
    for v in [(2, 0), (3, 0)]:
        with open("%s.v%d.npy" % (name, v[0]), "wb") as f:
            np.lib.format.write_array(f, a, version=v)
json.dump(manifest, open("manifest.json", "w"))
np.save("fortran.npy", np.asfortranarray(np.ones((2, 3), dtype=np.float32)))
np.save("bigendian.npy", np.ones(3, dtype=">f4"))
np.save("complex.npy", np.ones(3, dtype=np.complex64))
np.save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
)PY";
  ASSERT_EQ(mlcc::test::runPython(gen, dir.path()), 0);

  nlohmann::json manifest = nlohmann::json::parse(mlcc::test::readFile(dir.file("manifest.json")));
  for (const auto& [name, info] : manifest.items()) {
    SCOPED_TRACE(name);
    std::string bin = mlcc::test::readFile(dir.file(name + ".bin"));
    auto bin_bytes = std::as_bytes(std::span(bin));
    NpyArray expected{
        info["descr"], info["shape"].get<std::vector<int64_t>>(), {bin_bytes.begin(), bin_bytes.end()}};
    for (const char* suffix : {".npy", ".v2.npy", ".v3.npy"})
      expectSameArray(mlcc::readNpy(dir.file(name + suffix)), expected);
    EXPECT_EQ(mlcc::serializeNpy(expected), mlcc::test::readFile(dir.file(name + ".npy")))
        << "C++ writer differs from numpy.save";
    mlcc::writeNpy(dir.file(name + ".cpp.npy"), expected);
  }
  for (const auto& [file, message] : std::vector<std::pair<std::string, std::string>>{
           {"fortran.npy", "Fortran-order arrays are not supported"},
           {"bigendian.npy", "big-endian"},
           {"complex.npy", "unsupported dtype '<c8'"},
           {"structured.npy", "structured"}}) {
    try {
      mlcc::readNpy(dir.file(file));
      ADD_FAILURE() << file << " was accepted";
    } catch (const mlcc::Error& e) {
      EXPECT_NE(e.format().find(message), std::string::npos) << e.format();
    }
  }

  const std::string check = common + R"PY(
for name, a in arrays().items():
    b = np.load(name + ".cpp.npy")
    assert b.dtype == a.dtype and b.shape == a.shape, name
    assert np.array_equal(a, b), name
print("ok")
)PY";
  EXPECT_EQ(mlcc::test::runPython(check, dir.path()), 0);
}
