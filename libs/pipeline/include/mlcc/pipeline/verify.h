// `mlcc-pipeline verify`: runs every stage's output on the same inputs (IR
// through the reference interpreter, model.so through its C ABI; object
// files are skipped) and compares each with the runnable stage before it,
// naming the first stage that changed the answer beyond tolerance.
//
// Outputs a and b (b from the earlier stage) agree when, element by element,
// |a - b| <= atol * scale + rtol * |b| with scale = max(1, max |b|): the
// rule of the tests' comparisons against PyTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mlcc/pipeline/build.h"

namespace mlcc::pipeline {

struct VerifyOptions {
  std::map<std::string, std::string> data;  // input name -> .npy file; others random
  std::map<std::string, int64_t> dims;      // symbolic dimension sizes for random inputs (default 1)
  uint64_t seed = 0;                        // random inputs: those of `mlcc-run --seed`
  double atol = 1e-4, rtol = 1e-3;
  bool progress = false;  // say on stderr which stage runs
};

struct StageCheck {
  std::string stage, output;
  std::string
      kind;  // "ir", "model" or "skipped" (not runnable: an object file, a CUDA model without a device)
  std::string compared_with;   // the stage before it that ran; "" for the first
  double max_abs_diff = 0;     // over all outputs
  double max_scaled_diff = 0;  // max |a-b| / scale
  bool ok = true;
  std::string note;  // why it differs in kind (an output missing, a shape changed)
};

struct VerifyReport {
  std::string pipeline;
  double atol = 0, rtol = 0;
  std::vector<StageCheck> stages;
  std::optional<size_t> first_bad;  // index into stages
};

// The stages' outputs must exist (run the build first).
VerifyReport verifyStages(const Pipeline& p, const BuildOptions& build, const VerifyOptions& options);

std::string formatReport(const VerifyReport& r);  // a table and a verdict line
std::string reportJson(const VerifyReport& r);    // artifacts_schema/verify.schema.json

}  // namespace mlcc::pipeline
