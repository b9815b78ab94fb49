// What kind of computation a block does, for choosing a schedule rule:
// injective (each output element from inputs, no reduction), a reduction,
// a matmul-like reduction (a sum of products of two loads where each
// operand is reused across spatial iterations the other one varies over:
// matmul, dense, conv2d) or a GEMV (the same, but one operand has no reuse).
#pragma once

#include <vector>

#include "mlcc/ir/stmt.h"

namespace mlcc::schedule {

enum class BlockKind { Injective, Reduction, MatmulLike, Gemv, Opaque };
const char* blockKindName(BlockKind k);

struct BlockInfo {
  BlockKind kind = BlockKind::Opaque;
  std::vector<size_t> spatial;  // indices of spatial iteration variables
  std::vector<size_t> reduce;   // indices of reduce iteration variables
  // MatmulLike/Gemv: the two operand loads of the product, and for each
  // spatial variable whether operand a / b is indexed by it.
  const ir::LoadNode* a = nullptr;
  const ir::LoadNode* b = nullptr;
  std::vector<bool> a_uses, b_uses;  // parallel to `spatial`
};

BlockInfo analyzeBlock(const ir::BlockNode& block);

// The position of iteration variable `iter` in info.spatial (its size when
// it is not spatial).
size_t spatialPosition(const BlockInfo& info, size_t iter);

// The loops that some block under them binds as an opaque iteration
// variable: the step loops of scans (a recurrence's time steps, legalized
// as a te scan: step t reads what step t - 1 wrote).
std::vector<const ir::VarNode*> scanStepLoops(const ir::PrimFunc& f);

}  // namespace mlcc::schedule
