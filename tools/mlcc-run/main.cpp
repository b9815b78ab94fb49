// mlcc-run: run an IR file (any stage) through the reference interpreter, or
// a compiled model.so through its C ABI (libs/host), on .npy inputs (or
// deterministic random ones, the same for both) and write or summarize the
// outputs; for model.so (its graph entry, or a prim func compiled as a
// function: --entry) also benchmark (--bench, --json) and profile.
#include <CLI/CLI.hpp>

#include "mlcc/run/run.h"
#include "mlcc/support/tool.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-run: run a model's IR (any stage) through the reference interpreter, or a compiled model.so.",
      "mlcc-run"};
  app.footer(R"(Examples:
  mlcc-run lowered.ir --input x=x.npy --output-dir out/   # writes out/<output name>.npy
  mlcc-run model.so --input x.npy --output-dir out/       # no NAME=: the model's only input
  mlcc-run model.ir                                       # random inputs (--seed), prints a summary
  mlcc-run model.ir --dim n=8 --seed 3 -v                 # symbolic dim n = 8 for random inputs; timing
  mlcc-run kernels.ir --entry mm --input A=a.npy --input B=b.npy --output-dir out/   # one prim func
  mlcc-run model.so --input x=x.npy --output-dir out/    # a compiled model (mlcc-link), same outputs
  mlcc-run model.so --bench 50 --threads 1 --json        # {"median_ms": ..., "min_ms", "mean_ms", "runs", "threads"}
  mlcc-run model.so --bench 20 --profile                 # per-kernel calls, total ms, share of the run, GFLOPS
  mlcc-run kernels.so --entry mm --bench 50 --json       # time one prim func of a prim-func-only model.so
  mlcc-run gpu_model.so --bench 50 --profile             # a CUDA model: timed with CUDA events on the GPU
  mlcc-run kernels.so --entry mm --input A=a.npy --input B=b.npy --output-dir out/   # as kernels.ir --entry mm
Inputs are .npy files (f32, f64, f16, i8, u8, i16, u16, i32, u32, i64, bool). Without any --input every input is random:
floats normal(0, 1), integers in [0, 10); --random-inputs fills only the missing ones. The random
inputs of a model.so are those of its IR for the same --seed. --input FILE.npy (no NAME=) binds the
entry's only input (of a prim func: the only buffer it does not write); when the entry has several
inputs, or none, that is a usage error listing them: exit 2, found once the IR or model.so is
loaded (so a bad file is still exit 1). --bench, --warmup, --json, --threads and --profile apply
to compiled models only. A CUDA model (mlcc-codegen --target cuda) runs on $MLCC_CUDA_DEVICE
(default 0); --bench and --profile time it on the GPU with CUDA events, from its first kernel to
its last (the copies of the inputs and outputs are in the wall time --json gives as wall_median_ms),
and --profile's kernel times are taken between events, without synchronizing. A model.so compiled from prim funcs only (mlcc-codegen) has a function per
prim func and no graph entry: --entry NAME chooses one (needed when there are several), which runs as
`--entry NAME` on the IR does: the same inputs, outputs and random inputs.)");
  mlcc::run::RunOptions o;
  app.add_option("input", o.path, "IR file ('-' for stdin) or compiled model.so")->required();
  app.add_option(
      "--input", o.input_args,
      "NAME=FILE.npy: an input of the entry function (repeatable); FILE.npy alone: its only input");
  app.add_option("--output-dir", o.out_dir, "Write each output as DIR/<output name>.npy");
  app.add_option("--seed", o.seed, "Seed of the random inputs (default 0)");
  app.add_option("--entry", o.entry,
                 "Function to run (default: @main, or the single entry function); of a model.so: one of its "
                 "functions (prim funcs)");
  app.add_option("--dim", o.dim_args, "NAME=SIZE: a symbolic dimension's size for random inputs (default 1)");
  app.add_flag("--random-inputs", o.random_missing, "Fill inputs not given with --input randomly");
  app.add_option("--bench", o.bench, "model.so: time N runs after --warmup untimed ones")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "model.so: untimed runs before --bench's (default 3)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", o.threads, "model.so: threads for parallel loops (default: all cores)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--keep-denormals", o.keep_denormals,
               "model.so: keep denormal floats (by default a run flushes them to zero, as TensorFlow does: "
               "on x86 each operation on one costs ~100 cycles)");
  app.add_flag("--json", o.json,
               "model.so: print the timing as JSON (median_ms, min_ms, mean_ms, runs, threads)");
  app.add_flag("--profile", o.profile, "model.so: print each kernel's calls, time, share and GFLOPS");
  app.add_flag("-q,--quiet", o.quiet, "Print nothing but errors");
  app.add_flag("-v,--verbose", o.verbose, "Print the inputs used and how long the run took");

  return mlcc::runTool(app, argc, argv, [&]() -> int {
    o.warmup_given = app.count("--warmup") > 0;
    return mlcc::run::runModelFile(o);
  });
}
