// Fuzz target: the ONNX importer (libs/frontend importOnnxBytes, as
// mlcc-import runs it), with a protobuf-aware mutator: byte flips rarely get
// past protobuf parsing, so LLVMFuzzerCustomMutator parses the input as an
// onnx.ModelProto, changes one field that the importer interprets (a dim of
// a graph input/output or initializer, a data_type, the length of raw_data,
// an attribute value, an op_type, a node input name, the opset, a node
// added or removed) and reserializes it; inputs that do not parse get
// libFuzzer's byte mutations. External data resolves against an empty
// scratch directory.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "mlcc/frontend/onnx.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "onnx/onnx_pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

size_t pick(Rng& rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

int64_t interestingInt(Rng& rng) {
  static const int64_t values[] = {
      0,         1,         2,  3,  4,    7,       8,         16,           -1,
      -2,        255,       -3, 64, 1000, 1 << 16, 1LL << 31, -(1LL << 31), 1LL << 40,
      INT64_MAX, INT64_MIN, 5};
  if (pick(rng, 4) == 0) return static_cast<int64_t>(rng());
  return values[pick(rng, std::size(values))];
}

const char* const kOps[] = {"Add",
                            "Sub",
                            "Mul",
                            "Div",
                            "Relu",
                            "MatMul",
                            "Gemm",
                            "Conv",
                            "MaxPool",
                            "AveragePool",
                            "GlobalAveragePool",
                            "Flatten",
                            "Reshape",
                            "Transpose",
                            "Concat",
                            "Split",
                            "Slice",
                            "Gather",
                            "Shape",
                            "Unsqueeze",
                            "Squeeze",
                            "Softmax",
                            "LayerNormalization",
                            "BatchNormalization",
                            "Resize",
                            "Pad",
                            "Expand",
                            "Where",
                            "Cast",
                            "Constant",
                            "ReduceMean",
                            "ReduceSum",
                            "ReduceMax",
                            "Erf",
                            "Sqrt",
                            "Pow",
                            "Clip",
                            "Sigmoid",
                            "Tanh",
                            "Identity",
                            "Dropout",
                            "Equal",
                            "Range",
                            "ConstantOfShape",
                            "Einsum",
                            "Tile",
                            "ConvTranspose",
                            "LeakyRelu",
                            "HardSigmoid",
                            "Neg",
                            "Abs",
                            "Exp",
                            "Log",
                            "ArgMax"};

void mutateDims(onnx::TensorShapeProto* shape, Rng& rng) {
  if (shape->dim_size() == 0 || pick(rng, 6) == 0) {
    shape->add_dim()->set_dim_value(interestingInt(rng));
    return;
  }
  auto* dim = shape->mutable_dim(static_cast<int>(pick(rng, shape->dim_size())));
  switch (pick(rng, 4)) {
    case 0: dim->set_dim_param(pick(rng, 2) ? "n" : "batch"); break;
    case 1:
      dim->clear_dim_value();
      dim->clear_dim_param();
      break;
    case 2: shape->mutable_dim()->RemoveLast(); break;
    default: dim->set_dim_value(interestingInt(rng)); break;
  }
}

void mutateValueInfo(onnx::ValueInfoProto* vi, Rng& rng) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  if (pick(rng, 3) == 0) {
    tt->set_elem_type(static_cast<int32_t>(pick(rng, 18)));
  } else {
    mutateDims(tt->mutable_shape(), rng);
  }
}

void mutateTensor(onnx::TensorProto* t, Rng& rng) {
  switch (pick(rng, 6)) {
    case 0: t->set_data_type(static_cast<int32_t>(pick(rng, 18))); break;
    case 1:
      if (t->dims_size() > 0 && pick(rng, 2))
        t->set_dims(static_cast<int>(pick(rng, t->dims_size())), interestingInt(rng));
      else if (t->dims_size() > 0 && pick(rng, 2))
        t->mutable_dims()->RemoveLast();
      else
        t->add_dims(interestingInt(rng));
      break;
    case 2: {  // raw_data length
      std::string* raw = t->mutable_raw_data();
      size_t n = pick(rng, 3) == 0 ? 0 : pick(rng, raw->size() * 2 + 8);
      raw->resize(n, static_cast<char>(rng()));
      break;
    }
    case 3:  // typed data instead of raw
      t->clear_raw_data();
      for (size_t i = 0, n = pick(rng, 8); i < n; ++i) {
        t->add_float_data(static_cast<float>(interestingInt(rng)));
        t->add_int64_data(interestingInt(rng));
      }
      break;
    case 4:
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      {
        auto* e = t->add_external_data();
        e->set_key(pick(rng, 2) ? "location" : (pick(rng, 2) ? "offset" : "length"));
        e->set_value(pick(rng, 2) ? "weights.bin" : std::to_string(interestingInt(rng)));
      }
      break;
    default:
      if (!t->raw_data().empty())
        (*t->mutable_raw_data())[pick(rng, t->raw_data().size())] = static_cast<char>(rng());
      break;
  }
}

void mutateAttribute(onnx::AttributeProto* a, Rng& rng) {
  switch (a->type()) {
    case onnx::AttributeProto::INT: a->set_i(interestingInt(rng)); break;
    case onnx::AttributeProto::FLOAT:
      a->set_f(pick(rng, 2) ? static_cast<float>(interestingInt(rng))
                            : std::numeric_limits<float>::quiet_NaN());
      break;
    case onnx::AttributeProto::INTS:
      if (a->ints_size() > 0 && pick(rng, 3))
        a->set_ints(static_cast<int>(pick(rng, a->ints_size())), interestingInt(rng));
      else if (a->ints_size() > 0 && pick(rng, 2))
        a->mutable_ints()->RemoveLast();
      else
        a->add_ints(interestingInt(rng));
      break;
    case onnx::AttributeProto::STRING: {
      static const char* const s[] = {"",         "NOTSET",     "SAME_UPPER", "SAME_LOWER", "VALID",
                                      "constant", "reflect",    "edge",       "nearest",    "linear",
                                      "cubic",    "asymmetric", "half_pixel", "floor"};
      a->set_s(s[pick(rng, std::size(s))]);
      break;
    }
    case onnx::AttributeProto::TENSOR: mutateTensor(a->mutable_t(), rng); break;
    default:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(interestingInt(rng));
      break;
  }
}

// Collects the value names of the graph: inputs, initializers, node outputs.
std::vector<std::string> valueNames(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& i : g.input()) names.push_back(i.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  names.push_back("");
  return names;
}

void mutateNode(onnx::GraphProto* g, Rng& rng) {
  if (g->node_size() == 0) {
    auto* n = g->add_node();
    n->set_op_type(kOps[pick(rng, std::size(kOps))]);
    n->add_input(g->input_size() ? g->input(0).name() : "x");
    n->add_output(g->output_size() ? g->output(0).name() : "y");
    return;
  }
  auto* n = g->mutable_node(static_cast<int>(pick(rng, g->node_size())));
  std::vector<std::string> names = valueNames(*g);
  switch (pick(rng, 8)) {
    case 0: n->set_op_type(kOps[pick(rng, std::size(kOps))]); break;
    case 1:
      if (n->input_size() > 0)
        n->set_input(static_cast<int>(pick(rng, n->input_size())), names[pick(rng, names.size())]);
      break;
    case 2:
      if (n->input_size() > 0 && pick(rng, 2))
        n->mutable_input()->RemoveLast();
      else
        n->add_input(names[pick(rng, names.size())]);
      break;
    case 3:
      if (n->attribute_size() > 0)
        mutateAttribute(n->mutable_attribute(static_cast<int>(pick(rng, n->attribute_size()))), rng);
      break;
    case 4: {  // duplicate a node, renaming its outputs' consumers to it
      auto* copy = g->add_node();
      *copy = *n;
      if (pick(rng, 2)) copy->set_op_type(kOps[pick(rng, std::size(kOps))]);
      break;
    }
    case 5:  // remove a node
      g->mutable_node()->DeleteSubrange(static_cast<int>(pick(rng, g->node_size())), 1);
      break;
    case 6:
      if (n->output_size() > 0)
        n->set_output(static_cast<int>(pick(rng, n->output_size())), names[pick(rng, names.size())]);
      else
        n->add_output("out");
      break;
    default: {  // swap two nodes (topological order)
      int a = static_cast<int>(pick(rng, g->node_size())), b = static_cast<int>(pick(rng, g->node_size()));
      g->mutable_node()->SwapElements(a, b);
      break;
    }
  }
}

bool mutateModel(onnx::ModelProto& model, Rng& rng) {
  onnx::GraphProto* g = model.mutable_graph();
  switch (pick(rng, 7)) {
    case 0:
      if (g->input_size() == 0) return false;
      mutateValueInfo(g->mutable_input(static_cast<int>(pick(rng, g->input_size()))), rng);
      return true;
    case 1:
      if (g->output_size() == 0) return false;
      mutateValueInfo(g->mutable_output(static_cast<int>(pick(rng, g->output_size()))), rng);
      return true;
    case 2:
      if (g->initializer_size() == 0) return false;
      mutateTensor(g->mutable_initializer(static_cast<int>(pick(rng, g->initializer_size()))), rng);
      return true;
    case 3:
    case 4: mutateNode(g, rng); return true;
    case 5:
      if (model.opset_import_size() == 0) model.add_opset_import()->set_version(13);
      model.mutable_opset_import(0)->set_version(static_cast<int64_t>(pick(rng, 22)));
      return true;
    default:
      if (g->output_size() > 0 && g->node_size() > 0) {  // return another value
        std::vector<std::string> names = valueNames(*g);
        g->mutable_output(static_cast<int>(pick(rng, g->output_size())))
            ->set_name(names[pick(rng, names.size())]);
        return true;
      }
      return false;
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (pick(rng, 8) != 0 && model.ParseFromArray(data, static_cast<int>(size))) {
    bool changed = false;
    for (size_t i = 0, n = 1 + pick(rng, 3); i < n; ++i) changed |= mutateModel(model, rng);
    std::string out;
    if (changed && model.SerializeToString(&out) && out.size() <= max_size) {
      std::memcpy(data, out.data(), out.size());
      return out.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::frontend::ImportedModel imported =
        mlcc::frontend::importOnnxBytes(bytes, "fuzz.onnx", mlcc::fuzz::scratchDir());
    try {
      mlcc::ir::verifyModule(imported.module, mlcc::ops::opTypeInfo());
    } catch (const mlcc::Error& e) {
      mlcc::fuzz::fail("an imported module does not verify: " + e.format());
    }
  });
  return 0;
}
