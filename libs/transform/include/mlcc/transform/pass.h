// The pass manager: module-to-module passes registered by name with typed
// options, and textual pipelines that name them:
//
//   canonicalize,convert-layout,fold-constants,fuse-ops{max-depth=6},dead-code-elimination
//
// Each pass lives in its own file under libs/transform/src/passes/ with a
// header comment saying what it does and what it assumes, and registers
// itself through registerAllPasses() in pass_registry.cpp (explicit calls,
// no static initializers). The verifier runs after every pass when
// PassContext::verify_each is set (debug builds, tests, `--verify-each`).
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "mlcc/ir/module.h"
#include "mlcc/ir/tensor.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {
struct SourceMap;
}

namespace mlcc::transform {

enum class OptionKind : uint8_t { Int, Float, Bool, String };

struct PassOptionSpec {
  std::string name;  // kebab-case, e.g. "max-depth"
  OptionKind kind;
  std::string default_value;  // as written in a pipeline, e.g. "6", "true", "patterns.yaml"
  std::string help;
};

// Option values of one pass invocation, typed per the pass's specs
// (defaults filled in).
class PassOptions {
 public:
  int64_t getInt(const std::string& name) const;
  double getFloat(const std::string& name) const;
  bool getBool(const std::string& name) const;
  const std::string& getString(const std::string& name) const;
  std::map<std::string, std::string> values;  // name -> text
};

// New constants made by a pass (constant folding): the tool writes them to
// the output's sidecar weights file and the module names that file.
struct NewWeights {
  std::vector<std::pair<std::string, ir::Tensor>> tensors;  // unique names
};

struct PassContext {
  // Run the verifier after every pass: always in debug builds, else when
  // a tool's --verify-each (or a test) asks for it.
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  bool verbose = false;               // -v: per-pass time and what changed, on `log`
  std::ostream* log = nullptr;        // where -v output goes (stderr in tools)
  NewWeights* new_weights = nullptr;  // where folded constants go; null: folding writes inline only
  std::string patterns_path;          // --patterns for fuse-by-pattern
  // Where the parser found each node of the input (bindings, statements):
  // a pass reports an error on a node with errorAt, so it reads
  // `model.ir:12:5: error: ...`. Null: errors without a location.
  const ir::SourceMap* source_map = nullptr;

  // An error at `node`'s source location when the map knows it.
  Error errorAt(const void* node, const std::string& message) const;
};

struct PassInfo {
  std::string name;     // e.g. "fuse-ops"
  std::string summary;  // one line for --list-passes
  std::vector<PassOptionSpec> options;
  // Transforms the module in place; throws mlcc::Error on bad input.
  // Returns a short description of what changed (for -v), "" if nothing.
  std::function<std::string(ir::Module&, const PassOptions&, PassContext&)> run;
};

const PassInfo* findPass(const std::string& name);
std::vector<const PassInfo*> allPasses();  // sorted by name

// Adds a pass to the registry (a plugin's); throws mlcc::Error when a pass
// of that name exists.
void registerPass(PassInfo info);

// Pass plugins, as LLVM's `opt -load-pass-plugin`: a shared library built
// against these headers, with the same compiler and mlcc version, that
// registers its passes when loaded:
//
//   #include "mlcc/transform/pass.h"
//   MLCC_PASS_PLUGIN { mlcc::transform::registerPass(makeMyPass()); }
//
//   c++ -std=c++20 -O2 -fPIC -shared -I<mlcc>/libs/{ir,support,transform}/include my_pass.cpp -o
//   libmy_pass.so mlcc-fuse model.ir --load-pass-plugin ./libmy_pass.so --passes my-pass,fuse-ops -o fused.ir
//
// The tools that run passes (mlcc-fuse, mlcc-legalize) export mlcc's
// functions to the plugin. See examples/plugin.
inline constexpr int kPassPluginApiVersion = 1;
#define MLCC_PASS_PLUGIN                                                                      \
  extern "C" const int mlcc_pass_plugin_api_version = mlcc::transform::kPassPluginApiVersion; \
  extern "C" void mlcc_pass_plugin_register()

// Loads the plugin at `path` and runs its registration. Throws mlcc::Error
// naming the file when it cannot be loaded, is no mlcc pass plugin, was built
// for another plugin API version, or registers a pass whose name is taken.
void loadPassPlugin(const std::string& path);

// One pass invocation in a pipeline, with its options as written.
struct PipelineEntry {
  const PassInfo* pass = nullptr;
  PassOptions options;
  int column = 0;  // 1-based column of the pass name in the pipeline text
};
using Pipeline = std::vector<PipelineEntry>;

// Parses `text`. Errors (syntax, unknown pass or option, an option value of
// the wrong type) throw mlcc::Error at SourceLoc{source_name, 1, column}
// with the pipeline text as the source line, so the caret points at the
// offending column.
Pipeline parsePipeline(const std::string& text, const std::string& source_name = "<passes>");

// Runs the pipeline; with ctx.verify_each the verifier runs after each pass
// and an error names the pass that broke the module.
void runPipeline(ir::Module& m, const Pipeline& pipeline, PassContext& ctx);

// `--list-passes` text: each pass, its summary and options with defaults.
std::string listPasses();

}  // namespace mlcc::transform
