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
//
// The same file may hold rewrite rules (the `rewrite` pass), under
// `rewrites` (either key may be absent, not both):
//
//   rewrites:
//     - name: transpose_to_dense
//       match:                          # a pattern's ops, as above
//         - op: permute_dims(w)
//           attrs: {axes: [1, 0]}
//         - matmul(x, _)
//       replace:                        # ops computing the root's new value
//         - dense(x, w)
//
// A replace op's arguments are the match's wildcards and `as` names, `_` (the
// previous replace op) and earlier replace ops' `as` names; its attrs are the
// new op's attributes. The last replace op's value replaces the match root's;
// its type must be the root's (checked at each match).
//
// Patterns may also dispatch to a user's library function declared under
// `externs` (the C ABI is include/mlcc/extern.h):
//
//   externs:
//     - name: mylib.linear_relu         # what `codegen` and call_extern name
//       symbol: mylib_linear_relu       # the C function (default: the name, '.' -> '_')
//       library: libmylib.so            # relative to this file: .so, .o or .a
//       params: ["x: f32[n, k]", "w: f32[m, k]", "b: f32[m]"]
//       result: "f32[n, m]"
//   patterns:
//     - name: linear_relu
//       codegen: mylib.linear_relu      # wildcards x, w, b are its operands, by name
//       ops: [dense(x, w), add(_, b), relu(_)]
//
// A match dispatches when the operands' types fit the declaration and give
// the root's type; fuse-by-pattern copies the declaration into the module.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "mlcc/ir/attrs.h"
#include "mlcc/ir/module.h"
#include "mlcc/transform/pass.h"

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
  std::map<std::string, int> named;  // `as` name -> op
};

// An operand of a replace op: an earlier replace op, a match op (by its
// `as` name) or a match wildcard.
struct RewriteArg {
  int replace = -1;
  int match = -1;
  std::string wildcard;
};

struct RewriteOp {
  std::string op;
  std::vector<RewriteArg> args;
  ir::Attrs attrs;  // the new op's attributes
};

struct Rewrite {
  std::string name;
  Pattern match;
  std::vector<RewriteOp> replace;
};

struct PatternFile {
  std::vector<Pattern> patterns;
  std::vector<Rewrite> rewrites;
  // User library functions that patterns may dispatch to (`codegen: NAME`);
  // their library paths are absolute (or as written, for a file on stdin).
  std::vector<ir::ExternFunc> externs;
};

// Parses a pattern file; errors are mlcc::Error at FILE:LINE:COL naming the key.
PatternFile parsePatternFile(const std::string& text, const std::string& filename);
PatternFile loadPatternFile(const std::string& path);
// Its patterns only.
std::vector<Pattern> parsePatterns(const std::string& text, const std::string& filename);
// The pattern file a pass uses: its option `patterns`, else --patterns
// (PassContext::patterns_path), loaded; an error when neither is given.
PatternFile passPatternFile(const PassOptions& opts, const PassContext& ctx);

// Matches `p` with its root at binding `root` of `block`: the binding index
// of each pattern op, or nullopt. Bindings in `taken` never match. (That the
// non-root ops' values are used only inside the match is the caller's check.)
// With `wildcards`, fills in the value each wildcard matched.
std::optional<std::vector<size_t>> matchPattern(const Pattern& p, const ir::BindingBlock& block, size_t root,
                                                const std::unordered_set<size_t>& taken,
                                                std::map<std::string, ir::GraphVar>* wildcards = nullptr);

}  // namespace mlcc::transform
