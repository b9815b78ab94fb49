// Planning the graph entry (see entry_plan.h): storage for every value,
// steps for every call, the memory plan for the intermediates.
#include "entry_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "mlcc/codegen/llvm.h"
#include "mlcc/ir/arith.h"
#include "mlcc/ir/entry.h"
#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/ir/summary.h"
#include "mlcc/ops/library_kernels.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::codegen {

namespace {

// The storage of a value: a tensor (cls >= 0) or a tuple of storages.
struct Ref {
  int cls = -1;
  std::vector<Ref> fields;
};

// One tensor's storage, shared by all the variables that name it.
struct Storage {
  enum class Kind { input, constant, computed };
  Kind kind = Kind::computed;
  TensorDesc desc;
  int input = -1;                         // input
  const ir::GraphValue* value = nullptr;  // constant: its binding's value
  int constant = -1;                      // constant: index in plan.constants, once used
  int first = 0, last = 0;                // computed: live range in binding indices
  int output = -1;                        // computed: the output it is written to
  uint64_t offset = 0;                    // computed, not an output: workspace offset
  int sym_tensor = -1;                    // the same in a symbolic plan: its index there
  bool scratch = false;                   // computed: a kernel's scratch buffer, not a graph value
};

std::string shapeText(const std::vector<int64_t>& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + (s[i] < 0 ? "?" : std::to_string(s[i]));
  return r.empty() ? "scalar" : r;
}

ir::PrimExpr binary(ir::BinaryOp op, const ir::PrimExpr& a, const ir::PrimExpr& b) {
  return ir::simplify(ir::makeBinary(op, a, b));
}

// Dimension d of a tensor as an expression.
ir::PrimExpr dimExpr(const TensorDesc& t, size_t d) {
  return t.symbolic() ? t.sym_shape.at(d) : ir::makeInt(t.shape.at(d));
}
ir::PrimExpr bytesExpr(const TensorDesc& t) {
  return t.symbolic() ? t.sym_bytes : ir::makeInt(static_cast<int64_t>(t.bytes));
}

// The symbolic-shape refusal for what does not take symbolic shapes yet.
Error notSupported(const std::string& what) {
  return Error("symbolic shapes are not supported by codegen yet " + what +
               "; import with --shape NAME=DIMS (e.g. --shape input=1x3x224x224)");
}

// The first variable in `shape` that is none of `dims` (null when there is none).
const ir::VarNode* unknownDim(const std::vector<ir::PrimExpr>& shape,
                              const std::vector<const ir::VarNode*>& dims) {
  const ir::VarNode* unknown = nullptr;
  for (const auto& dim : shape)
    ir::anyOf(dim, [&](const ir::PrimExpr& x) {
      auto* var = x->as<ir::VarNode>();
      if (var && std::find(dims.begin(), dims.end(), var) == dims.end()) unknown = var;
      return unknown != nullptr;
    });
  return unknown;
}

// A tensor of `dtype` and `shape`: static, or symbolic (its dimensions are
// expressions of symbolic dimensions).
TensorDesc tensorDesc(const std::string& name, ir::DType dtype, const std::vector<ir::PrimExpr>& shape) {
  TensorDesc d;
  d.name = name;
  d.dtype = dtype;
  bool is_static = true;
  for (const auto& dim : shape) {
    int64_t v = -1;
    if (!ir::asConstInt(dim, &v)) {
      is_static = false;
      v = -1;
    }
    d.shape.push_back(v);
  }
  if (is_static) {
    d.bytes = static_cast<uint64_t>(byteSize(d.shape, ir::dtypeBytes(dtype)));
    return d;
  }
  d.sym_shape = shape;
  d.sym_bytes = ir::makeInt(ir::dtypeBytes(dtype));
  for (const auto& dim : shape) d.sym_bytes = binary(ir::BinaryOp::Mul, d.sym_bytes, dim);
  return d;
}

// The element count of dims [begin, end) of `s` (checked: throws on overflow).
int64_t numel(const std::vector<int64_t>& s, size_t begin = 0, size_t end = SIZE_MAX) {
  end = std::min(end, s.size());
  begin = std::min(begin, end);
  return elementCount(std::span(s).subspan(begin, end - begin));
}

class Planner {
 public:
  Planner(const ir::Module& m, const ir::GraphFunc& g, const ScratchFn& scratch, const std::string& library)
      : m_(m), g_(g), scratch_(scratch), library_(library) {
    plan_.entry = g.name;
  }

  EntryPlan run() {
    // The symbolic dimensions: the variables that are whole input dimensions.
    for (const auto& p : g_.params)
      if (p->type.isTensor())
        for (const auto& d : p->type.shape) {
          int64_t c;
          if (auto* v = d->as<ir::VarNode>()) {
            if (std::find(plan_.dims.begin(), plan_.dims.end(), v) == plan_.dims.end())
              plan_.dims.push_back(v);
          } else if (!ir::asConstInt(d, &c)) {
            throw notSupported("in input dimensions that are expressions: parameter %" + p->name +
                               " has type " + ir::printType(p->type));
          }
        }
    for (size_t i = 0; i < g_.params.size(); ++i) {
      const ir::GraphVar& p = g_.params[i];
      if (!p->type.isTensor())
        throw Error("@" + g_.name + ": parameter %" + p->name +
                    " is a tuple; codegen takes tensor inputs only");
      Storage s;
      s.kind = Storage::Kind::input;
      s.desc = desc(p->name, p->type, "parameter %" + p->name);
      s.input = static_cast<int>(i);
      plan_.inputs.push_back(s.desc);
      refs_[p.get()] = Ref{add(std::move(s)), {}};
    }
    int index = 0;
    for (const auto& block : g_.blocks)
      for (const auto& b : block.bindings) {
        try {
          bind(b, index++);
        } catch (const Error& e) {
          throw Error("@" + g_.name + ", binding %" + b.var->name + ": " + e.message());
        }
      }
    assignOutputs();
    planWorkspace();
    resolveSteps();
    return std::move(plan_);
  }

 private:
  int add(Storage s) {
    storage_.push_back(std::move(s));
    return static_cast<int>(storage_.size()) - 1;
  }

  TensorDesc desc(const std::string& name, const ir::Type& t, const std::string& who) {
    if (!t.isTensor()) throw Error(who + " is a tuple where a tensor is expected");
    if (const ir::VarNode* unknown = unknownDim(t.shape, plan_.dims))
      throw notSupported("where a dimension is not given by the inputs: " + who + " has type " +
                         ir::printType(t) + " ('" + unknown->name + "' is no input dimension)");
    return tensorDesc(name, t.dtype, t.shape);
  }

  const Ref& ref(const ir::GraphVar& v) {
    auto it = refs_.find(v.get());
    if (it == refs_.end()) throw Error("%" + v->name + " is used before it is defined");
    return it->second;
  }

  // The storage of a tensor operand, used at binding `index`.
  int use(const ir::GraphVar& v, int index) {
    const Ref& r = ref(v);
    if (r.cls < 0) throw Error("operand %" + v->name + " is a tuple; calls take tensors");
    Storage& s = storage_[r.cls];
    if (s.kind == Storage::Kind::computed) s.last = std::max(s.last, index);
    return r.cls;
  }

  // New computed storage for the value of `var`, written at binding `index`.
  Ref fresh(const std::string& name, const ir::Type& t, int index, std::vector<int>& outs) {
    if (t.isTuple()) {
      Ref r;
      for (size_t i = 0; i < t.fields.size(); ++i)
        r.fields.push_back(fresh(name + "_" + std::to_string(i), t.fields[i], index, outs));
      return r;
    }
    Storage s;
    s.desc = desc(name, t, "%" + name);
    s.first = s.last = index;
    int c = add(std::move(s));
    outs.push_back(c);
    return Ref{c, {}};
  }

  int kernelId(const std::string& name, const std::string& prim, double flops) {
    auto [it, inserted] = kernel_ids_.emplace(name, static_cast<int>(plan_.kernels.size()));
    if (inserted) plan_.kernels.push_back({name, prim, flops});
    return it->second;
  }

  void bind(const ir::Binding& b, int index) {
    const ir::GraphValue& v = b.value;
    switch (v.kind) {
      case ir::ValueKind::Alias: refs_[b.var.get()] = ref(v.args.at(0)); return;
      case ir::ValueKind::Tuple: {
        Ref r;
        for (const auto& a : v.args) r.fields.push_back(ref(a));
        refs_[b.var.get()] = std::move(r);
        return;
      }
      case ir::ValueKind::TupleGet: {
        const Ref& t = ref(v.args.at(0));
        if (t.cls >= 0 || v.index < 0 || static_cast<size_t>(v.index) >= t.fields.size())
          throw Error("%" + v.args[0]->name + "[" + std::to_string(v.index) + "] is not a field of a tuple");
        Ref field = t.fields[v.index];
        refs_[b.var.get()] = std::move(field);
        return;
      }
      case ir::ValueKind::Const: {
        if (!v.is_inline) {
          auto it = weights_.find(v.weight);
          if (it != weights_.end()) {
            refs_[b.var.get()] = Ref{it->second, {}};
            return;
          }
        }
        Storage s;
        s.kind = Storage::Kind::constant;
        s.desc = desc(b.var->name, b.var->type, "constant %" + b.var->name);
        s.value = &v;
        if (v.is_inline && v.data.size() != s.desc.bytes)
          throw Error("inline constant has " + std::to_string(v.data.size()) + " bytes, its type needs " +
                      std::to_string(s.desc.bytes));
        int c = add(std::move(s));
        if (!v.is_inline) weights_[v.weight] = c;
        refs_[b.var.get()] = Ref{c, {}};
        return;
      }
      case ir::ValueKind::Op: throw Error("op " + v.callee + " was not legalized: run mlcc-legalize first");
      case ir::ValueKind::CallGraph:
        throw Error("call of graph function @" + v.callee +
                    ": codegen compiles call_tir and call_extern only; run mlcc-legalize first");
      case ir::ValueKind::CallTir: return callTir(b, index);
      case ir::ValueKind::CallExtern: return callExtern(b, index);
    }
    throw Error("unknown binding kind");
  }

  void callTir(const ir::Binding& b, int index) {
    const ir::GraphValue& v = b.value;
    const ir::PrimFunc* f = m_.findPrim(v.callee);
    if (!f) throw Error("call_tir of @" + v.callee + ", which is not a prim func of the module");
    std::vector<int> args;
    for (const auto& a : v.args) args.push_back(use(a, index));
    std::vector<int> outs;
    refs_[b.var.get()] = fresh(b.var->name, b.var->type, index, outs);
    args.insert(args.end(), outs.begin(), outs.end());
    if (args.size() != f->params.size())
      throw Error("@" + f->name + " takes " + std::to_string(f->params.size()) +
                  " buffers, the call passes " + std::to_string(v.args.size()) + " inputs and " +
                  std::to_string(outs.size()) + " outputs");
    // The prim func's symbolic dimensions take the sizes of the arguments
    // they are whole dimensions of; then every parameter must have the size
    // of its argument.
    std::unordered_map<const ir::VarNode*, ir::PrimExpr> dims;
    for (size_t i = 0; i < args.size(); ++i) {
      const ir::Buffer& p = f->params[i];
      const TensorDesc& d = storage_[args[i]].desc;
      for (size_t k = 0; k < p->shape.size() && k < d.shape.size(); ++k)
        if (auto* var = p->shape[k]->as<ir::VarNode>(); var && !dims.count(var)) dims[var] = dimExpr(d, k);
    }
    for (size_t i = 0; i < args.size(); ++i) {
      const ir::Buffer& p = f->params[i];
      const TensorDesc& d = storage_[args[i]].desc;
      ir::PrimExpr pbytes = ir::makeInt(ir::dtypeBytes(p->dtype));
      for (const auto& dim : p->shape) pbytes = binary(ir::BinaryOp::Mul, pbytes, ir::substitute(dim, dims));
      int64_t diff = -1;
      if (p->dtype != d.dtype || !ir::asConstInt(binary(ir::BinaryOp::Sub, pbytes, bytesExpr(d)), &diff) ||
          diff != 0)
        throw Error("parameter %" + p->name + " of @" + f->name + " is " +
                    ir::printType(ir::Type::tensor(p->dtype, p->shape)) + " but gets %" + d.name + " of " +
                    std::string(ir::dtypeName(d.dtype)) + "[" + shapeText(d.shape) + "]");
    }
    auto [it, first_call] = scratch_sizes_.try_emplace(f->name);
    if (first_call && scratch_) it->second = scratch_(*f);
    for (size_t i = 0; i < it->second.size(); ++i) {
      Storage sc;
      sc.desc.name = f->name + ".scratch" + std::to_string(i);
      ir::PrimExpr bytes = ir::simplify(ir::substitute(it->second[i], dims));
      if (int64_t b; ir::asConstInt(bytes, &b))
        sc.desc.bytes = static_cast<uint64_t>(b);
      else
        sc.desc.sym_bytes = bytes;
      sc.first = sc.last = index;
      sc.scratch = true;
      args.push_back(add(std::move(sc)));
    }
    EntryStep s;
    s.kind = EntryStep::Kind::kernel;
    for (const ir::VarNode* var : kernelDims(*f)) s.dims.push_back(dims.at(var));
    s.num_params = f->params.size();
    s.kernel = kernelId(f->name, f->name, static_cast<double>(ir::primFuncFlops(*f)));
    s.what = "%" + b.var->name + " = call_tir @" + f->name;
    addStep(std::move(s), args);
  }

  // A user library function (an `extern` of the module): its operands and
  // result by location, with their static shapes.
  void callUserExtern(const ir::Binding& b, int index, const ir::ExternFunc& decl) {
    const std::string what = "call_extern \"" + decl.name + "\"";
    if (library_ != "blas")
      throw Error(what + ": user library functions run on the CPU; the cuda codegen cannot call them yet");
    std::vector<int> args;
    for (const auto& a : b.value.args) args.push_back(use(a, index));
    std::vector<int> outs;
    refs_[b.var.get()] = fresh(b.var->name, b.var->type, index, outs);
    if (outs.size() != 1) throw Error(what + " has one result, not a tuple");
    args.push_back(outs[0]);
    EntryStep s;
    s.kind = EntryStep::Kind::user_extern;
    s.symbol = decl.symbol;
    for (int a : args) s.tensors.push_back(storage_[a].desc);
    s.what = "%" + b.var->name + " = " + what + " (" + decl.symbol + ")";
    s.kernel = kernelId(decl.name + " " + shapeText(storage_[outs[0]].desc.shape), "", 0);
    addStep(std::move(s), args);
  }

  void callExtern(const ir::Binding& b, int index) {
    const ir::GraphValue& v = b.value;
    const std::string& sym = v.callee;
    if (const ir::ExternFunc* decl = m_.findExtern(sym)) return callUserExtern(b, index, *decl);
    // The target's library kernels (blas for the CPU, cublas for cuda):
    // every dense and matmul form (ops/library_kernels.h names them all;
    // the interpreter runs them all).
    std::optional<ops::LibraryKernel> kernel = ops::findLibraryKernel(sym);
    if (!kernel || kernel->library != library_)
      throw Error("unknown extern \"" + sym + "\" (the " + (library_ == "blas" ? "CPU" : "cuda") +
                  " codegen knows " + ops::libraryKernelList(library_) + ")");
    if (!v.attrs.empty())
      throw Error("call_extern \"" + sym + "\": attribute '" + v.attrs.begin()->first + "' is not supported");
    const bool dense = kernel->base == "dense";
    const size_t nargs = kernel->params.size();
    if (v.args.size() != nargs)
      throw Error("call_extern \"" + sym + "\" takes " + std::to_string(nargs) + " operands, not " +
                  std::to_string(v.args.size()));
    std::vector<int> args;
    for (const auto& a : v.args) args.push_back(use(a, index));
    std::vector<int> outs;
    refs_[b.var.get()] = fresh(b.var->name, b.var->type, index, outs);
    if (outs.size() != 1) throw Error("call_extern \"" + sym + "\" has one output, not a tuple");
    args.push_back(outs[0]);
    for (int a : args)
      if (storage_[a].desc.symbolic())
        throw notSupported("in library calls: call_extern \"" + sym + "\" gets %" + storage_[a].desc.name +
                           " of a symbolic shape");
    for (int a : args)
      if (storage_[a].desc.dtype != ir::DType::f32)
        throw Error("call_extern \"" + sym + "\": %" + storage_[a].desc.name + " is " +
                    std::string(ir::dtypeName(storage_[a].desc.dtype)) + "; BLAS kernels take f32");
    auto shape = [&](int k) -> const std::vector<int64_t>& { return storage_[args[k]].desc.shape; };
    auto bad = [&](const std::string& why) {
      std::string ops;
      for (int a : args)
        ops +=
            (ops.empty() ? "" : ", ") + storage_[a].desc.name + "[" + shapeText(storage_[a].desc.shape) + "]";
      return Error("call_extern \"" + sym + "\": " + why + " (" + ops + ")");
    };
    EntryStep s;
    s.what = "%" + b.var->name + " = call_extern \"" + sym + "\"";
    std::string dims;
    if (dense) {
      s.kind = EntryStep::Kind::blas_dense;
      const auto &x = shape(0), &w = shape(1);
      if (x.empty() || w.size() != 2 || w[1] != x.back()) throw bad("expects x[..., K] and w[N, K]");
      s.K = x.back();
      s.N = w[0];
      s.M = numel(x, 0, x.size() - 1);
      dims = shapeText({s.M, s.N, s.K});
    } else {
      s.kind = EntryStep::Kind::blas_matmul;
      std::vector<int64_t> a = shape(0), bb = shape(1);
      if (a.empty() || bb.empty()) throw bad("scalar operands");
      if (a.size() == 1) a.insert(a.begin(), 1);
      if (bb.size() == 1) bb.push_back(1);
      s.K = a.back();
      s.M = a[a.size() - 2];
      s.N = bb.back();
      if (bb[bb.size() - 2] != s.K)
        throw bad("a has K = " + std::to_string(s.K) + " columns but b has " +
                  std::to_string(bb[bb.size() - 2]) + " rows");
      std::vector<int64_t> abatch(a.begin(), a.end() - 2), bbatch(bb.begin(), bb.end() - 2);
      while (!abatch.empty() && abatch.front() == 1) abatch.erase(abatch.begin());
      while (!bbatch.empty() && bbatch.front() == 1) bbatch.erase(bbatch.begin());
      if (bbatch.empty()) {
        s.M *= numel(abatch);  // b shared by every batch: one tall matrix
      } else if (abatch == bbatch) {
        s.B = numel(abatch);
      } else {
        throw bad("broadcast batch dimensions are not supported by the BLAS kernel");
      }
      dims = (s.B > 1 ? std::to_string(s.B) + "x" : "") + shapeText({s.M, s.N, s.K});
    }
    s.bias = kernel->bias;
    s.relu = kernel->relu;
    if (s.bias) {
      const auto& bias = shape(2);
      if (bias.empty() || bias.back() != s.N || numel(bias) != s.N)
        throw bad("the bias must have shape [N] (or [1, ..., N])");
    }
    if (numel(storage_[args.back()].desc.shape) != s.B * s.M * s.N)
      throw bad("the output size does not match");
    double flops = 2.0 * s.B * s.M * s.N * s.K + (s.bias ? s.M * s.N : 0) + (s.relu ? s.M * s.N : 0);
    s.kernel = kernelId(sym + " " + dims, "", flops);
    addStep(std::move(s), args);
  }

  void addStep(EntryStep s, std::vector<int> classes) {
    plan_.steps.push_back(std::move(s));
    step_storage_.push_back(std::move(classes));
  }

  void assignOutputs() {
    std::vector<Ref> ret;
    for (const auto& r : g_.ret) ret.push_back(ref(r));
    std::vector<std::pair<int, int>> copies;  // storage, output
    const auto outs = ir::entryOutputs(g_);
    for (size_t j = 0; j < outs.size(); ++j) {
      const ir::EntryOutput& o = outs[j];
      const Ref* r = g_.ret_is_tuple ? &ret.at(o.path.at(0)) : &ret.at(0);
      for (size_t k = g_.ret_is_tuple ? 1 : 0; k < o.path.size(); ++k) r = &r->fields.at(o.path[k]);
      Storage& s = storage_.at(r->cls);
      TensorDesc d = s.desc;
      d.name = o.name;
      plan_.outputs.push_back(d);
      if (s.kind == Storage::Kind::computed && s.output < 0)
        s.output = static_cast<int>(j);
      else
        copies.emplace_back(r->cls, static_cast<int>(j));
    }
    for (auto [c, j] : copies) {
      EntryStep s;
      s.kind = EntryStep::Kind::copy;
      s.bytes = storage_[c].desc.bytes;
      s.sym_bytes = storage_[c].desc.sym_bytes;
      s.what = "copy %" + storage_[c].desc.name + " to output " + plan_.outputs[j].name;
      addStep(std::move(s), {c, -1 - j});  // -1 - j: output j
    }
  }

  void planWorkspace() {
    std::vector<LiveTensor> live;
    std::vector<int> which;
    for (size_t c = 0; c < storage_.size(); ++c) {
      const Storage& s = storage_[c];
      if (s.kind != Storage::Kind::computed || s.output >= 0) continue;
      live.push_back({s.desc.bytes, s.first, s.last});
      which.push_back(static_cast<int>(c));
      if (s.scratch)
        plan_.scratch_bytes += s.desc.bytes;
      else
        ++plan_.intermediates;
    }
    if (plan_.symbolic()) return planSymbolicWorkspace(which);
    plan_.memory = planMemory(live, 64);
    for (size_t i = 0; i < which.size(); ++i) storage_[which[i]].offset = plan_.memory.offsets[i];
  }

  // The workspace of a model with symbolic dimensions: offsets as
  // expressions of them; `memory` reports the sizes for every dimension 1.
  void planSymbolicWorkspace(const std::vector<int>& which) {
    std::vector<LiveSymbolicTensor> live;
    for (int c : which) live.push_back({bytesExpr(storage_[c].desc), storage_[c].first, storage_[c].last});
    plan_.sym_memory = planSymbolicMemory(live, 64);
    const std::vector<int64_t> ones(plan_.dims.size(), 1);
    plan_.scratch_bytes = 0;
    for (size_t i = 0; i < which.size(); ++i) {
      storage_[which[i]].sym_tensor = static_cast<int>(i);
      if (storage_[which[i]].scratch)
        plan_.scratch_bytes += static_cast<uint64_t>(evalDims(live[i].bytes, plan_.dims, ones));
    }
    plan_.memory = evaluateMemoryPlan(plan_.sym_memory, plan_.dims, ones);
  }

  Location locate(int c) {
    if (c < 0) return {Location::Kind::output, -1 - c, 0, -1};
    Storage& s = storage_[c];
    switch (s.kind) {
      case Storage::Kind::input: return {Location::Kind::input, s.input, 0, -1};
      case Storage::Kind::constant:
        if (s.constant < 0) {
          s.constant = static_cast<int>(plan_.constants.size());
          EntryConstant k;
          k.desc = s.desc;
          k.weight = s.value->is_inline ? "" : s.value->weight;
          k.inline_data = s.value->is_inline ? &s.value->data : nullptr;
          plan_.constants.push_back(std::move(k));
        }
        return {Location::Kind::constant, s.constant, 0, -1};
      case Storage::Kind::computed:
        if (s.output >= 0) return {Location::Kind::output, s.output, 0, -1};
        return {Location::Kind::workspace, 0, s.offset, s.sym_tensor};
    }
    throw Error("unknown storage kind");
  }

  void resolveSteps() {
    for (size_t i = 0; i < plan_.steps.size(); ++i)
      for (int c : step_storage_[i]) plan_.steps[i].args.push_back(locate(c));
  }

  const ir::Module& m_;
  const ir::GraphFunc& g_;
  EntryPlan plan_;
  std::vector<Storage> storage_;
  std::unordered_map<const ir::GraphVarNode*, Ref> refs_;
  std::map<std::string, int> weights_;     // weight name -> storage
  std::map<std::string, int> kernel_ids_;  // kernel name -> id
  std::vector<std::vector<int>> step_storage_;
  const ScratchFn& scratch_;
  const std::string library_;
  std::map<std::string, std::vector<ir::PrimExpr>> scratch_sizes_;  // prim func -> its scratch buffers
};

}  // namespace

EntryPlan planFunction(const ir::PrimFunc& f, const ScratchFn& scratch) {
  auto fail = [&](const std::string& why) { return Error("prim func @" + f.name + ": " + why); };
  auto typeOf = [](const ir::Buffer& p) { return ir::printType(ir::Type::tensor(p->dtype, p->shape)); };
  EntryPlan plan;
  plan.entry = f.name;
  const std::vector<ir::ParamUse> uses = ir::paramUses(f);
  // The symbolic dimensions: the variables that are whole input dimensions.
  std::unordered_map<const ir::VarNode*, ir::PrimExpr> vars;
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (!uses[i].input()) continue;
    for (const auto& d : f.params[i]->shape) {
      int64_t c;
      if (auto* v = d->as<ir::VarNode>()) {
        if (vars.emplace(v, d).second) plan.dims.push_back(v);
      } else if (!ir::asConstInt(d, &c)) {
        throw fail("input %" + f.params[i]->name + " has type " + typeOf(f.params[i]) +
                   "; a function's input dimensions must be constants or symbolic dimensions, not "
                   "expressions");
      }
    }
  }
  // Inputs and outputs; a kernel argument for each parameter.
  EntryStep call;
  call.kind = EntryStep::Kind::kernel;
  call.kernel = 0;
  call.num_params = f.params.size();
  call.what = "call @" + f.name;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const ir::Buffer& p = f.params[i];
    if (const ir::VarNode* unknown = unknownDim(p->shape, plan.dims))
      throw fail("output %" + p->name + " has type " + typeOf(p) + ", but no input has the dimension '" +
                 unknown->name + "'; a function's inputs must give the sizes of its outputs");
    const TensorDesc d = tensorDesc(p->name, p->dtype, p->shape);
    const int in = static_cast<int>(plan.inputs.size()), out = static_cast<int>(plan.outputs.size());
    if (uses[i].input()) plan.inputs.push_back(d);
    if (uses[i].written) plan.outputs.push_back(d);
    call.args.push_back(uses[i].written ? Location{Location::Kind::output, out, 0, -1}
                                        : Location{Location::Kind::input, in, 0, -1});
    if (uses[i].input() && uses[i].written) {  // the output starts as the input
      EntryStep copy;
      copy.kind = EntryStep::Kind::copy;
      copy.args = {{Location::Kind::input, in, 0, -1}, {Location::Kind::output, out, 0, -1}};
      copy.bytes = d.bytes;
      copy.sym_bytes = d.sym_bytes;
      copy.what = "copy input %" + p->name + " to its output";
      plan.steps.push_back(std::move(copy));
    }
  }
  for (const ir::VarNode* v : kernelDims(f)) call.dims.push_back(vars.at(v));
  // The scratch buffers, all live during the call: the workspace.
  std::vector<ir::PrimExpr> scratch_bytes;
  if (scratch)
    for (const auto& b : scratch(f)) scratch_bytes.push_back(ir::simplify(b));
  if (plan.symbolic()) {
    std::vector<LiveSymbolicTensor> live;
    for (const auto& b : scratch_bytes) live.push_back({b, 0, 0});
    plan.sym_memory = planSymbolicMemory(live, 64);
    const std::vector<int64_t> ones(plan.dims.size(), 1);
    plan.memory = evaluateMemoryPlan(plan.sym_memory, plan.dims, ones);
    for (size_t i = 0; i < live.size(); ++i) {
      plan.scratch_bytes += static_cast<uint64_t>(evalDims(live[i].bytes, plan.dims, ones));
      call.args.push_back({Location::Kind::workspace, 0, 0, static_cast<int>(i)});
    }
  } else {
    std::vector<LiveTensor> live;
    for (const auto& b : scratch_bytes) {
      int64_t bytes = 0;
      if (!ir::asConstInt(b, &bytes)) throw fail("scratch buffer of symbolic size " + ir::printExpr(b));
      live.push_back({static_cast<uint64_t>(bytes), 0, 0});
      plan.scratch_bytes += static_cast<uint64_t>(bytes);
    }
    plan.memory = planMemory(live, 64);
    for (uint64_t offset : plan.memory.offsets)
      call.args.push_back({Location::Kind::workspace, 0, offset, -1});
  }
  plan.kernels.push_back({f.name, f.name, static_cast<double>(ir::primFuncFlops(f))});
  plan.steps.push_back(std::move(call));
  return plan;
}

EntryPlan planEntry(const ir::Module& m, const std::string& entry, const ScratchFn& scratch,
                    const std::string& library) {
  std::string name = entry.empty() ? ir::defaultEntry(m) : entry;
  const ir::GraphFunc* g = m.findGraph(name);
  if (!g) {
    if (m.findPrim(name)) throw Error("entry @" + name + " is a prim func; codegen compiles a graph entry");
    throw Error("no graph function @" + name + " in the module");
  }
  return Planner(m, *g, scratch, library).run();
}

}  // namespace mlcc::codegen
