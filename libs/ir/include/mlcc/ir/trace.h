// Schedule traces: the list of schedule instructions (and their sampling
// decisions) that turned an unscheduled prim func into the scheduled one.
// The IR stores and prints traces; libs/schedule gives them meaning and
// replays them.
//
// Text form, inside a prim func:
//   trace {
//     %b0 = get_block("matmul")
//     %l1, %l2, %l3 = get_loops(%b0)
//     %v4, %v5 = sample_perfect_tile(%l1, n = 2, max_innermost_factor = 16) decision [8, 32]
//     %l6, %l7 = split(%l1, [%v4, %v5])
//   }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlcc/ir/attrs.h"

namespace mlcc::ir {

struct TraceInst {
  std::string name;                   // the primitive, e.g. "split"
  std::vector<AttrValue> inputs;      // positional: TraceRefs, literals, lists
  Attrs attrs;                        // keyword arguments
  std::vector<std::string> outputs;   // names of the random variables it defines
  std::optional<AttrValue> decision;  // sampling instructions only
};

struct Trace {
  std::vector<TraceInst> insts;
  bool empty() const { return insts.empty(); }
};

}  // namespace mlcc::ir
