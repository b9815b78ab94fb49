// Linking a compiled model: model.o (kernels, the compiled graph entry and
// the embedded weights, from mlcc-codegen) plus libmlcc_runtime.a into one
// self-contained model.so that exports only the C ABI of
// include/mlcc/runtime.h. The system C++ compiler driver does the link.
#pragma once

#include <string>
#include <vector>

namespace mlcc::host {

struct LinkOptions {
  std::vector<std::string> objects;  // ELF relocatable objects (.o)
  // User libraries defining the functions of call_extern (include/mlcc/extern.h):
  // objects (.o) and archives (.a) are linked in; a shared library (.so) is
  // needed at run time, found through an rpath to its directory.
  std::vector<std::string> libraries;
  std::string output;           // the model.so to write (replaced atomically)
  std::string runtime_library;  // libmlcc_runtime.a; empty: defaultRuntimeLibrary()
  std::string compiler;         // empty: $CXX, else "c++"
};

// libmlcc_runtime.a next to the running executable: <bindir>/../lib (the
// build tree) or <bindir>/../<install libdir>. Throws mlcc::Error naming the
// places looked at when there is none.
std::string defaultRuntimeLibrary();

// The compiler command linkModel runs, writing `output_file`.
std::vector<std::string> linkCommand(const LinkOptions& options, const std::string& output_file,
                                     const std::string& version_script);

// Checks the objects, links them into a temporary file next to the output,
// appends the checksum (model_checksum.h) and renames it into place. Throws mlcc::Error (with the linker's
// messages on a failed link); nothing is left behind on error. With `log`, the command is written to it.
void linkModel(const LinkOptions& options, std::string* log = nullptr);

// Throws mlcc::Error unless `path` is a readable ELF relocatable object.
void checkObjectFile(const std::string& path);
// Throws mlcc::Error unless `path` is an object, an archive or a shared library.
void checkUserLibrary(const std::string& path);

}  // namespace mlcc::host
