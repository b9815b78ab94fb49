// The interpreter's calls of user library functions (see user_externs.h).
#include "user_externs.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "mlcc/extern.h"
#include "mlcc/host/process.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::interp {

namespace fs = std::filesystem;

namespace {

// Links an object file or archive into a shared library in a temporary
// file, which is removed once loaded (the mapping stays).
void* loadLinked(const std::string& path) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/mlcc-extern-XXXXXX.so";
  int fd = mkstemps(pattern.data(), 3);
  if (fd < 0) throw Error(SourceLoc{path, 0, 0}, "cannot create a temporary shared library to load it into");
  close(fd);
  const char* cxx = std::getenv("CXX");
  const std::vector<std::string> cmd = {
      cxx && *cxx ? cxx : "c++", "-shared", "-o", pattern, "-Wl,--whole-archive", path,
      "-Wl,--no-whole-archive"};
  host::ProcessResult r = host::runProcess(cmd);
  void* handle = r.exit_code == 0 ? dlopen(pattern.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  const std::string dl_error = r.exit_code == 0 && !handle ? dlerror() : "";
  unlink(pattern.c_str());
  if (r.exit_code != 0)
    throw Error(SourceLoc{path, 0, 0}, "cannot link it into a shared library for the interpreter (" +
                                           host::commandLine(cmd) + " exited " + std::to_string(r.exit_code) +
                                           "; objects must be compiled with -fPIC):\n" + r.output);
  if (!handle) throw Error(SourceLoc{path, 0, 0}, "cannot load it: " + dl_error);
  return handle;
}

// The library at `path` (absolute), loaded once per process.
void* loadLibrary(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, void*> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(path); it != loaded.end()) return it->second;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error(SourceLoc{path, 0, 0}, "no such library file");
  void* handle = nullptr;
  if (path.ends_with(".o") || path.ends_with(".a")) {
    handle = loadLinked(path);
  } else {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw Error(SourceLoc{path, 0, 0}, std::string("cannot load it: ") + dlerror());
  }
  loaded.emplace(path, handle);
  return handle;
}

}  // namespace

void* userSymbol(const ir::ExternFunc& decl, const std::string& base_dir) {
  const std::string what = std::string(decl.tensor_intrin ? "tensor intrinsic" : "call_extern") + " \"" +
                           decl.name + "\" (" + decl.symbol + " of " + decl.library + ")";
  const std::string path = fs::absolute(resolvePath(base_dir, decl.library)).lexically_normal().string();
  void* handle = nullptr;
  try {
    handle = loadLibrary(path);
  } catch (const Error& e) {
    throw Error(e.loc(), what + ": " + e.message());
  }
  dlerror();
  void* fn = dlsym(handle, decl.symbol.c_str());
  if (!fn) throw Error(what + ": the library defines no function " + decl.symbol);
  return fn;
}

ir::Tensor runUserExtern(const ir::ExternFunc& decl, const std::string& base_dir,
                         const std::vector<ir::Tensor>& operands) {
  const std::string what = "call_extern \"" + decl.name + "\" (" + decl.symbol + " of " + decl.library + ")";
  std::vector<ir::Type> types;
  for (const auto& t : operands) types.push_back(ir::Type::tensor(t.dtype(), t.shape()));
  std::string why;
  std::optional<ir::Type> result = ir::externCallType(decl, types, &why);
  if (!result) throw Error(what + ": " + why);
  std::vector<int64_t> shape;
  for (const auto& d : result->shape) {
    int64_t v = 0;
    if (!ir::asConstInt(d, &v)) throw Error(what + ": the result shape is not known from the operands");
    shape.push_back(v);
  }
  auto fn = reinterpret_cast<mlcc_extern_fn>(userSymbol(decl, base_dir));
  ir::Tensor out = ir::Tensor::zeros(result->dtype, shape);
  std::vector<mlcc_extern_tensor> args;
  for (const auto& t : operands)
    args.push_back(
        {const_cast<std::byte*>(t.bytes()), t.shape().data(), t.rank(), ir::dtypeAbiCode(t.dtype())});
  args.push_back({out.mutableBytes(), out.shape().data(), out.rank(), ir::dtypeAbiCode(out.dtype())});
  const int rc = fn(args.data(), static_cast<int32_t>(args.size()));
  if (rc != 0) throw Error(what + " returned " + std::to_string(rc));
  return out;
}

}  // namespace mlcc::interp
