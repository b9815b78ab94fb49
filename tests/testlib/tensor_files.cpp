// Temporary directories, raw files and python interop (see tensor_files.h).
#include "tensor_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "testlib.h"

namespace mlcc::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "mlcc-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

bool fileExists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string pythonNumpyUnavailable() {
  if (!fileExists("/usr/bin/python3")) return "/usr/bin/python3 is missing";
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) return "numpy is missing";
  return "";
}

int runPython(const std::string& script, const std::string& cwd) {
  std::string script_path = cwd + "/script.py";
  std::string log_path = cwd + "/script.log";
  writeBytes(script_path, script);
  std::string cmd = "cd '" + cwd + "' && /usr/bin/python3 script.py >script.log 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc != 0) ADD_FAILURE() << "python failed (" << rc << "):\n" << readFile(log_path);
  return rc;
}

}  // namespace mlcc::test
