// Test helpers for the tensor file formats: a temporary directory, raw file
// access, and running /usr/bin/python3 (with numpy) for interop tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mlcc::test {

// A fresh directory under the system temp dir, removed with its contents on
// destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void writeBytes(const std::string& path, const std::string& bytes);
bool fileExists(const std::string& path);
// Names of the entries of a directory, sorted.
std::vector<std::string> listDir(const std::string& dir);

// An empty string when /usr/bin/python3 with numpy can run; else why not
// (for GTEST_SKIP).
std::string pythonNumpyUnavailable();
// Runs `script` with /usr/bin/python3 in directory `cwd`; returns the exit
// status (0 on success) and adds its output to the failure message on error.
int runPython(const std::string& script, const std::string& cwd);

// An empty string when the public test models can be made (python with
// numpy, torch, torchvision and onnx); else why not (for GTEST_SKIP).
std::string modelGeneratorUnavailable();
// Makes the named models of tests/models/generate.py (e.g. "resnet18") as
// DIR/NAME.onnx; returns its exit status, as runPython does.
int generateModels(const std::string& dir, const std::vector<std::string>& names);
// Exports torchvision's ResNet-18 (seed 0) at `size` x `size` as
// DIR/resnet18_SIZE.onnx (its prim funcs on smaller images run faster);
// returns the exit status, as runPython does.
int exportResNet18(const std::string& dir, int size);

}  // namespace mlcc::test
