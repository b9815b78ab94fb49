// mlcc-link's library: checks the objects, finds libmlcc_runtime.a, and
// links model.so with the C++ compiler driver into a temporary file that is
// renamed into place (see linker.h).
#include "mlcc/host/linker.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "mlcc/host/elf.h"
#include "mlcc/host/model_checksum.h"
#include "mlcc/host/process.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::host {

namespace fs = std::filesystem;

namespace {

// Only the functions of include/mlcc/runtime.h are exported.
constexpr const char* kVersionScript =
    "{\n  global:\n    mlcc_model_*;\n    mlcc_last_error;\n  local:\n    *;\n};\n";

// A file removed when this goes out of scope, unless released.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& pattern_prefix) {
    std::string pattern = pattern_prefix + "XXXXXX";
    int fd = mkstemp(pattern.data());
    if (fd < 0) throw Error(pattern_prefix + ": cannot create a temporary file: " + std::strerror(errno));
    close(fd);
    path = pattern;
  }
  ~TempFile() {
    if (!path.empty()) unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

}  // namespace

void checkObjectFile(const std::string& path) {
  const SourceLoc loc{path, 0, 0};
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(loc, "no such file");
  if (fs::is_directory(path, ec)) throw Error(loc, "is a directory, not an object file");
  const ElfInfo elf = readElfInfo(path);
  if (!elf.readable) throw Error(loc, "cannot read: " + std::string(std::strerror(errno)));
  if (!elf.elf) throw Error(loc, "not an object file (not ELF)");
  if (!elf.elf64_le) throw Error(loc, "not a 64-bit little-endian ELF object");
  if (elf.type != kElfRelocatable)
    throw Error(loc, std::string("not an object file (an ELF ") +
                         (elf.type == kElfShared ? "shared library or executable" : "file") + " of type " +
                         std::to_string(elf.type) + ", expected a relocatable .o from mlcc-codegen)");
}

void checkUserLibrary(const std::string& path) {
  const SourceLoc loc{path, 0, 0};
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error(loc, "no such library file");
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, sizeof magic);
  if (std::string(magic, 8) == "!<arch>\n") return;  // an archive
  const ElfInfo elf = readElfInfo(path);
  if (elf.elf && elf.elf64_le && (elf.type == kElfRelocatable || elf.type == kElfShared)) return;
  throw Error(loc, "not a library (expected an object file, a .a archive or a shared library)");
}

std::string defaultRuntimeLibrary() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the running executable (/proc/self/exe) to locate libmlcc_runtime.a");
  const fs::path bindir = exe.parent_path();
  const fs::path candidates[] = {bindir / ".." / "lib" / "libmlcc_runtime.a",
                                 bindir / ".." / MLCC_INSTALL_LIBDIR / "libmlcc_runtime.a"};
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
    const std::string shown = c.lexically_normal().string();
    if (looked.find(shown) == std::string::npos) looked += (looked.empty() ? "" : ", ") + shown;
  }
  throw Error("cannot find libmlcc_runtime.a (looked at " + looked + "); give it with --runtime");
}

std::vector<std::string> linkCommand(const LinkOptions& options, const std::string& output_file,
                                     const std::string& version_script) {
  std::string compiler = options.compiler;
  if (compiler.empty()) {
    const char* cxx = std::getenv("CXX");
    compiler = cxx && *cxx ? cxx : "c++";
  }
  std::vector<std::string> cmd = {compiler, "-shared", "-o", output_file};
  for (const auto& o : options.objects) cmd.push_back(o);
  for (const auto& l : options.libraries) {
    if (readElfInfo(l).type != kElfShared) {
      cmd.push_back(l);
      continue;
    }
    const fs::path abs = fs::absolute(l).lexically_normal();
    cmd.push_back("-L" + abs.parent_path().string());
    cmd.push_back("-l:" + abs.filename().string());
    cmd.push_back("-Wl,-rpath," + abs.parent_path().string());
  }
  // Whole archive: nothing in model.o references the runtime.h functions.
  cmd.push_back("-Wl,--whole-archive");
  cmd.push_back(options.runtime_library.empty() ? defaultRuntimeLibrary() : options.runtime_library);
  cmd.push_back("-Wl,--no-whole-archive");
  for (const char* a : {"-Wl,--version-script", "-Wl,-z,defs", "-Wl,-z,noexecstack", "-Wl,--as-needed",
                        "-lopenblas", "-lmvec", "-lm", "-lpthread"}) {
    if (std::string(a) == "-Wl,--version-script")
      cmd.push_back(std::string(a) + "=" + version_script);
    else
      cmd.push_back(a);
  }
  return cmd;
}

void linkModel(const LinkOptions& options, std::string* log) {
  if (options.objects.empty()) throw Error("no object files to link");
  if (options.output.empty()) throw Error("no output file (-o model.so)");
  for (const auto& o : options.objects) {
    checkObjectFile(o);
    noteInputFile(o);
  }
  for (const auto& l : options.libraries) {
    checkUserLibrary(l);
    noteInputFile(l);
  }
  checkOutputPath(options.output);  // never over an object being linked
  if (!options.runtime_library.empty() && !fs::is_regular_file(options.runtime_library))
    throw Error(SourceLoc{options.runtime_library, 0, 0}, "no such runtime library");
  fs::path out(options.output);
  fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(SourceLoc{options.output, 0, 0}, "no such directory " + dir.string());
  const std::string prefix = (dir / ("." + out.filename().string())).string();
  TempFile script(prefix + ".map-");
  {
    std::ofstream f(script.path);
    f << kVersionScript;
    if (!f) throw Error(SourceLoc{script.path, 0, 0}, "cannot write the version script");
  }
  TempFile so(prefix + ".tmp-");
  const auto cmd = linkCommand(options, so.path, script.path);
  if (log) *log += commandLine(cmd) + "\n";
  ProcessResult r = runProcess(cmd);
  if (r.exit_code != 0) {
    std::string msg =
        "linking " + options.output + " failed (" + cmd[0] + " exited " + std::to_string(r.exit_code) + ")";
    if (r.output.find("mlcc_abi_model_v1") != std::string::npos)
      msg += "; the objects do not define mlcc_abi_model_v1: link the model.o that mlcc-codegen writes";
    else if (r.output.find("undefined reference") != std::string::npos)
      msg += "; a model that calls user library functions (extern) needs their library: --lib FILE";
    while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
    throw Error(msg + ":\n" + r.output);
  }
  appendModelChecksum(so.path);
  mode_t mask = umask(0);
  umask(mask);
  chmod(so.path.c_str(), 0777 & ~mask);
  if (std::rename(so.path.c_str(), options.output.c_str()) != 0)
    throw Error(SourceLoc{options.output, 0, 0}, std::string("cannot write: ") + std::strerror(errno));
  so.path.clear();
}

}  // namespace mlcc::host
