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
// In a pipeline, fuse-by-pattern runs before fuse-ops: fuse-ops treats the
// calls it makes as opaque and never looks inside primitive functions, so
// the remaining ops are grouped around them.
#include <algorithm>
#include <optional>

#include "../outline.h"
#include "../pattern.h"
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

std::vector<OutlineGroup> findMatches(const std::vector<Pattern>& patterns, const ir::BindingBlock& block,
                                      size_t bi, const UseInfo& uses, std::vector<std::string>& skipped) {
  std::unordered_set<size_t> taken;
  std::vector<OutlineGroup> list;
  for (const auto& p : patterns) {
    for (size_t r = 0; r < block.bindings.size(); ++r) {
      auto m = matchPattern(p, block, r, taken);
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
      if (std::string why = kernelMismatch(p, block, g.members); !why.empty()) {
        skipped.push_back("%" + block.bindings[r].var->name + " (" + p.name + "): " + why);
        continue;
      }
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
    std::vector<Pattern> patterns = passPatternFile(opts, ctx).patterns;
    std::vector<std::string> skipped;
    std::string summary =
        outlineModule(m, "match(es)", [&](const ir::BindingBlock& block, size_t bi, const UseInfo& uses) {
          return findMatches(patterns, block, bi, uses, skipped);
        });
    if (!skipped.empty())
      summary += (summary.empty() ? "" : "; ") + std::to_string(skipped.size()) +
                 " match(es) left undispatched, their operands do not fit the kernel (first: " + skipped[0] +
                 ")";
    return summary;
  };
  return p;
}

}  // namespace mlcc::transform
