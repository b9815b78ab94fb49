// The pattern language of fuse-by-pattern: op DAGs declared in YAML
// (schema: artifacts_schema/patterns.schema.json), matched against the
// bindings of a dataflow block.
//
//   patterns:
//     - name: dense_bias_relu
//       codegen: blas.dense_bias_relu   # optional
//       ops:                            # in order; the last one is the root
//         - dense(x, w)                 # wildcards x, w: any value
//         - add(_, b)                   # `_`: the previous op's result
//         - op: relu(_)                 # map form: `op`, optional `as`, `attrs`
//           attrs: {}
//
// An argument is `_` (the previous op's result), the `as` name of an earlier
// op (its result), or a wildcard (any value; the same wildcard twice must be
// the same value). `attrs` constrains attributes (defaults filled in before
// comparing). Binary ops `add`, `multiply`, `maximum` and `minimum` also match
// with their operands swapped. Every op must feed the root.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/module.h"

namespace mlcc::transform {

struct PatternArg {
  int node = -1;     // >= 0: the result of op `node` of the pattern
  std::string name;  // otherwise: a wildcard
};

struct PatternOp {
  std::string op;
  std::vector<PatternArg> args;
  ir::Attrs attrs;  // constraints, of the op's attribute kinds
};

struct Pattern {
  std::string name;
  std::string codegen;  // empty: none
  std::vector<PatternOp> ops;
};

// Parses a pattern file; errors are mlcc::Error at FILE:LINE:COL naming the key.
std::vector<Pattern> parsePatterns(const std::string& text, const std::string& filename);
std::vector<Pattern> loadPatternFile(const std::string& path);

// Matches `p` with its root at binding `root` of `block`: the binding index
// of each pattern op, or nullopt. Bindings in `taken` never match. (That the
// non-root ops' values are used only inside the match is the caller's check.)
std::optional<std::vector<size_t>> matchPattern(const Pattern& p, const ir::BindingBlock& block, size_t root,
                                                const std::unordered_set<size_t>& taken);

}  // namespace mlcc::transform
