// fold-constants: evaluates every op binding whose operands are all
// constants with the op's reference kernel (ops::computeOp) and binds the
// result as a constant instead (an operand of static shape with no elements,
// a parameter included, counts as a constant: there is nothing to read, so
// an empty-set reduction or an op on an empty tensor folds too): inline when small (ir::isInlineConstant,
// the importer's rule), else a new weights tensor "folded.N" (made unique)
// in PassContext::new_weights; without new_weights only small results fold.
// Results larger than `max-bytes`, ops of more FLOPs than `max-work` (the
// registry's count; the importer's bound, kMaxFoldedWork: a convolution of
// small constants can take seconds, or gigabytes of im2col buffer), tuple
// results, and results of symbolic shape are left alone. Folds chain (a folded result is a constant operand
// of later bindings). Operands that are now unused stay for
// dead-code-elimination. Assumes the module verifies; a kernel error on a
// constant operand leaves that binding unfolded.
#include <string>

#include "../pass_registry.h"
#include "constants.h"
#include "mlcc/ops/op.h"
#include "mlcc/ops/shape.h"
#include "mlcc/support/checked_math.h"
#include "mlcc/support/diagnostic.h"
#include "passes.h"

namespace mlcc::transform {

namespace {

// Folds the op bindings of `f`; returns how many.
int foldFunction(ir::GraphFunc& f, Constants& consts, int64_t max_bytes, int64_t max_work) {
  int folded = 0;
  consts.scan(f);
  for (auto& block : f.blocks)
    for (auto& b : block.bindings) {
      if (b.value.kind != ir::ValueKind::Op || !b.var->type.isTensor()) continue;
      std::vector<int64_t> shape;
      if (!ops::staticShape(b.var->type.shape, &shape)) continue;
      std::optional<int64_t> bytes = checkedByteSize(shape, ir::dtypeBytes(b.var->type.dtype));
      if (!bytes || *bytes > max_bytes) continue;
      std::vector<ir::Tensor> inputs;
      bool all_const = true;
      for (const auto& a : b.value.args) {
        const ir::Tensor* t = consts.isConstant(a.get()) ? consts.value(a.get()) : nullptr;
        std::vector<int64_t> operand_shape;
        if (t) {
          inputs.push_back(*t);
        } else if (a->type.isTensor() && ops::staticShape(a->type.shape, &operand_shape) &&
                   checkedElementCount(operand_shape) == std::optional<int64_t>(0)) {
          inputs.push_back(ir::Tensor::zeros(a->type.dtype, operand_shape));
        } else {
          all_const = false;
          break;
        }
      }
      if (!all_const || ops::opTypeInfo().flops(b) > max_work) continue;
      std::vector<ir::Tensor> out;
      try {
        out = ops::computeOp(b.value.callee, inputs, b.value.attrs);
      } catch (const Error&) {
        continue;
      }
      if (out.size() != 1 || out[0].dtype() != b.var->type.dtype || out[0].shape() != shape) continue;
      auto value = consts.makeConstant(out[0], "folded", true);
      if (!value) continue;
      b.value = std::move(*value);
      consts.set(b.var.get(), std::move(out[0]));
      ++folded;
    }
  return folded;
}

}  // namespace

PassInfo makeFoldConstantsPass() {
  PassInfo p;
  p.name = "fold-constants";
  p.summary = "Evaluate op bindings whose operands are all constants and bind the results as constants";
  p.options = {{"max-bytes", OptionKind::Int, "67108864", "Do not fold results larger than this many bytes"},
               {"max-work", OptionKind::Int, "134217728", "Do not fold ops of more FLOPs than this"}};
  p.run = [](ir::Module& m, const PassOptions& opts, PassContext& ctx) -> std::string {
    int64_t max_bytes = opts.getInt("max-bytes"), max_work = opts.getInt("max-work");
    Constants consts(m, ctx);
    int folded = 0;
    for (auto& fn : m.functions)
      if (auto* g = std::get_if<ir::GraphFunc>(&fn)) folded += foldFunction(*g, consts, max_bytes, max_work);
    return folded ? "folded " + std::to_string(folded) + " binding(s)" : "";
  };
  return p;
}

}  // namespace mlcc::transform
