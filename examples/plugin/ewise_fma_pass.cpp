// A graph pass as a C++ plugin (mlcc/transform/pass.h, `--load-pass-plugin`):
// MLC's EwiseFMARewriter, `add(multiply(a, b), c)` -> `ewise_fma(a, b, c)`
// for f32 values whose product is used only by the add. The same rewrite as
// examples/passes/fuse_multiply_add.py (a program) and the rewrite rule
// multiply_add_to_fma (pipelines/patterns/rewrites.yaml, data).
//
//   c++ -std=c++20 -O2 -fPIC -shared -I../../libs/ir/include -I../../libs/support/include \
//       -I../../libs/transform/include ewise_fma_pass.cpp -o libewise_fma_pass.so
//   mlcc-fuse model.ir --load-pass-plugin ./libewise_fma_pass.so \
//       --passes 'ewise-fma-cxx,dead-code-elimination,fuse-ops' -o fused.ir -v
#include <map>
#include <string>

#include "mlcc/ir/printer.h"
#include "mlcc/transform/pass.h"

namespace {

using namespace mlcc;

// How many bindings and returns of `f` use each variable.
std::map<const ir::GraphVarNode*, int> useCounts(const ir::GraphFunc& f) {
  std::map<const ir::GraphVarNode*, int> uses;
  for (const auto& block : f.blocks)
    for (const auto& b : block.bindings)
      for (const auto& a : b.value.args) ++uses[a.get()];
  for (const auto& r : f.ret) ++uses[r.get()];
  return uses;
}

std::string rewrite(ir::Module& m, const transform::PassOptions&, transform::PassContext&) {
  int rewritten = 0;
  for (auto& fn : m.functions) {
    auto* f = std::get_if<ir::GraphFunc>(&fn);
    if (!f) continue;
    const auto uses = useCounts(*f);
    for (auto& block : f->blocks) {
      std::map<const ir::GraphVarNode*, const ir::Binding*> defs;
      for (auto& b : block.bindings) {
        ir::GraphValue& v = b.value;
        if (v.kind == ir::ValueKind::Op && v.callee == "add" && v.attrs.empty() && v.args.size() == 2 &&
            b.var->type.isTensor() && b.var->type.dtype == ir::DType::f32) {
          for (int i = 0; i < 2; ++i) {
            auto d = defs.find(v.args[i].get());
            if (d == defs.end() || uses.at(v.args[i].get()) != 1) continue;
            const ir::GraphValue& mul = d->second->value;
            if (mul.kind != ir::ValueKind::Op || mul.callee != "multiply" || !mul.attrs.empty()) continue;
            if (ir::printType(d->second->var->type) != ir::printType(b.var->type)) continue;
            v.args = {mul.args[0], mul.args[1], v.args[1 - i]};
            v.callee = "ewise_fma";
            ++rewritten;
            break;
          }
        }
        defs[b.var.get()] = &b;
      }
    }
  }
  return rewritten ? "rewrote " + std::to_string(rewritten) + " add(multiply) to ewise_fma" : "";
}

}  // namespace

MLCC_PASS_PLUGIN {
  transform::PassInfo pass;
  pass.name = "ewise-fma-cxx";
  pass.summary = "add(multiply(a, b), c) -> ewise_fma(a, b, c) for f32 (a plugin: examples/plugin)";
  pass.run = rewrite;
  transform::registerPass(std::move(pass));
}
