// The LLVM kernel emitter and JIT: each construct of TensorIR compiled with
// JitKernel and run on the same inputs as the interpreter (the reference),
// every parameter compared afterwards. Loops of every kind (vectorized with
// a tail, parallel and nested parallel), predicates, reductions with init,
// scheduled matmuls, every math intrinsic against libm, integer floor
// division/modulo of negatives, casts, f16/bf16, allocations, the
// legalized, default-scheduled prim funcs of a small conv net, allocations
// left unzeroed where they are written before read, register tiles kept
// in registers across their reduction loops, and symbolic
// shapes (a symbolic batch through elementwise, dense, softmax and conv
// kernels, for several batch sizes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "mlcc/codegen/llvm.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/alloc_analysis.h"
#include "mlcc/ir/intrinsics.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"
#include "schedule_check.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::test;

namespace {

using Filler = std::function<void(size_t param, ir::Tensor& t)>;
// Values of symbolic dimensions by name.
using Dims = std::map<std::string, int64_t>;

std::vector<int64_t> shapeOf(const ir::Buffer& b, const Dims& dims = {}) {
  std::vector<int64_t> s;
  for (const auto& d : b->shape) {
    int64_t v = 0;
    if (auto* var = d->as<ir::VarNode>(); var && dims.count(var->name))
      v = dims.at(var->name);
    else
      EXPECT_TRUE(ir::asConstInt(d, &v)) << "%" << b->name << ": dimension " << ir::printExpr(d);
    s.push_back(v);
  }
  return s;
}

// The interpreter's results and the compiled kernel's on the same inputs.
struct Runs {
  std::vector<ir::Tensor> interpreted, compiled;
  std::string llvm_ir;  // the optimized kernel
};

Runs runBoth(const ir::PrimFunc& f, const codegen::JitKernel& k, const Filler& fill, uint64_t seed,
             const Dims& dims = {}) {
  Runs r;
  for (size_t i = 0; i < f.params.size(); ++i) {
    ir::Tensor t = interp::randomTensor(f.params[i]->dtype, shapeOf(f.params[i], dims), seed + i);
    if (fill) fill(i, t);
    r.compiled.push_back(t.clone());
    r.interpreted.push_back(std::move(t));
  }
  ir::Module m;
  m.functions.push_back(f);
  interp::Interpreter in(m);
  std::vector<ir::Tensor*> ptrs;
  for (auto& t : r.interpreted) ptrs.push_back(&t);
  in.runPrim(f.name, ptrs);

  std::vector<void*> args;
  for (auto& t : r.compiled) args.push_back(t.mutableBytes());
  std::vector<int64_t> values;
  for (const std::string& name : k.dimNames()) values.push_back(dims.at(name));
  k.run(args, values);
  r.llvm_ir = k.llvmIR();
  return r;
}

Runs runBoth(const ir::PrimFunc& f, const Filler& fill = {}, uint64_t seed = 3,
             const codegen::LLVMOptions& opts = {}) {
  return runBoth(f, codegen::JitKernel::compile(f, opts), fill, seed);
}

// |interpreted - compiled| <= tol * (1 + |interpreted|), NaN == NaN.
void expectSame(const ir::PrimFunc& f, const Runs& r, double tol) {
  for (size_t p = 0; p < f.params.size(); ++p) {
    const ir::Tensor &a = r.interpreted[p], &b = r.compiled[p];
    int bad = 0;
    for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
      double x = a.at(i), y = b.at(i);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (x == y || std::fabs(x - y) <= tol * (1 + std::fabs(x))) continue;
      ADD_FAILURE() << "@" << f.name << " %" << f.params[p]->name << "[" << i << "]: interpreted " << x
                    << ", compiled " << y;
      ++bad;
    }
  }
}

void expectCompiledMatches(const ir::PrimFunc& f, double tol = 0, const Filler& fill = {},
                           const codegen::LLVMOptions& opts = {}, const Dims& dims = {}) {
  SCOPED_TRACE(ir::printFunction(f));
  try {
    expectSame(f, runBoth(f, codegen::JitKernel::compile(f, opts), fill, 3, dims), tol);
  } catch (const Error& e) {
    ADD_FAILURE() << e.format();
  }
}

bool hasVectorCode(const std::string& ir, const std::string& elem = "float") {
  for (const char* lanes : {"<8 x ", "<16 x ", "<32 x ", "<64 x "})
    if (ir.find(std::string(lanes).append(elem).append(">")) != std::string::npos) return true;
  return false;
}

void expectError(const std::function<void()>& fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing \"" << text << "\"";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(text), std::string::npos) << e.message();
  }
}

const std::string kElementwise = fixture("codegen_llvm/elementwise.ir");

const std::string kMatmul = fixture("codegen_llvm/matmul.ir");

const std::string kScale37 = fixture("codegen_llvm/scale37.ir");

}  // namespace

// f32 products feeding an add are fused (fmuladd), so results may differ
// from the interpreter's in the last bits: float comparisons allow 1e-5.
TEST(CodegenLLVM, Elementwise) { expectCompiledMatches(parsePrim(kElementwise), 1e-5); }

TEST(CodegenLLVM, ReductionWithInit) { expectCompiledMatches(parsePrim(kMatmul), 1e-5); }

// 37 split by 16: a `where` predicate guards the tail of the vectorized loop.
TEST(CodegenLLVM, VectorizedLoopWithTail) {
  schedule::Schedule sch(parsePrim(kScale37));
  auto loops = sch.getLoops(sch.getBlock("B"));
  auto jj = sch.split(loops[1], {std::nullopt, int64_t{16}});
  sch.vectorize(jj[1]);
  const ir::PrimFunc& f = sch.func();
  expectCompiledMatches(f, 4e-7);
  codegen::JitKernel k = codegen::JitKernel::compile(f);
  EXPECT_TRUE(hasVectorCode(k.llvmIR())) << k.llvmIR();
  // The tail is masked; the exp calls went to libmvec.
  EXPECT_NE(k.llvmIR().find("llvm.masked.store"), std::string::npos) << k.llvmIR();
  EXPECT_NE(k.llvmIR().find("_ZGV"), std::string::npos) << k.llvmIR();
}

// Rows of 1500 split into 94 vectors of 16: the predicate holds for the
// first 93, which run without it (peel_masked_tails.cpp): plain vector
// stores there, a masked one for the last.
TEST(CodegenLLVM, MaskedTailIsPeeled) {
  schedule::Schedule sch(parsePrim(R"(prim @scale(%A: f32[3, 1500], %B: f32[3, 1500]) {
  for %i in 0..3 {
    for %j in 0..1500 {
      block "B" (%vi = spatial(3, %i), %vj = spatial(1500, %j)) {
        reads(%A[%vi, %vj])
        writes(%B[%vi, %vj])
        %B[%vi, %vj] = %A[%vi, %vj] * 3.0 + exp(%A[%vi, %vj])
      }
    }
  }
}
)"));
  auto loops = sch.getLoops(sch.getBlock("B"));
  auto jj = sch.split(loops[1], {int64_t{94}, int64_t{16}});
  sch.vectorize(jj[1]);
  expectCompiledMatches(sch.func(), 4e-7);
  const std::string ir = codegen::JitKernel::compile(sch.func()).llvmIR();
  EXPECT_NE(ir.find("llvm.masked.store"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <16 x float>"), std::string::npos) << ir;
}

// An elementwise block over its three loops fused and split by 16 lanes,
// rows of 150 (not a multiple of 16): each lane's indices divide the fused
// index ((%f * 16 + %j) / 150 % 150, ...), but the row-major offset is %f *
// 16 + %j, so the emitter loads and stores whole vectors (no gather or
// scatter), with the interpreter's results. (Serial, LLVM finds that
// itself; in a parallel loop's body, which the emitter outlines, it did
// not.)
TEST(CodegenLLVM, FusedElementwiseLoopsLoadWholeVectors) {
  schedule::Schedule sch(parsePrim(R"(prim @r(%A: f32[4, 150, 150], %C: f32[4, 150, 150]) {
  for %i in 0..4 {
    for %j in 0..150 {
      for %k in 0..150 {
        block "C" (%v0 = spatial(4, %i), %v1 = spatial(150, %j), %v2 = spatial(150, %k)) {
          reads(%A[%v0, %v1, %v2])
          writes(%C[%v0, %v1, %v2])
          %C[%v0, %v1, %v2] = select(%A[%v0, %v1, %v2] < 0.0, 0.0, %A[%v0, %v1, %v2])
        }
      }
    }
  }
}
)"));
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto parts = sch.split(sch.fuse(loops), {int64_t{5625}, int64_t{16}});
  sch.vectorize(parts[1]);
  sch.parallel(parts[0]);
  expectCompiledMatches(sch.func(), 0);
  const std::string ir = codegen::JitKernel::compile(sch.func()).llvmIR();
  EXPECT_TRUE(hasVectorCode(ir)) << ir;
  EXPECT_EQ(ir.find("gather"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("scatter"), std::string::npos) << ir;
}

TEST(CodegenLLVM, VectorizedLoopNotDivisible) {
  schedule::Schedule sch(parsePrim(kScale37));
  auto loops = sch.getLoops(sch.getBlock("B"));
  sch.vectorize(loops[1]);
  expectCompiledMatches(sch.func(), 4e-7);
  EXPECT_TRUE(hasVectorCode(codegen::JitKernel::compile(sch.func()).llvmIR()));
}

TEST(CodegenLLVM, UnrolledLoop) {
  schedule::Schedule sch(parsePrim(kScale37));
  auto loops = sch.getLoops(sch.getBlock("B"));
  auto jj = sch.split(loops[1], {std::nullopt, int64_t{4}});
  sch.unroll(jj[1]);
  expectCompiledMatches(sch.func(), 4e-7);
}

TEST(CodegenLLVM, ParallelLoops) {
  schedule::Schedule sch(parsePrim(kElementwise));
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.parallel(loops[0]);
  for (int threads : {0, 1, 3, 8}) {  // 0: the machine's cores
    codegen::LLVMOptions opts;
    opts.num_threads = threads;
    expectCompiledMatches(sch.func(), 1e-5, {}, opts);
  }
  codegen::JitKernel k = codegen::JitKernel::compile(sch.func());
  EXPECT_NE(k.llvmIR().find("mlcc_rt_parallel_for"), std::string::npos);
  EXPECT_EQ(k.llvmIR(), codegen::JitKernel::compile(sch.func()).llvmIR());  // deterministic
}

TEST(CodegenLLVM, NestedParallelLoops) {
  schedule::Schedule sch(parsePrim(kMatmul));
  auto loops = sch.getLoops(sch.getBlock("C"));
  sch.parallel(loops[0]);
  sch.parallel(loops[1]);
  codegen::LLVMOptions opts;
  opts.num_threads = 4;
  expectCompiledMatches(sch.func(), 1e-5, {}, opts);
}

// Matmul tiled as a CPU schedule would: split, reorder, parallel, vectorize,
// and the init decomposed out of the reduction.
TEST(CodegenLLVM, ScheduledMatmul) {
  schedule::Schedule sch(parsePrim(kMatmul));
  schedule::BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  auto i = sch.split(loops[0], {std::nullopt, int64_t{8}});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{16}});
  auto k = sch.split(loops[2], {std::nullopt, int64_t{5}});  // 48 = 10 * 5 - 2: predicate
  sch.reorder({i[0], j[0], k[0], i[1], k[1], j[1]});
  sch.parallel(i[0]);
  sch.vectorize(j[1]);
  sch.decomposeReduction(c, j[0]);
  const ir::PrimFunc& f = sch.func();
  expectCompiledMatches(f, 1e-5);
  const std::string ir = codegen::JitKernel::compile(f).llvmIR();
  EXPECT_TRUE(hasVectorCode(ir)) << ir;
  EXPECT_NE(ir.find("fmuladd.v"), std::string::npos) << ir;  // vector FMAs
}

// `f` matches the interpreter; compiled, C's register tile is promoted (its
// first value one of SROA's, %C_tile.sroa.N...) or not rewritten at all.
// Returns the LLVM IR.
static std::string expectTilePromoted(const ir::PrimFunc& f, bool promoted) {
  expectCompiledMatches(f, 1e-5);
  const std::string ir = codegen::JitKernel::compile(f).llvmIR();
  const size_t tile = ir.find("%C_tile");
  if (promoted) {
    EXPECT_NE(tile, std::string::npos) << ir;
    if (tile != std::string::npos) {
      EXPECT_NE(ir.substr(tile, ir.find_first_of(" =", tile) - tile).find(".sroa."), std::string::npos) << ir;
    }
  } else {
    EXPECT_EQ(tile, std::string::npos) << ir;
  }
  return ir;
}

// expectTilePromoted, and no alloca is left either way.
static void expectTileInRegisters(const ir::PrimFunc& f, bool promoted) {
  const std::string ir = expectTilePromoted(f, promoted);
  EXPECT_EQ(ir.find("alloca"), std::string::npos) << ir;
}

// C[i, j] += A[i, k] * B[k, j] tiled into register tiles of `rows` rows x
// all the columns in 16-lane vectors, the reduction split by 4 and unrolled
// inside: returns the rows' outer loop and the reduction's.
static std::pair<schedule::LoopRV, schedule::LoopRV> tileRowsOfC(schedule::Schedule& sch, int64_t rows) {
  schedule::BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  auto i = sch.split(loops[0], {std::nullopt, rows});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{16}});
  auto k = sch.split(loops[2], {std::nullopt, int64_t{4}});
  sch.reorder({i[0], k[0], k[1], i[1], j[0], j[1]});
  sch.unroll(k[1]);
  sch.unroll(i[1]);
  sch.unroll(j[0]);
  sch.vectorize(j[1]);
  return {i[0], k[0]};
}

// A register tile covering a whole dimension (4 rows x all five 16-lane
// column blocks of an 80-wide C), with an unrolled reduction loop inside it
// that does not move the index: kept in a stack array across the reduction
// loop (register_tiles.cpp) that SROA turns into registers (its promoted
// values are named after it; no alloca of it is left). With a predicate
// (rows split by 5 over 64) the tile is not rewritten. Both match the
// interpreter.
TEST(CodegenLLVM, RegisterTilesKeptInRegisters) {
  for (int64_t rows : {4, 5}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    schedule::Schedule sch(parsePrim(kMatmul));
    auto [row_tiles, reduction] = tileRowsOfC(sch, rows);
    sch.decomposeReduction(sch.getBlock("C"), reduction);
    expectTileInRegisters(sch.func(), /*promoted=*/rows == 4);
  }
}

// A register tile whose vectorized loop spans several vectors (2 rows x all
// 80 columns vectorized as one loop, as the recurrence rule's gate tiles
// are): split into unrolled whole vectors before the tile is promoted, so
// that its elements are constants and SROA keeps them in registers (as one
// 80-lane loop, the emitter looped over five vectors and the tile stayed an
// alloca, loaded and stored around every FMA).
TEST(CodegenLLVM, RegisterTileOfAWideVectorLoopKeptInRegisters) {
  schedule::Schedule sch(parsePrim(kMatmul));
  schedule::BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  auto i = sch.split(loops[0], {std::nullopt, int64_t{2}});
  sch.reorder({i[0], loops[2], i[1], loops[1]});
  sch.unroll(i[1]);
  sch.vectorize(loops[1]);
  sch.decomposeReduction(c, loops[2]);
  expectTileInRegisters(sch.func(), /*promoted=*/true);
}

// Into an intermediate that codegen compacts onto the stack (C, read by an
// epilogue under the same row tile): a tile of up to 16 vectors is left to
// SROA (2 rows x 80 columns: not rewritten), a larger one gets the register
// tile (5 rows x 80 columns: LLVM had kept some of such accumulators in the
// compacted array, loaded and stored around every FMA). Both match the
// interpreter.
TEST(CodegenLLVM, LargeRegisterTilesOfACompactedIntermediate) {
  const std::string text = fixture("codegen_llvm/matmul_relu_intermediate.ir");
  for (int64_t rows : {2, 5}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    schedule::Schedule sch(parsePrim(text));
    auto [row_tiles, reduction] = tileRowsOfC(sch, rows);
    sch.reverseComputeAt(sch.getBlock("D"), row_tiles);
    sch.decomposeReduction(sch.getBlock("C"), reduction);
    expectTilePromoted(sch.func(), /*promoted=*/rows == 5);
  }
}

// Where a loop outside the tile moves it within the compacted array (D
// under a block of two 2-row tiles: the array holds both), even a tile of
// up to 16 vectors gets the register tile: its accumulators have no
// constant place in the array for SROA (LLVM had loaded and stored them
// around every FMA: an Inception-v3 convolution ran at 47 GFLOPS, 104
// with the tile). Matches the interpreter.
TEST(CodegenLLVM, RegisterTilesMovingInACompactedIntermediate) {
  schedule::Schedule sch(parsePrim(fixture("codegen_llvm/matmul_relu_intermediate.ir")));
  auto [row_tiles, reduction] = tileRowsOfC(sch, 2);
  auto row_blocks = sch.split(row_tiles, {std::nullopt, int64_t{2}});
  sch.reverseComputeAt(sch.getBlock("D"), row_blocks[0]);
  sch.decomposeReduction(sch.getBlock("C"), reduction);
  expectTilePromoted(sch.func(), /*promoted=*/true);
}

// A predicate from a non-divisible split, plus a block-level local
// accumulator (cache_write) and a function-level intermediate.
TEST(CodegenLLVM, PredicatesAndAllocations) {
  const std::string text = fixture("codegen_llvm/predicates_and_allocations.ir");
  schedule::Schedule sch(parsePrim(text));
  schedule::BlockRV s = sch.getBlock("S");
  auto loops = sch.getLoops(s);
  sch.split(loops[1], {std::nullopt, int64_t{8}});
  sch.cacheWrite(s, 0, ir::StorageScope::local);
  expectCompiledMatches(sch.func(), 1e-5);
}

// If/else statements inside a vectorized loop, and a reduction whose
// vectorized loop runs over the reduce axis (float sums stay in order).
TEST(CodegenLLVM, IfElseAndVectorizedReduceAxis) {
  const std::string text = fixture("codegen_llvm/if_else_and_vectorized_reduce_axis.ir");
  expectCompiledMatches(parsePrim(text), 1e-5);
}

// Allocations above the stack limit: function-level ones are scratch buffers
// the caller passes, block-level ones calloc'd; both zeroed as in the
// interpreter.
TEST(CodegenLLVM, LargeAllocation) {
  const std::string text = fixture("codegen_llvm/large_allocation.ir");
  ir::PrimFunc f = parsePrim(text);
  expectCompiledMatches(f);
  EXPECT_EQ(codegen::JitKernel::compile(f).llvmIR().find("calloc"), std::string::npos);  // scratch
  // A large block-level buffer is calloc'd (and zeroed on each execution).
  ir::PrimFunc g = parsePrim(fixture("codegen_llvm/large_allocation_2.ir"));
  expectCompiledMatches(g);
  EXPECT_NE(codegen::JitKernel::compile(g).llvmIR().find("calloc"), std::string::npos);
}

// A function alloc is zero-filled unless every read of it follows a write of
// the same elements, and placed per iteration of a loop where each iteration
// uses a box of it of its own (mlcc/ir/alloc_analysis.h). Each fixture's
// name says what the first analysis must find (covered_* or zeroed_*), a
// "# box: LOOP EXTENTS..." line what the second must (none without one); the
// compiled kernel, whose scratch starts as 0xff bytes (NaN), matches the
// interpreter either way (a symbolic dimension n taking 3), so a read that
// the analysis wrongly took as covered, or a box too small, would show.
TEST(CodegenLLVM, AllocationsWrittenBeforeReadAndCompacted) {
  int files = 0, boxes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dataPath("unit/fixtures/written_before_read"))) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    ++files;
    ir::PrimFunc f = parsePrim(fixture("written_before_read/" + name));
    ASSERT_EQ(f.allocs.size(), 1u);
    const bool covered = name.rfind("covered_", 0) == 0;
    const ir::AllocAnalysis analysis = ir::analyzeAllocs(f);
    EXPECT_EQ(analysis.written_before_read.count(f.allocs[0].get()), covered ? 1u : 0u);
    std::string expected_box, got_box;
    const std::string text = readFile(e.path().string());
    if (size_t at = text.find("# box: "); at != std::string::npos)
      expected_box = text.substr(at + 7, text.find('\n', at) - at - 7);
    for (const auto& [buf, box] : analysis.boxes) {
      got_box = box.loop->name;
      for (int64_t x : box.extent) got_box += " " + std::to_string(x);
    }
    EXPECT_EQ(got_box, expected_box);
    boxes += !expected_box.empty();
    expectCompiledMatches(f, 1e-5, {}, {}, {{"n", 3}});  // (n: a symbolic dimension)
  }
  EXPECT_GE(files, 13);
  EXPECT_GE(boxes, 2);
}

// Integer floor division and modulo (negative operands and divisors, by
// constants and by variables), wrapping arithmetic, min/max, comparisons,
// select, bool logic, in i64, i32 and i8.
TEST(CodegenLLVM, IntegerOps) {
  const std::string text = fixture("codegen_llvm/integer_ops.ir");
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> val(-50, 50), div(-7, 7);
  expectCompiledMatches(parsePrim(text), 0, [&](size_t p, ir::Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (p == 1) {  // nonzero divisors, -1 included
        int d = div(rng);
        t.set(i, d == 0 ? -1 : d);
      } else if (p <= 3) {
        t.set(i, val(rng));
      }
    }
  });
}

// The operands of the integer fixtures below: A all bit patterns and small
// values of both signs, N shift amounts -3..70, U u8 values, F floats with
// the specials and values out of every integer range.
static void fillIntegerOperands(std::mt19937_64& rng, size_t p, ir::Tensor& t) {
  const float specials[] = {NAN,    INFINITY, -INFINITY, -0.0f,    255.5f,    256.0f, -1.5f,  300.0f,
                            127.9f, -129.0f,  65535.5f,  70000.0f, -32769.0f, 4.3e9f, -4.3e9f};
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (p == 0) {
      int64_t v = i % 2 ? static_cast<int64_t>(rng()) : static_cast<int64_t>(rng() % 601) - 300;
      std::memcpy(t.mutableBytes() + 8 * i, &v, 8);
    } else if (p == 1) {
      t.set(i, static_cast<double>(i % 74) - 3);
    } else if (p == 2) {
      t.set(i, static_cast<double>((i * 37 + 11) % 256));
    } else if (p == 3) {
      float v = i < static_cast<int64_t>(std::size(specials)) ? specials[i] : static_cast<float>(i * 7) - 200;
      std::memcpy(t.mutableBytes() + 4 * i, &v, 4);
    }
  }
}

// u8 arithmetic (wrapping, division, min/max, comparisons, casts to and
// from floats and other integers) and the integer intrinsics on u8, i8, i32
// and i64, with shift amounts below 0 and at or above the width.
TEST(CodegenLLVM, UnsignedAndBitwise) {
  std::mt19937_64 rng(11);
  expectCompiledMatches(parsePrim(fixture("codegen_llvm/unsigned_and_bitwise.ir")), 0,
                        [&](size_t p, ir::Tensor& t) { fillIntegerOperands(rng, p, t); });
}

// i16, u16 and u32 as u8 above: wrapping arithmetic, floor division and
// modulo, min/max, shifts, bitwise ops, abs and negation, pow, casts from
// floats (saturating) and between widths, comparisons as unsigned.
TEST(CodegenLLVM, NarrowIntegers) {
  std::mt19937_64 rng(12);
  expectCompiledMatches(parsePrim(fixture("codegen_llvm/narrow_integers.ir")), 0,
                        [&](size_t p, ir::Tensor& t) { fillIntegerOperands(rng, p, t); });
}

// f64 arithmetic, math functions and casts to and from every float width
// and i64: the compiled kernel computes what the interpreter does, in double
// (1 + 1e-12 is not 1, as it would be in f32), with values f32 cannot hold,
// integers beyond 2^53 and the specials.
TEST(CodegenLLVM, Float64) {
  const double specials[] = {NAN,           INFINITY, -INFINITY, -0.0, 1e300, -1e300, 1e-310,
                             1.0 + 0x1p-40, 65520.0,  1e20,      -3.5, 2.5,   0.5};
  const auto prim = parsePrim(fixture("codegen_llvm/float64.ir"));
  auto fill = [&](size_t p, ir::Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t n = static_cast<int64_t>(std::size(specials));
      if (p == 0) t.set(i, i < n ? specials[i] : i == n ? 1.0 : (static_cast<double>(i) - 40) * 0.37);
      if (p == 1)
        t.set(i, i < n ? specials[(i + 3) % n] : i == n ? 1.0 : 7.1 - static_cast<double>(i) * 0.29);
      if (p == 2) {
        const int64_t v = i % 2 ? (int64_t{1} << 53) + i : -i * 1000003;
        std::memcpy(t.mutableBytes() + 8 * i, &v, 8);
      }
    }
  };
  expectCompiledMatches(prim, 1e-15, fill);
  const Runs r = runBoth(prim, fill);
  // Its `vectorized` loop calls f64 libm functions, which have no vector form
  // here: the loop is left scalar rather than forced (and warned about).
  EXPECT_EQ(r.llvm_ir.find("llvm.loop.vectorize.enable"), std::string::npos);
  const int64_t n = static_cast<int64_t>(std::size(specials));
  for (const auto* run : {&r.interpreted, &r.compiled}) {
    EXPECT_EQ((*run)[4].at(n * 10), 1.0 + 1e-12);  // %O[n, 0] = 1 + 1 * 1e-12, in double
    EXPECT_EQ((*run)[4].at(7 * 10 + 6),
              static_cast<double>((int64_t{1} << 53) + 8) + static_cast<double>((*run)[3].at(7)) + 1);
  }
}

// pow of i64, i32, i8 and u8: small bases (-5..5) to exponents -3..92 that
// overflow, and arbitrary bit patterns.
TEST(CodegenLLVM, IntegerPow) {
  std::mt19937_64 rng(13);
  expectCompiledMatches(parsePrim(fixture("codegen_llvm/integer_pow.ir")), 0, [&](size_t p, ir::Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (p == 0) {
        int64_t v = i % 3 == 2 ? static_cast<int64_t>(rng()) : i % 11 - 5;
        std::memcpy(t.mutableBytes() + 8 * i, &v, 8);
      } else if (p == 1) {
        t.set(i, static_cast<double>(i) - 3);
      }
    }
  });
}

// Integer division by zero gives 0 in compiled code (the interpreter throws).
TEST(CodegenLLVM, IntegerDivisionByZeroDoesNotTrap) {
  ir::PrimFunc f = parsePrim(fixture("codegen_llvm/integer_division_by_zero_does_not_trap.ir"));
  std::vector<int64_t> a{5, -5, 7, 9}, b{0, 0, 2, -1}, c(4, 42);
  codegen::JitKernel k = codegen::JitKernel::compile(f);
  k.run({a.data(), b.data(), c.data()});
  EXPECT_EQ(c, (std::vector<int64_t>{0, 0, 4, -9}));
}

// Casts between every pair of dtypes, with values that saturate, NaN, inf,
// negative zero and halfway cases of f16/bf16 rounding.
TEST(CodegenLLVM, Casts) {
  const std::string text = fixture("codegen_llvm/casts.ir");
  const float specials[] = {NAN,     INFINITY, -INFINITY, -0.0f,          0.0f,          1e10f,   -1e10f,
                            3e9f,    -3e9f,    127.5f,    -128.7f,        300.0f,        -300.0f, 1e20f,
                            65504.f, 65520.f,  1e-8f,     1.00048828125f, 1.0009765625f, 2.5f,    -2.5f};
  const int64_t ints[] = {0,
                          1,
                          -1,
                          255,
                          256,
                          -129,
                          2147483648,
                          -2147483649,
                          16777217,
                          1 << 30,
                          65519,
                          65521,
                          (1LL << 62) + 1,
                          -(1LL << 62) - 3,
                          9007199254740993LL,
                          33554435,
                          4294967297LL,
                          7};
  std::mt19937 rng(9);
  std::normal_distribution<float> nf(0, 100);
  expectCompiledMatches(parsePrim(text), 0, [&](size_t p, ir::Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (p == 0) {
        float v = i < static_cast<int64_t>(std::size(specials)) ? specials[i] : nf(rng);
        std::memcpy(t.mutableBytes() + 4 * i, &v, 4);
      } else if (p == 1) {
        int64_t v = i < static_cast<int64_t>(std::size(ints)) ? ints[i] : static_cast<int64_t>(nf(rng) * 1e6);
        std::memcpy(t.mutableBytes() + 8 * i, &v, 8);
      }
    }
  });
}

// f16 and bf16 arithmetic: computed in f32 and rounded after each operation.
TEST(CodegenLLVM, HalfPrecision) {
  const std::string text = fixture("codegen_llvm/half_precision.ir");
  expectCompiledMatches(parsePrim(text));
}

// Every math intrinsic of intrinsics.h, vectorized (libmvec) and serial
// (libm), against the interpreter (libm) within 4 ulp, on inputs in its
// domain plus special values.
TEST(CodegenLLVM, MathIntrinsicsWithinFewUlp) {
  auto domain = [](const std::string& n) -> std::pair<float, float> {
    if (n == "log" || n == "log2" || n == "sqrt" || n == "rsqrt") return {1e-3f, 100};
    if (n == "log1p") return {-0.99f, 100};
    if (n == "asin" || n == "acos" || n == "atanh") return {-0.999f, 0.999f};
    if (n == "acosh") return {1, 100};
    if (n == "tan") return {-1.5f, 1.5f};
    if (n == "exp" || n == "exp2" || n == "expm1" || n == "sinh" || n == "cosh") return {-20, 20};
    if (n == "pow") return {0.01f, 4};
    return {-10, 10};
  };
  auto ulps = [](float a, float b) -> int64_t {
    if (std::isnan(a) && std::isnan(b)) return 0;
    if (a == b) return 0;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return 1 << 30;
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    int64_t x = ia < 0 ? INT32_MIN - static_cast<int64_t>(ia) : ia;
    int64_t y = ib < 0 ? INT32_MIN - static_cast<int64_t>(ib) : ib;
    return std::abs(x - y);
  };
  for (const ir::IntrinsicInfo& info : ir::allIntrinsics()) {
    if (!ir::intrinsicAccepts(info, ir::DType::f32)) continue;  // the integer ones: IntegerIntrinsics below
    const std::string n(info.name);
    const bool pred = info.result == ir::IntrinsicResult::Bool;
    for (const char* kind : {"vectorized", "serial"}) {
      std::string call = n + "(%A[%vi]" + (info.arity == 2 ? ", %B[%vi])" : ")");
      std::string out = pred ? "cast<f32>(" + call + ")" : call;
      std::string text = "prim @m(%A: f32[300], %B: f32[300], %C: f32[300]) {\n  for %i in 0..300 " +
                         std::string(kind) +
                         " {\n    block \"C\" (%vi = spatial(300, %i)) {\n      reads(%A[%vi], %B[%vi])\n"
                         "      writes(%C[%vi])\n      %C[%vi] = " +
                         out + "\n    }\n  }\n}\n";
      SCOPED_TRACE(n + " " + kind);
      ir::PrimFunc f = parsePrim(text);
      auto [lo, hi] = domain(n);
      std::mt19937 rng(17);
      std::uniform_real_distribution<float> u(lo, hi), ex(-3, 3);
      const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 0.5f};
      const float exp_edges[] = {-1e30f, -150.0f, -104.5f, -104.0f, -103.97f, -103.9f, -95.0f,
                                 -87.5f, 88.7f,   88.8f,   89.0f,   89.5f,    150.0f,  1e30f};
      Runs r;
      try {
        r = runBoth(f, [&](size_t p, ir::Tensor& t) {
          for (int64_t i = 0; i < t.numel(); ++i) {
            float v = p == 1 && n == "pow" ? ex(rng) : u(rng);
            if (p == 0 && i < static_cast<int64_t>(std::size(specials))) v = specials[i];
            // exp's inputs around those it answers without the call (0 below
            // -104, infinity above 89) and those whose result is a denormal.
            const size_t e = static_cast<size_t>(i) - std::size(specials);
            if (p == 0 && (n == "exp" || n == "sigmoid") && e < std::size(exp_edges)) v = exp_edges[e];
            if (p == 0 && n == "round" && i < 20) v = static_cast<float>(i) - 9.5f;  // halfway cases
            t.set(i, v);
          }
        });
      } catch (const Error& e) {
        ADD_FAILURE() << e.format();
        continue;
      }
      if (std::string(kind) == "vectorized") {
        EXPECT_TRUE(hasVectorCode(r.llvm_ir)) << r.llvm_ir;
      }
      int64_t worst = 0, at = 0;
      for (int64_t i = 0; i < 300; ++i) {
        int64_t d = ulps(r.interpreted[2].data<float>()[i], r.compiled[2].data<float>()[i]);
        if (d > worst) worst = d, at = i;
      }
      EXPECT_LE(worst, 4) << "at input " << r.interpreted[0].data<float>()[at] << ": libm "
                          << r.interpreted[2].data<float>()[at] << ", compiled "
                          << r.compiled[2].data<float>()[at];
    }
  }
}

TEST(CodegenLLVM, VectorMathUsesLibmvec) {
  ir::PrimFunc f = parsePrim(fixture("codegen_llvm/vector_math_uses_libmvec.ir"));
  codegen::JitKernel k = codegen::JitKernel::compile(f);
  for (const char* fn : {"tanhf", "erff", "expf"})
    EXPECT_NE(k.llvmIR().find(std::string("v_") + fn), std::string::npos) << fn << "\n" << k.llvmIR();
}

// Vector math variants follow the target CPU: no AVX-512 calls for haswell.
TEST(CodegenLLVM, VectorMathFollowsTargetCPU) {
  ir::PrimFunc f = parsePrim(fixture("codegen_llvm/vector_math_follows_target_cpu.ir"));
  codegen::LLVMOptions haswell;
  haswell.mcpu = "haswell";
  codegen::JitKernel k = codegen::JitKernel::compile(f, haswell);
  EXPECT_NE(k.llvmIR().find("_ZGVdN8v_tanhf"), std::string::npos) << k.llvmIR();
  EXPECT_EQ(k.llvmIR().find("_ZGVeN16v_"), std::string::npos) << k.llvmIR();
  expectCompiledMatches(f, 4e-7, {}, haswell);
}

TEST(CodegenLLVM, RefusesWhatItCannotCompile) {
  ir::PrimFunc cuda = parsePrim(fixture("codegen_llvm/refuses_what_it_cannot_compile.ir"));
  expectError([&] { codegen::JitKernel::compile(cuda); }, "compile with the cuda target");
  ir::PrimFunc sym = parsePrim(fixture("codegen_llvm/refuses_what_it_cannot_compile_2.ir"));
  codegen::JitKernel ks = codegen::JitKernel::compile(sym);
  EXPECT_EQ(ks.dimNames(), std::vector<std::string>{"n"});
  std::vector<float> a(4), b(4);
  expectError([&] { ks.run({a.data(), b.data()}); }, "expects 1 symbolic dimension values, got 0");
  expectError([&] { ks.run({a.data(), b.data()}, {-1}); }, "symbolic dimension 'n' is -1");
  ir::PrimFunc f = parsePrim(kElementwise);
  codegen::JitKernel k = codegen::JitKernel::compile(f);
  expectError([&] { k.run({nullptr}); }, "expects 3 arguments");
  expectError([&] { k.run({nullptr, nullptr, nullptr}, {4}); }, "expects 0 symbolic dimension values, got 1");
}

namespace {

// A graph module fused, legalized and (when `scheduled`) scheduled by the
// default CPU rules.
ir::Module lowered(const std::string& text, bool scheduled = true) {
  ir::Module m = ir::parseModule(text, "net.ir");
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  transform::PassContext pctx;
  pctx.verify_each = true;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), pctx);
  // A small parallel grain: these small functions get the parallel loops
  // the rules give large ones, and the compiled parallel loops are checked.
  if (scheduled) schedule::applyDefaultRules(m, target::Target::parse("llvm -parallel-grain=16384"));
  ir::verifyModule(m, mlcc::ops::opTypeInfo());
  return m;
}

std::vector<const ir::PrimFunc*> primFuncs(const ir::Module& m) {
  std::vector<const ir::PrimFunc*> r;
  for (const auto& fn : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&fn)) r.push_back(p);
  return r;
}

}  // namespace

// A small conv net, legalized and scheduled by the default CPU rules: every
// prim func compiled matches the interpreter. (Sized so that the convolutions
// and the pool have enough work to run in parallel.)
TEST(CodegenLLVM, DefaultScheduledConvNet) {
  ir::Module m = lowered(R"(mlcc.ir 1

graph @main(%x: f32[1, 3, 64, 64], %w1: f32[16, 3, 3, 3], %b1: f32[1, 16, 1, 1], %w2: f32[16, 16, 3, 3], %fc: f32[10, 16]) -> f32[1, 10] {
  dataflow {
    %c1: f32[1, 16, 64, 64] = conv2d(%x, %w1, padding = [1, 1, 1, 1])
    %a1: f32[1, 16, 64, 64] = add(%c1, %b1)
    %r1: f32[1, 16, 64, 64] = relu(%a1)
    %p1: f32[1, 16, 32, 32] = max_pool2d(%r1, pool_size = [2, 2], strides = [2, 2])
    %c2: f32[1, 16, 16, 16] = conv2d(%p1, %w2, strides = [2, 2], padding = [1, 1, 1, 1])
    %r2: f32[1, 16, 16, 16] = relu(%c2)
    %g: f32[1, 16, 1, 1] = global_avg_pool2d(%r2)
    %f: f32[1, 16] = reshape(%g, shape = [1, 16])
    %y: f32[1, 10] = dense(%f, %fc)
    %s: f32[1, 10] = sigmoid(%y)
  }
  return %s
}
)");
  int prims = 0, parallel_and_vectorized = 0;
  for (const ir::PrimFunc* p : primFuncs(m)) {
    ++prims;
    const std::string text = ir::printFunction(*p);
    if (text.find(" parallel {") != std::string::npos && text.find(" vectorized {") != std::string::npos)
      ++parallel_and_vectorized;
    expectCompiledMatches(*p, 1e-4);
  }
  EXPECT_GE(prims, 5);
  EXPECT_GE(parallel_and_vectorized, 3);  // the rules' loops are what got compiled
}

// The layout moves of the default rules compiled (llvm_layout_moves.cpp):
// a flatten of NCHW16c split at its periods (the divisions resolved over the
// loops' ranges), and NCHW to NCHW3c with the width vectorized and the
// channels unrolled inside it (interleaved stores); odd extents leave vector
// tails. Each kernel matches the interpreter.
TEST(CodegenLLVM, DefaultScheduledLayoutMoves) {
  ir::Module m = lowered(R"(mlcc.ir 1

graph @main(%x: f32[1, 2, 13, 13, 16], %i: f32[2, 3, 20, 37]) -> (f32[1, 5408], f32[2, 1, 20, 37, 3]) {
  dataflow {
    %t: f32[1, 32, 13, 13] = layout_transform(%x, dst_layout = "NCHW", src_layout = "NCHW16c")
    %f: f32[1, 5408] = reshape(%t, shape = [1, 5408])
    %b: f32[2, 1, 20, 37, 3] = layout_transform(%i, dst_layout = "NCHW3c", src_layout = "NCHW")
  }
  return (%f, %b)
}
)");
  int vectorized = 0;
  for (const ir::PrimFunc* p : primFuncs(m)) {
    vectorized += ir::printFunction(*p).find(" vectorized {") != std::string::npos;
    expectCompiledMatches(*p, 0);
  }
  EXPECT_EQ(vectorized, 2);
}

// Matmuls whose vector operand the default rule packs into panels
// (transform_layout to [.., j / lanes, k, j % lanes], a copy block): a
// matmul's row-major B (one and two vectors per register-tile row), a
// dense's W[j, k] and a batch matmul's B, and dense_pack's weight packed
// already (no copy). Code generation resolves the
// packed reads' divisions with the loop ranges; every kernel matches the
// interpreter.
TEST(CodegenLLVM, DefaultScheduledPackedMatmuls) {
  ir::Module m = lowered(R"(mlcc.ir 1

graph @main(%a: f32[96, 200], %b: f32[200, 112], %c: f32[64, 256], %d: f32[256, 256], %x: f32[64, 96], %w: f32[80, 96], %p: f32[2, 64, 128], %q: f32[2, 128, 128], %wp: f32[5, 96, 16]) -> (f32[96, 112], f32[64, 256], f32[64, 80], f32[2, 64, 128], f32[64, 80]) {
  dataflow {
    %ab: f32[96, 112] = matmul(%a, %b)
    %cd: f32[64, 256] = matmul(%c, %d)
    %xw: f32[64, 80] = dense(%x, %w)
    %pq: f32[2, 64, 128] = matmul(%p, %q)
    %xwp: f32[64, 80] = dense_pack(%x, %wp)
  }
  return (%ab, %cd, %xw, %pq, %xwp)
}
)");
  int prims = 0;
  for (const ir::PrimFunc* p : primFuncs(m)) {
    ++prims;
    if (p->name.find("dense_pack") == std::string::npos) {
      EXPECT_NE(ir::printTrace(p->trace).find("transform_layout("), std::string::npos)
          << ir::printFunction(*p);
    }
    expectCompiledMatches(*p, 1e-4);
  }
  EXPECT_EQ(prims, 5);
}

// ---- symbolic shapes: kernels take their symbolic dimensions as arguments ----

namespace {

// Compiles `f` once and compares it with the interpreter for each batch
// size n (the other symbolic dimensions as given).
void expectMatchesForEachN(const ir::PrimFunc& f, double tol, const std::vector<int64_t>& ns = {1, 3, 17, 64},
                           Dims dims = {}) {
  SCOPED_TRACE(ir::printFunction(f));
  try {
    codegen::JitKernel k = codegen::JitKernel::compile(f);
    EXPECT_FALSE(k.dimNames().empty());
    for (int64_t n : ns) {
      SCOPED_TRACE("n = " + std::to_string(n));
      dims["n"] = n;
      expectSame(f, runBoth(f, k, {}, 3 + n, dims), tol);
    }
  } catch (const Error& e) {
    ADD_FAILURE() << e.format();
  }
}

// Every prim func of a lowered module, for each n.
void expectModuleMatchesForEachN(const ir::Module& m, double tol, int min_prims) {
  int prims = 0;
  for (const ir::PrimFunc* p : primFuncs(m)) {
    ++prims;
    expectMatchesForEachN(*p, tol);
  }
  EXPECT_GE(prims, min_prims);
}

const char* kSymbolicMlp = R"(mlcc.ir 1

graph @main(%x: f32[n, 40], %w: f32[24, 40], %b: f32[24], %w2: f32[24, 10]) -> f32[n, 10] {
  dataflow {
    %y: f32[n, 24] = dense(%x, %w)
    %a: f32[n, 24] = add(%y, %b)
    %r: f32[n, 24] = relu(%a)
    %z: f32[n, 10] = matmul(%r, %w2)
    %s: f32[n, 10] = softmax(%z, axis = 1)
  }
  return %s
}
)";

}  // namespace

TEST(CodegenSymbolic, ElementwiseWithVectorTail) {
  ir::PrimFunc f = parsePrim(fixture("codegen_llvm/codegen_symbolic_elementwise_with_vector_tail.ir"));
  expectMatchesForEachN(f, 1e-5, {0, 1, 3, 17, 64});
  // The rows fused with the columns, split by 16 (a `where` predicate on the
  // symbolic extent n * 33), the outer part parallel, the inner vectorized.
  schedule::Schedule sch(f);
  auto loops = sch.getLoops(sch.getBlock("C"));
  auto fused = sch.fuse({loops[0], loops[1]});
  auto parts = sch.split(fused, {std::nullopt, int64_t{16}});
  sch.parallel(parts[0]);
  sch.vectorize(parts[1]);
  expectMatchesForEachN(sch.func(), 1e-5);
  const std::string ir = codegen::JitKernel::compile(sch.func()).llvmIR();
  EXPECT_TRUE(hasVectorCode(ir)) << ir;
  EXPECT_NE(ir.find("mlcc_rt_parallel_for"), std::string::npos);
}

// Symbolic dimensions that are not the first: a vectorized loop over m.
TEST(CodegenSymbolic, SeveralSymbolicDimensions) {
  ir::PrimFunc f = parsePrim(fixture("codegen_llvm/codegen_symbolic_several_symbolic_dimensions.ir"));
  EXPECT_EQ(codegen::JitKernel::compile(f).dimNames(), (std::vector<std::string>{"n", "m"}));
  for (int64_t m : {1, 7, 16, 45}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    expectMatchesForEachN(f, 4e-7, {1, 3, 17}, {{"m", m}});
  }
}

// Dense + bias + relu with a symbolic batch, then matmul and softmax, as the
// default rules schedule them.
TEST(CodegenSymbolic, DefaultScheduledMlp) { expectModuleMatchesForEachN(lowered(kSymbolicMlp), 1e-5, 3); }

// The dense + bias + relu tiled by hand with tiles that do not divide n
// (nor 24): predicates on the symbolic extent, a vectorized loop with a
// tail, a parallel loop over ceil(n / 4) tiles, a function-level
// intermediate of symbolic shape.
TEST(CodegenSymbolic, DenseTiledByNonDivisibleFactors) {
  ir::Module m = lowered(kSymbolicMlp, false);
  const ir::PrimFunc* dense = nullptr;
  for (const ir::PrimFunc* p : primFuncs(m))
    if (p->name.find("dense") != std::string::npos) dense = p;
  ASSERT_TRUE(dense);
  schedule::Schedule sch(*dense);
  schedule::BlockRV c = sch.getBlock("dense");
  auto loops = sch.getLoops(c);
  ASSERT_EQ(loops.size(), 3u);
  auto i = sch.split(loops[0], {std::nullopt, int64_t{4}});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{16}});
  sch.reorder({i[0], j[0], loops[2], i[1], j[1]});
  sch.parallel(i[0]);
  sch.vectorize(j[1]);
  sch.decomposeReduction(c, loops[2]);
  const std::string text = ir::printFunction(sch.func());
  EXPECT_NE(text.find("where"), std::string::npos) << text;
  expectMatchesForEachN(sch.func(), 1e-5, {1, 3, 5, 17, 64});
}

TEST(CodegenSymbolic, DefaultScheduledConvAndReductions) {
  ir::Module m = lowered(R"(mlcc.ir 1

graph @main(%x: f32[n, 3, 10, 10], %w1: f32[8, 3, 3, 3], %b1: f32[1, 8, 1, 1], %fc: f32[5, 8]) -> f32[n, 5] {
  dataflow {
    %c1: f32[n, 8, 10, 10] = conv2d(%x, %w1, padding = [1, 1, 1, 1])
    %a1: f32[n, 8, 10, 10] = add(%c1, %b1)
    %r1: f32[n, 8, 10, 10] = relu(%a1)
    %p1: f32[n, 8, 5, 5] = max_pool2d(%r1, pool_size = [2, 2], strides = [2, 2])
    %g: f32[n, 8, 1, 1] = global_avg_pool2d(%p1)
    %f: f32[n, 8] = reshape(%g, shape = [n, 8])
    %y: f32[n, 5] = dense(%f, %fc)
    %s: f32[n, 5] = softmax(%y, axis = 1)
  }
  return %s
}
)");
  expectModuleMatchesForEachN(m, 1e-4, 4);
}

// --bounds-check: indices read from memory, which no verifier can know. In
// bounds, the kernel computes as without checks; out of bounds (negative
// too), the access is skipped and the run fails naming the prim func, block,
// buffer, indices and shape (also from an outlined parallel loop).
TEST(CodegenLLVM, BoundsCheck) {
  const ir::PrimFunc f = parsePrim(R"(prim @gather(%x: f32[12], %idx: i64[4], %y: f32[2, 2]) {
  for %i in 0..4 parallel {
    block "gather" (%vi = spatial(4, %i)) {
      reads(%x[0 +: 12], %idx[%vi])
      writes(%y[0 +: 2, 0 +: 2])
      %y[%idx[%vi] / 4, %vi % 2] = %x[%idx[%vi]]
    }
  }
}
)");
  codegen::LLVMOptions opts;
  opts.bounds_check = true;
  codegen::JitKernel k = codegen::JitKernel::compile(f, opts);
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, y(4, -1.0f);
  std::vector<int64_t> idx = {0, 3, 6, 5};
  k.run({x.data(), idx.data(), y.data()});
  EXPECT_EQ(y, (std::vector<float>{0, 3, 6, 5}));
  auto expectRunError = [&](std::vector<int64_t> bad, const std::string& message) {
    idx = std::move(bad);
    try {
      k.run({x.data(), idx.data(), y.data()});
      ADD_FAILURE() << "no error; expected " << message;
    } catch (const mlcc::Error& e) {
      EXPECT_NE(e.message().find(message), std::string::npos) << e.message();
    }
  };
  expectRunError(
      {0, 1, 2, 1000000007},
      "prim func @gather, block \"gather\": load from %x[1000000007] is out of bounds of shape [12]");
  // The value (the load) comes before the store's address; the first error wins.
  expectRunError({0, 1, -2, 3}, "block \"gather\": load from %x[-2] is out of bounds of shape [12]");
  // In bounds of %x, but row 9 / 4 = 2 of %y is not.
  expectRunError({0, 9, 2, 3}, "block \"gather\": store to %y[2, 1] is out of bounds of shape [2, 2]");
  // Without the option, no checks are compiled in.
  EXPECT_EQ(codegen::JitKernel::compile(f).llvmIR().find("mlcc_rt_bounds_error"), std::string::npos);
  EXPECT_NE(k.llvmIR().find("mlcc_rt_bounds_error"), std::string::npos);
}
