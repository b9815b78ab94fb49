// blockize and tensorize (tensor intrinsics: mlcc/schedule/tensor_intrin.h).
// blockize is checked for the regions of the block it makes and for keeping
// the function's meaning (interpreter); tensorize for the block it makes (its
// regions in the description's parameter order, its attribute), for trace
// replay, and for each refusal. Running tensorized functions needs the
// routine's library: tests/cli/tensorize.sh runs them through the
// interpreter and model.so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/schedule/tensor_intrin.h"
#include "mlcc/support/diagnostic.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using namespace mlcc::test;

namespace {

const std::string kMatmul = fixture("matmul_64.ir");

// Writes `text` to a fresh file and registers its intrinsics.
std::vector<std::string> load(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("mlcc-tensorize-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return loadTensorIntrinsics(path);
}

// C[4, 16] += A[4, 8] * B[8, 16], and variants of it.
const std::string kUpdate = "%C[%vi, %vj] + %A[%vi, %vk] * %B[%vk, %vj]";
std::string gemmTile(const std::string& name, const std::string& value = kUpdate,
                     const std::string& extents = "4, 16, 8", const std::string& before_store = "") {
  int e[3];
  sscanf(extents.c_str(), "%d, %d, %d", &e[0], &e[1], &e[2]);
  auto s = [](int x) { return std::to_string(x); };
  return "mlcc.ir 1\nprim @" + name + "(%A: f32[" + s(e[0]) + ", " + s(e[2]) + "], %B: f32[" + s(e[2]) +
         ", " + s(e[1]) + "], %C: f32[" + s(e[0]) + ", " + s(e[1]) +
         "]) attrs(library = \"libtile.so\") {\n"
         "  for %i in 0.." +
         s(e[0]) + " {\n    for %j in 0.." + s(e[1]) + " {\n      for %k in 0.." + s(e[2]) +
         " {\n"
         "        block \"u\" (%vi = spatial(" +
         s(e[0]) + ", %i), %vj = spatial(" + s(e[1]) + ", %j), %vk = reduce(" + s(e[2]) +
         ", %k)) {\n"
         "          reads(%A[%vi, %vk], %B[%vk, %vj])\n          writes(%C[%vi, %vj])\n" +
         before_store + "          %C[%vi, %vj] = " + value + "\n        }\n      }\n    }\n  }\n}\n";
}

struct Registered {
  Registered() {
    load("tile.ir", gemmTile("tile_4x16x8"));
    load("sub.ir", gemmTile("tile_sub", "%C[%vi, %vj] - %A[%vi, %vk] * %B[%vk, %vj]"));
    load("wide.ir", gemmTile("tile_8x16x8", kUpdate, "8, 16, 8"));
    load("square.ir", gemmTile("tile_aa", "%C[%vi, %vj] + %A[%vi, %vk] * %A[%vi, %vk]"));
  }
};
const Registered registered;

// The matmul tiled into 4x16 tiles of C over 8-long strips of k, its init
// moved out: the loops %i1, %j1, %k1 under %k0 are one tile.
struct Tiled {
  Schedule sch{parsePrim(kMatmul)};
  BlockRV c = sch.getBlock("C");
  LoopRV i1, j1, k1, k0;
  explicit Tiled(bool decompose = true) {
    auto l = sch.getLoops(c);
    auto i = sch.split(l[0], {std::nullopt, 4});
    auto j = sch.split(l[1], {std::nullopt, 16});
    auto k = sch.split(l[2], {std::nullopt, 8});
    sch.reorder({i[0], j[0], k[0], i[1], j[1], k[1]});
    if (decompose) sch.decomposeReduction(c, k[0]);
    i1 = i[1], j1 = j[1], k1 = k[1], k0 = k[0];
  }
};

const ir::BlockNode* findBlockIn(const ir::Stmt& s, const std::string& name) {
  if (!s) return nullptr;
  if (const auto* b = s->as<ir::BlockNode>()) {
    if (b->name == name) return b;
    if (auto* x = findBlockIn(b->init, name)) return x;
    return findBlockIn(b->body, name);
  }
  if (const auto* f = s->as<ir::ForNode>()) return findBlockIn(f->body, name);
  if (const auto* q = s->as<ir::SeqNode>())
    for (const auto& x : q->stmts)
      if (auto* b = findBlockIn(x, name)) return b;
  return nullptr;
}

std::string regionsText(const std::vector<ir::BufferRegion>& regions) {
  std::string t;
  for (const auto& r : regions) {
    t += (t.empty() ? "%" : ", %") + r.buffer->name + "[";
    for (size_t d = 0; d < r.region.size(); ++d)
      t += (d ? ", " : "") + ir::printExpr(r.region[d].min) + " +: " + ir::printExpr(r.region[d].extent);
    t += "]";
  }
  return t;
}

// --- blockize ------------------------------------------------------------------

TEST(ScheduleBlockize, WrapsTheTileInAnOpaqueBlock) {
  Tiled t(false);
  BlockRV o = t.sch.blockize(t.i1);
  EXPECT_EQ(o.name, "b10");  // a trace variable
  const ir::BlockNode* b = findBlockIn(t.sch.func().body, "C_o");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->iter_vars.empty());
  EXPECT_EQ(regionsText(b->reads), "%A[i_0 * 4 +: 4, k_0 * 8 +: 8], %B[k_0 * 8 +: 8, j_0 * 16 +: 16]");
  EXPECT_EQ(regionsText(b->writes), "%C[i_0 * 4 +: 4, j_0 * 16 +: 16]");
  expectScheduled(parsePrim(kMatmul), t.sch.func());
}

TEST(ScheduleBlockize, AtTheOutermostLoop) {
  Schedule sch(parsePrim(kMatmul));
  auto l = sch.getLoops(sch.getBlock("C"));
  sch.blockize(l[0]);
  const ir::BlockNode* b = findBlockIn(sch.func().body, "C_o");
  ASSERT_TRUE(b);
  EXPECT_EQ(regionsText(b->writes), "%C[0 +: 64, 0 +: 64]");
  expectScheduled(parsePrim(kMatmul), sch.func());
}

TEST(ScheduleBlockize, RefusesAnImperfectNest) {
  Tiled t;  // decompose_reduction put the init nest beside %k0
  auto l = t.sch.getLoops(t.c);
  expectScheduleError([&] { t.sch.blockize(l[1]); },
                      "cannot blockize loop %j_0: the loops are not a perfect nest");
}

// --- tensorize -----------------------------------------------------------------

TEST(ScheduleTensorize, ReplacesTheTile) {
  Tiled t;
  t.sch.tensorize(t.i1, "tile_4x16x8");
  const ir::BlockNode* b = findBlockIn(t.sch.func().body, "C_o");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attrs.at("tensor_intrin").asString(), "tile_4x16x8");
  EXPECT_EQ(regionsText(b->reads), "%A[i_0 * 4 +: 4, k_0 * 8 +: 8], %B[k_0 * 8 +: 8, j_0 * 16 +: 16]");
  EXPECT_EQ(regionsText(b->writes), "%C[i_0 * 4 +: 4, j_0 * 16 +: 16]");
  // The nest is kept as the block's body.
  EXPECT_TRUE(findBlockIn(b->body, "C"));
  // Its declaration, for the module.
  auto decls = tensorIntrinDecls(t.sch.func());
  ASSERT_EQ(decls.size(), 1u);
  const std::string decl = ir::printExternFunc(decls[0]);
  EXPECT_EQ(decl.rfind("extern \"tile_4x16x8\"(%A: f32[4, 8], %B: f32[8, 16]) -> f32[4, 16] attrs(kind = "
                       "\"tensor_intrin\", library = \"/",
                       0),
            0u)
      << decl;
  EXPECT_NE(decl.find("/libtile.so\", symbol = \"tile_4x16x8\")"), std::string::npos) << decl;
  // The trace replays, and the function prints and parses back to itself
  // (in a module that declares the routine: the verifier checks the call).
  ir::PrimFunc replayed = replayTrace(parsePrim(kMatmul), t.sch.func().trace);
  EXPECT_TRUE(ir::structuralEqual(replayed, t.sch.func()));
  EXPECT_TRUE(ir::structuralEqual(parsePrim(decl + ir::printFunction(t.sch.func())), t.sch.func()));
  EXPECT_NE(errorOf([&] {
              parsePrim(ir::printFunction(t.sch.func()));
            }).find("calls tensor intrinsic \"tile_4x16x8\", which the module does not declare"),
            std::string::npos);
}

TEST(ScheduleTensorize, ABlockThatBlockizeMade) {
  Tiled t;
  BlockRV o = t.sch.blockize(t.i1);
  t.sch.tensorize(o, "tile_4x16x8");
  const ir::BlockNode* b = findBlockIn(t.sch.func().body, "C_o");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->attrs.at("tensor_intrin").asString(), "tile_4x16x8");
  expectScheduleError([&] { t.sch.tensorize(t.sch.getBlock("C"), "tile_4x16x8"); },
                      "it is not a block that blockize made");
}

TEST(ScheduleTensorize, Refusals) {
  {
    Tiled t(false);
    expectScheduleError([&] { t.sch.tensorize(t.i1, "tile_4x16x8"); },
                        "block \"C\" has an init part; decompose_reduction first");
  }
  {
    Tiled t;
    expectScheduleError(
        [&] { t.sch.tensorize(t.i1, "nothing"); },
        "no tensor intrinsic \"nothing\" is loaded (mlcc-schedule --intrinsics FILE; loaded: ");
  }
  {
    Tiled t;
    expectScheduleError(
        [&] { t.sch.tensorize(t.i1, "tile_sub"); },
        "the nest computes %C[i_0 * 4 + i_1, j_0 * 16 + j_1] + %A[i_0 * 4 + i_1, k_0 * 8 + k_1] * "
        "%B[k_0 * 8 + k_1, j_0 * 16 + j_1] where the description computes %C[i_1, j_1] - %A[i_1, "
        "k_1] * %B[k_1, j_1]");
  }
  {
    Tiled t;
    expectScheduleError([&] { t.sch.tensorize(t.i1, "tile_8x16x8"); },
                        "the loops under loop %i_1 have extents [4, 16, 8], the description's [8, 16, 8]");
  }
  {
    Tiled t;
    expectScheduleError([&] { t.sch.tensorize(t.j1, "tile_4x16x8"); },
                        "the loops under loop %j_1 have extents [16, 8], the description's [4, 16, 8]");
  }
  {
    Tiled t;
    expectScheduleError([&] { t.sch.tensorize(t.i1, "tile_aa"); },
                        "the description's %A is %A in one place and %B in another");
  }
  {
    // Loops in another order: the tile's i and j are swapped.
    Tiled t;
    t.sch.reorder({t.j1, t.i1});
    expectScheduleError([&] { t.sch.tensorize(t.j1, "tile_4x16x8"); }, "have extents [16, 4, 8]");
  }
}

TEST(ScheduleTensorize, LoadingRefusesBadDescriptions) {
  std::string no_library = gemmTile("no_library");
  no_library.erase(no_library.find(" attrs("), std::string(" attrs(library = \"libtile.so\")").size());
  EXPECT_NE(errorOf([&] {
              load("nolib.ir", no_library);
            }).find("tensor intrinsic @no_library: needs attrs(library"),
            std::string::npos);
  const std::string init = gemmTile("with_init", kUpdate, "4, 16, 8",
                                    "          init {\n            %C[%vi, %vj] = 0.0\n          }\n");
  EXPECT_NE(errorOf([&] { load("init.ir", init); }).find("its block has an init part"), std::string::npos);
  EXPECT_NE(errorOf([] {
              load("again.ir", gemmTile("tile_4x16x8", "%C[%vi, %vj] + %A[%vi, %vk]"));
            }).find("registered before with another description or library"),
            std::string::npos);
  EXPECT_TRUE(findTensorIntrin("tile_4x16x8"));
  EXPECT_FALSE(findTensorIntrin("no_library"));
}

}  // namespace
