// The checksum mlcc-link appends to model.so, and its check before a
// model.so is loaded: a truncated or damaged library would otherwise crash
// the loader (SIGBUS/SIGSEGV in dlopen) or run corrupted code.
//
// The trailer is 24 bytes after the ELF image (the dynamic loader ignores
// bytes past the segments): the image's length (u64, little-endian), its
// FNV-1a 64-bit hash (u64, little-endian), then the magic "MLCCSUM1".
//
//   appendModelChecksum("model.so.tmp");   // mlcc-link, before the rename
//   verifyModelChecksum("model.so");       // throws mlcc::Error at the file
#pragma once

#include <cstdint>
#include <string>

namespace mlcc::host {

inline constexpr char kModelChecksumMagic[9] = "MLCCSUM1";
inline constexpr uint64_t kModelChecksumTrailerBytes = 24;

// Appends the trailer to the library at `path`. Throws mlcc::Error.
void appendModelChecksum(const std::string& path);

// Throws mlcc::Error (located at `path`) unless the file ends with a trailer
// whose length and hash match the bytes before it: "truncated", "damaged",
// or no trailer at all (a library mlcc-link did not write).
void verifyModelChecksum(const std::string& path);

}  // namespace mlcc::host
