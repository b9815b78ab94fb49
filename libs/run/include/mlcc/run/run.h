// What mlcc-run does: run an IR file (any stage) through the reference
// interpreter, or a compiled model.so through its C ABI, on inputs bound by
// input_binding.h, and write each output as DIR/<name>.npy or print a
// summary of it; for a model.so (its graph entry, or one of its functions
// with --entry) also benchmark (--bench, --json) and profile (--profile).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mlcc::run {

struct RunOptions {
  std::string path;                     // IR file ("-": stdin) or model.so
  std::vector<std::string> input_args;  // --input NAME=FILE.npy, or FILE.npy alone
  std::vector<std::string> dim_args;    // --dim NAME=SIZE (IR only)
  std::string out_dir;                  // --output-dir ("": print a summary)
  std::string entry;                    // --entry ("": the default entry; model.so: a function)
  uint64_t seed = 0;
  bool random_missing = false;  // --random-inputs
  bool quiet = false, verbose = false;
  // model.so only:
  int bench = 0;   // timed runs (0: one run)
  int warmup = 3;  // untimed runs before them
  bool warmup_given = false;
  int threads = 0;              // 0: all cores
  bool keep_denormals = false;  // --keep-denormals
  bool json = false, profile = false;
};

// Runs as above. Returns the exit code: 0, or 2 for a usage error (printed
// as "mlcc-run: ..." on stderr); bad input throws mlcc::Error, located at
// the file when nothing more precise is known.
int runModelFile(const RunOptions& options);

}  // namespace mlcc::run
