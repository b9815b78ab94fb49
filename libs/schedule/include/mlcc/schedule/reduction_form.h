// The form of a reduction block that rfactor and a reduction across GPU
// threads rewrite: its body one store `C[I] = C[I] op value` (or
// `value op C[I]`), op one of + * max min, value not reading C, I free of
// its reduce iteration variables, C the only buffer it writes. (Its init,
// which each user constrains differently, is not checked.)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

struct ReductionForm {
  ir::Buffer out;
  std::vector<ir::PrimExpr> indices;
  ir::BinaryOp op;
  bool acc_first;  // C[I] is the left operand
  ir::PrimExpr value;
  ir::PrimExpr identity;  // of op for C's dtype: 0, 1, lowest, highest
};

// The block's reduction, or nullopt with `why` set to what does not fit
// (a phrase after the block's description: "combines with '-'", ...).
std::optional<ReductionForm> matchReductionForm(const ir::BlockNode& b, std::string& why);

// `acc op value` or `value op acc`, in the block's operand order.
ir::PrimExpr combineReduction(const ReductionForm& r, const ir::PrimExpr& acc, const ir::PrimExpr& value);

}  // namespace mlcc::schedule
