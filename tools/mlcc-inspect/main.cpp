// mlcc-inspect: print, validate, summarize, extract from and diff IR files.
#include <CLI/CLI.hpp>
#include <iostream>

#include "mlcc/ir/diff.h"
#include "mlcc/ir/module_io.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/summary.h"
#include "mlcc/ir/weights.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"
#include "mlcc/target/target.h"

int main(int argc, char** argv) {
  CLI::App app{"mlcc-inspect: print, validate, summarize, extract from and diff mlcc IR files.",
               "mlcc-inspect"};
  app.footer(R"(Examples:
  mlcc-inspect --validate lowered.ir              # parse and verify; exit 1 with FILE:LINE:COL on error
  mlcc-inspect --summary --json lowered.ir        # op counts, prim funcs, loops, params_bytes, flops
  mlcc-inspect --func fused_matmul_add lowered.ir # print one function
  mlcc-inspect --diff fused.ir lowered.ir         # structural diff, function by function
  mlcc-import m.onnx | mlcc-inspect --summary     # '-' or no file: read stdin
  mlcc-inspect --target-info llvm                 # the CPU, features, vector bits, cores, caches assumed
  mlcc-inspect --target-info 'cuda -arch=sm_90'   # the GPU limits the rules respect)");
  std::vector<std::string> inputs;
  std::string output = "-";
  bool print = false, validate = false, summary = false, json = false, diff = false, exit_code = false;
  bool check_weights = false;
  std::string func, target_info;
  app.add_option("input", inputs, "IR file(s): one, or two with --diff ('-' or none: stdin)");
  app.add_option("-o,--output", output, "Write the result here instead of stdout");
  auto* g_print = app.add_flag("--print", print, "Print the module in canonical text form");
  auto* g_valid = app.add_flag("--validate", validate, "Parse and verify; print 'FILE: ok' or the error");
  auto* g_sum = app.add_flag("--summary", summary, "Summarize: op counts, prim funcs, loops, params, flops");
  app.add_flag("--json", json,
               "With --summary: print a JSON object (artifacts_schema/inspect-summary.schema.json)");
  auto* g_func = app.add_option("--func", func, "Print the function named NAME (without '@')");
  auto* g_diff = app.add_flag("--diff", diff, "Structural diff of two IR files, function by function");
  app.add_flag("--exit-code", exit_code, "With --diff: exit 3 when the modules differ (0 when equal)");
  app.add_flag("--check-weights", check_weights,
               "With --validate: also open the weights files and check every constant against them");
  auto* g_target = app.add_option("--target-info", target_info,
                                  "Print what mlcc assumes for this target (as --target of mlcc-schedule and "
                                  "mlcc-codegen takes it, e.g. 'llvm -mcpu=x86-64-v3'), then exit");
  g_target->excludes(g_print, g_valid, g_sum, g_func, g_diff);
  g_print->excludes(g_valid, g_sum, g_func, g_diff);
  g_valid->excludes(g_sum, g_func, g_diff);
  g_sum->excludes(g_func, g_diff);
  g_func->excludes(g_diff);

  // The IR tools' reader: parse, then verify against the op registry, with
  // errors at their FILE:LINE:COL.
  auto read_verified = [](const std::string& path) {
    return mlcc::ir::readVerifiedModule(path, mlcc::ops::opTypeInfo());
  };
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    if (!target_info.empty()) {
      mlcc::writeOutputAtomic(output,
                              mlcc::target::Target::parse(target_info, {"--target-info", 0, 0}).describe());
      return 0;
    }
    if (diff) {
      if (inputs.size() != 2) {
        std::cerr << "mlcc-inspect: --diff takes two IR files\n";
        return 2;
      }
      mlcc::ir::ModuleDiff d =
          mlcc::ir::diffModules(read_verified(inputs[0]), read_verified(inputs[1]), inputs[0], inputs[1]);
      mlcc::writeOutputAtomic(output, d.text);
      return exit_code && !d.equal ? 3 : 0;
    }
    if (inputs.size() > 1) {
      std::cerr << "mlcc-inspect: one input file expected (two only with --diff)\n";
      return 2;
    }
    const std::string path = inputs.empty() ? "-" : inputs[0];
    mlcc::ir::Module m = read_verified(path);
    std::string out;
    if (validate) {
      if (check_weights) {
        auto store = mlcc::ir::WeightStore::open(m);
        mlcc::ir::checkModuleWeights(m, store);
      }
      out = mlcc::displayName(path) + ": ok\n";
    } else if (summary) {
      auto s = mlcc::ir::summarizeModule(m, mlcc::ops::opTypeInfo());
      out = json ? mlcc::ir::formatSummaryJson(s) : mlcc::ir::formatSummaryText(s);
    } else if (!func.empty()) {
      for (const auto& f : m.functions)
        if (mlcc::ir::functionName(f) == func) out = mlcc::ir::printFunction(f);
      if (out.empty())
        throw mlcc::Error(mlcc::SourceLoc{mlcc::displayName(path), 0, 0}, "no function @" + func);
    } else {
      out = mlcc::ir::printModule(m);  // --print, and the default
    }
    mlcc::writeOutputAtomic(output, out);
    return 0;
  });
}
