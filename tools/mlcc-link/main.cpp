// mlcc-link: link model.o (from mlcc-codegen) and the mlcc runtime into a
// self-contained model.so exporting the C ABI of include/mlcc/runtime.h.
#include <CLI/CLI.hpp>
#include <iostream>

#include "mlcc/host/linker.h"
#include "mlcc/support/tool.h"

int main(int argc, char** argv) {
  CLI::App app{"mlcc-link: link compiled model objects and the mlcc runtime into model.so.", "mlcc-link"};
  app.footer(R"(Examples:
  mlcc-link model.o -o model.so
  mlcc-link model.o extra.o -o model.so -v      # prints the link command
  mlcc-link model.o --lib libmylib.so -o model.so   # a model calling user externs
model.so holds the kernels, the compiled graph entry, the runtime (thread pool,
BLAS kernels over OpenBLAS) and the weights: mlcc-codegen embeds the weights in
model.o, so model.so is self-contained (no weights file is read at load time)
and needs only libstdc++, libopenblas and libmvec at run time. It exports only
the functions of include/mlcc/runtime.h (mlcc_model_load, mlcc_model_run, ...).
Use it from C (examples/c/) or run it with `mlcc-run model.so`. A model that
calls user library functions (extern declarations, include/mlcc/extern.h)
needs --lib: an object or archive is linked in, a shared library is loaded at
run time from its directory (an rpath).
The link runs the C++ compiler driver ($CXX, else c++) with -shared and
libmlcc_runtime.a, found at <bindir>/../lib (build tree or install prefix).)");
  mlcc::host::LinkOptions opts;
  bool verbose = false;
  app.add_option("objects", opts.objects, "Object files (.o) from mlcc-codegen")->required();
  app.add_option("-o,--output", opts.output, "The shared library to write")->required();
  app.add_option("--lib", opts.libraries,
                 "A user library with the functions the model's call_extern names (.so, .a or .o; "
                 "include/mlcc/extern.h); repeatable");
  app.add_option("--runtime", opts.runtime_library, "libmlcc_runtime.a to link (default: next to mlcc-link)");
  app.add_option("--cxx", opts.compiler, "C++ compiler driver for the link (default: $CXX, else c++)");
  app.add_flag("-v,--verbose", verbose, "Print the link command");
  return mlcc::runTool(app, argc, argv, [&]() -> int {
    std::string log;
    mlcc::host::linkModel(opts, verbose ? &log : nullptr);
    if (verbose) std::cerr << log << "wrote " << opts.output << "\n";
    return 0;
  });
}
