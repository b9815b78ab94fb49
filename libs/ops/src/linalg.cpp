// TEMPORARY (ops branch scaffolding): the linalg op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerLinalgOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
