// TEMPORARY (ops branch scaffolding): the pool op family is being written; it registers nothing yet.
#include "op_families.h"

namespace mlcc::ops {
void registerPoolOps(std::vector<OpDef>& ops) { (void)ops; }
}  // namespace mlcc::ops
