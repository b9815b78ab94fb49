// The importer's graph walk: parameters from the graph inputs (symbolic
// dimensions for dynamic ones), constants from the initializers, one
// converter call per node (after symbolic shape folding), the return of the
// graph outputs under their ONNX names, and dead-binding removal. Emission
// types every binding with ops::inferOpType and folds ops on constants with
// ops::computeOp; constants are bound (inline or as weights) only when used.
#include "importer.h"

#include <algorithm>
#include <cstring>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"

namespace mlcc::frontend::onnx_import {

namespace {

std::string errorText(const std::exception& e) {
  if (auto* me = dynamic_cast<const Error*>(&e)) return me->message();
  return e.what();
}

// The value --bind gives graph input `in`, checked against its declared
// dtype and dimensions.
ir::Tensor boundValue(const onnx::ValueInfoProto& in, const ir::Tensor& value,
                      const OnnxImportOptions& options) {
  const std::string what = "--bind " + in.name();
  if (options.input_shapes.count(in.name()))
    throw Error(what + ": the input also has a --shape; give one of them");
  if (!in.type().has_tensor_type()) throw Error(what + ": the input is not a tensor");
  const auto& tt = in.type().tensor_type();
  const ir::DType dtype = dtypeFromOnnx(tt.elem_type(), what);
  if (value.dtype() != dtype)
    throw Error(what + ": the file holds " + std::string(ir::dtypeName(value.dtype())) +
                ", but the input is " + std::string(ir::dtypeName(dtype)));
  if (tt.has_shape()) {
    bool same = tt.shape().dim_size() == value.rank();
    for (int i = 0; same && i < tt.shape().dim_size(); ++i)
      if (tt.shape().dim(i).has_dim_value() && tt.shape().dim(i).dim_value() != value.shape()[i])
        same = false;
    if (!same) {
      std::string declared;
      for (int i = 0; i < tt.shape().dim_size(); ++i)
        declared += (i ? ", " : "") + (tt.shape().dim(i).has_dim_value()
                                           ? std::to_string(tt.shape().dim(i).dim_value())
                                           : std::string("?"));
      std::string given;
      for (int i = 0; i < value.rank(); ++i) given += (i ? ", " : "") + std::to_string(value.shape()[i]);
      throw Error(what + ": the file's shape is [" + given + "], but the input's is [" + declared + "]");
    }
  }
  return value;
}

}  // namespace

// --- NodeCtx ---

const ValuePtr& NodeCtx::in(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is required");
  return inputs[i];
}

std::string NodeCtx::outName(size_t i) const {
  if (i < numOutputs() && !node.output(static_cast<int>(i)).empty()) return node.output(static_cast<int>(i));
  return (node.name().empty() ? node.op_type() : node.name()) + "_out" + std::to_string(i);
}

bool NodeCtx::outputUsed(size_t i) const {
  if (i >= numOutputs() || node.output(static_cast<int>(i)).empty()) return false;
  auto it = im.use_counts.find(node.output(static_cast<int>(i)));
  return it != im.use_counts.end() && it->second > 0;
}

const onnx::AttributeProto* NodeCtx::attr(const std::string& n) const {
  attrs_read.insert(n);
  for (const auto& a : node.attribute())
    if (a.name() == n) return &a;
  return nullptr;
}

int64_t NodeCtx::attrInt(const std::string& n, int64_t def) const {
  auto* a = attr(n);
  return a ? a->i() : def;
}
float NodeCtx::attrFloat(const std::string& n, float def) const {
  auto* a = attr(n);
  return a ? a->f() : def;
}
std::string NodeCtx::attrStr(const std::string& n, const std::string& def) const {
  auto* a = attr(n);
  return a ? a->s() : def;
}
std::vector<int64_t> NodeCtx::attrInts(const std::string& n, std::vector<int64_t> def) const {
  auto* a = attr(n);
  if (!a) return def;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<int64_t>> NodeCtx::maybeConstInts(size_t i) const {
  if (!hasInput(i)) return std::nullopt;
  const ValuePtr& v = inputs[i];
  if (v->constant && ir::isInt(v->constant->dtype())) return intElements(*v->constant);
  if (auto s = symElements(v)) {
    std::vector<int64_t> out;
    for (const auto& e : *s) {
      int64_t c;
      if (!ir::asConstInt(e, &c)) return std::nullopt;
      out.push_back(c);
    }
    return out;
  }
  return std::nullopt;
}

std::vector<int64_t> NodeCtx::constInts(size_t i, const char* what) const {
  // Axes, pads, shapes, sizes: one value per dimension or output, so a list
  // longer than any rank is a malformed model (and would become a huge attribute).
  if (hasInput(i) && inputs[i]->constant && inputs[i]->constant->numel() > kMaxIntListElements)
    fail(std::string(what) + " (input " + std::to_string(i) + ") has " +
         std::to_string(inputs[i]->constant->numel()) + " elements; at most " +
         std::to_string(kMaxIntListElements) + " are supported");
  auto v = maybeConstInts(i);
  if (!v)
    failNotConstant(
        i, std::string(what) + " (input " + std::to_string(i) + ") must be a constant integer tensor");
  return *v;
}

void NodeCtx::failNotConstant(size_t i, const std::string& message) const {
  if (i < inputs.size() && inputs[i] && inputs[i]->graph_input)
    fail(message + "; it is the graph input '" + inputs[i]->name + "': give its value with --bind " +
         inputs[i]->name + "=FILE.npy");
  if (i < inputs.size() && inputs[i] && !inputs[i]->from_inputs.empty()) {
    std::string names, binds;
    for (const auto& n : inputs[i]->from_inputs) {
      names += (names.empty() ? "'" : ", '") + n + "'";
      binds += " --bind " + n + "=FILE.npy";
    }
    fail(message + "; it is computed from the graph input" +
         (inputs[i]->from_inputs.size() > 1 ? "s " : " ") + names + ": give " +
         (inputs[i]->from_inputs.size() > 1 ? "their values with" : "its value with") + binds);
  }
  fail(message);
}

std::vector<double> NodeCtx::constFloats(size_t i, const char* what) const {
  if (!hasInput(i) || !inputs[i]->constant)
    failNotConstant(i, std::string(what) + " (input " + std::to_string(i) + ") must be a constant");
  const ir::Tensor& t = *inputs[i]->constant;
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t k = 0; k < out.size(); ++k) out[k] = t.at(static_cast<int64_t>(k));
  return out;
}

void NodeCtx::checkAllRead() const {
  for (const auto& a : node.attribute())
    if (!attrs_read.count(a.name())) fail("attribute '" + a.name() + "' is not supported");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i] && !inputs_read.count(i))
      fail("input " + std::to_string(i) + " ('" + node.input(static_cast<int>(i)) + "') is not supported");
}

void NodeCtx::fail(const std::string& message) const {
  throw Error("node '" + node.name() + "' (" + node.op_type() + "): " + message);
}

// --- Importer ---

namespace {

// `base`, or base_K with a K that `taken` lacks, added to `taken`.
// A base's suffixes are tried from where its last one was found (`next`):
// an unrolled loop names thousands of values after one base, and probing
// from _1 each time made the import quadratic (4096 iterations of a fuzzed
// Loop took 39 s under the sanitizers before being refused).
std::string uniqueIn(std::set<std::string>& taken, std::map<std::string, int64_t>& next,
                     const std::string& base) {
  if (taken.insert(base).second) return base;
  int64_t& k = next[base];
  for (;;) {
    std::string n = base + "_" + std::to_string(++k);
    if (taken.insert(n).second) return n;
  }
}

}  // namespace

std::string Importer::uniqueName(const std::string& base) {
  return uniqueIn(names_, next_suffix_, base.empty() ? "v" : base);
}

ValuePtr Importer::constant(ir::Tensor t, const std::string& name) {
  auto v = std::make_shared<Value>();
  v->name = name;
  v->type = ir::Type::tensor(t.dtype(), t.shape());
  v->constant = std::move(t);
  return v;
}

ValuePtr Importer::scalar(ir::DType dtype, double value, const std::string& name) {
  return constant(ir::Tensor::scalar(dtype, value), name);
}

ir::GraphVar Importer::use(const ValuePtr& v) {
  if (v->var) return v->var;
  if (!v->constant) {
    if (v->sym)
      throw Error("value '" + v->name +
                  "' is a shape computed from symbolic dimensions; it can feed Reshape/Expand/... but not a "
                  "tensor operand (bind the dimensions with --shape)");
    throw Error("internal: value '" + v->name + "' has no binding");
  }
  const ir::Tensor& t = *v->constant;
  ir::Binding b;
  b.value.kind = ir::ValueKind::Const;
  if (ir::isInlineConstant(t.dtype(), t.shape())) {
    b.value = ir::inlineConstValue(t);
  } else {
    const std::string wname =
        uniqueIn(weight_names_, next_weight_suffix_, v->name.empty() ? "const" : v->name);
    b.value.weight = wname;
    weights_.emplace_back(wname, t);
  }
  b.var = ir::makeGraphVar(uniqueName(v->name), v->type);
  v->var = b.var;
  bindings_.push_back(std::move(b));
  return v->var;
}

ValuePtr Importer::emit(const std::string& op, const std::vector<ValuePtr>& args, ir::Attrs attrs,
                        const std::string& name) {
  std::vector<ir::Type> types;
  bool all_const = true;
  int64_t elems = 0;
  for (const auto& a : args) {
    types.push_back(a->type);
    all_const = all_const && a->constant.has_value();
    if (a->constant) {
      elems = saturatingAdd(elems, a->constant->numel());
      // Reference kernels index per dimension: an empty constant with a huge
      // dimension is as costly as a huge one.
      for (int64_t d : a->constant->shape()) elems = saturatingAdd(elems, d);
    }
  }
  ir::Type type = ops::inferOpType(op, types, attrs);
  std::vector<int64_t> out_shape;
  auto work = [&] {
    const ops::OpDef* def = ops::findOp(op);
    return def && def->flops ? def->flops(types, type, ops::normalizeAttrs(*def, attrs)) : 0;
  };
  if (all_const && type.isTensor() && elems <= kMaxComputedElements &&
      ops::staticShape(type.shape, &out_shape) && computedSizeProblem(out_shape).empty() &&
      work() <= kMaxFoldedWork) {
    std::vector<ir::Tensor> ins;
    for (const auto& a : args) ins.push_back(*a->constant);
    try {
      auto outs = ops::computeOp(op, ins, attrs);
      if (outs.size() == 1) return constant(std::move(outs[0]), name);
    } catch (const std::exception&) {
      // No reference kernel (yet): emit the op.
    }
  }
  ir::Binding b;
  b.value.kind = ir::ValueKind::Op;
  b.value.callee = op;
  for (const auto& a : args) b.value.args.push_back(use(a));
  b.value.attrs = std::move(attrs);
  auto v = std::make_shared<Value>();
  v->name = name;
  v->type = type;
  for (const auto& a : args) {
    if (a->graph_input) v->from_inputs.insert(a->name);
    v->from_inputs.insert(a->from_inputs.begin(), a->from_inputs.end());
  }
  v->var = b.var = ir::makeGraphVar(uniqueName(name), type);
  bindings_.push_back(std::move(b));
  return v;
}

ValuePtr Importer::emitTupleGet(const ValuePtr& tuple, int64_t index, const std::string& name) {
  ir::Binding b;
  b.value.kind = ir::ValueKind::TupleGet;
  b.value.args.push_back(use(tuple));
  b.value.index = index;
  auto v = std::make_shared<Value>();
  v->name = name;
  v->type = tuple->type.fields.at(static_cast<size_t>(index));
  v->from_inputs = tuple->from_inputs;
  v->var = b.var = ir::makeGraphVar(uniqueName(name), v->type);
  bindings_.push_back(std::move(b));
  return v;
}

ValuePtr Importer::emitAlias(const ValuePtr& src, const std::string& name) {
  ir::Binding b;
  b.value.kind = ir::ValueKind::Alias;
  b.value.args.push_back(use(src));
  auto v = std::make_shared<Value>(*src);
  v->name = name;
  v->var = b.var = ir::makeGraphVar(uniqueName(name), src->type);
  bindings_.push_back(std::move(b));
  return v;
}

void Importer::countUses(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) ++use_counts[in];
    for (const auto& a : n.attribute())  // subgraphs (If's branches) use outer values by name
      if (a.has_g()) countUses(a.g());
  }
  for (const auto& o : g.output()) ++use_counts[o.name()];
}

void Importer::importNodes(const onnx::GraphProto& g) {
  std::map<std::string, ValuePtr>& values = *values_;
  auto located = [&](const std::string& msg) { return Error(SourceLoc{display_, 0, 0}, msg); };
  for (const auto& n : g.node()) {
    NodeCtx ctx{n, *this, {}, opset_, {}, {}};
    for (const auto& in : n.input()) {
      if (in.empty()) {
        ctx.inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(in);
      if (it == values.end())
        throw located("node '" + n.name() + "' (" + n.op_type() + "): input '" + in + "' is not defined");
      ctx.inputs.push_back(it->second);
    }
    while (!ctx.inputs.empty() && !ctx.inputs.back()) ctx.inputs.pop_back();
    std::vector<ValuePtr> outs;
    try {
      auto folded = foldShapeNode(ctx);
      if (folded) {
        outs = std::move(*folded);
      } else {
        const Converter* conv = converterFor(n);
        if (!conv) ctx.fail("unsupported ONNX op type");
        outs = (*conv)(ctx);
      }
      ctx.checkAllRead();
    } catch (const std::exception& e) {
      std::string msg = errorText(e);
      if (msg.rfind("node '", 0) != 0) msg = "node '" + n.name() + "' (" + n.op_type() + "): " + msg;
      throw located(msg);
    }
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty()) continue;
      if (static_cast<size_t>(i) < outs.size() && outs[static_cast<size_t>(i)]) {
        values[n.output(i)] = outs[static_cast<size_t>(i)];
      } else if (ctx.outputUsed(static_cast<size_t>(i))) {
        throw located("node '" + n.name() + "' (" + n.op_type() + "): output " + std::to_string(i) + " ('" +
                      n.output(i) + "') is used but not supported");
      }
    }
  }
}

void Importer::importInitializers(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer()) {
    try {
      (*values_)[t.name()] = constant(tensorFromOnnx(t, base_dir_), t.name());
    } catch (const Error& e) {
      throw Error("initializer: " + e.message());
    }
  }
}

std::vector<ValuePtr> Importer::importSubgraph(const onnx::GraphProto& g,
                                               const std::vector<ValuePtr>& inputs) {
  if (static_cast<size_t>(g.input_size()) != inputs.size())
    throw Error("the subgraph '" + g.name() + "' has " + std::to_string(g.input_size()) + " input(s), " +
                std::to_string(inputs.size()) + " given");
  subgraph_nodes_ += g.node_size();
  if (subgraph_nodes_ > kMaxSubgraphNodes)
    throw Error("the model's subgraphs (loop bodies, unrolled) come to more than " +
                std::to_string(kMaxSubgraphNodes) + " nodes");
  // The names the subgraph defines are its own: the outer values they shadow
  // are visible again after it (a loop body is imported once per iteration).
  std::map<std::string, std::optional<ValuePtr>> shadowed;
  auto shadow = [&](const std::string& name) {
    if (name.empty() || shadowed.count(name)) return;
    auto it = values_->find(name);
    shadowed[name] = it == values_->end() ? std::nullopt : std::optional<ValuePtr>(it->second);
  };
  for (const auto& in : g.input()) shadow(in.name());
  for (const auto& t : g.initializer()) shadow(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) shadow(o);
  for (size_t i = 0; i < inputs.size(); ++i) (*values_)[g.input(static_cast<int>(i)).name()] = inputs[i];
  importInitializers(g);
  importNodes(g);
  std::vector<ValuePtr> outs;
  for (const auto& o : g.output()) {
    auto it = values_->find(o.name());
    if (it == values_->end()) throw Error("subgraph output '" + o.name() + "' is not defined");
    outs.push_back(it->second);
  }
  for (auto& [name, old] : shadowed) {
    if (old)
      (*values_)[name] = *old;
    else
      values_->erase(name);
  }
  return outs;
}

ImportedModel Importer::run(const onnx::ModelProto& model, const OnnxImportOptions& options) {
  int64_t opset = 13;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  const onnx::GraphProto& g = model.graph();
  std::map<std::string, ValuePtr> values;
  auto located = [&](const std::string& msg) { return Error(SourceLoc{display_, 0, 0}, msg); };

  countUses(g);
  opset_ = opset;
  values_ = &values;

  // Initializers.
  try {
    importInitializers(g);
  } catch (const Error& e) {
    throw located(e.message());
  }

  // Parameters.
  std::vector<ir::GraphVar> params;
  std::set<std::string> bound_shapes, bound_values;
  for (const auto& in : g.input()) {
    if (values.count(in.name())) continue;  // an initializer listed as input
    if (auto v = options.input_values.find(in.name()); v != options.input_values.end()) {
      try {
        values[in.name()] = constant(boundValue(in, v->second, options), in.name());
      } catch (const Error& e) {
        throw located(e.message());
      }
      bound_values.insert(in.name());
      continue;
    }
    if (!in.type().has_tensor_type())
      throw located("graph input '" + in.name() + "' is not a tensor (sequences and maps are not supported)");
    const auto& tt = in.type().tensor_type();
    ir::DType dtype;
    try {
      dtype = dtypeFromOnnx(tt.elem_type(), "graph input '" + in.name() + "'");
    } catch (const Error& e) {
      throw located(e.message());
    }
    if (!tt.has_shape())
      throw located("graph input '" + in.name() + "' has no shape (its rank must be known)");
    std::vector<ir::PrimExpr> shape;
    auto bound = options.input_shapes.find(in.name());
    if (bound != options.input_shapes.end()) {
      bound_shapes.insert(in.name());
      if (static_cast<int>(bound->second.size()) != tt.shape().dim_size())
        throw located("--shape " + in.name() + ": rank " + std::to_string(bound->second.size()) +
                      ", but the input has rank " + std::to_string(tt.shape().dim_size()));
    }
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (bound != options.input_shapes.end()) {
        int64_t want = bound->second[static_cast<size_t>(i)];
        if (d.has_dim_value() && d.dim_value() != want)
          throw located("--shape " + in.name() + ": dimension " + std::to_string(i) + " is " +
                        std::to_string(d.dim_value()) + " in the model, not " + std::to_string(want));
        shape.push_back(ir::makeInt(want));
      } else if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.push_back(ir::makeInt(d.dim_value()));
      } else {
        std::string sname = d.has_dim_param() && !d.dim_param().empty()
                                ? d.dim_param()
                                : in.name() + "_d" + std::to_string(i);
        std::string clean;
        for (char c : sname) clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
        if (clean.empty() || std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "d_" + clean;
        auto& var = sym_vars_[clean];
        if (!var) var = ir::makeVar(clean);
        shape.push_back(var);
      }
    }
    std::vector<int64_t> static_dims;
    for (const auto& d : shape)
      if (int64_t c; ir::asConstInt(d, &c)) static_dims.push_back(c);
    if (std::string e = shapeSizeError(static_dims, ir::dtypeBytes(dtype)); !e.empty())
      throw located("graph input '" + in.name() + "': " + e);
    auto v = std::make_shared<Value>();
    v->name = in.name();
    v->type = ir::Type::tensor(dtype, shape);
    v->var = ir::makeGraphVar(uniqueName(in.name()), v->type);
    v->graph_input = true;
    params.push_back(v->var);
    values[in.name()] = v;
  }
  for (const auto& [name, dims] : options.input_shapes)
    if (!bound_shapes.count(name))
      throw located("--shape " + name + ": the model has no input named '" + name + "'");
  for (const auto& [name, value] : options.input_values)
    if (!bound_values.count(name))
      throw located("--bind " + name + ": the model has no input named '" + name + "'" +
                    (values.count(name) ? " (it is an initializer, a constant already)" : ""));

  // Nodes, in their (topological) order.
  importNodes(g);

  // Outputs, bound to variables named as the ONNX outputs.
  ir::GraphFunc f;
  f.name = "main";
  f.params = params;
  std::vector<ir::Type> ret_types;
  for (const auto& o : g.output()) {
    ValuePtr v = values.at(o.name());
    try {
      use(v);
    } catch (const Error& e) {
      throw located("graph output '" + o.name() + "': " + e.message());
    }
    if (v->var->name != o.name() || std::find(params.begin(), params.end(), v->var) != params.end())
      v = emitAlias(v, o.name());
    f.ret.push_back(v->var);
    ret_types.push_back(v->type);
  }
  f.ret_is_tuple = g.output_size() > 1;
  f.ret_type = f.ret_is_tuple ? ir::Type::tuple(ret_types) : ret_types[0];

  // Dead-binding removal (unused outputs of multi-op expansions, dead nodes).
  std::set<const ir::GraphVarNode*> live;
  for (const auto& r : f.ret) live.insert(r.get());
  std::vector<bool> keep(bindings_.size(), false);
  for (size_t i = bindings_.size(); i-- > 0;) {
    if (!live.count(bindings_[i].var.get())) continue;
    keep[i] = true;
    for (const auto& a : bindings_[i].value.args) live.insert(a.get());
  }
  ir::BindingBlock block;
  block.dataflow = true;
  std::set<std::string> live_weights;
  for (size_t i = 0; i < bindings_.size(); ++i) {
    if (!keep[i]) continue;
    if (bindings_[i].value.kind == ir::ValueKind::Const && !bindings_[i].value.is_inline)
      live_weights.insert(bindings_[i].value.weight);
    block.bindings.push_back(std::move(bindings_[i]));
  }
  f.blocks.push_back(std::move(block));

  ImportedModel out;
  out.module.functions.emplace_back(std::move(f));
  for (auto& [name, t] : weights_)
    if (live_weights.count(name)) out.weights.emplace_back(name, std::move(t));
  return out;
}

}  // namespace mlcc::frontend::onnx_import
