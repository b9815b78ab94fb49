// Stage-by-stage verification of a pipeline's outputs (see verify.h).
#include "mlcc/pipeline/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "mlcc/host/compiled_model.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/module_io.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/run/input_binding.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::pipeline {

namespace fs = std::filesystem;

namespace {

bool isIrFile(const std::string& path) {
  std::ifstream in(path);
  std::string head(8, '\0');
  in.read(head.data(), 8);
  return in.gcount() == 8 && head == "mlcc.ir ";
}

// What a stage's output is: IR, a loadable model, or neither.
std::string kindOf(const std::string& path) {
  if (isIrFile(path)) return "ir";
  if (host::isElfFile(path) && path.ends_with(".so")) return "model";
  return "skipped";
}

using Named = interp::NamedTensor;

// The inputs of the first runnable stage, bound by the input binder of
// mlcc-run (the same random tensors as `mlcc-run --seed`), then reused by
// name for every later stage.
class Inputs {
 public:
  explicit Inputs(const VerifyOptions& o) {
    request_.files = o.data;
    request_.random_missing = true;
    request_.seed = o.seed;
  }

  // The tensors for `slots`, made on the first call.
  const std::vector<Named>& get(const std::vector<run::InputSlot>& slots, const std::string& entry) {
    if (!made_) tensors_ = run::bindInputs(slots, request_, entry);
    made_ = true;
    return tensors_;
  }

 private:
  run::InputRequest request_;
  std::vector<Named> tensors_;
  bool made_ = false;
};

std::vector<Named> runIr(const std::string& path, Inputs& inputs, const VerifyOptions& options) {
  ir::Module m = ir::readVerifiedModule(path, ops::opTypeInfo());
  interp::Interpreter interp(m);
  const std::string entry = interp.defaultEntry();
  return interp.run(entry, inputs.get(run::irInputSlots(interp, m, entry, options.dims), "@" + entry));
}

std::vector<Named> runModel(const std::string& path, Inputs& inputs) {
  host::CompiledModel model(path);
  std::vector<ir::Tensor> in;
  const auto& given = inputs.get(run::modelInputSlots(model), "the model");
  for (const auto& spec : model.inputs()) {
    auto it = std::find_if(given.begin(), given.end(), [&](const Named& t) { return t.name == spec.name; });
    if (it == given.end())
      throw Error(path + ": the model's input '" + spec.name + "' is not an input of the IR");
    in.push_back(it->tensor);
  }
  auto outs = model.run(in);
  std::vector<Named> out;
  for (size_t i = 0; i < outs.size(); ++i) out.push_back({model.outputs()[i].name, std::move(outs[i])});
  return out;
}

// Compares `now` with `before`, filling the check's differences.
void compare(const std::vector<Named>& now, const std::vector<Named>& before, const VerifyOptions& o,
             StageCheck& c) {
  if (now.size() != before.size()) {
    c.ok = false;
    c.note = std::to_string(now.size()) + " outputs, " + std::to_string(before.size()) + " before";
    return;
  }
  for (size_t k = 0; k < now.size(); ++k) {
    const ir::Tensor& a = now[k].tensor;
    const ir::Tensor& b = before[k].tensor;
    if (a.shape() != b.shape()) {
      c.ok = false;
      c.note = "output '" + now[k].name + "' is " + ir::printType(ir::Type::tensor(a.dtype(), a.shape())) +
               ", was " + ir::printType(ir::Type::tensor(b.dtype(), b.shape()));
      return;
    }
    double scale = 1;
    for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::fabs(b.at(i)));
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a.at(i), y = b.at(i);
      const double d = std::fabs(x - y);
      if (std::isnan(x) != std::isnan(y) || (!std::isnan(d) && d > o.atol * scale + o.rtol * std::fabs(y))) {
        c.ok = false;
        if (std::isnan(x) != std::isnan(y) && c.note.empty())
          c.note = "output '" + now[k].name + "' has NaN where the stage before has none, or the reverse";
      }
      if (!std::isnan(d)) {
        c.max_abs_diff = std::max(c.max_abs_diff, d);
        c.max_scaled_diff = std::max(c.max_scaled_diff, d / scale);
      }
    }
  }
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

VerifyReport verifyStages(const Pipeline& p, const BuildOptions& build, const VerifyOptions& options) {
  VerifyReport r;
  r.pipeline = p.name;
  r.atol = options.atol;
  r.rtol = options.rtol;
  Inputs inputs(options);
  std::vector<Named> previous;
  std::string previous_stage;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    StageCheck c;
    c.stage = p.stages[i].name;
    c.output = p.stages[i].output;
    const std::string path = stageOutputPath(p, build, i);
    c.kind = kindOf(path);
    if (c.kind != "skipped") {
      if (options.progress) std::cerr << "verify: running " << c.output << " (" << c.stage << ")\n";
      std::vector<Named> outs;
      try {
        outs = c.kind == "ir" ? runIr(path, inputs, options) : runModel(path, inputs);
      } catch (const Error& e) {
        // A CUDA model on a machine without a GPU: not runnable here (the
        // kernels' CUDA C runs under the CPU emulation in the tests).
        const std::string m = e.message();
        const size_t at = m.find("cannot load the CUDA model: no CUDA");
        if (c.kind != "model" || at == std::string::npos)
          throw Error("stage '" + c.stage + "' (" + path + "): " + e.format());
        c.kind = "skipped";
        c.note = "a CUDA model, and " + m.substr(at + std::string("cannot load the CUDA model: ").size());
        r.stages.push_back(c);
        continue;
      }
      if (!previous_stage.empty()) {
        c.compared_with = previous_stage;
        compare(outs, previous, options, c);
        if (!c.ok && !r.first_bad) r.first_bad = r.stages.size();
      }
      previous = std::move(outs);
      previous_stage = c.stage;
    }
    r.stages.push_back(c);
  }
  return r;
}

std::string formatReport(const VerifyReport& r) {
  size_t w_stage = 5, w_out = 6;
  for (const auto& c : r.stages) {
    w_stage = std::max(w_stage, c.stage.size());
    w_out = std::max(w_out, c.output.size());
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-*s  %-7s  %-*s  %12s  %12s  %s\n", int(w_stage), "stage",
                int(w_out), "output", "kind", int(w_stage), "vs", "max abs diff", "scaled diff", "result");
  out += line;
  for (const auto& c : r.stages) {
    std::string result = c.kind == "skipped"       ? "not runnable"
                         : c.compared_with.empty() ? "reference"
                         : c.ok                    ? "ok"
                                                   : "CHANGED";
    if (!c.note.empty()) result += ": " + c.note;
    const bool compared = !c.compared_with.empty();
    std::snprintf(line, sizeof line, "%-*s  %-*s  %-7s  %-*s  %12s  %12s  %s\n", int(w_stage),
                  c.stage.c_str(), int(w_out), c.output.c_str(), c.kind.c_str(), int(w_stage),
                  compared ? c.compared_with.c_str() : "-", compared ? number(c.max_abs_diff).c_str() : "-",
                  compared ? number(c.max_scaled_diff).c_str() : "-", result.c_str());
    out += line;
  }
  const std::string tol =
      "atol " + number(r.atol) + " (scaled by max(1, max |reference|)), rtol " + number(r.rtol);
  if (r.first_bad) {
    const auto& c = r.stages[*r.first_bad];
    out += "first stage that changed the answer: " + c.stage + " (" + c.output + ", against " +
           c.compared_with + "; " + tol + ")\n";
  } else {
    out += "every stage agrees with the one before it (" + tol + ")\n";
  }
  return out;
}

std::string reportJson(const VerifyReport& r) {
  // Infinite differences (JSON has no infinity) as the largest double.
  auto finite = [](double v) { return std::isinf(v) ? std::numeric_limits<double>::max() : v; };
  nlohmann::ordered_json j;
  j["pipeline"] = r.pipeline;
  j["atol"] = r.atol;
  j["rtol"] = r.rtol;
  j["stages"] = nlohmann::json::array();
  for (const auto& c : r.stages) {
    nlohmann::ordered_json s;
    s["stage"] = c.stage;
    s["output"] = c.output;
    s["kind"] = c.kind;
    if (!c.compared_with.empty()) {
      s["compared_with"] = c.compared_with;
      s["max_abs_diff"] = finite(c.max_abs_diff);
      s["max_scaled_diff"] = finite(c.max_scaled_diff);
      s["ok"] = c.ok;
    }
    if (!c.note.empty()) s["note"] = c.note;
    j["stages"].push_back(std::move(s));
  }
  j["first_bad_stage"] = r.first_bad ? nlohmann::json(r.stages[*r.first_bad].stage) : nlohmann::json(nullptr);
  return j.dump(2) + "\n";
}

}  // namespace mlcc::pipeline
