// The input binder (see input_binding.h).
#include "mlcc/run/input_binding.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/tensor_npy.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::run {

std::optional<std::pair<std::string, int64_t>> parseDimArg(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  char* end = nullptr;
  const long long v = std::strtoll(arg.c_str() + eq + 1, &end, 10);
  if (v < 0 || !end || *end) return std::nullopt;
  return std::pair<std::string, int64_t>{arg.substr(0, eq), v};
}

std::vector<InputSlot> irInputSlots(interp::Interpreter& interp, const ir::Module& m,
                                    const std::string& entry, const std::map<std::string, int64_t>& dims) {
  std::vector<InputSlot> slots;
  const bool prim = m.findPrim(entry) != nullptr;
  for (const auto& spec : interp.inputs(entry)) {
    InputSlot s;
    s.name = spec.name;
    s.dtype = spec.dtype;
    s.type = ir::printType(ir::Type::tensor(spec.dtype, spec.shape));
    for (const auto& d : spec.shape) {
      const auto* var = d->as<ir::VarNode>();
      s.dims_bound_by_inputs.push_back(var && !dims.contains(var->name) ? var->name : "");
    }
    try {
      s.random_shape = interp::concreteShape(spec, dims);
    } catch (const Error& e) {
      s.no_random = e.message();
    }
    s.optional = prim && interp.isWrittenParam(entry, spec.name);
    slots.push_back(std::move(s));
  }
  return slots;
}

std::vector<InputSlot> modelInputSlots(const host::CompiledModel& model) {
  std::vector<InputSlot> slots;
  for (const auto& spec : model.inputs()) {
    std::vector<int64_t> shape = spec.shape;  // a symbolic dimension (-1): 1
    for (auto& d : shape) d = d < 0 ? 1 : d;
    InputSlot s;
    s.name = spec.name;
    s.dtype = spec.dtype;
    s.type = host::typeText(spec);
    s.random_shape = std::move(shape);
    s.dims_bound_by_inputs = spec.dims;  // given inputs size the random ones
    // A function's buffer that it reads and writes: zeros when not given, as in the interpreter.
    s.optional = !model.function().empty() &&
                 std::any_of(model.outputs().begin(), model.outputs().end(),
                             [&](const host::TensorSpec& o) { return o.name == spec.name; });
    slots.push_back(std::move(s));
  }
  return slots;
}

namespace {

// "x: f32[n, 4], y: i64[]" (or "(none)"); `eligible` picks the slots.
template <class Pred>
std::string slotList(const std::vector<InputSlot>& slots, Pred eligible) {
  std::string list;
  for (const auto& s : slots)
    if (eligible(s)) list += (list.empty() ? "" : ", ") + s.name + ": " + s.type;
  return list.empty() ? "(none)" : list;
}

// Notes in `bound` the sizes that `given` (the tensor given for `s`) gives
// the symbolic dimensions of `s` (a tensor of another rank binds none: the
// run reports it).
void noteBoundDims(const InputSlot& s, const ir::Tensor& given, std::map<std::string, int64_t>& bound) {
  if (given.shape().size() != s.dims_bound_by_inputs.size()) return;
  for (size_t d = 0; d < given.shape().size(); ++d)
    if (!s.dims_bound_by_inputs[d].empty()) bound.emplace(s.dims_bound_by_inputs[d], given.shape()[d]);
}

// The shape of a random tensor for `s`: its random_shape with the symbolic
// dimensions that the given inputs bound (`bound`) sized by them.
std::vector<int64_t> randomShape(const InputSlot& s, const std::map<std::string, int64_t>& bound) {
  std::vector<int64_t> shape = s.random_shape;
  for (size_t d = 0; d < shape.size() && d < s.dims_bound_by_inputs.size(); ++d)
    if (auto it = bound.find(s.dims_bound_by_inputs[d]); it != bound.end()) shape[d] = it->second;
  return shape;
}

// A bf16 input given as an f32 .npy (numpy has no bfloat16; mlcc-run writes
// bf16 outputs as f32 too), rounded to nearest even as a cast would.
ir::Tensor bf16FromF32(const ir::Tensor& f32) {
  ir::Tensor out = ir::Tensor::zeros(ir::DType::bf16, f32.shape());
  for (int64_t k = 0; k < f32.numel(); ++k) out.set(k, f32.at(k));
  return out;
}

}  // namespace

std::vector<interp::NamedTensor> bindInputs(const std::vector<InputSlot>& slots, const InputRequest& request,
                                            const std::string& entry) {
  // A prim func's outputs that it also reads are optional (mlcc-run
  // allocates them, zeroed): the list of what the entry takes names them apart.
  const auto required = [](const InputSlot& s) { return !s.optional; };
  const std::string required_list = slotList(slots, required);
  const bool has_optional = !std::all_of(slots.begin(), slots.end(), required);
  const std::string takes =
      required_list + (has_optional ? "; optionally (zeros when not given): " +
                                          slotList(slots, [](const InputSlot& s) { return s.optional; })
                                    : "");
  std::map<std::string, std::string> files = request.files;
  if (!request.unnamed.empty()) {
    const auto count = std::count_if(slots.begin(), slots.end(), required);
    if (count != 1)
      throw UsageError("--input " + request.unnamed + " without NAME= needs a single input, but " + entry +
                       " takes " + std::to_string(count) + ": " + required_list +
                       "; give each as --input NAME=FILE.npy");
    files.emplace(std::find_if(slots.begin(), slots.end(), required)->name, request.unnamed);
  }
  for (const auto& [name, file] : files)
    if (std::none_of(slots.begin(), slots.end(), [&](const InputSlot& s) { return s.name == name; }))
      throw Error("unknown input '" + name + "'; " + entry + " takes: " + takes);

  // The given inputs first: they size the symbolic dimensions of the random ones.
  std::vector<std::optional<ir::Tensor>> given(slots.size());
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < slots.size(); ++i) {
    const InputSlot& s = slots[i];
    if (auto it = files.find(s.name); it != files.end()) {
      given[i] = ir::readNpyTensor(it->second, "input '" + s.name + "' (expected " + s.type + ")");
      if (s.dtype == ir::DType::bf16 && given[i]->dtype() == ir::DType::f32)
        given[i] = bf16FromF32(*given[i]);
      noteBoundDims(s, *given[i], bound);
    }
  }
  const bool random = files.empty() || request.random_missing;
  std::vector<interp::NamedTensor> tensors;
  for (size_t i = 0; i < slots.size(); ++i) {
    const InputSlot& s = slots[i];
    if (given[i]) {
      tensors.push_back({s.name, std::move(*given[i])});
      continue;
    }
    if (!random && s.optional) continue;  // an output that is also read: starts as zeros
    if (!random)
      throw Error("missing input '" + s.name + "' (" + s.type +
                  "); give it with --input, or use --random-inputs; " + entry + " takes: " + required_list);
    if (!s.no_random.empty()) throw Error(s.no_random + "; give it with --input");
    tensors.push_back({s.name, interp::randomInput(s.dtype, randomShape(s, bound), request.seed, i)});
    if (request.verbose) std::cerr << "random input " << s.name << "\n";
  }
  return tensors;
}

}  // namespace mlcc::run
