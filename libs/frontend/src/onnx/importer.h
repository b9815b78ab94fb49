// Internal interface of the ONNX importer: the values the converters work on,
// the importer context that emits bindings (typing each with ops::inferOpType
// and folding calls on constants with ops::computeOp), and the converter
// table, filled by one file per op family.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mlcc/frontend/onnx.h"
#include "mlcc/ir/graph.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "onnx/onnx_pb.h"

namespace mlcc::frontend::onnx_import {

// A value of the ONNX graph as the importer knows it. A constant is only
// bound in the IR (inline or as a weight) when a real op uses it; `sym` holds
// the elements of a small integer vector whose elements are known as
// dimension expressions (the result of Shape and arithmetic on it).
struct Value {
  std::string name;  // ONNX name
  ir::Type type;
  ir::GraphVar var;  // the binding or parameter; null while not materialized
  std::optional<ir::Tensor> constant;
  std::optional<std::vector<ir::PrimExpr>> sym;  // rank <= 1 integer tensors
  bool graph_input = false;                      // a parameter of the graph
  std::set<std::string> from_inputs;             // the graph inputs its value is computed from
  bool isConst() const { return constant.has_value(); }
};
using ValuePtr = std::shared_ptr<Value>;

// The most elements of a constant that the importer computes itself (folded
// ops, ConstantOfShape, Range, masks): a larger result stays an op or is
// refused, so that a tiny model cannot make the importer allocate gigabytes.
inline constexpr int64_t kMaxComputedElements = int64_t{1} << 24;
// The most operations (the op's FLOP count) of an op the importer folds by
// running its reference kernel: more work stays an op for run time (a
// convolution of small constants may have a small output and still need
// gigabytes of im2col buffer, or seconds of work).
inline constexpr int64_t kMaxFoldedWork = int64_t{1} << 27;
// The longest integer list input (axes, pads, shape, split sizes...) the importer reads.
inline constexpr int64_t kMaxIntListElements = 4096;
// Throws (naming `what`) when a computed constant of `shape` would exceed
// kMaxComputedElements, or have a dimension over it (or its size overflows).
void checkComputedSize(const std::vector<int64_t>& shape, const std::string& what);
// What checkComputedSize would say after the name ("": within the limits).
std::string computedSizeProblem(const std::vector<int64_t>& shape);

// --- tensors.cpp ---
// The mlcc dtype of an ONNX TensorProto data type; throws naming `what`.
ir::DType dtypeFromOnnx(int onnx_type, const std::string& what);
// An initializer / Constant tensor as a host tensor; external data is read
// relative to base_dir.
ir::Tensor tensorFromOnnx(const onnx::TensorProto& t, const std::string& base_dir);
// The i64 elements of an integer tensor (exact, unlike Tensor::at).
std::vector<int64_t> intElements(const ir::Tensor& t);
// A 1-D i64 tensor.
ir::Tensor intTensor(const std::vector<int64_t>& values, bool scalar = false);

class Importer;

// What a converter sees of one node.
struct NodeCtx {
  const onnx::NodeProto& node;
  Importer& im;
  std::vector<ValuePtr> inputs;  // null for an absent optional input
  int64_t opset;

  const std::string& name() const { return node.name(); }
  size_t numInputs() const { return inputs.size(); }
  bool hasInput(size_t i) const {
    if (i < inputs.size()) inputs_read.insert(i);
    return i < inputs.size() && inputs[i];
  }
  const ValuePtr& in(size_t i) const;  // throws when absent
  // The name for output `i`'s binding (the ONNX output name).
  std::string outName(size_t i = 0) const;
  size_t numOutputs() const { return static_cast<size_t>(node.output_size()); }
  bool outputUsed(size_t i) const;

  const onnx::AttributeProto* attr(const std::string& name) const;
  bool hasAttr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t attrInt(const std::string& name, int64_t def) const;
  float attrFloat(const std::string& name, float def) const;
  std::string attrStr(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& name, std::vector<int64_t> def = {}) const;
  // A constant integer input (or its symbolic elements when all constant).
  std::vector<int64_t> constInts(size_t i, const char* what) const;
  std::optional<std::vector<int64_t>> maybeConstInts(size_t i) const;
  std::vector<double> constFloats(size_t i, const char* what) const;

  // Marks attributes that cannot change an inference result (a training
  // seed, say) as read.
  void ignoreAttrs(std::initializer_list<const char*> names) const {
    for (const char* n : names) attrs_read.insert(n);
  }
  // Throws naming the first attribute or present input the converter never
  // looked at: every ONNX attribute and input is honoured or refused, never
  // silently ignored.
  void checkAllRead() const;

  // An error naming the node.
  [[noreturn]] void fail(const std::string& message) const;
  // fail() for input `i` that must be known at import: when it is a graph
  // input, the message says how to bind it (mlcc-import --bind).
  [[noreturn]] void failNotConstant(size_t i, const std::string& message) const;

  // What the converter looked at (attr(), hasAttr(), hasInput(), in(), ...).
  mutable std::set<std::string> attrs_read;
  mutable std::set<size_t> inputs_read;
};

using Converter = std::function<std::vector<ValuePtr>(NodeCtx&)>;
using ConverterTable = std::map<std::string, Converter, std::less<>>;

void registerElementwiseConverters(ConverterTable& t);  // convert_elementwise.cpp
void registerNNConverters(ConverterTable& t);           // convert_nn.cpp
void registerShapeConverters(ConverterTable& t);        // convert_shape.cpp
void registerLossConverters(ConverterTable& t);         // convert_loss.cpp
void registerComposedConverters(ConverterTable& t);     // convert_compose.cpp
void registerRecurrentConverters(ConverterTable& t);    // convert_recurrent.cpp
void registerQuantizeConverters(ConverterTable& t);     // convert_quantize.cpp
void registerSignalConverters(ConverterTable& t);       // convert_signal.cpp
void registerEinsumConverter(ConverterTable& t);        // convert_einsum.cpp
void registerControlFlowConverters(ConverterTable& t);  // convert_control_flow.cpp
void registerSelectionConverters(ConverterTable& t);    // convert_selection.cpp
void registerMlConverters(ConverterTable& t);           // convert_ml.cpp (domain ai.onnx.ml)
const ConverterTable& converters();
// The converter of a node of the default domain; null for an op mlcc lacks
// or another domain.
const Converter* converterFor(const onnx::NodeProto& n);

// Symbolic folding of integer shape computations (fold_shape.cpp): when the
// node is one of Shape, Size, Gather, Concat, Unsqueeze, Squeeze, Slice,
// Cast, Add, Sub, Mul, Div, Equal, Where, Min, Max, Reshape, Identity on
// small integer vectors whose elements are known, computes the outputs as
// dimension expressions. nullopt when it does not apply.
std::optional<std::vector<ValuePtr>> foldShapeNode(NodeCtx& ctx);
// The elements of `v` as dimension expressions, when known.
std::optional<std::vector<ir::PrimExpr>> symElements(const ValuePtr& v);

class Importer {
 public:
  Importer(std::string base_dir, std::string display_name)
      : base_dir_(std::move(base_dir)), display_(std::move(display_name)) {}

  ImportedModel run(const onnx::ModelProto& model, const OnnxImportOptions& options);

  // An op binding named `name` (made unique), typed by ops::inferOpType;
  // folded to a constant with ops::computeOp when every operand is constant.
  ValuePtr emit(const std::string& op, const std::vector<ValuePtr>& args, ir::Attrs attrs,
                const std::string& name);
  // A tuple item binding.
  ValuePtr emitTupleGet(const ValuePtr& tuple, int64_t index, const std::string& name);
  // An alias of `v` named `name` (for outputs that need their ONNX name).
  ValuePtr emitAlias(const ValuePtr& v, const std::string& name);
  ValuePtr constant(ir::Tensor t, const std::string& name);
  // A scalar constant of `dtype`.
  ValuePtr scalar(ir::DType dtype, double value, const std::string& name);
  // The IR variable of `v`, binding its constant first when needed.
  ir::GraphVar use(const ValuePtr& v);

  // Imports the nodes of a subgraph (a branch of If, a loop body) into the
  // current scope, its inputs bound to `inputs`: its nodes see every value
  // defined so far; the names it defines are its own (outer values of the
  // same names are visible again after it). Returns the values of its
  // outputs.
  std::vector<ValuePtr> importSubgraph(const onnx::GraphProto& g, const std::vector<ValuePtr>& inputs = {});

  const std::string& baseDir() const { return base_dir_; }
  std::string uniqueName(const std::string& base);
  // The number of uses of each ONNX tensor name by nodes and graph outputs.
  std::map<std::string, int> use_counts;

 private:
  void countUses(const onnx::GraphProto& g);
  void importNodes(const onnx::GraphProto& g);
  void importInitializers(const onnx::GraphProto& g);

  // Nodes imported from subgraphs so far (a loop body counts once per
  // iteration), at most kMaxSubgraphNodes: a small model cannot make the
  // importer build millions of bindings.
  static constexpr int64_t kMaxSubgraphNodes = int64_t{1} << 18;
  int64_t subgraph_nodes_ = 0;
  std::map<std::string, ValuePtr>* values_ = nullptr;  // ONNX name -> value, in run()
  int64_t opset_ = 13;
  std::string base_dir_, display_;
  std::vector<ir::Binding> bindings_;
  std::vector<std::pair<std::string, ir::Tensor>> weights_;
  std::set<std::string> names_;                 // graph variable names taken
  std::map<std::string, int64_t> next_suffix_;  // base name -> its last suffix tried
  std::map<std::string, int64_t> next_weight_suffix_;
  std::set<std::string> weight_names_;  // safetensors names taken
  std::map<std::string, ir::Var> sym_vars_;
};

}  // namespace mlcc::frontend::onnx_import
