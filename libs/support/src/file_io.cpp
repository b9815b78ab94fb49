// Input reading and atomic output writing (see file_io.h).
#include "mlcc/support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <tuple>
#include <vector>

#include "mlcc/support/diagnostic.h"

namespace mlcc {

bool isStdStream(std::string_view path) { return path.empty() || path == "-"; }

std::string displayName(std::string_view path) {
  return isStdStream(path) ? std::string("<stdin>") : std::string(path);
}

namespace {

// The files this process reads, by device and inode (so every spelling of a
// path, and hard links, are the same file), with the name first used.
struct InputFiles {
  std::mutex mutex;
  bool tracking = false;
  std::vector<std::tuple<dev_t, ino_t, std::string>> files;
};
InputFiles& inputFiles() {
  static InputFiles f;
  return f;
}

}  // namespace

void trackInputFiles(bool on) {
  InputFiles& in = inputFiles();
  std::lock_guard<std::mutex> lock(in.mutex);
  in.tracking = on;
  if (!on) in.files.clear();
}

void noteInputFile(const std::string& path) {
  struct stat st;
  if (isStdStream(path) || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  InputFiles& in = inputFiles();
  std::lock_guard<std::mutex> lock(in.mutex);
  if (!in.tracking) return;
  for (const auto& [dev, ino, name] : in.files)
    if (dev == st.st_dev && ino == st.st_ino) return;
  in.files.emplace_back(st.st_dev, st.st_ino, path);
}

void checkOutputPath(const std::string& path) {
  struct stat st;
  if (isStdStream(path) || ::stat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) throw Error(SourceLoc{path, 0, 0}, "cannot write the output: is a directory");
  InputFiles& in = inputFiles();
  std::lock_guard<std::mutex> lock(in.mutex);
  for (const auto& [dev, ino, name] : in.files)
    if (dev == st.st_dev && ino == st.st_ino)
      throw Error(SourceLoc{path, 0, 0}, "cannot write the output over an input of this command (" + name +
                                             "); choose another output path");
}

std::string readInput(const std::string& path) {
  if (isStdStream(path)) {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(SourceLoc{path, 0, 0}, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(SourceLoc{path, 0, 0}, std::string("cannot open: ") + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(SourceLoc{path, 0, 0}, "read failed");
  noteInputFile(path);
  return data;
}

void writeOutputAtomic(const std::string& path, std::string_view contents) {
  AtomicFileWriter out(path);
  out.write(contents);
  out.commit();
}

std::string directoryOf(const std::string& path) {
  if (isStdStream(path)) return ".";
  std::filesystem::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string resolvePath(const std::string& base_dir, const std::string& rel) {
  std::filesystem::path p(rel);
  if (p.is_absolute() || base_dir.empty() || base_dir == ".") return rel;
  return (std::filesystem::path(base_dir) / p).string();
}

std::string resolveInside(const std::string& base_dir, const std::string& rel, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path p(rel);
  auto refuse = [&](const std::string& why) {
    return Error(what + ": '" + rel + "' " + why + "; files a model names must lie in its directory (" +
                 (base_dir.empty() ? std::string(".") : base_dir) + ")");
  };
  if (rel.empty()) throw refuse("is empty");
  if (p.is_absolute()) throw refuse("is an absolute path");
  if (rel.find('\0') != std::string::npos) throw refuse("contains a NUL byte");
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(base_dir.empty() ? "." : base_dir, ec), ec);
  if (ec) throw refuse("cannot be resolved: " + ec.message());
  const fs::path full = fs::weakly_canonical(base / p, ec);
  if (ec) throw refuse("cannot be resolved: " + ec.message());
  auto b = base.begin(), f = full.begin();
  for (; b != base.end() && !b->empty(); ++b, ++f)
    if (f == full.end() || *f != *b) throw refuse("leads outside the model's directory");
  if (f == full.end()) throw refuse("names the model's directory itself");
  return full.string();
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (isStdStream(path_)) {
    std::cout.flush();  // keep earlier buffered stdout output in order
    fd_ = STDOUT_FILENO;
    return;
  }
  checkOutputPath(path_);
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open output", errno);
    return;
  }
  tmp_path_ = path_ + ".tmp.XXXXXX";
  fd_ = mkstemp(tmp_path_.data());
  if (fd_ < 0) {
    tmp_path_.clear();
    fail("cannot create output", errno);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (tmp_path_.empty() && fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
  if (committed_ || tmp_path_.empty()) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  throw Error(SourceLoc{displayName(path_), 0, 0}, what + ": " + std::strerror(err));
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (committed_ || fd_ < 0) throw Error(SourceLoc{path_, 0, 0}, "write after commit");
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed", n < 0 ? errno : EIO);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void AtomicFileWriter::finish() {
  if (committed_ || tmp_path_.empty() || fd_ < 0) return;
  // Match the permissions a plain open() would give (mkstemp uses 0600).
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write output", errno);
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  if (tmp_path_.empty()) {  // stdout, or a device or FIFO written directly
    committed_ = true;
    if (fd_ != STDOUT_FILENO) {
      int fd = fd_;
      fd_ = -1;
      if (::close(fd) != 0) fail("cannot write output", errno);
    }
    return;
  }
  finish();
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) fail("cannot write output", errno);
  committed_ = true;
}

AtomicFileSet::~AtomicFileSet() = default;  // the writers remove their temporary files

AtomicFileWriter& AtomicFileSet::add(const std::string& path) {
  for (const auto& w : writers_)
    if (w->path_ == path) throw Error(SourceLoc{displayName(path), 0, 0}, "is written twice");
  writers_.push_back(std::make_unique<AtomicFileWriter>(path));
  return *writers_.back();
}

void AtomicFileSet::commit() {
  for (auto& w : writers_) w->finish();
  // The previous file at each path, kept (hard-linked) until all are renamed.
  struct Renamed {
    AtomicFileWriter* writer;
    std::string backup;  // empty: there was no file
  };
  std::vector<Renamed> done;
  auto rollback = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      const std::string& path = it->writer->path_;
      if (it->backup.empty())
        ::unlink(path.c_str());
      else
        std::rename(it->backup.c_str(), path.c_str());
    }
  };
  for (auto& w : writers_) {
    if (w->tmp_path_.empty()) continue;  // stdout, or a device or FIFO written directly
    std::string backup;
    struct stat st;
    if (::lstat(w->path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      backup = w->tmp_path_ + ".old";
      if (::link(w->path_.c_str(), backup.c_str()) != 0) {
        const int err = errno;
        rollback();
        w->fail("cannot replace output", err);
      }
    }
    if (std::rename(w->tmp_path_.c_str(), w->path_.c_str()) != 0) {
      const int err = errno;
      if (!backup.empty()) ::unlink(backup.c_str());
      rollback();
      w->fail("cannot write output", err);
    }
    done.push_back({w.get(), backup});
  }
  for (const auto& r : done)
    if (!r.backup.empty()) ::unlink(r.backup.c_str());
  for (auto& w : writers_) w->committed_ = true;
}

}  // namespace mlcc
