// The one input binder of mlcc-run and `mlcc-pipeline verify`: the inputs
// of an entry (an IR function's, or a model.so's) from .npy files given by
// name (or one file for the entry's only input), the others random
// (interp::randomInput: the same tensors for an IR file and the model.so
// compiled from it, for the same seed), with symbolic dimensions sized by
// --dim, else by the given inputs that bind them, else 1.
//
//   auto slots = irInputSlots(interp, module, "main", dims);
//   auto inputs = bindInputs(slots, {.files = {{"x", "x.npy"}}}, "@main");
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mlcc/host/compiled_model.h"
#include "mlcc/interp/interpreter.h"

namespace mlcc::run {

// One input of an entry.
struct InputSlot {
  std::string name;
  ir::DType dtype;
  std::string type;                   // "f32[n, 4]", for messages
  std::vector<int64_t> random_shape;  // the shape of a random tensor for it
  // Per dimension: the symbolic dimension there that --dim does not size
  // ("" elsewhere); a given input binding it sizes random_shape's instead.
  std::vector<std::string> dims_bound_by_inputs;
  std::string no_random;  // why it cannot be random ("" when it can)
  bool optional = false;  // a prim func's output it also reads: zeros when not given
};

// The inputs of function `entry` of the interpreted module (symbolic
// dimensions of random tensors from `dims`, else from the given inputs,
// else 1), and of a model.so's graph entry or function (symbolic
// dimensions from the given inputs, else 1; a function's inputs that are
// also outputs are optional).
std::vector<InputSlot> irInputSlots(interp::Interpreter& interp, const ir::Module& m,
                                    const std::string& entry, const std::map<std::string, int64_t>& dims);
std::vector<InputSlot> modelInputSlots(const host::CompiledModel& model);

// What the user asked for.
struct InputRequest {
  std::map<std::string, std::string> files;  // input name -> .npy file
  std::string unnamed;                       // a .npy file for the entry's only (non-optional) input
  bool random_missing = false;               // random tensors for inputs not given (all when none is)
  uint64_t seed = 0;
  bool verbose = false;  // "random input NAME" on stderr
};

// A --dim argument NAME=SIZE (SIZE >= 0); nullopt when malformed.
std::optional<std::pair<std::string, int64_t>> parseDimArg(const std::string& arg);

// A usage error found once the entry is known (an unnamed file for an entry
// with several inputs): mlcc-run exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tensors of `slots`, in order (an optional slot not given is left
// out). `entry` names the function or model in messages ("@main", "the
// model"). Throws mlcc::Error without a location for an unknown or missing
// input, a bad file, or a random tensor that cannot be made; UsageError as
// above.
std::vector<interp::NamedTensor> bindInputs(const std::vector<InputSlot>& slots, const InputRequest& request,
                                            const std::string& entry);

}  // namespace mlcc::run
