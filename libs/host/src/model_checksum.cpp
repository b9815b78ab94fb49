// The model.so checksum trailer (see model_checksum.h).
#include "mlcc/host/model_checksum.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "mlcc/support/diagnostic.h"

namespace mlcc::host {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

Error fileError(const std::string& path, const std::string& message) {
  return Error(SourceLoc{path, 0, 0}, message);
}

// FNV-1a over the first `length` bytes of `in` (from its start).
uint64_t hashPrefix(std::istream& in, uint64_t length, const std::string& path) {
  in.seekg(0);
  std::vector<char> buf(1 << 20);
  uint64_t h = kFnvOffset;
  for (uint64_t left = length; left > 0;) {
    const auto n = static_cast<std::streamsize>(std::min<uint64_t>(left, buf.size()));
    if (!in.read(buf.data(), n)) throw fileError(path, "read failed");
    for (std::streamsize i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * kFnvPrime;
    left -= static_cast<uint64_t>(n);
  }
  return h;
}

void putU64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t getU64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

void appendModelChecksum(const std::string& path) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  if (!f) throw fileError(path, std::string("cannot open: ") + std::strerror(errno));
  f.seekg(0, std::ios::end);
  const auto length = static_cast<uint64_t>(f.tellg());
  unsigned char trailer[kModelChecksumTrailerBytes];
  putU64(trailer, length);
  putU64(trailer + 8, hashPrefix(f, length, path));
  std::memcpy(trailer + 16, kModelChecksumMagic, 8);
  f.clear();
  f.seekp(0, std::ios::end);
  f.write(reinterpret_cast<const char*>(trailer), sizeof trailer);
  f.flush();
  if (!f) throw fileError(path, "cannot write the checksum");
}

void verifyModelChecksum(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw fileError(path, std::string("cannot open: ") + std::strerror(errno));
  f.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(f.tellg());
  unsigned char trailer[kModelChecksumTrailerBytes] = {};
  if (size >= sizeof trailer) {
    f.seekg(static_cast<std::streamoff>(size - sizeof trailer));
    if (!f.read(reinterpret_cast<char*>(trailer), sizeof trailer)) throw fileError(path, "read failed");
  }
  if (size < sizeof trailer || std::memcmp(trailer + 16, kModelChecksumMagic, 8) != 0)
    throw fileError(
        path,
        "not a model.so as mlcc-link writes it: it does not end with mlcc-link's checksum (a "
        "truncated or damaged file, or a library linked otherwise); link it again with mlcc-link");
  const uint64_t length = getU64(trailer);
  if (length != size - sizeof trailer)
    throw fileError(path, "truncated or damaged: mlcc-link wrote " + std::to_string(length) +
                              " bytes before the checksum, the file has " +
                              std::to_string(size - sizeof trailer) + "; link it again with mlcc-link");
  if (hashPrefix(f, length, path) != getU64(trailer + 8))
    throw fileError(path,
                    "damaged: its contents do not match the checksum mlcc-link recorded; link it again "
                    "with mlcc-link");
}

}  // namespace mlcc::host
