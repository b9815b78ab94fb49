// The protocol between the Runner and its worker processes (internal to
// libs/tune): one JSON object per line, each way, over the worker's stdin
// and stdout. The worker answers every request with exactly one reply, in
// order; the Runner never sends a worker a second request before the reply
// to the first.
//
// Requests:
//   {"op": "reference", "module": TEXT, "seed": N, "num_threads": N, "mcpu": S, "mattr": S}
//       Compile the module's only prim func with bounds checks, run it once
//       on random inputs made from the seed and keep every parameter buffer
//       (the inputs before, the expected results after). Forgets every
//       built candidate. The other fields set how candidates are compiled.
//   {"op": "build", "id": N, "module": TEXT}
//       Compile a candidate (without bounds checks) and keep it as `id`.
//   {"op": "measure", "id": N, "repeats": N, "min_sample_ms": X, "give_up_us": X}
//        (give_up_us > 0: a checked call slower than that is the only sample)
//       Check a built candidate against the reference, then time it.
//   {"op": "drop", "id": N}
//       Forget a built candidate.
// Replies:
//   {"status": "ok"}                           reference, drop
//   {"status": "ok", "build_ms": X}            build: the compile time
//   {"status": "ok", "run_us": [X, ...]}       measure: microseconds per call, one per sample
//   {"status": STATUS, "error": TEXT}          anything else, STATUS one of kStatus*
#pragma once

#include <optional>
#include <string_view>

#include "mlcc/tune/database.h"

namespace mlcc::tune::protocol {

inline constexpr std::string_view kReference = "reference";
inline constexpr std::string_view kBuild = "build";
inline constexpr std::string_view kMeasure = "measure";
inline constexpr std::string_view kDrop = "drop";

inline constexpr std::string_view kStatusOk = "ok";
inline constexpr std::string_view kStatusBuildError = "build_error";
inline constexpr std::string_view kStatusRunError = "run_error";
inline constexpr std::string_view kStatusWrongResult = "wrong_result";

// The statuses a worker can answer (crash and timeout are the Runner's).
inline std::optional<RecordStatus> parseStatus(std::string_view s) {
  if (s == kStatusOk) return RecordStatus::ok;
  if (s == kStatusBuildError) return RecordStatus::build_error;
  if (s == kStatusRunError) return RecordStatus::run_error;
  if (s == kStatusWrongResult) return RecordStatus::wrong_result;
  return std::nullopt;
}

}  // namespace mlcc::tune::protocol
