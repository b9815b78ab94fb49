// Loading and validating an ONNX model file: protobuf parsing (a corrupt,
// truncated or non-ONNX file is a clear error), the checks that every node
// input is defined before use and every output is produced, the default
// opset, and the list of unsupported ops, reported all at once.
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "importer.h"
#include "mlcc/ir/tensor_npy.h"
#include "mlcc/support/file_io.h"

namespace mlcc::frontend {

using onnx_import::Importer;

namespace {

int64_t defaultOpset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return -1;
}

// Ops whose versions of opsets 1 to 6 mean what their converters implement
// (since then only attributes were dropped, such as consumed_inputs, which
// the converters refuse): a model of opset 1 to 6 is imported when it uses
// only these.
const std::set<std::string>& opsUnchangedSinceOpset1() {
  static const std::set<std::string> ops = {"Abs",           "Ceil",
                                            "Elu",           "Exp",
                                            "Floor",         "GlobalAveragePool",
                                            "GlobalMaxPool", "HardSigmoid",
                                            "Identity",      "InstanceNormalization",
                                            "LeakyRelu",     "Log",
                                            "Neg",           "Not",
                                            "Reciprocal",    "Relu",
                                            "Selu",          "Sigmoid",
                                            "Softplus",      "Softsign",
                                            "Sqrt",          "Tanh",
                                            "Transpose"};
  return ops;
}

void validate(const onnx::ModelProto& m, const std::string& file) {
  auto bad = [&](const std::string& msg) { throw Error(SourceLoc{file, 0, 0}, msg); };
  if (m.ir_version() <= 0 || !m.has_graph())
    bad("not an ONNX model (no IR version or no graph; is this an .onnx file?)");
  int64_t opset = defaultOpset(m);
  bool ml_only = opset < 0;  // a model of ai.onnx.ml ops alone (Binarizer, ...) needs no default opset
  for (const auto& n : m.graph().node()) ml_only = ml_only && n.domain() == "ai.onnx.ml";
  if (ml_only && m.graph().node_size() > 0) opset = 13;  // any: no node of the default domain
  if (opset < 0) {
    for (const auto& o : m.opset_import())
      if (o.domain() == "ai.onnx.preview.training")
        bad("training ops (domain ai.onnx.preview.training: Adagrad, Adam, Momentum, Gradient) are not "
            "supported: "
            "mlcc compiles inference");
    bad("the model imports no version of the default ONNX operator set");
  }
  if (opset < 1 || opset > 21)
    bad("ONNX opset " + std::to_string(opset) +
        " is not supported (opsets 7 to 21 are, and 1 to 6 for ops unchanged since)");
  if (opset < 7)
    for (const auto& n : m.graph().node())
      if (!opsUnchangedSinceOpset1().count(n.op_type()))
        bad("ONNX opset " + std::to_string(opset) +
            " is supported only for ops unchanged since (Relu, Elu, Not, ...); node '" + n.name() + "' (" +
            n.op_type() + ") is not one of them: export the model at opset 7 or later");
  const auto& g = m.graph();
  // Every input defined before its node, in the graph and in its subgraphs
  // (If's branches see the values defined before the If node); unsupported
  // ops collected from all of them, to be listed at once.
  std::map<std::string, std::pair<int, std::string>> unsupported;  // op -> count, first node
  std::function<void(const onnx::GraphProto&, std::set<std::string>, int)> check =
      [&](const onnx::GraphProto& graph, std::set<std::string> defined, int depth) {
        if (depth > 16) bad("subgraphs nest more than 16 deep");
        for (const auto& t : graph.initializer()) defined.insert(t.name());
        for (const auto& i : graph.input()) defined.insert(i.name());
        for (const auto& n : graph.node()) {
          const std::string where = "node '" + n.name() + "' (" + n.op_type() + ")";
          for (const auto& in : n.input())
            if (!in.empty() && !defined.count(in))
              bad(where + ": input '" + in + "' is not defined before it");
          std::string op = n.op_type();
          const bool known = onnx_import::converterFor(n) != nullptr;
          if (!known) {
            if (!n.domain().empty() && n.domain() != "ai.onnx") op = n.domain() + "." + op;
            auto& e = unsupported[op];
            if (e.first++ == 0) e.second = n.name().empty() ? "(unnamed)" : n.name();
          }
          if (known)
            for (const auto& a : n.attribute())
              if (a.has_g()) check(a.g(), defined, depth + 1);
          for (const auto& out : n.output())
            if (!out.empty()) defined.insert(out);
        }
        if (graph.output_size() == 0) bad(depth ? "a subgraph has no outputs" : "the graph has no outputs");
        for (const auto& o : graph.output())
          if (!defined.count(o.name()))
            bad((depth ? "subgraph output '" : "graph output '") + o.name() +
                "' is not produced by any node");
      };
  check(g, {}, 0);
  if (!unsupported.empty()) {
    std::ostringstream s;
    s << unsupported.size() << " unsupported ONNX op type" << (unsupported.size() > 1 ? "s" : "") << ":";
    static const std::set<std::string> data_dependent{"NonMaxSuppression"};
    for (const auto& [op, e] : unsupported)
      s << "\n  " << op << " (" << e.first << " node" << (e.first > 1 ? "s" : "") << ", first: '" << e.second
        << "')"
        << (data_dependent.count(op) ? ": its output shape depends on the input values, and mlcc compiles "
                                       "static shapes (README: Data-dependent output shapes)"
                                     : "");
    bad(s.str());
  }
}

}  // namespace

ImportedModel importOnnxBytes(const std::string& bytes, const std::string& display_name,
                              const std::string& base_dir, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty()) throw Error(SourceLoc{display_name, 0, 0}, "empty file, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw Error(SourceLoc{display_name, 0, 0}, "ONNX protobuf over 2 GiB (use external data)");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(SourceLoc{display_name, 0, 0},
                "not a valid ONNX model (protobuf parse failed: corrupt or truncated?)");
  validate(model, display_name);
  Importer im(base_dir, display_name);
  return im.run(model, options);
}

ImportedModel importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::string bytes = readInput(path);
  return importOnnxBytes(bytes, displayName(path), directoryOf(path), options);
}

std::pair<std::string, std::vector<int64_t>> parseShapeBinding(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--shape '" + text + "': expected NAME=DIMS, e.g. input=1x3x224x224");
  std::string name = text.substr(0, eq), dims = text.substr(eq + 1);
  std::vector<int64_t> out;
  std::stringstream ss(dims);
  std::string d;
  while (std::getline(ss, d, 'x')) {
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos || d.size() > 15)
      throw Error("--shape '" + text + "': bad dimension '" + d + "'");
    out.push_back(std::stoll(d));
  }
  if (dims.empty()) out.clear();  // a scalar
  return {name, out};
}

std::pair<std::string, ir::Tensor> parseValueBinding(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error("--bind '" + text + "': expected NAME=FILE.npy, e.g. axes=axes.npy");
  std::string name = text.substr(0, eq);
  return {name, ir::readNpyTensor(text.substr(eq + 1), "--bind " + name)};
}

}  // namespace mlcc::frontend
