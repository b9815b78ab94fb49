// The common frame of every mlcc tool's main(): `--version`, the exit codes
// of DESIGN.md (0 success; 1 bad input, printed as `FILE:LINE:COL: error:`;
// 2 usage error), and no exception, abort or stack trace escaping.
//
//   int main(int argc, char** argv) {
//     CLI::App app{"mlcc-foo: does foo", "mlcc-foo"};
//     ... add options ...
//     return mlcc::runTool(app, argc, argv, [&] { ...library calls... });
//   }
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace mlcc {

// Adds `--version` (tool name, mlcc version, IR format version) and a
// hidden `--check-args` (parse the command line, then exit 0 without running:
// mlcc-pipeline checks its stages' arguments with it), parses the
// command line, runs `body`, and maps errors to exit codes. `body` may
// return an exit code (e.g. a diff tool's 1 for "different"), and may throw
// a CLI::ParseError for a usage error it finds (exit 2). `check_args`, when
// given, checks option values beyond what CLI11 can (say, a CPU name against
// LLVM) before `body`, and also under `--check-args`; it throws as `body`
// does (mlcc::Error: exit 1).
int runTool(CLI::App& app, int argc, char** argv, const std::function<int()>& body,
            const std::function<void()>& check_args = {});

// The version line: "mlcc-inspect 0.1.0 (IR format 1)".
std::string versionLine(const std::string& tool);

}  // namespace mlcc
