// The pass manager: pipeline text errors point at their column, passes run
// in order with per-pass verification, and dead-code-elimination keeps the
// module's meaning (checked by interpreting before and after).
#include <gtest/gtest.h>

#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"

using namespace mlcc;
using namespace mlcc::transform;

namespace {

// The column and message of the error parsing `text`, or "" when it parses.
std::string pipelineError(const std::string& text) {
  try {
    parsePipeline(text);
  } catch (const Error& e) {
    return std::to_string(e.loc().col) + ": " + e.message();
  }
  return "";
}

const char* kModule = R"(mlcc.ir 1

graph @main(%x: f32[n, 4]) -> f32[n, 4] {
  dataflow {
    %a: f32[n, 4] = relu(%x)
    %unused: f32[n, 4] = exp(%a)
    %b: f32[n, 4] = add(%a, %x)
    %also_unused: f32[n, 4] = call @helper(%b)
  }
  return %b
}

graph @helper(%y: f32[m, 4]) -> f32[m, 4] {
  dataflow {
    %z: f32[m, 4] = negative(%y)
  }
  return %z
}
)";

}  // namespace

TEST(PassManager, PipelineErrorsPointAtTheColumn) {
  EXPECT_EQ(pipelineError("dead-code-elimination"), "");
  EXPECT_EQ(pipelineError(""), "");
  EXPECT_EQ(
      pipelineError("dead-code-elimination,nope"), "23: unknown pass 'nope' (passes: " + [] {
        std::string s;
        for (const auto* p : allPasses()) s += (s.empty() ? "" : ", ") + p->name;
        return s;
      }() + ")");
  EXPECT_EQ(pipelineError("dead-code-elimination{x=1}"),
            "23: pass 'dead-code-elimination' has no option 'x' (it takes none)");
  EXPECT_EQ(pipelineError("dead-code-elimination dead-code-elimination"), "23: expected ',' between passes");
  EXPECT_EQ(pipelineError("dead-code-elimination,"), "23: expected a pass name");
  EXPECT_EQ(pipelineError("dead-code-elimination{"),
            "23: expected '}' to close the options of pass 'dead-code-elimination'");
  try {
    parsePipeline("dead-code-elimination,bad", "--passes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.format().find("--passes:1:23: error: unknown pass 'bad'"), std::string::npos) << e.format();
    EXPECT_NE(e.format().find("dead-code-elimination,bad\n                      ^"), std::string::npos)
        << e.format();
  }
}

TEST(PassManager, DeadCodeEliminationKeepsMeaning) {
  ir::Module m = ir::parseModule(kModule, "m.ir");
  interp::Interpreter before_interp(m);
  ir::Tensor x = ir::Tensor::fromValues(ir::DType::f32, {2, 4}, {1, -2, 3, -4, 5, -6, 7, -8});
  auto before = before_interp.run("main", {{"x", x}});

  PassContext ctx;
  ctx.verify_each = true;
  runPipeline(m, parsePipeline("dead-code-elimination"), ctx);
  std::string text = ir::printModule(m);
  EXPECT_EQ(text.find("%unused"), std::string::npos) << text;
  EXPECT_EQ(text.find("@helper"), std::string::npos) << text;  // no longer reachable
  EXPECT_NE(text.find("%b: f32[n, 4] = add(%a, %x)"), std::string::npos) << text;

  interp::Interpreter after_interp(m);
  auto after = after_interp.run("main", {{"x", x}});
  ASSERT_EQ(after.size(), before.size());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(after[0].tensor.at(i), before[0].tensor.at(i));
}

TEST(PassManager, ListPassesShowsEveryPass) {
  std::string list = listPasses();
  for (const auto* p : allPasses()) EXPECT_NE(list.find(p->name + "\n    " + p->summary), std::string::npos);
}
