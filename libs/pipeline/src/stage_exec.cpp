// exec-stage: run a stage, keep the timestamps of unchanged outputs, write
// the depfile of the weights its input names (see stage_exec.h).
#include "mlcc/pipeline/stage_exec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "mlcc/host/process.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::pipeline {

namespace fs = std::filesystem;

namespace {

// A file's size, content hash (FNV-1a 64) and timestamps, if it exists.
struct Snapshot {
  uint64_t size = 0, hash = 0;
  struct timespec times[2];  // atime, mtime
};

std::optional<Snapshot> snapshot(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Snapshot s;
  s.size = static_cast<uint64_t>(st.st_size);
  s.times[0] = st.st_atim;
  s.times[1] = st.st_mtim;
  uint64_t h = 1469598103934665603ull;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;
    }
  }
  s.hash = h;
  return s;
}

// A path in a Makefile-syntax depfile: spaces and # escaped.
std::string depPath(const std::string& path) {
  std::string s;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == '\\') s += '\\';
    if (c == '$') s += '$';
    s += c;
  }
  return s;
}

}  // namespace

std::vector<std::string> weightFilesOf(const std::string& ir_path) {
  std::ifstream in(ir_path);
  std::string line;
  if (!std::getline(in, line) || !line.starts_with("mlcc.ir ")) return {};
  std::vector<std::string> files;
  const std::string dir = fs::absolute(ir_path).parent_path().string();
  while (std::getline(in, line)) {
    if (line.empty() || line.starts_with("#")) continue;
    if (!line.starts_with("weights \"")) break;  // weights lines come before the functions
    size_t close = line.rfind('"');
    if (close <= 9) break;
    files.push_back(fs::path(resolvePath(dir, line.substr(9, close - 9))).lexically_normal().string());
  }
  return files;
}

int execStage(const StageExec& stage) {
  const std::string sidecar = fs::path(stage.output).replace_extension(".safetensors").string();
  std::vector<std::pair<std::string, std::optional<Snapshot>>> before;
  for (const auto& path : {stage.output, sidecar}) before.emplace_back(path, snapshot(path));

  const int rc = host::runProcessPassthrough(stage.command);
  if (rc != 0) return rc;
  if (std::error_code ec; !fs::exists(stage.output, ec)) {
    std::cerr << "mlcc-pipeline: error: " << host::commandLine(stage.command)
              << " succeeded but did not write " << stage.output << "\n";
    return 1;
  }
  for (const auto& [path, old] : before) {
    if (!old) continue;
    auto now = snapshot(path);
    if (now && now->size == old->size && now->hash == old->hash)
      utimensat(AT_FDCWD, path.c_str(), old->times, 0);  // unchanged: keep its timestamp
  }
  std::string dep = depPath(stage.output) + ":";
  for (const auto& w : weightFilesOf(stage.input)) dep += " " + depPath(w);
  writeOutputAtomic(stage.depfile, dep + "\n");
  return 0;
}

}  // namespace mlcc::pipeline
