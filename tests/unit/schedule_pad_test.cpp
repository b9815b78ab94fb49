// pad_einsum: a convolution's output width and a matmul's rows padded up to
// a multiple, the zero-padded copies of the inputs read past their end, the
// crop, then tiled by the new extent; meaning (interpreter), trace replay
// and print round trip; and the refusals.
#include <gtest/gtest.h>

#include "mlcc/ir/printer.h"
#include "mlcc/schedule/schedule.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

// conv: y[1, 16, 4, 4] from x[1, 4, 6, 6] and a 3 x 3 kernel.
const std::string kConv = fixture("schedule_layout/conv.ir");
const std::string kMatmul = fixture("matmul_64.ir");

// The function's alloc_buffer lines.
std::string allocsOf(const ir::PrimFunc& f) {
  std::string out, text = ir::printFunction(f);
  for (size_t at = text.find("alloc_buffer "); at != std::string::npos;
       at = text.find("alloc_buffer ", at + 1))
    out += text.substr(at + 13, text.find('\n', at) - at - 13) + "\n";
  return out;
}

TEST(SchedulePad, PadsAConvolutionsOutputWidthAndItsInputsWindow) {
  Schedule sch(parsePrim(kConv));
  BlockRV conv = sch.getBlock("conv");
  sch.padEinsum(conv, {1, 1, 1, 3, 1, 1, 1});  // q: 4 -> 6
  // y is written through a 6-wide copy; x, read at q + s up to 7, through
  // an 8-wide zero-padded one; w is read as before.
  EXPECT_EQ(allocsOf(sch.func()), "%y_pad: f32[1, 16, 4, 6]\n%x_pad: f32[1, 4, 6, 8]\n");
  std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("%x_pad[%v0, %v1, %v2, %v3] = select(%v3 < 6, %x[%v0, %v1, %v2, min(%v3, 5)], 0.0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("block \"y_crop\""), std::string::npos) << text;
  EXPECT_EQ(text.find("%w_pad"), std::string::npos) << text;
  EXPECT_EQ(ir::printTrace(sch.func().trace),
            "trace {\n"
            "  %b0 = get_block(\"conv\")\n"
            "  pad_einsum(%b0, [1, 1, 1, 3, 1, 1, 1])\n"
            "}\n");
  expectScheduled(parsePrim(kConv), sch.func());
  // The padded loop now splits by 3 exactly: no predicate.
  auto loops = sch.getLoops(sch.getBlock("conv"));
  sch.split(loops[3], {2, 3});
  EXPECT_EQ(ir::printFunction(sch.func()).find("where"), std::string::npos);
  expectScheduled(parsePrim(kConv), sch.func());
}

TEST(SchedulePad, PadsAMatmulsRowsAndColumns) {
  Schedule sch(parsePrim(kMatmul));
  sch.padEinsum(sch.getBlock("C"), {48, 1, 1});  // i: 64 -> 96
  EXPECT_EQ(allocsOf(sch.func()), "%C_pad: f32[96, 64]\n%A_pad: f32[96, 64]\n");
  expectScheduled(parsePrim(kMatmul), sch.func());
  sch.padEinsum(sch.getBlock("C"), {1, 7, 1});  // j: 64 -> 70, a second time
  EXPECT_EQ(allocsOf(sch.func()),
            "%C_pad: f32[96, 64]\n%A_pad: f32[96, 64]\n%C_pad_pad: f32[96, 70]\n"
            "%B_pad: f32[64, 70]\n");
  expectScheduled(parsePrim(kMatmul), sch.func());
}

TEST(SchedulePad, FactorsThatDivideTheExtentsChangeNothing) {
  Schedule sch(parsePrim(kMatmul));
  sch.padEinsum(sch.getBlock("C"), {8, 16, 1});
  EXPECT_TRUE(sch.func().allocs.empty());
  expectScheduled(parsePrim(kMatmul), sch.func());
}

TEST(SchedulePad, Refusals) {
  Schedule sch(parsePrim(kConv));
  BlockRV conv = sch.getBlock("conv");
  expectScheduleError(
      [&] {
        sch.padEinsum(conv, {1, 1, 3});
      },
      "argument 2 must list one padding factor per iteration variable of block \"conv\" (7)");
  expectScheduleError(
      [&] {
        sch.padEinsum(conv, {1, 1, 1, 1, 3, 1, 1});
      },
      "cannot pad %vc of block \"conv\": it is not a spatial variable");
  expectScheduleError(
      [&] {
        sch.padEinsum(conv, {1, 1, 1, 0, 1, 1, 1});
      },
      "padding factors must be positive");
  auto loops = sch.getLoops(conv);
  sch.split(loops[3], {2, 2});
  expectScheduleError(
      [&] {
        sch.padEinsum(conv, {1, 1, 1, 3, 1, 1, 1});
      },
      "cannot pad %vq of block \"conv\": it must have a constant extent and be bound to a loop "
      "of its own with that extent");
  // The function is unchanged by the refusals.
  expectScheduled(parsePrim(kConv), sch.func());

  // A loop that binds two variables (a diagonal): padding one would take
  // the other past its extent.
  Schedule diag(parsePrim(R"(prim @diag(%x: f32[8, 8], %y: f32[8, 8]) {
  for %i in 0..8 {
    block "d" (%vi = spatial(8, %i), %vj = spatial(8, %i)) {
      reads(%x[%vi, %vj])
      writes(%y[%vi, %vj])
      %y[%vi, %vj] = %x[%vi, %vj]
    }
  }
}
)"));
  expectScheduleError(
      [&] {
        diag.padEinsum(diag.getBlock("d"), {3, 1});
      },
      "cannot pad %vi of block \"d\": it must have a constant extent and be bound to a loop of "
      "its own with that extent");
  // B computed under C's loop: C is no longer alone in its nest.
  Schedule two(parsePrim(fixture("two_stages.ir")));
  BlockRV c = two.getBlock("C");
  two.computeAt(two.getBlock("B"), two.getLoops(c)[1]);
  expectScheduleError(
      [&] {
        two.padEinsum(c, {3, 1});
      },
      "block \"C\" must be alone in its loop nest to be padded");
}

}  // namespace
