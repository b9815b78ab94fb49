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
#include <sstream>

#include "mlcc/support/diagnostic.h"

namespace mlcc {

bool isStdStream(std::string_view path) { return path.empty() || path == "-"; }

std::string displayName(std::string_view path) {
  return isStdStream(path) ? std::string("<stdin>") : std::string(path);
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

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (isStdStream(path_)) {
    std::cout.flush();  // keep earlier buffered stdout output in order
    fd_ = STDOUT_FILENO;
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
  if (tmp_path_.empty()) {  // stdout
    committed_ = true;
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
    if (w->tmp_path_.empty()) continue;  // stdout
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
