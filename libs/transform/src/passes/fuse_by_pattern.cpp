// fuse-by-pattern: outlines the op DAGs declared in a pattern file (YAML,
// pattern.h, artifacts_schema/patterns.schema.json) into primitive
// sub-functions for library dispatch, as TVM's FuseOpsByPattern:
//
//   graph @fused_dense_add_relu(%x, %w, %b) -> T
//       attrs(codegen = "blas.dense_bias_relu", pattern = "dense_bias_relu", primitive = true)
//
// called from the graph (`%v = call @fused_dense_add_relu(%x, %w, %b)`);
// legalize turns codegen-marked functions into call_extern of that kernel.
// Parameters are the matched inputs in order of first use (constants
// included; their bindings stay in the caller). Without `codegen` the
// function has only primitive and pattern.
//
// The file comes from the option `patterns`, else PassContext::patterns_path
// (--patterns); neither is an error. Patterns are tried in file order (put
// larger patterns first); each is tried at every binding of each dataflow
// block, in order, as its root (the pattern's last op). A binding matched
// once is not matched again, and the values of a match's non-root ops must
// be used only inside the match (otherwise they would be computed twice).
// Functions with `primitive = true` are skipped. A match of a pattern with
// `codegen` whose operands do not fit the kernel (ops/library_kernels.h: a
// non-f32 dtype, a bias that is no vector along N, ...) is left undispatched
// (fuse-ops groups it as usual); -v counts them.
//
// A pattern may dispatch to a user library function declared under the
// file's `externs` (pattern.h): its wildcards are the extern's operands by
// name and become the group's parameters in the extern's order; a match
// dispatches when their types fit the declaration and give the root's type,
// and the declaration is copied into the module (`extern "NAME"(...)`).
//
// In a pipeline, fuse-by-pattern runs before fuse-ops: fuse-ops treats the
// calls it makes as opaque and never looks inside primitive functions, so
// the remaining ops are grouped around them.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "../outline.h"
#include "../pattern.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ops/library_kernels.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

// Why a match of `p` cannot dispatch to its library kernel (its operands'
// types do not fit the kernel), or empty: the pattern file's check
// (pattern.cpp) already refused patterns whose ops are not the kernel's.
std::string kernelMismatch(const Pattern& p, const ir::BindingBlock& block,
                           const std::vector<size_t>& members) {
  if (p.codegen.empty()) return {};
  std::optional<ops::LibraryKernel> kernel = ops::findLibraryKernel(p.codegen);
  if (!kernel) return "no library kernel '" + p.codegen + "'";
  std::vector<const ir::Binding*> body;
  for (size_t i : members) body.push_back(&block.bindings[i]);
  return ops::bindLibraryKernel(*kernel, body).mismatch;
}

// Why a match of `p` cannot call user extern `e` (empty: it can), and its
// operands in the extern's parameter order.
std::string externMismatch(const ir::ExternFunc& e, const ir::Binding& root,
                           const std::map<std::string, ir::GraphVar>& wildcards,
                           std::vector<ir::GraphVar>& operands) {
  std::vector<ir::Type> types;
  for (const auto& param : e.params) {
    const ir::GraphVar& v = wildcards.at(param->name);
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i] == v)
        return "its operands " + e.params[i]->name + " and " + param->name + " are one value, %" + v->name;
    operands.push_back(v);
    types.push_back(v->type);
  }
  std::string why;
  std::optional<ir::Type> result = ir::externCallType(e, types, &why);
  if (!result) return why;
  if (ir::printType(*result) != ir::printType(root.var->type))
    return "\"" + e.name + "\" gives " + ir::printType(*result) + ", the group's result is " +
           ir::printType(root.var->type);
  return {};
}

std::vector<OutlineGroup> findMatches(const PatternFile& file, const ir::BindingBlock& block, size_t bi,
                                      const UseInfo& uses, std::vector<std::string>& skipped,
                                      std::set<std::string>& dispatched_externs) {
  std::unordered_set<size_t> taken;
  std::vector<OutlineGroup> list;
  for (const auto& p : file.patterns) {
    const ir::ExternFunc* user_extern = ir::findExtern(file.externs, p.codegen);
    for (size_t r = 0; r < block.bindings.size(); ++r) {
      std::map<std::string, ir::GraphVar> wildcards;
      auto m = matchPattern(p, block, r, taken, &wildcards);
      if (!m) continue;
      std::unordered_set<size_t> members(m->begin(), m->end());
      bool closed = true;
      for (size_t i : members) {
        if (i == r) continue;
        const auto* v = block.bindings[i].var.get();
        if (uses.returned.count(v)) closed = false;
        if (auto it = uses.uses.find(v); it != uses.uses.end())
          for (const auto& u : it->second)
            if (u.block != bi || !members.count(u.index)) closed = false;
      }
      if (!closed) continue;
      OutlineGroup g;
      g.members.assign(members.begin(), members.end());
      std::sort(g.members.begin(), g.members.end());
      std::string why = user_extern ? externMismatch(*user_extern, block.bindings[r], wildcards, g.params)
                                    : kernelMismatch(p, block, g.members);
      if (!why.empty()) {
        skipped.push_back("%" + block.bindings[r].var->name + " (" + p.name + "): " + why);
        continue;
      }
      if (user_extern) dispatched_externs.insert(user_extern->name);
      g.attrs["primitive"] = ir::AttrValue(true);
      g.attrs["pattern"] = ir::AttrValue(p.name);
      if (!p.codegen.empty()) g.attrs["codegen"] = ir::AttrValue(p.codegen);
      taken.insert(members.begin(), members.end());
      list.push_back(std::move(g));
    }
  }
  return list;
}

}  // namespace

PassInfo makeFuseByPatternPass() {
  PassInfo p;
  p.name = "fuse-by-pattern";
  p.summary = "Outline op patterns declared in a YAML file into primitive sub-functions (library dispatch)";
  p.options = {{"patterns", OptionKind::String, "", "pattern file (default: --patterns)"}};
  p.run = [](ir::Module& m, const PassOptions& opts, PassContext& ctx) -> std::string {
    const PatternFile file = passPatternFile(opts, ctx);
    std::vector<std::string> skipped;
    std::set<std::string> dispatched_externs;
    std::string summary =
        outlineModule(m, "match(es)", [&](const ir::BindingBlock& block, size_t bi, const UseInfo& uses) {
          return findMatches(file, block, bi, uses, skipped, dispatched_externs);
        });
    for (const auto& e : file.externs) {
      if (!dispatched_externs.count(e.name)) continue;
      if (const ir::ExternFunc* prior = m.findExtern(e.name)) {
        if (ir::printExternFunc(*prior) != ir::printExternFunc(e))
          throw Error("extern \"" + e.name +
                      "\" of the pattern file differs from the module's declaration:\n  " +
                      ir::printExternFunc(e) + "  " + ir::printExternFunc(*prior));
        continue;
      }
      m.externs.push_back(e);
    }
    if (!skipped.empty())
      summary += (summary.empty() ? "" : "; ") + std::to_string(skipped.size()) +
                 " match(es) left undispatched, their operands do not fit the kernel (first: " + skipped[0] +
                 ")";
    return summary;
  };
  return p;
}

}  // namespace mlcc::transform
