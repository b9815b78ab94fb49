// The IR text parser. Errors throw mlcc::Error with FILE:LINE:COL and the
// source line, for every malformed input; the parser never crashes, and
// bounds its recursion depth. The grammar is artifacts_schema/ir-grammar.md.
#pragma once

#include <string>
#include <unordered_map>

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

// Parses a lone TensorIR expression (symbolic variables are created for
// free identifiers). For tests and tools.
PrimExpr parseExpr(const std::string& text);

}  // namespace mlcc::ir
