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

std::string modelGeneratorUnavailable() {
  if (std::string why = pythonNumpyUnavailable(); !why.empty()) return why;
  if (std::system("/usr/bin/python3 -c 'import torch, torchvision, onnx' >/dev/null 2>&1") != 0)
    return "no torch, torchvision or onnx for /usr/bin/python3";
  return "";
}

int generateModels(const std::string& dir, const std::vector<std::string>& names) {
  std::string args;
  for (const auto& n : names) args += ", '" + n + "'";
  return runPython("import subprocess, sys\nsys.exit(subprocess.call(['/usr/bin/python3', '" +
                       std::string(MLCC_SOURCE_DIR) + "/tests/models/generate.py', '--out', '" + dir +
                       "', '--only'" + args + "]))",
                   dir);
}

int exportResNet18(const std::string& dir, int size) {
  const std::string n = std::to_string(size);
  return runPython(
      "import torch, torchvision\n"
      "torch.manual_seed(0)\n"
      "m = torchvision.models.resnet18(weights=None).eval()\n"
      "torch.onnx.export(m, torch.randn(1, 3, " +
          n + ", " + n + "), 'resnet18_" + n +
          ".onnx', opset_version=13,\n"
          "                  input_names=['input'], output_names=['output'])\n",
      dir);
}

}  // namespace mlcc::test
