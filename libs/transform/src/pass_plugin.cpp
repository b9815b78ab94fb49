// Loading pass plugins (pass.h, `--load-pass-plugin`): dlopen, check the
// plugin API version the library was built for, run its registration.
#include <dlfcn.h>

#include <filesystem>
#include <set>

#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"

namespace mlcc::transform {

void loadPassPlugin(const std::string& path) {
  const SourceLoc loc{path, 0, 0};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(loc, "no such pass plugin");
  // An absolute path: dlopen would search the library path for a bare name.
  // A plugin is loaded once per process (two stages of a pipeline may name it).
  const std::string abs = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec).string();
  static std::set<std::string> loaded;
  if (loaded.count(abs)) return;
  void* handle = dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error(loc, std::string("cannot load the pass plugin: ") + dlerror());
  const auto* version = static_cast<const int*>(dlsym(handle, "mlcc_pass_plugin_api_version"));
  auto* registration = reinterpret_cast<void (*)()>(dlsym(handle, "mlcc_pass_plugin_register"));
  if (!version || !registration)
    throw Error(
        loc, "not an mlcc pass plugin (it defines no MLCC_PASS_PLUGIN { ... }; see mlcc/transform/pass.h)");
  if (*version != kPassPluginApiVersion)
    throw Error(loc, "built for pass plugin API " + std::to_string(*version) + ", this mlcc has " +
                         std::to_string(kPassPluginApiVersion) + ": rebuild it against these headers");
  try {
    registration();  // the library stays loaded: its passes live in the registry
    loaded.insert(abs);
  } catch (const Error& e) {
    throw Error(loc, "registering its passes: " + e.message());
  }
}

}  // namespace mlcc::transform
