// mlcc-schedule: schedule the TensorIR prim funcs of a module: a schedule
// script (--trace) for the functions it names, then the target's default
// rules for the functions still unscheduled. Each scheduled prim func
// carries its trace.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>

#include "mlcc/schedule/schedule.h"
#include "mlcc/schedule/schedule_module.h"
#include "mlcc/schedule/tensor_intrin.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "mlcc/support/tool.h"
#include "mlcc/target/target.h"
#include "mlcc/transform/ir_tool.h"
#include "mlcc/tune/tuner.h"

namespace {

using mlcc::schedule::ruleList;
using mlcc::target::Target;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-schedule: schedule TensorIR prim funcs: a hand-written schedule script (--trace) for the "
      "functions it names, then the target's default rules for the others. Every scheduled prim func "
      "records its trace.",
      "mlcc-schedule"};
  app.footer(R"(--target is required unless --rules none. A script given with --trace is applied first, to the
prim funcs it names (its instructions are appended to their traces); then, unless --rules none,
every prim func still without a trace is scheduled by the first of the target's rules that applies
(--list-rules); with --db, a function the tuning database (mlcc-tune) has schedules for
--target gets the fastest of them first. Functions that already have a trace are left alone. Nothing is written on error.

Examples:
  mlcc-schedule lowered.ir --target llvm -o scheduled.ir -v      # default CPU rules; -v: the rule per prim func
  mlcc-schedule lowered.ir --target "llvm -num-cores=4" -o scheduled.ir
  mlcc-schedule lowered.ir --target "cuda -arch=sm_80" -o gpu.ir
  mlcc-schedule lowered.ir --rules none -o same.ir                # leaves every prim func unscheduled
  mlcc-schedule lowered.ir --trace dense.sched --rules none -o scheduled.ir
  mlcc-schedule lowered.ir --trace dense.sched --target llvm -o scheduled.ir   # script, then rules for the rest
  mlcc-schedule lowered.ir --db tune.db --target llvm -o scheduled.ir    # mlcc-tune's best schedules, then rules
  mlcc-import m.onnx | mlcc-fuse | mlcc-legalize | mlcc-schedule --target llvm > scheduled.ir

A schedule script (dense.sched), in the syntax of a prim func's trace (# starts a comment):
  # pack the weight of the dense in @fused_dense_relu into 16-row panels
  schedule @fused_dense_relu {
    %b0 = get_block("dense")
    %l1, %l2, %l3 = get_loops(%b0)
    transform_layout(%b0, "w", [o, i], [o / 16, i, o % 16])
  }
Errors name the script line: dense.sched:5:5: error: in prim @fused_dense_relu: ...

Tensorize: --intrinsics FILE loads tensor intrinsics (descriptions: prim funcs named after the C
routines that implement them, attrs(library = "FILE")) for the script's tensorize(%loop, "NAME");
the module then declares the routines it calls (extern ... attrs(kind = "tensor_intrin")), and
mlcc-link needs their library (--lib). README, "Tensorize"; examples/tensorize/:
  mlcc-schedule mm.ir --intrinsics gemm_tile.ir --trace mm.sched --rules none -o mm.s.ir
mlcc-schedule --list-instructions lists the instructions a script may use.)");
  std::string input, output = "-", target_text, rules = "default", trace_path, db_path;
  uint64_t seed = 0;
  bool list_instructions = false, list_rules = false, verbose = false, quiet = false;
  app.add_option("input", input, "IR file ('-' or none: stdin)");
  app.add_option("-o,--output", output, "IR output file ('-': stdout)");
  app.add_option("--target", target_text,
                 "Target of the default rules: 'llvm' or 'cuda', with options, e.g. 'llvm -num-cores=4', "
                 "'cuda -arch=sm_80' (mlcc-inspect --target-info shows what a target means)");
  app.add_option("--rules", rules,
                 "default: the target's rules schedule the unscheduled prim funcs; none: no rules")
      ->check(CLI::IsMember({"default", "none"}))
      ->capture_default_str();
  app.add_option("--trace", trace_path, "Schedule script to apply first (see below)");
  std::vector<std::string> intrinsic_files;
  app.add_option("--intrinsics", intrinsic_files,
                 "IR file of tensor intrinsic descriptions for tensorize in the script; repeatable");
  app.add_option("--db", db_path,
                 "Tuning database (mlcc-tune): its best schedule for --target of each prim func the script "
                 "does not name, before the rules");
  app.add_option("--seed", seed, "Seed of the sampling instructions without a decision")
      ->capture_default_str();
  app.add_flag("--list-instructions", list_instructions, "List the schedule instructions, then exit");
  app.add_flag("--list-rules", list_rules,
               "List the default rules (of --target, or of every target), then exit");
  app.add_flag("-v,--verbose", verbose,
               "Say on stderr what scheduled each prim func (a rule, or \"script\")");
  app.add_flag("-q,--quiet", quiet, "No progress output");
  // The target is checked with the command line (also under --check-args, so
  // mlcc-pipeline rejects a schedule stage's bad --target before running).
  std::optional<Target> target;
  auto check_target = [&] {
    if (!target_text.empty()) target = Target::parse(target_text);
  };
  return mlcc::runTool(
      app, argc, argv,
      [&]() -> int {
        if (list_instructions) {
          for (const auto& n : mlcc::schedule::instructionNames()) std::cout << n << "\n";
          return 0;
        }
        if (list_rules) {
          if (target) {
            std::cout << ruleList(target->kind);
          } else {
            std::cout << ruleList(Target::Kind::llvm) << ruleList(Target::Kind::cuda);
          }
          return 0;
        }
        const bool use_rules = rules == "default";
        if (use_rules && target_text.empty()) {
          std::cerr << "mlcc-schedule: error: --target is required (llvm or cuda), unless --rules none\n"
                    << "Run with --help for more information.\n";
          return 2;
        }
        if (!db_path.empty() && target_text.empty()) {
          std::cerr << "mlcc-schedule: error: --db needs --target (the database's records are per target)\n"
                    << "Run with --help for more information.\n";
          return 2;
        }
        for (const auto& f : intrinsic_files) mlcc::schedule::loadTensorIntrinsics(f);
        std::optional<mlcc::ir::ScheduleScript> script;
        if (!trace_path.empty())
          script = mlcc::ir::parseScheduleScript(mlcc::readInput(trace_path), mlcc::displayName(trace_path));

        mlcc::transform::IrToolOptions run;
        run.input = input;
        run.output = output;
        run.invalid_result = "internal error: the scheduled module does not verify";
        run.transform = [&](mlcc::ir::Module& m) {
          std::vector<std::string> tuned;
          if (!db_path.empty()) {
            if (script) mlcc::schedule::scheduleModule(m, {&*script, nullptr, seed});
            tuned = mlcc::tune::applyDatabase(m, mlcc::tune::Database::read(db_path), *target,
                                              [&](const std::string& msg) {
                                                if (!quiet)
                                                  std::cerr << "mlcc-schedule: warning: " << msg << "\n";
                                              });
          }
          const auto how = mlcc::schedule::scheduleModule(
              m, {script && db_path.empty() ? &*script : nullptr, use_rules ? &*target : nullptr, seed});
          mlcc::schedule::declareTensorIntrinsics(m);
          // On the cuda target a function left as it is cannot be compiled.
          if (use_rules && target->kind == mlcc::target::Target::Kind::cuda && !quiet)
            for (const auto& [func, by] : how)
              if (by == "none")
                std::cerr
                    << "mlcc-schedule: warning: no cuda rule applies to @" << func
                    << ", left unscheduled: mlcc-codegen --target cuda refuses a function whose blocks are "
                       "not bound to GPU blocks and threads (schedule it with --trace)\n";
          if (verbose && !quiet)
            for (const auto& [func, by] : how) {
              // With --db the script ran first, so its functions read "already scheduled" here.
              bool scripted = false;
              if (script && !db_path.empty())
                for (const auto& b : script->blocks) scripted |= b.func == func;
              const bool from_db = std::count(tuned.begin(), tuned.end(), func) > 0;
              std::cerr << "@" << func << ": " << (from_db ? "database" : scripted ? "script" : by) << "\n";
            }
        };
        return mlcc::transform::runIrTool(run);
      },
      check_target);
}
