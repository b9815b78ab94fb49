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
    InputSlot s{spec.name, spec.dtype, ir::printType(ir::Type::tensor(spec.dtype, spec.shape)),
                {},        {},         false};
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
    slots.push_back({spec.name, spec.dtype, host::typeText(spec.dtype, spec.shape), shape, {}, false});
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

}  // namespace

std::vector<interp::NamedTensor> bindInputs(const std::vector<InputSlot>& slots, const InputRequest& request,
                                            const std::string& entry) {
  const std::string takes = slotList(slots, [](const InputSlot&) { return true; });
  std::map<std::string, std::string> files = request.files;
  if (!request.unnamed.empty()) {
    const auto count =
        std::count_if(slots.begin(), slots.end(), [](const InputSlot& s) { return !s.optional; });
    if (count != 1)
      throw UsageError("--input " + request.unnamed + " without NAME= needs a single input, but " + entry +
                       " takes " + std::to_string(count) + ": " +
                       slotList(slots, [](const InputSlot& s) { return !s.optional; }) +
                       "; give each as --input NAME=FILE.npy");
    files.emplace(
        std::find_if(slots.begin(), slots.end(), [](const InputSlot& s) { return !s.optional; })->name,
        request.unnamed);
  }
  for (const auto& [name, file] : files)
    if (std::none_of(slots.begin(), slots.end(), [&](const InputSlot& s) { return s.name == name; }))
      throw Error("unknown input '" + name + "'; " + entry + " takes: " + takes);

  const bool random = files.empty() || request.random_missing;
  std::vector<interp::NamedTensor> tensors;
  for (size_t i = 0; i < slots.size(); ++i) {
    const InputSlot& s = slots[i];
    if (auto it = files.find(s.name); it != files.end()) {
      tensors.push_back(
          {s.name, ir::readNpyTensor(it->second, "input '" + s.name + "' (expected " + s.type + ")")});
      continue;
    }
    if (!random && s.optional) continue;  // an output that is also read: starts as zeros
    if (!random)
      throw Error("missing input '" + s.name + "' (" + s.type +
                  "); give it with --input, or use --random-inputs; " + entry + " takes: " + takes);
    if (!s.no_random.empty()) throw Error(s.no_random + "; give it with --input");
    tensors.push_back({s.name, interp::randomInput(s.dtype, s.random_shape, request.seed, i)});
    if (request.verbose) std::cerr << "random input " << s.name << "\n";
  }
  return tensors;
}

}  // namespace mlcc::run
