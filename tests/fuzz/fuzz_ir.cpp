// Fuzz target: the IR text parser and verifier (libs/ir), as
// `mlcc-inspect --validate` runs them. Every input must parse and verify or
// be rejected with mlcc::Error. A module that verifies must also round-trip:
// its printed text parses again to a structurally equal module that prints
// the same text (the file format's exact round trip, DESIGN.md).
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = mlcc::fuzz::asString(data, size);
  mlcc::fuzz::expectErrorsOnly([&] {
    mlcc::ir::SourceMap source_map;
    mlcc::ir::Module m = mlcc::ir::parseModule(text, "fuzz.ir", &source_map);
    mlcc::ir::verifyModule(m, mlcc::ops::opTypeInfo(), &source_map);
    const std::string printed = mlcc::ir::printModule(m);
    mlcc::ir::Module again;
    try {
      again = mlcc::ir::parseModule(printed, "printed.ir");
    } catch (const mlcc::Error& e) {
      mlcc::fuzz::fail("the printed module does not parse: " + e.format() + "\n" + printed);
    }
    if (!mlcc::ir::structuralEqual(m, again)) mlcc::fuzz::fail("parse(print(m)) differs from m:\n" + printed);
    if (mlcc::ir::printModule(again) != printed) mlcc::fuzz::fail("print(parse(print(m))) != print(m)");
  });
  return 0;
}
