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

// A tool's process is one command: runTool (tool.h) turns on the tracking of
// its input files, so that no output is written over one. Libraries used in
// a long-lived process (tests, a tuner rewriting its own files) leave it off.
void trackInputFiles(bool on);

// Records `path` as an input of this command when tracking is on (readInput,
// mapped weights files, the weights files an IR file names do this): no
// output may be written over it. A path that does not exist is ignored.
void noteInputFile(const std::string& path);

// Throws mlcc::Error when `path` ("-": stdout, always fine) may not be
// written as an output: it is a directory, or (when tracking) a file this
// command reads as an input (the same file, however spelt). Tools that write
// several files call it for each before writing any; AtomicFileWriter calls it too.
void checkOutputPath(const std::string& path);

// Writes `contents` to `path` atomically (temp file + rename), or to stdout.
// Throws mlcc::Error naming the path on failure.
void writeOutputAtomic(const std::string& path, std::string_view contents);

// The directory part of a path ("." when it has none, and for stdin).
std::string directoryOf(const std::string& path);

// `rel` resolved against `base_dir` unless it is absolute.
std::string resolvePath(const std::string& base_dir, const std::string& rel);

// `rel`, a path that an input file names (ONNX external data), resolved inside
// `base_dir`: an absolute path, or one whose real path (`..` and symbolic
// links resolved) lies outside base_dir's real path, throws mlcc::Error
// naming `what`, so an input file cannot make a tool read files elsewhere.
std::string resolveInside(const std::string& base_dir, const std::string& rel, const std::string& what);

}  // namespace mlcc

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace mlcc {

class AtomicFileSet;

// Streams an output file into a temporary file beside `path`; commit()
// renames it into place. Destroying the writer without commit() (say, on an
// exception) removes the temporary file, so a failed write never leaves a
// partial output and never truncates an existing file at `path`. For "-"/""
// it writes straight to stdout, and into an existing file that is not a
// regular one (/dev/null, a FIFO, a terminal) it writes directly, as a shell
// redirection would, instead of replacing the device node. An input of this
// process or a directory at `path` is refused (checkOutputPath) before
// anything is written. All failures throw mlcc::Error naming `path`.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::string_view bytes);
  void write(std::span<const std::byte> bytes);
  // Makes the output visible at `path`. No writes are allowed afterwards.
  void commit();
  const std::string& path() const { return path_; }

 private:
  friend class AtomicFileSet;
  // Closes the temporary file (commit's first half; throws on failure).
  void finish();
  void fail(const std::string& what, int err);
  std::string path_;
  std::string tmp_path_;  // empty for stdout and non-regular files (written directly)
  int fd_ = -1;
  bool committed_ = false;
};

// Several outputs written as one (say, every output of a model): each is
// written through its own AtomicFileWriter; commit() renames them all into
// place, or none: when a rename fails, the files renamed before it are put
// back (the previous file, kept as a hard link until then, or removed when
// there was none) and the temporary files are removed. Destroying the set
// without commit() leaves every path as it was. Two writers for the same
// path are an error.
class AtomicFileSet {
 public:
  AtomicFileSet() = default;
  ~AtomicFileSet();
  AtomicFileSet(const AtomicFileSet&) = delete;
  AtomicFileSet& operator=(const AtomicFileSet&) = delete;

  // The writer of `path` (valid until the set is destroyed).
  AtomicFileWriter& add(const std::string& path);
  void commit();

 private:
  std::vector<std::unique_ptr<AtomicFileWriter>> writers_;
};

}  // namespace mlcc
