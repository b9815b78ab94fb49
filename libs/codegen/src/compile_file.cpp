// Compiling an IR file for mlcc-codegen (see compile_file.h).
#include "mlcc/codegen/compile_file.h"

#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"

namespace mlcc::codegen {

namespace {

// The -v report.
void printStats(const CodegenStats& st, double secs) {
  if (!st.functions.empty()) {  // no graph entry
    std::cerr << "functions: " << st.functions.size()
              << " (no graph entry; mlcc-run model.so --entry NAME)\n";
    for (const auto& f : st.functions) std::cerr << "  " << f << "\n";
    std::cerr << "workspace: " << st.planned_bytes << " bytes (the largest function's kernel scratch";
    if (!st.dims.empty()) std::cerr << ", for every symbolic dimension 1";
    std::cerr << ")\ncompile time: " << std::fixed << std::setprecision(3) << secs << " s\n";
    return;
  }
  std::cerr << "kernels: " << st.kernels << "\n";
  for (const auto& k : st.kernel_names) std::cerr << "  " << k << "\n";
  const uint64_t all = st.intermediate_bytes + st.scratch_bytes;
  std::cerr << "memory plan: " << st.planned_bytes << " bytes planned for " << st.intermediate_bytes
            << " bytes of intermediates";
  if (st.scratch_bytes > 0) std::cerr << " + " << st.scratch_bytes << " bytes of kernel scratch";
  if (all > 0)
    std::cerr << " (" << std::fixed << std::setprecision(1)
              << 100.0 * static_cast<double>(st.planned_bytes) / static_cast<double>(all) << "%)"
              << std::defaultfloat;
  if (!st.dims.empty()) {
    std::cerr << " for";
    for (size_t k = 0; k < st.dims.size(); ++k) std::cerr << (k ? ", " : " ") << st.dims[k] << " = 1";
    std::cerr << " (symbolic dimensions, set at run time)";
  }
  std::cerr << "\nembedded weights: " << st.weight_bytes << " bytes\n";
  std::cerr << "compile time: " << std::fixed << std::setprecision(3) << secs << " s\n";
}

}  // namespace

int compileFile(const CompileFileOptions& f, LLVMOptions opts) {
  const auto start = std::chrono::steady_clock::now();
  const bool show_progress = !f.quiet && isatty(STDERR_FILENO);
  if (show_progress)
    opts.progress = [](const std::string& what) {
      std::cerr << "\rmlcc-codegen: " << what << "\x1b[K" << std::flush;
    };
  opts.warn = [&](const std::string& msg) {
    if (f.quiet) return;
    if (show_progress) std::cerr << "\r\x1b[K";
    std::cerr << "mlcc-codegen: warning: " << msg << "\n";
  };
  const std::string output = !f.output.empty() ? f.output : f.emit == Emit::obj ? "model.o" : "-";
  const std::string path = f.input.empty() ? "-" : f.input;
  ir::Module m = ir::readVerifiedModule(path, ops::opTypeInfo());
  CodegenStats st;
  try {
    st = compileModule(m, opts, f.emit, output);
  } catch (const Error& e) {
    if (show_progress) std::cerr << "\r\x1b[K" << std::flush;
    if (!e.loc().file.empty()) throw;
    throw Error(SourceLoc{displayName(path), 0, 0}, e.message());
  }
  if (show_progress) std::cerr << "\r\x1b[K" << std::flush;
  if (f.verbose && !f.quiet)
    printStats(st, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace mlcc::codegen
