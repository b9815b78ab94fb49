// The IR text parser. Errors throw mlcc::Error with FILE:LINE:COL and the
// source line, for every malformed input; the parser never crashes, and
// bounds its recursion depth. The grammar is artifacts_schema/ir-grammar.md.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

// Where parsed nodes came from, so later checks (the verifier) can point at
// the line. Keys are node addresses: GraphVarNode, StmtNode, VarNode,
// BufferNode, and the functions in the module (GraphFunc/PrimFunc).
struct SourceMap {
  std::string file;
  std::string text;  // the source, to show the offending line
  std::unordered_map<const void*, SourceLoc> locs;

  // An Error at the location of `node` if known, else without location.
  mlcc::Error errorAt(const void* node, const std::string& message) const;
};

// Parses a module from `text`. `filename` is used in diagnostics.
// When `source_map` is given it is filled with node locations.
Module parseModule(const std::string& text, const std::string& filename, SourceMap* source_map = nullptr);

// Reads and parses a file ("-" for stdin) and sets Module::base_dir to the
// file's directory.
Module parseModuleFile(const std::string& path, SourceMap* source_map = nullptr);

// A schedule script: schedule instructions written by hand, per prim func,
// in the syntax of a prim func's `trace { ... }` (see "Schedule scripts" in
// artifacts_schema/ir-grammar.md):
//
//   # comments run to the end of the line
//   schedule @dense {
//     %b0 = get_block("dense")
//     %l1, %l2, %l3 = get_loops(%b0)
//     %l4, %l5 = split(%l2, [8, 16])
//   }
//
// Trace variables are local to their `schedule` block.
struct ScheduleScript {
  struct Block {
    std::string func;                  // the prim func it schedules
    SourceLoc loc;                     // of the function name
    Trace trace;                       // the instructions
    std::vector<SourceLoc> inst_locs;  // where each instruction starts
  };
  std::string file;  // for diagnostics
  std::string text;  // the source, to show the offending line
  std::vector<Block> blocks;
};

// Parses a schedule script. Syntax errors throw mlcc::Error at FILE:LINE:COL.
ScheduleScript parseScheduleScript(const std::string& text, const std::string& filename);

// Parses a lone TensorIR expression (symbolic variables are created for
// free identifiers). For tests and tools.
PrimExpr parseExpr(const std::string& text);

}  // namespace mlcc::ir
