// TEMPORARY (ops branch scaffolding): the resize op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerResizeOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
