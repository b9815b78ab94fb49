// TEMPORARY (ops branch scaffolding): the manipulate op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerManipulateOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
