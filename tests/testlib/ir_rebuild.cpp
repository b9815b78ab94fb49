// renameAll and mutateOnce (see random_ir.h): one deep-copying rebuilder.
//
// The Rebuilder copies a module node by node. Every Var, Buffer and GraphVar
// is copied once (old node -> new node), so sharing is kept exactly; trace
// random variables are renamed per function. In rename mode each copy gets a
// fresh name. In mutate mode the rebuilder counts "sites" (places where one
// small change is certain to alter the structure) and changes the one whose
// number is `target`: a first run with no target counts them.
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "mlcc/ir/expr_functor.h"
#include "mlcc/ir/float_bits.h"
#include "mlcc/ir/intrinsics.h"
#include "random_ir.h"

namespace mlcc::test {

using namespace mlcc::ir;

namespace {

// The next member of `op`'s family (same operand and result dtypes).
BinaryOp siblingOp(BinaryOp op) {
  static const std::vector<std::vector<BinaryOp>> families = {
      {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Min, BinaryOp::Max},
      {BinaryOp::Div, BinaryOp::Mod},
      {BinaryOp::EQ, BinaryOp::NE, BinaryOp::LT, BinaryOp::LE, BinaryOp::GT, BinaryOp::GE},
      {BinaryOp::And, BinaryOp::Or}};
  for (const auto& f : families)
    for (size_t k = 0; k < f.size(); ++k)
      if (f[k] == op) return f[(k + 1) % f.size()];
  return op;
}

// Another intrinsic with the same arity and dtype rules.
std::string siblingIntrinsic(const std::string& name) {
  const IntrinsicInfo* info = findIntrinsic(name);
  auto all = allIntrinsics();
  for (size_t k = 1; k <= all.size(); ++k) {
    const IntrinsicInfo& other = all[(static_cast<size_t>(info - all.data()) + k) % all.size()];
    if (other.name != name && other.arity == info->arity && other.result == info->result &&
        other.args == info->args)
      return std::string(other.name);
  }
  return name;
}

int64_t changedInt(int64_t v, DType t) {
  if (t == DType::boolean) return 1 - v;
  int64_t max = t == DType::i8 ? 127 : t == DType::i32 ? 2147483647 : INT64_MAX;
  return v == max ? v - 1 : v + 1;
}

double changedFloat(double v) {
  if (std::isnan(v) || std::isinf(v)) return 0.0;
  double w = v + 1.0;
  return w == v ? v * 0.5 : w;
}

// A different value of float dtype `t`: makeFloat rounds to the dtype, where
// v + 1 may round back to v (1024 in bf16, -1e10 in f32).
double changedFloat(double v, DType t) {
  double w = changedFloat(v);
  return detail::roundToDType(w, t) == v ? v * 0.5 : w;
}

class Rebuilder {
 public:
  // target < 0: no mutation (only count sites).
  Rebuilder(bool rename, uint64_t seed, int64_t target)
      : rename_(rename), prefix_("r" + std::to_string(seed % 997) + "_"), target_(target) {}

  int64_t sites() const { return sites_; }

  Module module(const Module& m) {
    Module out;
    out.base_dir = m.base_dir;
    for (const auto& w : m.weight_files) out.weight_files.push_back(hit() ? w + ".m" : w);
    for (const auto& f : m.functions) {
      trace_names_.clear();
      std::visit([&](const auto& fn) { out.functions.push_back(function(fn)); }, f);
    }
    return out;
  }

 private:
  // Whether the current site is the one to mutate.
  bool hit() { return sites_++ == target_; }

  std::string freshName(const std::string& old) {
    if (!rename_) return old;
    std::string name = prefix_ + std::to_string(next_name_++);
    return name == old ? name + "_" : name;
  }

  // ---- variables ------------------------------------------------------------
  Var var(const Var& v) {
    auto [it, fresh] = vars_.try_emplace(v.get(), nullptr);
    if (fresh) it->second = makeVar(freshName(v->name), v->dtype);
    return it->second;
  }
  Buffer buffer(const Buffer& b, bool may_change_scope = false) {
    auto it = buffers_.find(b.get());
    if (it != buffers_.end()) return it->second;
    StorageScope scope = b->scope;
    if (may_change_scope && hit()) scope = static_cast<StorageScope>((static_cast<int>(scope) + 1) % 3);
    Buffer copy = makeBuffer(freshName(b->name), b->dtype, exprs(b->shape), scope);
    return buffers_[b.get()] = copy;
  }
  std::vector<Buffer> buffers(const std::vector<Buffer>& bs, bool may_change_scope) {
    std::vector<Buffer> out;
    for (const auto& b : bs) out.push_back(buffer(b, may_change_scope));
    return out;
  }
  GraphVar graphVar(const GraphVar& v) {
    auto it = graph_vars_.find(v.get());
    if (it != graph_vars_.end()) return it->second;
    GraphVar copy = makeGraphVar(freshName(v->name), type(v->type));
    return graph_vars_[v.get()] = copy;
  }
  std::vector<GraphVar> graphVars(const std::vector<GraphVar>& vs) {
    std::vector<GraphVar> out;
    for (const auto& v : vs) out.push_back(graphVar(v));
    return out;
  }
  std::string traceName(const std::string& name) {
    auto [it, fresh] = trace_names_.try_emplace(name);
    if (fresh) it->second = freshName(name);
    return it->second;
  }

  // ---- expressions ------------------------------------------------------------
  std::vector<PrimExpr> exprs(const std::vector<PrimExpr>& es) {
    std::vector<PrimExpr> out;
    for (const auto& e : es) out.push_back(expr(e));
    return out;
  }

  PrimExpr expr(const PrimExpr& e) {
    if (!e) return nullptr;
    switch (e->kind) {
      case ExprKind::IntImm: {
        int64_t v = e->as<IntImmNode>()->value;
        return makeInt(hit() ? changedInt(v, e->dtype) : v, e->dtype);
      }
      case ExprKind::FloatImm: {
        double v = e->as<FloatImmNode>()->value;
        return makeFloat(hit() ? changedFloat(v, e->dtype) : v, e->dtype);
      }
      case ExprKind::Var: return var(std::static_pointer_cast<const VarNode>(e));
      case ExprKind::Binary: {
        const auto* b = e->as<BinaryNode>();
        PrimExpr x = expr(b->a), y = expr(b->b);
        BinaryOp op = hit() ? siblingOp(b->op) : b->op;
        bool swappable = op != BinaryOp::Div && op != BinaryOp::Mod && !sameExpr(b->a, b->b);
        if (swappable && hit()) std::swap(x, y);
        return makeBinary(op, x, y);
      }
      case ExprKind::Unary: {
        const auto* u = e->as<UnaryNode>();
        PrimExpr x = expr(u->a);
        return hit() ? x : makeUnary(u->op, x);  // -x -> x, !x -> x
      }
      case ExprKind::Select: {
        const auto* s = e->as<SelectNode>();
        PrimExpr c = expr(s->cond), t = expr(s->true_value), f = expr(s->false_value);
        if (!sameExpr(s->true_value, s->false_value) && hit()) std::swap(t, f);
        return makeSelect(c, t, f);
      }
      case ExprKind::Cast: return makeCast(e->dtype, expr(e->as<CastNode>()->value));
      case ExprKind::Load: {
        const auto* l = e->as<LoadNode>();
        return makeLoad(buffer(l->buffer), exprs(l->indices));
      }
      case ExprKind::Call: {
        const auto* c = e->as<CallNode>();
        std::string name = c->name;
        if (siblingIntrinsic(name) != name && hit()) name = siblingIntrinsic(name);
        return makeCall(name, exprs(c->args));
      }
    }
    return nullptr;
  }

  // ---- attributes, types, traces ------------------------------------------------
  AttrValue attrValue(const AttrValue& a) {
    AttrValue out;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>)
            out.v = hit() ? !x : x;
          else if constexpr (std::is_same_v<T, int64_t>)
            out.v = hit() ? changedInt(x, DType::i64) : x;
          else if constexpr (std::is_same_v<T, double>)
            out.v = hit() ? changedFloat(x) : x;
          else if constexpr (std::is_same_v<T, std::string>)
            out.v = hit() ? x + "_m" : x;
          else if constexpr (std::is_same_v<T, PrimExpr>)
            out.v = expr(x);
          else if constexpr (std::is_same_v<T, TraceRef>)
            out.v = TraceRef{traceName(x.name)};
          else {
            AttrValue::List list;
            for (const auto& item : x) list.push_back(attrValue(item));
            if (hit()) list.push_back(AttrValue(int64_t{7}));
            out.v = std::move(list);
          }
        },
        a.v);
    return out;
  }
  Attrs attrs(const Attrs& as) {
    Attrs out;
    for (const auto& [key, value] : as) out[key] = attrValue(value);
    return out;
  }

  Type type(const Type& t) {
    if (t.isTensor()) return Type::tensor(t.dtype, exprs(t.shape));
    std::vector<Type> fields;
    for (const auto& f : t.fields) fields.push_back(type(f));
    return Type::tuple(std::move(fields));
  }

  Trace trace(const Trace& t) {
    Trace out;
    for (const auto& inst : t.insts) {
      TraceInst copy;
      copy.name = inst.name;
      for (const auto& in : inst.inputs) copy.inputs.push_back(attrValue(in));
      copy.attrs = attrs(inst.attrs);
      for (const auto& o : inst.outputs) copy.outputs.push_back(traceName(o));
      if (inst.decision) copy.decision = attrValue(*inst.decision);
      out.insts.push_back(std::move(copy));
    }
    return out;
  }

  // ---- TensorIR ------------------------------------------------------------------
  std::vector<BufferRegion> regions(const std::vector<BufferRegion>& rs) {
    std::vector<BufferRegion> out;
    for (const auto& r : rs) {
      BufferRegion copy{buffer(r.buffer), {}};
      for (const auto& range : r.region) copy.region.push_back(Range{expr(range.min), expr(range.extent)});
      out.push_back(std::move(copy));
    }
    return out;
  }

  Stmt stmt(const Stmt& s) {
    if (!s) return nullptr;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        PrimExpr extent = expr(f->extent);
        Var v = var(f->loop_var);
        LoopKind kind = f->loop_kind;
        std::string tag = f->thread_tag;
        if (hit()) {
          kind = static_cast<LoopKind>((static_cast<int>(kind) + 1) % 5);
          tag = kind == LoopKind::thread_binding ? "threadIdx.x" : "";
        } else if (kind == LoopKind::thread_binding && hit()) {
          tag = tag == "vthread" ? "blockIdx.x" : "vthread";
        }
        Attrs a = attrs(f->attrs);
        return makeFor(v, extent, stmt(f->body), kind, tag, a);
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        std::string name = hit() ? b->name + "_m" : b->name;
        std::vector<IterVar> ivs;
        for (const auto& iv : b->iter_vars) {
          IterKind kind = hit() ? static_cast<IterKind>((static_cast<int>(iv.kind) + 1) % 3) : iv.kind;
          ivs.push_back(IterVar{var(iv.var), expr(iv.extent), kind, expr(iv.binding)});
        }
        std::vector<Buffer> allocs = buffers(b->alloc_buffers, true);
        PrimExpr predicate = expr(b->predicate);
        auto reads = regions(b->reads);
        auto writes = regions(b->writes);
        Attrs a = attrs(b->attrs);
        Stmt init = stmt(b->init);
        return makeBlock(name, std::move(ivs), std::move(reads), std::move(writes), stmt(b->body), init,
                         predicate, std::move(allocs), std::move(a));
      }
      case StmtKind::Store: {
        const auto* st = s->as<StoreNode>();
        Buffer buf = buffer(st->buffer);
        auto indices = exprs(st->indices);
        return makeStore(buf, std::move(indices), expr(st->value));
      }
      case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (const auto& x : s->as<SeqNode>()->stmts) out.push_back(stmt(x));
        return std::make_shared<SeqNode>(std::move(out));  // kept as a Seq even with one statement
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        PrimExpr cond = expr(i->cond);
        Stmt then_case = stmt(i->then_case);
        Stmt else_case = stmt(i->else_case);
        if (else_case && hit()) else_case = nullptr;
        return makeIf(cond, then_case, else_case);
      }
    }
    return nullptr;
  }

  Function function(const PrimFunc& f) {
    PrimFunc out;
    out.name = f.name;
    out.params = buffers(f.params, false);
    out.allocs = buffers(f.allocs, true);
    out.attrs = attrs(f.attrs);
    out.trace = trace(f.trace);
    out.body = stmt(f.body);
    return out;
  }

  // ---- graph level ------------------------------------------------------------------
  GraphValue value(const GraphValue& v) {
    GraphValue out = v;
    out.args = graphVars(v.args);
    out.attrs = attrs(v.attrs);
    switch (v.kind) {
      case ValueKind::Const:
        if (!v.is_inline && hit()) out.weight += ".m";
        if (v.is_inline && !v.data.empty() && hit()) out.data[0] ^= 1;
        break;
      case ValueKind::Op:
      case ValueKind::CallExtern:
        if (hit()) out.callee += "_m";
        break;
      default: break;
    }
    return out;
  }

  Function function(const GraphFunc& f) {
    GraphFunc out;
    out.name = f.name;
    out.params = graphVars(f.params);
    out.ret_type = type(f.ret_type);
    out.attrs = attrs(f.attrs);
    for (const auto& block : f.blocks) {
      BindingBlock copy;
      copy.dataflow = hit() ? !block.dataflow : block.dataflow;
      for (const auto& b : block.bindings) {
        GraphValue v = value(b.value);
        copy.bindings.push_back({graphVar(b.var), std::move(v)});
      }
      out.blocks.push_back(std::move(copy));
    }
    out.ret = graphVars(f.ret);
    out.ret_is_tuple = f.ret_is_tuple;
    return out;
  }

  bool rename_;
  std::string prefix_;
  int64_t target_;
  int64_t sites_ = 0;
  int next_name_ = 0;
  std::unordered_map<const VarNode*, Var> vars_;
  std::unordered_map<const BufferNode*, Buffer> buffers_;
  std::unordered_map<const GraphVarNode*, GraphVar> graph_vars_;
  std::unordered_map<std::string, std::string> trace_names_;  // per function
};

}  // namespace

Module renameAll(const Module& m, uint64_t seed) { return Rebuilder(true, seed, -1).module(m); }

Module mutateOnce(const Module& m, uint64_t seed) {
  Rebuilder counter(false, seed, -1);
  counter.module(m);
  if (counter.sites() == 0) return Rebuilder(false, seed, -1).module(m);
  std::mt19937_64 rng(seed);
  return Rebuilder(false, seed, static_cast<int64_t>(rng() % static_cast<uint64_t>(counter.sites())))
      .module(m);
}

}  // namespace mlcc::test
