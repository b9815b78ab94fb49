// The IR text format end to end: every sample in tests/ir/valid/ prints back
// byte for byte, every sample in tests/ir/invalid/ fails at the expected
// line:column with the expected message, and no input crashes the parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"
#include "testlib.h"

using namespace mlcc::ir;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> samples(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(mlcc::test::dataPath(dir)))
    if (e.path().extension() == ".ir") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Parses `text`; returns true if it parsed, false on mlcc::Error (anything else fails the test).
bool parsesOrThrowsError(const std::string& text) {
  try {
    Module m = parseModule(text, "fuzz.ir");
    // Whatever parses must print and re-parse to the same text.
    std::string printed = printModule(m);
    EXPECT_EQ(printModule(parseModule(printed, "reprint.ir")), printed);
    return true;
  } catch (const mlcc::Error& e) {
    EXPECT_FALSE(e.format().empty());
    return false;
  }
}

}  // namespace

TEST(IrText, ValidSamplesRoundTrip) {
  auto files = samples("ir/valid");
  ASSERT_GE(files.size(), 5u);
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    std::string text = mlcc::test::readFile(path);
    try {
      Module m = parseModule(text, path);
      std::string printed = printModule(m);
      EXPECT_EQ(printed, text) << "sample is not in canonical printed form";
      EXPECT_EQ(printModule(parseModule(printed, path)), printed);
    } catch (const mlcc::Error& e) {
      ADD_FAILURE() << e.format();
    }
  }
}

TEST(IrText, InvalidSamplesReportLocationAndMessage) {
  auto files = samples("ir/invalid");
  ASSERT_GE(files.size(), 25u);
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    std::string text = mlcc::test::readFile(path);
    const std::string prefix = "# expect-error: ";
    ASSERT_EQ(text.compare(0, prefix.size(), prefix), 0) << "missing expect-error line";
    std::string spec = text.substr(prefix.size(), text.find('\n') - prefix.size());
    int line = 0, col = 0, consumed = 0;
    ASSERT_EQ(std::sscanf(spec.c_str(), "%d:%d: %n", &line, &col, &consumed), 2) << spec;
    std::string message = spec.substr(static_cast<size_t>(consumed));
    try {
      parseModule(text, path);
      ADD_FAILURE() << "parsed without error";
    } catch (const mlcc::Error& e) {
      EXPECT_EQ(e.loc().file, path);
      EXPECT_EQ(e.loc().line, line) << e.format();
      EXPECT_EQ(e.loc().col, col) << e.format();
      EXPECT_NE(e.message().find(message), std::string::npos) << e.format();
      // FILE:LINE:COL: error: message, the source line, and a caret.
      std::string formatted = e.format();
      EXPECT_EQ(
          formatted.rfind(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: ", 0),
          0u);
      if (!e.source_line().empty()) {
        EXPECT_NE(formatted.find('^'), std::string::npos);
      }
    }
  }
}

TEST(IrText, TruncatedSamplesNeverCrash) {
  for (const auto& path : samples("ir/valid")) {
    SCOPED_TRACE(path);
    std::string text = mlcc::test::readFile(path);
    for (size_t n = 0; n < text.size(); n += 7) parsesOrThrowsError(text.substr(0, n));
  }
}

TEST(IrText, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(1234);
  const char specials[] = "%@$\"\\()[]{}<>=+-*/:,.#\n \0\xff\x80-1e9";
  for (const auto& path : samples("ir/valid")) {
    SCOPED_TRACE(path);
    const std::string text = mlcc::test::readFile(path);
    for (int round = 0; round < 150; ++round) {
      std::string t = text;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits; ++k) {
        size_t pos = rng() % t.size();
        switch (rng() % 4) {
          case 0: t[pos] = static_cast<char>(rng() % 256); break;
          case 1: t[pos] = specials[rng() % (sizeof specials - 1)]; break;
          case 2: t.erase(pos, 1 + rng() % 8); break;
          default: t.insert(pos, 1, specials[rng() % (sizeof specials - 1)]); break;
        }
        if (t.empty()) t = "x";
      }
      parsesOrThrowsError(t);
    }
  }
}

TEST(IrText, GarbageNeverCrashes) {
  std::mt19937 rng(99);
  for (int round = 0; round < 200; ++round) {
    std::string t = round % 2 ? "mlcc.ir 1\n" : "";
    size_t len = rng() % 400;
    for (size_t i = 0; i < len; ++i) t += static_cast<char>(rng() % 256);
    parsesOrThrowsError(t);
  }
}

TEST(IrText, DeepNestingIsAnError) {
  const std::string head = "mlcc.ir 1\nprim @f(%A: f32[1]) {\n  %A[0] = ";
  for (const char* open : {"(", "-", "!", "[", "cast<f32>("}) {
    SCOPED_TRACE(open);
    std::string text = head;
    for (int i = 0; i < 100000; ++i) text += open;
    text += "1.0\n}\n";
    try {
      parseModule(text, "deep.ir");
      ADD_FAILURE() << "parsed";
    } catch (const mlcc::Error& e) {
      EXPECT_EQ(e.loc().line, 3);
    }
  }
  // Deeply nested statements and tuple types.
  std::string stmts = "mlcc.ir 1\nprim @f(%A: f32[1]) {\n";
  for (int i = 0; i < 100000; ++i) stmts += "if true {\n";
  EXPECT_THROW(parseModule(stmts, "deep.ir"), mlcc::Error);
  std::string types = "mlcc.ir 1\ngraph @f(%x: ";
  for (int i = 0; i < 100000; ++i) types += "(";
  EXPECT_THROW(parseModule(types, "deep.ir"), mlcc::Error);
  std::string lists = "mlcc.ir 1\ngraph @f() -> () attrs(a = ";
  for (int i = 0; i < 100000; ++i) lists += "[";
  EXPECT_THROW(parseModule(lists, "deep.ir"), mlcc::Error);
}

TEST(IrText, LongInputs) {
  // A long left-associative chain is bounded (no deep trees for the printer or destructors).
  std::string chain = "mlcc.ir 1\nprim @f(%A: f32[1]) {\n  %A[0] = 1.0";
  for (int i = 0; i < 100000; ++i) chain += " + 1.0";
  chain += "\n}\n";
  EXPECT_THROW(parseModule(chain, "long.ir"), mlcc::Error);
  // Up to the limit it parses and prints.
  std::string ok = "mlcc.ir 1\n\nprim @f(%A: f32[1]) {\n  %A[0] = 1.0";
  for (int i = 0; i < 1000; ++i) ok += " + 1.0";
  ok += "\n}\n";
  EXPECT_EQ(printModule(parseModule(ok, "ok.ir")), ok);
  // Long names, strings and comments.
  std::string name(1 << 20, 'a');
  std::string text = "mlcc.ir 1\n# " + std::string(1 << 20, 'c') + "\nweights \"" + name + "\"\n\nprim @" +
                     name + "(%" + name + ": f32[1]) {\n}\n";
  EXPECT_EQ(printModule(parseModule(text, "names.ir")),
            text.substr(0, 10) + text.substr(text.find("weights")));
  // The operator limit is per expression, not per function.
  std::string nested = "mlcc.ir 1\n\nprim @f(%A: f32[4]) {\n  for %i in 0..4 {\n";
  for (int i = 0; i < 3000; ++i) nested += "    %A[%i] = %A[%i] + 1.5\n";
  nested += "  }\n}\n";
  EXPECT_EQ(printModule(parseModule(nested, "nested.ir")), nested);
  // Many statements and a big inline constant parse in linear time.
  std::string many = "mlcc.ir 1\n\nprim @f(%A: f32[4]) {\n";
  for (int i = 0; i < 50000; ++i) many += "  %A[" + std::to_string(i % 4) + "] = 1.5\n";
  many += "}\n";
  EXPECT_EQ(printModule(parseModule(many, "many.ir")), many);
  std::string big = "mlcc.ir 1\n\ngraph @f() -> f32[200000] {\n  %c: f32[200000] = const [";
  for (int i = 0; i < 200000; ++i) big += (i ? ", " : "") + std::to_string(i) + ".5";
  big += "]\n  return %c\n}\n";
  EXPECT_EQ(printModule(parseModule(big, "big.ir")), big);
}

TEST(IrText, SourceMapRecordsLocations) {
  std::string path = mlcc::test::dataPath("ir/valid/mlp_lowered.ir");
  SourceMap map;
  Module m = parseModuleFile(path, &map);
  EXPECT_EQ(m.base_dir, mlcc::test::dataPath("ir/valid"));
  EXPECT_EQ(map.file, path);
  const GraphFunc* g = m.findGraph("main");
  ASSERT_NE(g, nullptr);
  auto loc = map.locs.at(g);
  EXPECT_EQ(loc.line, 4);
  EXPECT_EQ(loc.col, 1);
  const auto& b = g->blocks.at(0).bindings.at(0);
  EXPECT_EQ(map.locs.at(b.var.get()).line, 6);
  EXPECT_EQ(map.locs.at(b.var.get()).col, 5);
  const PrimFunc* p = m.findPrim("fused_dense_add_relu");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(map.locs.at(p->params[0].get()).line, 17);
  const auto* seq = p->body->as<SeqNode>();
  ASSERT_NE(seq, nullptr);
  const auto* loop = seq->stmts[0]->as<ForNode>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(map.locs.at(loop).line, 19);
  EXPECT_EQ(map.locs.at(loop->loop_var.get()).col, 7);
  mlcc::Error e = map.errorAt(loop, "loop problem");
  EXPECT_EQ(e.loc().line, 19);
  EXPECT_NE(e.format().find("for %i in 0..n {"), std::string::npos);
  EXPECT_EQ(map.errorAt(nullptr, "x").loc().line, 0);
}

TEST(IrText, ParserDetails) {
  // Explicit `serial` and `global`, `$name` and non-canonical spacing parse; the printer canonicalizes.
  std::string text =
      "# leading comment\nmlcc.ir 1\nprim @f(%A: f32[$n] global){for %i in 0..n serial{%A[%i]=%A[%i]-1.0}}";
  EXPECT_EQ(printModule(parseModule(text, "t.ir")),
            "mlcc.ir 1\n\nprim @f(%A: f32[n]) {\n  for %i in 0..n {\n    %A[%i] = %A[%i] - 1.0\n  }\n}\n");
  // `%a -1` is a subtraction; `%a - -1` subtracts a negative literal.
  EXPECT_EQ(printExpr(parseExpr("a -1")), "a - 1");
  EXPECT_EQ(printExpr(parseExpr("a - -1")), "a - -1");
  EXPECT_EQ(printExpr(parseExpr("a - - 1")), "a - -(1)");
  EXPECT_EQ(printExpr(parseExpr("-9223372036854775808")), "-9223372036854775808");
  EXPECT_THROW(parseExpr("9223372036854775808"), mlcc::Error);
  EXPECT_THROW(parseExpr("1e400"), mlcc::Error);
  EXPECT_THROW(parseExpr("1e-50"), mlcc::Error);
  EXPECT_THROW(parseExpr("70000.0f16"), mlcc::Error);
  EXPECT_THROW(parseExpr("3f16"), mlcc::Error);
  EXPECT_THROW(parseExpr("a +"), mlcc::Error);
  EXPECT_THROW(parseExpr("1.0 + 1"), mlcc::Error);
  // Sibling loops may reuse a name; nested ones may not.
  EXPECT_NO_THROW(parseModule(
      "mlcc.ir 1\nprim @f(%A: f32[2]) {\n for %i in 0..2 {\n }\n for %i in 0..2 {\n }\n}\n", "s"));
  EXPECT_THROW(
      parseModule("mlcc.ir 1\nprim @f(%A: f32[2]) {\n for %i in 0..2 {\n for %i in 0..2 {\n }\n }\n}\n", "s"),
      mlcc::Error);
  EXPECT_THROW(parseModule("mlcc.ir 1\nprim @f(%A: f32[2]) {\n for %A in 0..2 {\n }\n}\n", "s"), mlcc::Error);
}
