// NVRTC, loaded at run time (see cuda.h): mlcc builds and runs without the
// CUDA toolkit; only compiling for the cuda target needs it.
#include <dlfcn.h>

#include <cstddef>
#include <mutex>

#include "mlcc/codegen/cuda.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

using Program = struct _nvrtcProgram*;
struct Nvrtc {
  void* handle = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*ptx_size)(Program, size_t*) = nullptr;
  int (*ptx)(Program, char*) = nullptr;
  int (*log_size)(Program, size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  const char* (*error)(int) = nullptr;
  std::string problem;  // why it could not be loaded
};

const Nvrtc& nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* lib :
         {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"})
      if ((n.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) break;
    if (!n.handle) {
      n.problem =
          "NVRTC (libnvrtc.so of CUDA 12 or 13) was not found; install the CUDA toolkit's NVRTC to compile "
          "for the cuda target";
      return;
    }
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(n.handle, name));
      if (!fn && n.problem.empty()) n.problem = std::string("NVRTC lacks ") + name;
    };
    get(n.create, "nvrtcCreateProgram");
    get(n.compile, "nvrtcCompileProgram");
    get(n.ptx_size, "nvrtcGetPTXSize");
    get(n.ptx, "nvrtcGetPTX");
    get(n.log_size, "nvrtcGetProgramLogSize");
    get(n.log, "nvrtcGetProgramLog");
    get(n.destroy, "nvrtcDestroyProgram");
    get(n.error, "nvrtcGetErrorString");
  });
  return n;
}

}  // namespace

bool nvrtcAvailable() { return nvrtc().problem.empty(); }

std::string compileWithNvrtc(const std::string& code, const std::string& arch, bool fast_math,
                             const std::string& name) {
  const Nvrtc& n = nvrtc();
  if (!n.problem.empty()) throw Error(n.problem);
  if (arch.rfind("sm_", 0) != 0) throw Error("cuda architecture '" + arch + "' is not of the form sm_XX");
  Program prog = nullptr;
  if (int rc = n.create(&prog, code.c_str(), name.c_str(), 0, nullptr, nullptr))
    throw Error(std::string("nvrtcCreateProgram failed: ") + n.error(rc));
  const std::string arch_opt = "--gpu-architecture=compute_" + arch.substr(3);
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--use_fast_math"};
  const int rc = n.compile(prog, fast_math ? 3 : 2, opts);
  size_t log_bytes = 0;
  n.log_size(prog, &log_bytes);
  std::string log(log_bytes, '\0');
  if (log_bytes > 0) n.log(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (rc != 0) {
    n.destroy(&prog);
    throw Error("NVRTC could not compile the generated CUDA C of " + name +
                " (a bug in mlcc): " + n.error(rc) + "\n" + log);
  }
  size_t bytes = 0;
  n.ptx_size(prog, &bytes);
  std::string ptx(bytes, '\0');
  n.ptx(prog, ptx.data());
  n.destroy(&prog);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace mlcc::codegen
