// TEMPORARY (ops branch scaffolding): the reduce op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerReduceOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
