// File input and output shared by every tool.
// - readInput: a path, or "-"/"" for stdin.
// - writeOutputAtomic: writes to a temporary file beside the target and
//   renames it into place, so a failed run never leaves a partial output and
//   never truncates an existing file; "-"/"" writes to stdout.
#pragma once

#include <string>
#include <string_view>

namespace mlcc {

// True for the names that mean stdin/stdout ("-" or empty).
bool isStdStream(std::string_view path);

// The display name of an input path for diagnostics ("<stdin>" for "-").
std::string displayName(std::string_view path);

// Reads a whole file (or stdin); throws mlcc::Error naming the path on failure.
std::string readInput(const std::string& path);

// Writes `contents` to `path` atomically (temp file + rename), or to stdout.
// Throws mlcc::Error naming the path on failure.
void writeOutputAtomic(const std::string& path, std::string_view contents);

// The directory part of a path ("." when it has none, and for stdin).
std::string directoryOf(const std::string& path);

// `rel` resolved against `base_dir` unless it is absolute.
std::string resolvePath(const std::string& base_dir, const std::string& rel);

}  // namespace mlcc
