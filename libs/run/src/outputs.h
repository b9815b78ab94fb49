// The outputs of a run: written as DIR/<name>.npy, or summarized on stdout.
#pragma once

#include <string>
#include <vector>

#include "mlcc/interp/interpreter.h"

namespace mlcc::run {

// Writes each output as DIR/<name>.npy (characters outside [A-Za-z0-9_.-]
// become '_'), all or none (AtomicFileSet), or prints a one-line summary of
// each unless `quiet`. Two outputs whose names map to the same file are an
// error, before anything is written.
void emitOutputs(const std::vector<interp::NamedTensor>& outs, const std::string& out_dir, bool quiet,
                 bool verbose);

}  // namespace mlcc::run
