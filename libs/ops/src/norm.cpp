// TEMPORARY (ops branch scaffolding): the norm op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerNormOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
