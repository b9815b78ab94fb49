// FuseTIR: merges the ops of a primitive graph sub-function (a fused group,
// attribute `primitive = true`) into one prim func, as TVM's FuseTIR does.
//
// Each op binding is legalized on its own (ops::legalizeOp, for the operand
// types the group declares); their bodies are then concatenated in binding
// order into one function whose parameters are the group's parameters
// followed by its outputs (the returned values; a tuple return gives one
// output per field). The buffers of each op's prim func are substituted by
// the group's buffers: operands by the buffer of the argument, results by an
// output buffer when the value is returned and otherwise by a new
// function-level alloc_buffer named after the graph variable; the op's own
// intermediates stay function-level allocs. Symbolic dimensions of an op's
// buffers are unified with the dimensions of the group's buffers they are
// bound to (so `n` of one op and `n` of the next become the group's `n`).
// Block and buffer names are made unique within the function.
//
// A member may also be a call_tir of a prim func of the module (a kernel a
// user wrote, MLC 7.5): its body is merged like an op's compute definition
// (its parameters are inputs then outputs, as call_tir passes them). It must
// be unscheduled (no trace): the merged function is scheduled as a whole.
//
// Assumes the group holds only op calls, call_tir, aliases, tuples and tuple
// items (constants are passed in as arguments by fusion); a returned value
// that no op of the group writes (a parameter returned as is, or a value
// returned twice) is copied into its output.
#include "fuse_tir.h"

#include <map>
#include <set>
#include <unordered_map>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/substitute.h"
#include "mlcc/ir/te.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"

namespace mlcc::transform {

namespace {

class UniqueNames {
 public:
  std::string operator()(const std::string& base) {
    std::string name = base.empty() ? "t" : base;
    if (used_.insert(name).second) return name;
    for (int i = 1;; ++i) {
      std::string candidate = name + "_" + std::to_string(i);
      if (used_.insert(candidate).second) return candidate;
    }
  }

 private:
  std::set<std::string> used_;
};

std::vector<ir::Type> tensorFields(const ir::Type& t) {
  if (t.isTensor()) return {t};
  std::vector<ir::Type> out;
  for (const auto& f : t.fields) {
    if (!f.isTensor()) throw Error("nested tuple " + ir::printType(t) + " is not supported");
    out.push_back(f);
  }
  return out;
}

class Fuser {
 public:
  Fuser(const ir::GraphFunc& g, const ir::Module& m, const PassContext& ctx) : g_(g), m_(m), ctx_(ctx) {}

  ir::PrimFunc run() {
    ir::PrimFunc f;
    f.name = fusedName(g_);
    for (const auto& p : g_.params) {
      if (!p->type.isTensor())
        throw Error("parameter %" + p->name + " is a tuple; FuseTIR takes tensor parameters only");
      ir::Buffer b = newBuffer(p->name, p->type);
      f.params.push_back(b);
      bufs_[p.get()] = {b};
    }
    // Outputs, and which graph variable (first return position) writes each.
    std::vector<std::pair<const ir::GraphVarNode*, size_t>> out_src;
    for (const auto& r : g_.ret) {
      auto fields = tensorFields(r->type);
      for (size_t i = 0; i < fields.size(); ++i) {
        std::string base = fields.size() == 1 ? r->name : r->name + "_" + std::to_string(i);
        ir::Buffer b = newBuffer(base, fields[i]);
        outputs_.push_back(b);
        out_src.emplace_back(r.get(), i);
        auto& slot = ret_out_[r.get()];
        if (slot.empty()) slot.assign(fields.size(), nullptr);
        if (!slot[i]) slot[i] = b;
      }
    }
    for (const auto& block : g_.blocks)
      for (const auto& b : block.bindings) {
        try {
          bind(b);
        } catch (const Error& e) {
          throw ctx_.errorAt(b.var.get(), "in primitive function @" + g_.name + ", binding %" + b.var->name +
                                              ": " + e.message());
        }
      }
    // Outputs no op wrote: copy them.
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const auto& [var, field] = out_src[k];
      const ir::Buffer& src = bufs_.at(var).at(field);
      if (src != outputs_[k]) copy(src, outputs_[k]);
    }
    for (const auto& o : outputs_) f.params.push_back(o);
    f.allocs = allocs_;
    f.body = ir::makeSeq(body_);
    return f;
  }

 private:
  ir::Buffer newBuffer(const std::string& base, const ir::Type& t) {
    return ir::makeBuffer(buffer_names_(base), t.dtype, t.shape);
  }

  void bind(const ir::Binding& b) {
    const ir::GraphValue& v = b.value;
    const ir::GraphVarNode* var = b.var.get();
    switch (v.kind) {
      case ir::ValueKind::Alias: bufs_[var] = bufs_.at(v.args.at(0).get()); return;
      case ir::ValueKind::TupleGet: bufs_[var] = {bufs_.at(v.args.at(0).get()).at(v.index)}; return;
      case ir::ValueKind::Tuple: {
        auto& out = bufs_[var];
        for (const auto& a : v.args) {
          const auto& fb = bufs_.at(a.get());
          if (fb.size() != 1) throw Error("nested tuples are not supported");
          out.push_back(fb[0]);
        }
        return;
      }
      case ir::ValueKind::Op:
      case ir::ValueKind::CallTir: break;
      default:
        throw Error(std::string(ir::valueKindName(v.kind)) +
                    " in a primitive function is not supported (fusion passes constants as arguments)");
    }
    std::vector<ir::Type> types;
    std::vector<ir::Buffer> operands;
    for (const auto& a : v.args) {
      if (!a->type.isTensor()) throw Error("operand %" + a->name + " is a tuple");
      types.push_back(a->type);
      operands.push_back(bufs_.at(a.get()).at(0));
    }
    ir::PrimFunc op =
        v.kind == ir::ValueKind::Op ? ops::legalizeOp(v.callee, types, v.attrs, v.callee) : calledPrimFunc(v);
    // The result buffers: outputs when returned, else intermediates.
    auto fields = tensorFields(b.var->type);
    std::vector<ir::Buffer> results;
    auto ret = ret_out_.find(var);
    for (size_t i = 0; i < fields.size(); ++i) {
      if (ret != ret_out_.end() && ret->second.at(i)) {
        results.push_back(ret->second[i]);
      } else {
        std::string base = fields.size() == 1 ? b.var->name : b.var->name + "_" + std::to_string(i);
        results.push_back(newBuffer(base, fields[i]));
        allocs_.push_back(results.back());
      }
    }
    bufs_[var] = results;
    for (const auto& r : results) operands.push_back(r);
    merge(op, operands);
  }

  // The prim func a call_tir member calls.
  ir::PrimFunc calledPrimFunc(const ir::GraphValue& v) const {
    const ir::PrimFunc* f = m_.findPrim(v.callee);
    if (!f) throw Error("call_tir of @" + v.callee + ", which is no prim func of the module");
    if (!v.attrs.empty()) throw Error("call_tir @" + v.callee + " with attributes cannot be fused");
    if (!f->trace.insts.empty())
      throw Error(
          "call_tir @" + v.callee +
          " calls a scheduled prim func; FuseTIR merges unscheduled ones (schedule the fused function)");
    return *f;
  }

  // Appends `op`'s body with its params bound to `targets`.
  void merge(const ir::PrimFunc& op, const std::vector<ir::Buffer>& targets) {
    if (op.params.size() != targets.size())
      throw Error("the compute definition of '" + op.name + "' has " + std::to_string(op.params.size()) +
                  " parameter(s), expected " + std::to_string(targets.size()));
    ir::Substituter sub;
    for (size_t i = 0; i < targets.size(); ++i) {
      const ir::Buffer& from = op.params[i];
      const ir::Buffer& to = targets[i];
      if (from->shape.size() != to->shape.size() || from->dtype != to->dtype)
        throw Error("the compute definition of '" + op.name + "': parameter %" + from->name +
                    " does not match the group's buffer %" + to->name);
      for (size_t d = 0; d < from->shape.size(); ++d) {
        const auto* v = from->shape[d]->as<ir::VarNode>();
        if (v && from->shape[d] != to->shape[d] &&
            !sub.hasVar(std::static_pointer_cast<const ir::VarNode>(from->shape[d])))
          sub.mapVar(std::static_pointer_cast<const ir::VarNode>(from->shape[d]), to->shape[d]);
      }
      sub.mapBuffer(from, to);
    }
    for (const auto& a : op.allocs) {
      std::vector<ir::PrimExpr> shape;
      for (const auto& d : a->shape) shape.push_back(sub(d));
      ir::Buffer nb = ir::makeBuffer(buffer_names_(a->name), a->dtype, std::move(shape), a->scope);
      sub.mapBuffer(a, nb);
      allocs_.push_back(nb);
    }
    sub.rename_block = [this](const std::string& n) { return block_names_(n); };
    body_.push_back(sub(op.body));
  }

  void copy(const ir::Buffer& src, const ir::Buffer& dst) {
    ir::te::FuncBuilder fb("copy");
    ir::Buffer in = fb.input("x", ir::Type::tensor(src->dtype, src->shape));
    ir::Buffer out = fb.compute("copy", dst->shape, dst->dtype, [&](const ir::te::Indices& i) {
      return ir::makeLoad(in, std::vector<ir::PrimExpr>(i.begin(), i.end()));
    });
    merge(fb.build({out}), {src, dst});
  }

  const ir::GraphFunc& g_;
  const ir::Module& m_;
  const PassContext& ctx_;
  UniqueNames buffer_names_, block_names_;
  std::unordered_map<const ir::GraphVarNode*, std::vector<ir::Buffer>> bufs_;
  std::unordered_map<const ir::GraphVarNode*, std::vector<ir::Buffer>> ret_out_;
  std::vector<ir::Buffer> outputs_, allocs_;
  std::vector<ir::Stmt> body_;
};

}  // namespace

std::string fusedName(const ir::GraphFunc& group) {
  std::string name = "fused";
  for (const auto& block : group.blocks)
    for (const auto& b : block.bindings)
      if (b.value.kind == ir::ValueKind::Op || b.value.kind == ir::ValueKind::CallTir) {
        if (name.size() + 1 + b.value.callee.size() > 80) return name;
        name += "_" + b.value.callee;
      }
  return name;
}

ir::PrimFunc fuseTir(const ir::GraphFunc& group, const ir::Module& m, const PassContext& ctx) {
  return Fuser(group, m, ctx).run();
}

}  // namespace mlcc::transform
