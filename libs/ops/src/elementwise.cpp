// TEMPORARY (ops branch scaffolding): the elementwise op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerElementwiseOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
