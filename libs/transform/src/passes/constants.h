// Constants for the passes that compute with them (canonicalize,
// fold-constants): the values of constant bindings (inline data, tensors of
// the module's weights files, tensors a pass made earlier in the pipeline
// in PassContext::new_weights), unique names for new weights tensors, and
// new constant bindings (inline when small, see ir::isInlineConstant).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/ir/weights.h"
#include "mlcc/transform/pass.h"

namespace mlcc::transform {

// True when the two tensor types have the same dtype and the same
// dimensions (ops::dimEqual); false for tuples.
bool sameTensorType(const ir::Type& a, const ir::Type& b);

class Constants {
 public:
  Constants(const ir::Module& m, PassContext& ctx) : module_(m), ctx_(ctx) {}

  // Records the constant bindings of `f` (call before asking about its vars).
  void scan(const ir::GraphFunc& f);
  // Records `v` as bound to the constant `t`.
  void set(const ir::GraphVarNode* v, ir::Tensor t) { values_[v] = std::move(t); }
  // Whether `v` is bound to a constant (without reading its data).
  bool isConstant(const ir::GraphVarNode* v) const { return consts_.count(v) || values_.count(v); }
  // The value of `v` when it is bound to a constant whose data can be read
  // (a weights file that cannot be opened makes its constants unknown).
  const ir::Tensor* value(const ir::GraphVarNode* v);

  // A weights tensor name that is in no weights file of the module, no
  // constant binding and no new weight: `base`, else `base.1`, `base.2`,
  // ...; `numbered`: the first free of `base.0`, `base.1`, ...
  std::string uniqueWeightName(const std::string& base, bool numbered = false);

  // The binding value `const ...` holding `t`: inline when small, else a new
  // weights tensor named uniqueWeightName(base) added to ctx.new_weights.
  // nullopt when `t` is not small and the context takes no new weights.
  std::optional<ir::GraphValue> makeConstant(const ir::Tensor& t, const std::string& base,
                                             bool numbered = false);

 private:
  const ir::WeightStore* store();

  const ir::Module& module_;
  PassContext& ctx_;
  std::map<const ir::GraphVarNode*, ir::GraphValue> consts_;  // scanned const bindings
  std::map<const ir::GraphVarNode*, ir::Tensor> values_;      // read or computed values
  std::optional<std::shared_ptr<ir::WeightStore>> store_;     // null inside: cannot open
  std::set<std::string> taken_;                               // names used (lazily filled)
  bool taken_filled_ = false;
  int next_ = 0;  // the next number tried by numbered names
};

}  // namespace mlcc::transform
