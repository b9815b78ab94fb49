// Properties that tie the IR's parts together, over hand-written samples and
// hundreds of random modules: the text round trip is exact (parse(print(m))
// is structurally equal to m, and printing is a fixed point), hashing agrees
// with equality, and every valid sample passes the verifier.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/support/diagnostic.h"
#include "random_ir.h"
#include "testlib.h"

using namespace mlcc::ir;

TEST(IrProperties, RandomModulesRoundTripThroughText) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Module m = mlcc::test::randomModule(seed);
    std::string text = printModule(m);
    try {
      Module back = parseModule(text, "random.ir");
      EXPECT_TRUE(structuralEqual(m, back)) << text;
      EXPECT_EQ(structuralHash(m), structuralHash(back));
      EXPECT_EQ(printModule(back), text);
      verifyModule(back, mlcc::ir::structuralChecksOnly());
    } catch (const mlcc::Error& e) {
      ADD_FAILURE() << e.format() << "\n" << text;
    }
  }
}

TEST(IrProperties, RenamedModulesPrintDifferentlyButCompareEqual) {
  int differently_printed = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Module m = mlcc::test::randomModule(seed);
    Module renamed = mlcc::test::renameAll(m, seed + 1000);
    Module back = parseModule(printModule(renamed), "renamed.ir");
    EXPECT_TRUE(structuralEqual(m, back)) << "seed " << seed;
    if (printModule(renamed) != printModule(m)) ++differently_printed;
  }
  EXPECT_GT(differently_printed, 90);
}

TEST(IrProperties, MutationsSurviveTheRoundTripAsDifferences) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Module m = mlcc::test::randomModule(seed);
    Module mutated = mlcc::test::mutateOnce(m, seed);
    Module back = parseModule(printModule(mutated), "mutated.ir");
    EXPECT_FALSE(structuralEqual(m, back)) << "seed " << seed;
  }
}

TEST(IrProperties, ValidSamplesVerifyAndEqualTheirReparse) {
  for (const auto& e : std::filesystem::directory_iterator(mlcc::test::dataPath("ir/valid"))) {
    if (e.path().extension() != ".ir") continue;
    SCOPED_TRACE(e.path().string());
    try {
      SourceMap map;
      Module m = parseModuleFile(e.path().string(), &map);
      verifyModule(m, mlcc::ir::structuralChecksOnly(), &map);
      Module again = parseModule(printModule(m), "again.ir");
      EXPECT_TRUE(structuralEqual(m, again));
      EXPECT_EQ(structuralHash(m), structuralHash(again));
    } catch (const mlcc::Error& err) {
      ADD_FAILURE() << err.format();
    }
  }
}
