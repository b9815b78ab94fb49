// Module summaries for `mlcc-inspect --summary`: op counts, prim funcs,
// loop kinds, parameter bytes and a FLOP estimate.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "mlcc/ir/module.h"
#include "mlcc/ir/op_type_info.h"

namespace mlcc::ir {

struct ModuleSummary {
  int graph_funcs = 0;
  int prim_funcs = 0;
  // Op name -> count over all graph functions; call_tir, call_extern and
  // call are counted under those names, constants under "const".
  std::map<std::string, int64_t> graph_ops;
  // Loop kind name -> count over all prim funcs (every kind present, 0 too).
  std::map<std::string, int64_t> loops;
  int64_t blocks = 0;
  // Bytes of all constants (weights-file tensors and inline data), from
  // their static types.
  int64_t params_bytes = 0;
  int64_t weight_tensors = 0;
  // Floating-point and integer arithmetic operations of one run of the
  // module: the FLOPs of each function that nothing calls (the entries),
  // where a graph function's FLOPs are the sum over its bindings — ops
  // through `op_types` (the op registry's FLOP counts), and for each
  // call_tir or call the FLOPs of the callee, per call — and a prim func's
  // are each arithmetic operator or intrinsic in a stored value times the
  // trip count of its loops. Symbolic dimensions count as 1, and
  // `flops_symbolic` says whether any were met.
  int64_t flops = 0;
  bool flops_symbolic = false;
  // Names of the functions, in module order, with their kind.
  std::map<std::string, std::string> functions;
};

ModuleSummary summarizeModule(const Module& m, const OpTypeInfo& op_types);

// FLOPs of one execution of a prim func (symbolic dims as 1).
int64_t primFuncFlops(const PrimFunc& f, bool* symbolic = nullptr);

// A readable multi-line text summary.
std::string formatSummaryText(const ModuleSummary& s);
// The JSON object of artifacts_schema/inspect-summary.schema.json.
std::string formatSummaryJson(const ModuleSummary& s);

}  // namespace mlcc::ir
