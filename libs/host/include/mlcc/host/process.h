// Running a program (the C++ compiler driver for mlcc-link) and capturing
// what it prints.
#pragma once

#include <string>
#include <vector>

namespace mlcc::host {

struct ProcessResult {
  int exit_code = 0;   // 127 when the program could not be started
  std::string output;  // stdout and stderr together
};

// Runs argv[0] (looked up in PATH) with argv; throws mlcc::Error when it
// cannot be started.
ProcessResult runProcess(const std::vector<std::string>& argv);

// Runs argv[0] (looked up in PATH) with argv, its output going to this
// process's stdout and stderr (its stdout to our stderr with
// `stdout_to_stderr`), in directory `cwd` (empty: ours); returns its exit
// code (128 + the signal when a signal ended it). Throws mlcc::Error when it
// cannot be started.
int runProcessPassthrough(const std::vector<std::string>& argv, bool stdout_to_stderr = false,
                          const std::string& cwd = "");

// The command as a shell would read it (for -v).
std::string commandLine(const std::vector<std::string>& argv);

}  // namespace mlcc::host
