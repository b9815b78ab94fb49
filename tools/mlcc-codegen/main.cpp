// mlcc-codegen: compile a legalized (usually scheduled) module for the CPU
// with LLVM: the kernels, the graph entry over a static memory plan and the
// embedded weights (or, for prim funcs only, one function per prim func), as
// an object file for mlcc-link (or LLVM IR / assembly).
#include <CLI/CLI.hpp>

#include "mlcc/codegen/compile_file.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/tool.h"
#include "mlcc/target/target.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mlcc-codegen: compile a legalized, scheduled module for the CPU with LLVM: one kernel per prim func, "
      "the graph entry compiled ahead of time over a static memory plan, and the weights embedded; a module "
      "of prim funcs only compiles to one function per prim func. mlcc-link turns the object into model.so.",
      "mlcc-codegen"};
  app.footer(
      R"(The module must be legalized (mlcc-legalize: only call_tir and call_extern in the entry) and have
static shapes (mlcc-import --shape NAME=DIMS binds dynamic ones). Without -o, the object goes to
model.o and --emit ll|asm to stdout; -o - writes to stdout.
A module without graph functions (prim funcs only), or --entry naming a prim func, has no graph
entry: each prim func becomes a function of model.so, its inputs the buffers it reads, its outputs
the buffers it writes (mlcc-run model.so --entry NAME runs or times one).

Examples:
  mlcc-codegen scheduled.ir --target llvm -o model.o
  mlcc-codegen scheduled.ir --target llvm -o model.o -v          # kernels, memory plan, weights, time
  mlcc-codegen scheduled.ir --target llvm -mcpu=skylake-avx512 -O2 -o model.o
  mlcc-codegen scheduled.ir --target llvm -mcpu=x86-64-v3 -mattr=-fma -o model.o
  mlcc-codegen scheduled.ir --target llvm --emit ll -o model.ll  # inspect the LLVM IR
  mlcc-codegen scheduled.ir --target llvm --emit asm | less
  mlcc-codegen scheduled.ir --target llvm --bounds-check -o model.o   # index errors fail the run
  mlcc-link model.o -o model.so
  mlcc-codegen kernels.ir --target llvm -o kernels.o             # prim funcs only: a function each
  mlcc-codegen scheduled.ir --entry fused_dense --target llvm -o k.o  # one prim func alone
  mlcc-codegen gpu.ir --target cuda -o model.o                   # scheduled with --target cuda: PTX
  mlcc-codegen gpu.ir --target 'cuda -arch=sm_90' --emit cuda    # the kernels' CUDA C
A cuda model.so loads the CUDA driver when it is loaded (no link-time dependency on it) and runs
its kernels on device $MLCC_CUDA_DEVICE (default 0); NVRTC compiles the kernels here.)");
  std::string input, output, target = "llvm", emit_text = "obj", mcpu, mattr, entry;
  int opt_level = 3;
  bool verbose = false, quiet = false, bounds_check = false;
  app.add_option("input", input, "IR file ('-' or none: stdin)");
  app.add_option("-o,--output", output,
                 "Output file (default: model.o for obj, stdout for ll/asm; '-': stdout)");
  app.add_option("--target", target,
                 "Target: 'llvm' with options -mcpu=CPU, -mattr=+F,-G, -num-cores=N, -vector-bits=N, "
                 "-parallel-grain=N (as "
                 "mlcc-schedule "
                 "takes them), e.g. 'llvm -mcpu=znver4'; mlcc-inspect --target-info shows what it means")
      ->capture_default_str();
  app.add_option("--mcpu", mcpu, "CPU to compile for (also -mcpu=CPU; default: the host, e.g. with AVX-512)");
  app.add_option("--mattr", mattr,
                 "CPU features to add or remove, e.g. +avx2,-fma (also -mattr=...; default: the CPU's)");
  app.add_option("-O", opt_level, "Optimization level 0..3 (-O0 ... -O3)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  app.add_option("--emit", emit_text,
                 "What to write: obj, ll (LLVM IR) or asm; for --target cuda also cuda (the kernels' CUDA C) "
                 "or ptx")
      ->check(CLI::IsMember({"obj", "ll", "asm", "cuda", "ptx"}))
      ->capture_default_str();
  app.add_flag("--bounds-check", bounds_check,
               "Check every buffer access at run time: an index out of bounds makes the run fail, naming "
               "the prim func, buffer and index, instead of corrupting memory (slower)");
  app.add_option("--entry", entry,
                 "The graph function to compile (default: @main or the entry), or a prim func to compile "
                 "alone as a function");
  app.add_flag("-v,--verbose", verbose,
               "Print the kernels, the memory plan, the weights and the compile time");
  app.add_flag("-q,--quiet", quiet, "No progress output");
  // Accept -mcpu=X and -mattr=F (LLVM's spelling) as --mcpu=X and --mattr=F.
  std::vector<std::string> args(argv, argv + argc);
  for (auto& a : args)
    if (a.rfind("-mcpu=", 0) == 0 || a.rfind("-mattr=", 0) == 0) a = "-" + a;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  mlcc::codegen::LLVMOptions opts;
  // The target and the CPU are checked with the command line (also under
  // --check-args, so mlcc-pipeline rejects a bad -mcpu before running).
  auto check_target = [&] {
    using mlcc::target::Target;
    Target t = Target::parse(target);
    if (t.kind == Target::Kind::cuda) {
      opts.cuda_target = t.str();  // the host side is compiled for this CPU
    } else if (emit_text == "cuda" || emit_text == "ptx") {
      throw mlcc::Error(mlcc::SourceLoc{"--emit", 0, 0}, "--emit " + emit_text + " needs --target cuda");
    }
    if (!mcpu.empty() || !mattr.empty())  // --mcpu and --mattr override the target's
      t = Target::parse(
          target + (mcpu.empty() ? "" : " -mcpu=" + mcpu) + (mattr.empty() ? "" : " -mattr=" + mattr),
          mlcc::SourceLoc{"-mcpu", 0, 0});
    opts.mcpu = t.mcpu;
    opts.mattr = t.mattr;
  };
  return mlcc::runTool(
      app, static_cast<int>(argp.size()), argp.data(),
      [&]() -> int {
        opts.opt_level = opt_level;
        opts.bounds_check = bounds_check;
        opts.entry = entry;
        mlcc::codegen::CompileFileOptions files{input, output, mlcc::codegen::Emit::obj, verbose, quiet};
        if (emit_text == "ll") files.emit = mlcc::codegen::Emit::ll;
        if (emit_text == "asm") files.emit = mlcc::codegen::Emit::asm_text;
        if (emit_text == "cuda") files.emit = mlcc::codegen::Emit::cuda;
        if (emit_text == "ptx") files.emit = mlcc::codegen::Emit::ptx;
        return mlcc::codegen::compileFile(files, opts);
      },
      check_target);
}
