// The IR→IR tool driver (transform/ir_tool.h): a pass error on a binding is
// reported at the binding's FILE:LINE:COL through the parser's source map
// carried in the PassContext, and a failed run writes nothing; a good run
// writes a module that verifies, with the new constants' weights file.
#include "mlcc/transform/ir_tool.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mlcc/ir/module_io.h"
#include "mlcc/ops/op.h"
#include "mlcc/support/diagnostic.h"
#include "tensor_files.h"

using namespace mlcc;

namespace {

// Line 6, column 5: the binding of %y.
constexpr const char* kNegate = R"(mlcc.ir 1

graph @main(%x: f32[4, 5]) -> f32[4, 5] {
  dataflow {
    %c: f32[4, 5] = const [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0]
    %y: f32[4, 5] = negative(%x)
    %big: f32[4, 5] = exp(%c)
    %z: f32[4, 5] = add(%y, %big)
  }
  return %z
}
)";

// Options reading kNegate from DIR/model.ir and writing DIR/`output`.
transform::IrToolOptions toolOptions(const test::TempDir& dir, const std::string& output) {
  std::ofstream(dir.file("model.ir")) << kNegate;
  transform::IrToolOptions o;
  o.input = dir.file("model.ir");
  o.output = dir.file(output);
  return o;
}

// An op's legalization removed for the length of a test: the legalize pass
// then fails on its binding, as it does for an op without a TensorIR
// definition yet.
class WithoutLegalization {
 public:
  explicit WithoutLegalization(const std::string& op)
      : def_(const_cast<ops::OpDef*>(ops::findOp(op))), saved_(def_->legalize) {
    def_->legalize = nullptr;
  }
  ~WithoutLegalization() { def_->legalize = saved_; }

 private:
  ops::OpDef* def_;
  decltype(ops::OpDef::legalize) saved_;
};

// The error of a run that must fail, after checking that it wrote nothing.
Error failure(const transform::IrToolOptions& o) {
  try {
    transform::runIrTool(o);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(o.output)) << o.output;
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error("");
}

TEST(IrTool, PassErrorNamesFileLineAndColumn) {
  test::TempDir dir;
  transform::IrToolOptions o = toolOptions(dir, "lowered.ir");
  o.passes = transform::parsePipeline("legalize");
  WithoutLegalization no_negative("negative");
  const Error e = failure(o);
  EXPECT_EQ(e.loc().file, dir.file("model.ir"));
  EXPECT_EQ(e.loc().line, 6);
  EXPECT_EQ(e.loc().col, 5);
  EXPECT_NE(e.message().find("op 'negative' cannot be lowered to TensorIR yet"), std::string::npos)
      << e.message();
  EXPECT_EQ(e.format().rfind(dir.file("model.ir") + ":6:5: error: legalize: in @main, binding %y: ", 0), 0u)
      << e.format();
  EXPECT_NE(e.format().find("    %y: f32[4, 5] = negative(%x)\n    ^"), std::string::npos) << e.format();
}

TEST(IrTool, ErrorWithoutALocationNamesTheInput) {
  test::TempDir dir;
  transform::IrToolOptions o = toolOptions(dir, "out.ir");
  o.transform = [](ir::Module&) { throw Error("the transform failed"); };
  EXPECT_EQ(failure(o).format(), dir.file("model.ir") + ": error: the transform failed");
}

TEST(IrTool, NewConstantsGoBesideTheOutputOrAreRefused) {
  test::TempDir dir;
  transform::IrToolOptions o = toolOptions(dir, "folded.ir");
  o.passes = transform::parsePipeline("fold-constants");
  o.new_weights_stem = "fused";
  EXPECT_EQ(transform::runIrTool(o), 0);
  ir::Module m = ir::readVerifiedModule(o.output, ops::opTypeInfo());
  ASSERT_EQ(m.weight_files.size(), 1u);
  EXPECT_EQ(m.weight_files[0], "folded.safetensors");
  EXPECT_TRUE(std::filesystem::exists(dir.file("folded.safetensors")));

  // A tool that makes no constants (mlcc-legalize) refuses the same pipeline.
  o.output = dir.file("refused.ir");
  o.new_weights_stem.clear();
  EXPECT_NE(failure(o).message().find("run constant folding in mlcc-fuse"), std::string::npos);
}

}  // namespace
