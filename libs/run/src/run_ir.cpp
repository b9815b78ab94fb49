// mlcc-run on an IR file: the reference interpreter (see run.h).
#include <chrono>
#include <iostream>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/support/file_io.h"
#include "outputs.h"
#include "runners.h"

namespace mlcc::run {

void runIrFile(const RunOptions& o, const InputRequest& request, const std::map<std::string, int64_t>& dims) {
  ir::Module m = ir::readVerifiedModule(o.path, ops::opTypeInfo());
  interp::Interpreter interp(m);
  try {
    const std::string entry = o.entry.empty() ? interp.defaultEntry() : o.entry;
    const auto inputs = bindInputs(irInputSlots(interp, m, entry, dims), request, "@" + entry);
    auto t0 = std::chrono::steady_clock::now();
    auto outs = interp.run(entry, inputs);
    auto t1 = std::chrono::steady_clock::now();
    if (o.verbose)
      std::cerr << "ran @" << entry << " in " << std::chrono::duration<double, std::milli>(t1 - t0).count()
                << " ms\n";
    emitOutputs(outs, o.out_dir, o.quiet, o.verbose);
  } catch (const Error& e) {
    if (!e.loc().file.empty()) throw;
    throw Error(SourceLoc{displayName(o.path), 0, 0}, e.message());
  }
}

}  // namespace mlcc::run
