// The common frame of mlcc tools' main() (see tool.h).
#include "mlcc/support/tool.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <new>

#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc {

std::string versionLine(const std::string& tool) {
  return tool + " " + MLCC_VERSION + " (IR format " + std::to_string(MLCC_IR_FORMAT_VERSION) + ")";
}

int runTool(CLI::App& app, int argc, char** argv, const std::function<int()>& body,
            const std::function<void()>& check_args_fn) {
  app.set_version_flag("--version", versionLine(app.get_name()));
  bool check_args = false;
  app.add_flag("--check-args", check_args, "Check the command line, then exit 0 (for mlcc-pipeline)")
      ->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version (exit 0) or the usage error
    return code == 0 ? 0 : 2;
  }
  try {
    if (check_args_fn) check_args_fn();
    if (check_args) return 0;
    trackInputFiles(true);  // no output over an input of this command (file_io.h)
    return body();
  } catch (const CLI::ParseError& e) {  // a usage error found after parsing
    std::cerr << app.get_name() << ": " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << e.format() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << app.get_name() << ": error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace mlcc
