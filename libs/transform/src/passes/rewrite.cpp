// rewrite: replaces op DAGs with other ops, as the rewrite rules of a
// pattern file declare (`rewrites:`, pattern.h,
// artifacts_schema/patterns.schema.json), to a fixed point: MLC's
// PyExprMutator rewrites written as data (pipelines/patterns/rewrites.yaml:
// multiply + add -> ewise_fma, matmul(x, permute_dims(w)) -> dense(x, w)).
//
// In each dataflow block of each graph function (not primitive ones), each
// binding in order is tried as the root of each rule, in file order. On a
// match the replace ops become new bindings right before the root (their
// types inferred), and the root's value becomes the last one's: the root
// keeps its variable, so every use of it sees the new value. Matched ops left
// without uses stay for dead-code-elimination. A match whose replacement
// does not type-check, or whose type is not the root's, is left alone (-v
// counts them, with the first reason). Rules apply again to the result until
// none matches; more than kMaxRewrites rewrites in one function is an error
// naming the last rule (a set that never settles, such as a rule and its
// inverse).
//
// The file comes from the option `patterns`, else PassContext::patterns_path
// (--patterns).
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "../outline.h"
#include "../pattern.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

constexpr int kMaxRewrites = 100000;

struct Stats {
  std::map<std::string, int> applied;  // per rule
  int refused = 0;
  std::string first_refusal;
};

// The bindings that compute rule `r`'s replacement of the match `at` (with
// `wildcards`), the last one rebound to `root`'s variable; nullopt (and
// `why`) when they do not type-check or give another type than the root's.
std::optional<std::vector<ir::Binding>> replacement(const Rewrite& r, const ir::BindingBlock& block,
                                                    const std::vector<size_t>& at,
                                                    const std::map<std::string, ir::GraphVar>& wildcards,
                                                    const ir::Binding& root, std::string& why) {
  std::vector<ir::Binding> out;
  for (size_t i = 0; i < r.replace.size(); ++i) {
    const RewriteOp& op = r.replace[i];
    ir::Binding b;
    b.value.kind = ir::ValueKind::Op;
    b.value.callee = op.op;
    b.value.attrs = op.attrs;
    std::vector<ir::Type> types;
    for (const RewriteArg& a : op.args) {
      ir::GraphVar v = a.replace >= 0 ? out[static_cast<size_t>(a.replace)].var
                       : a.match >= 0 ? block.bindings[at[static_cast<size_t>(a.match)]].var
                                      : wildcards.at(a.wildcard);
      types.push_back(v->type);
      b.value.args.push_back(std::move(v));
    }
    ir::Type type;
    try {
      type = ops::inferOpType(op.op, types, op.attrs);
    } catch (const Error& e) {
      why = e.message();
      return std::nullopt;
    }
    const bool last = i + 1 == r.replace.size();
    if (last && ir::printType(type) != ir::printType(root.var->type)) {
      why = "it gives " + ir::printType(type) + ", not " + ir::printType(root.var->type);
      return std::nullopt;
    }
    b.var = last ? root.var : ir::makeGraphVar(root.var->name + "_" + op.op, type);
    out.push_back(std::move(b));
  }
  return out;
}

// Applies the first rule that matches at a binding of `block` from `from` on
// (the root's position moves past its new bindings), and returns the rule
// with the position of the first binding it added or changed: the next
// match cannot root earlier, since nothing before it changed. Null when no
// rule matched. Matches refused for their types are remembered in `refused`
// (by root and rule) and not tried again.
const Rewrite* rewriteOnce(const std::vector<Rewrite>& rules, ir::BindingBlock& block, size_t& from,
                           Stats& stats, std::set<std::pair<const ir::GraphVarNode*, size_t>>& refused) {
  for (size_t root = from; root < block.bindings.size(); ++root)
    for (size_t k = 0; k < rules.size(); ++k) {
      const ir::GraphVarNode* key = block.bindings[root].var.get();
      if (refused.count({key, k})) continue;
      std::map<std::string, ir::GraphVar> wildcards;
      auto at = matchPattern(rules[k].match, block, root, {}, &wildcards);
      if (!at) continue;
      std::string why;
      auto bindings = replacement(rules[k], block, *at, wildcards, block.bindings[root], why);
      if (!bindings) {
        refused.insert({key, k});
        if (stats.refused++ == 0)
          stats.first_refusal = "%" + block.bindings[root].var->name + " (" + rules[k].name + "): " + why;
        continue;
      }
      block.bindings[root] = std::move(bindings->back());
      bindings->pop_back();
      block.bindings.insert(block.bindings.begin() + static_cast<std::ptrdiff_t>(root),
                            std::make_move_iterator(bindings->begin()),
                            std::make_move_iterator(bindings->end()));
      ++stats.applied[rules[k].name];
      from = root;
      return &rules[k];
    }
  return nullptr;
}

}  // namespace

PassInfo makeRewritePass() {
  PassInfo p;
  p.name = "rewrite";
  p.summary = "Replace op patterns with other ops, by the rewrite rules of a YAML file, to a fixed point";
  p.options = {{"patterns", OptionKind::String, "", "pattern file with rewrites (default: --patterns)"}};
  p.run = [](ir::Module& m, const PassOptions& opts, PassContext& ctx) -> std::string {
    const std::vector<Rewrite> rules = passPatternFile(opts, ctx).rewrites;
    Stats stats;
    for (auto& fn : m.functions) {
      auto* g = std::get_if<ir::GraphFunc>(&fn);
      if (!g || isPrimitive(*g)) continue;
      int count = 0;
      for (auto& block : g->blocks) {
        if (!block.dataflow) continue;
        std::set<std::pair<const ir::GraphVarNode*, size_t>> refused;
        size_t from = 0;
        while (const Rewrite* applied = rewriteOnce(rules, block, from, stats, refused))
          if (++count > kMaxRewrites)
            throw Error("graph @" + g->name + ": the rewrite rules do not settle: more than " +
                        std::to_string(kMaxRewrites) + " rewrites, the last by rule '" + applied->name + "'");
      }
    }
    std::string summary;
    for (const auto& [name, n] : stats.applied)
      summary += (summary.empty() ? "rewrote " : ", ") + std::to_string(n) + " x " + name;
    if (stats.refused)
      summary += (summary.empty() ? "" : "; ") + std::to_string(stats.refused) +
                 " match(es) left alone, the replacement does not fit (first: " + stats.first_refusal + ")";
    return summary;
  };
  return p;
}

}  // namespace mlcc::transform
