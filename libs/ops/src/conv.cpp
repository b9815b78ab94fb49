// TEMPORARY (ops branch scaffolding): the conv op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerConvOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
