// Module summaries for mlcc-inspect (see summary.h).
#include "mlcc/ir/summary.h"

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mlcc/support/checked_math.h"

namespace mlcc::ir {

namespace {

// Element count of a static tensor type; symbolic dims count as 1.
int64_t elementCount(const Type& t, bool* symbolic) {
  int64_t n = 1;
  for (const auto& d : t.shape) {
    int64_t c;
    if (asConstInt(d, &c))
      n = saturatingMul(n, c);
    else if (symbolic)
      *symbolic = true;
  }
  return n;
}

// Arithmetic operations in a stored value, not counting index arithmetic
// inside buffer loads.
int64_t countValueOps(const PrimExpr& e) {
  if (!e) return 0;
  switch (e->kind) {
    case ExprKind::Binary: {
      const auto* b = e->as<BinaryNode>();
      int64_t self = (b->op == BinaryOp::And || b->op == BinaryOp::Or) ? 0 : 1;
      return self + countValueOps(b->a) + countValueOps(b->b);
    }
    case ExprKind::Unary: return countValueOps(e->as<UnaryNode>()->a);
    case ExprKind::Select: {
      const auto* s = e->as<SelectNode>();
      return countValueOps(s->cond) + countValueOps(s->true_value) + countValueOps(s->false_value);
    }
    case ExprKind::Cast: return countValueOps(e->as<CastNode>()->value);
    case ExprKind::Call: {
      int64_t n = 1;
      for (const auto& a : e->as<CallNode>()->args) n += countValueOps(a);
      return n;
    }
    default: return 0;
  }
}

struct PrimWalker {
  ModuleSummary* summary = nullptr;  // when set, loops and blocks are counted
  bool symbolic = false;

  int64_t walk(const Stmt& s, int64_t trips) {
    if (!s) return 0;
    switch (s->kind) {
      case StmtKind::For: {
        const auto* f = s->as<ForNode>();
        if (summary) summary->loops[loopKindName(f->loop_kind)]++;
        int64_t extent = 1;
        if (!asConstInt(f->extent, &extent)) {
          symbolic = true;
          extent = 1;
        }
        return walk(f->body, saturatingMul(trips, std::max<int64_t>(extent, 0)));
      }
      case StmtKind::Block: {
        const auto* b = s->as<BlockNode>();
        if (summary) summary->blocks++;
        return saturatingAdd(walk(b->init, trips), walk(b->body, trips));
      }
      case StmtKind::Store: return saturatingMul(trips, countValueOps(s->as<StoreNode>()->value));
      case StmtKind::Seq: {
        int64_t n = 0;
        for (const auto& c : s->as<SeqNode>()->stmts) n = saturatingAdd(n, walk(c, trips));
        return n;
      }
      case StmtKind::If: {
        const auto* i = s->as<IfNode>();
        return saturatingAdd(walk(i->then_case, trips), walk(i->else_case, trips));
      }
    }
    return 0;
  }
};

}  // namespace

int64_t primFuncFlops(const PrimFunc& f, bool* symbolic) {
  PrimWalker w;
  int64_t n = w.walk(f.body, 1);
  if (symbolic) *symbolic = *symbolic || w.symbolic;
  return n;
}

ModuleSummary summarizeModule(const Module& m, const OpTypeInfo& op_types) {
  ModuleSummary s;
  for (LoopKind k : {LoopKind::serial, LoopKind::parallel, LoopKind::vectorized, LoopKind::unrolled,
                     LoopKind::thread_binding})
    s.loops[loopKindName(k)] = 0;

  std::map<std::string, int64_t> prim_flops;
  for (const auto& fn : m.functions) {
    if (const auto* p = std::get_if<PrimFunc>(&fn)) {
      s.prim_funcs++;
      s.functions[p->name] = "prim";
      PrimWalker w;
      w.summary = &s;
      prim_flops[p->name] = w.walk(p->body, 1);
      s.flops_symbolic = s.flops_symbolic || w.symbolic;
    }
  }

  std::set<std::string> called;
  for (const auto& fn : m.functions) {
    const auto* g = std::get_if<GraphFunc>(&fn);
    if (!g) continue;
    s.graph_funcs++;
    s.functions[g->name] = "graph";
    for (const auto& block : g->blocks) {
      for (const auto& b : block.bindings) {
        const GraphValue& v = b.value;
        switch (v.kind) {
          case ValueKind::Op: s.graph_ops[v.callee]++; break;
          case ValueKind::CallTir:
            s.graph_ops["call_tir"]++;
            called.insert(v.callee);
            break;
          case ValueKind::CallExtern: s.graph_ops["call_extern"]++; break;
          case ValueKind::CallGraph:
            s.graph_ops["call"]++;
            called.insert(v.callee);
            break;
          case ValueKind::Const:
            if (!v.is_inline) s.weight_tensors++;
            s.params_bytes = saturatingAdd(
                s.params_bytes,
                saturatingMul(elementCount(b.var->type, &s.flops_symbolic), dtypeBytes(b.var->type.dtype)));
            break;
          default: break;
        }
      }
    }
  }
  // FLOPs per call, from the functions nothing calls (the entries).
  std::map<std::string, int64_t> graph_flops;
  std::function<int64_t(const std::string&, int)> flopsOf = [&](const std::string& name,
                                                                int depth) -> int64_t {
    if (auto it = prim_flops.find(name); it != prim_flops.end()) return it->second;
    const GraphFunc* g = m.findGraph(name);
    if (!g || depth > 64) return 0;
    if (auto it = graph_flops.find(name); it != graph_flops.end()) return it->second;
    int64_t total = 0;
    for (const auto& block : g->blocks)
      for (const auto& b : block.bindings) {
        if (b.value.kind == ValueKind::Op) total = saturatingAdd(total, op_types.flops(b));
        if (b.value.kind == ValueKind::CallTir || b.value.kind == ValueKind::CallGraph)
          total = saturatingAdd(total, flopsOf(b.value.callee, depth + 1));
      }
    return graph_flops[name] = total;
  };
  for (const auto& fn : m.functions)
    if (!called.count(functionName(fn))) s.flops = saturatingAdd(s.flops, flopsOf(functionName(fn), 0));
  return s;
}

std::string formatSummaryText(const ModuleSummary& s) {
  std::ostringstream out;
  out << "functions:      " << s.graph_funcs << " graph, " << s.prim_funcs << " prim\n";
  out << "graph ops:     ";
  if (s.graph_ops.empty()) out << " (none)";
  for (const auto& [op, n] : s.graph_ops) out << " " << op << "=" << n;
  out << "\nloops:         ";
  for (const auto& [kind, n] : s.loops) out << " " << kind << "=" << n;
  out << "\nblocks:         " << s.blocks << "\n";
  out << "weights:        " << s.weight_tensors << " tensors, " << s.params_bytes << " bytes of constants\n";
  out << "flops:          " << s.flops << (s.flops_symbolic ? " (symbolic dimensions counted as 1)" : "")
      << "\n";
  return out.str();
}

std::string formatSummaryJson(const ModuleSummary& s) {
  nlohmann::ordered_json j;
  j["graph_funcs"] = s.graph_funcs;
  j["prim_funcs"] = s.prim_funcs;
  j["graph_ops"] = nlohmann::json::object();
  for (const auto& [op, n] : s.graph_ops) j["graph_ops"][op] = n;
  j["loops"] = s.loops;
  j["blocks"] = s.blocks;
  j["params_bytes"] = s.params_bytes;
  j["weight_tensors"] = s.weight_tensors;
  j["flops"] = s.flops;
  j["flops_symbolic"] = s.flops_symbolic;
  j["functions"] = s.functions;
  return j.dump(2) + "\n";
}

}  // namespace mlcc::ir
