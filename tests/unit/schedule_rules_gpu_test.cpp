// The default cuda rules and the GPU validity check: verifyGpuFunc's rules
// on hand-written functions, then each rule on prim funcs made the way
// mlcc-legalize makes them (dense, matmul, conv2d + bias + relu, softmax,
// layer_norm, pooling, elementwise chains, symbolic batches): the rule that
// applies, a GPU-valid result with the same meaning, and a trace that
// replays to it.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <optional>
#include <ostream>
#include <vector>

#include "mlcc/frontend/onnx.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/gpu_check.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"
#include "schedule_check.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using mlcc::target::Target;
using namespace mlcc::test;

namespace {

const Target kCuda = Target::parse("cuda");

// Expects verifyGpuFunc to reject `text` with a message containing `what`.
void expectGpuError(const std::string& text, const std::string& what, const Target& t = kCuda) {
  ir::PrimFunc f = parsePrim(text);
  try {
    verifyGpuFunc(f, t);
    ADD_FAILURE() << "expected a GPU check error containing '" << what << "' for\n" << ir::printFunction(f);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// A row sum: one thread block per row, one thread per block.
const std::string kRowSumGpu = fixture("schedule_rules_gpu/row_sum_gpu.ir");

const std::string kRowSum = fixture("schedule_rules_gpu/row_sum.ir");

}  // namespace

// --- verifyGpuFunc -----------------------------------------------------------

TEST(GpuCheck, AcceptsAKernel) { EXPECT_NO_THROW(verifyGpuFunc(parsePrim(kRowSumGpu), kCuda)); }

TEST(GpuCheck, RejectsUnscheduledFunctions) {
  expectGpuError(kRowSum,
                 "block \"sum\" is not inside a GPU kernel: it is not under a loop bound to blockIdx.*");
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_unscheduled_functions.ir"),
                 "block \"copy\" is not inside a GPU kernel: it is not under a loop bound to threadIdx.*");
}

// A loop bound to threadIdx.x inside another: the threads run it together
// (the MLC course's cooperative fetch; schedule_loops_test has the
// accepted case) only when nothing else under the outer loop writes what
// it uses.
TEST(GpuCheck, RejectsNestedThreadLoopsThatDisagreeWithTheInterpreter) {
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_nested_thread_loop.ir"),
                 "%S, which loop %u uses, is written under loop %t outside it");
}

TEST(GpuCheck, RejectsThreadExtents) {
  // symbolic thread extent
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_thread_extents.ir"),
                 "loop %tx bound to threadIdx.x has a non-constant extent");
  // too many threads per block
  const std::string k2048 = fixture("schedule_rules_gpu/k2048.ir");
  expectGpuError(
      k2048,
      "has 2048 threads per block (threadIdx.x 1024 * threadIdx.y 2), over max_threads_per_block 1024");
  Target small = Target::parse("cuda -max-threads-per-block=256");
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_thread_extents_2.ir"), "512 threads per block",
                 small);
  // a thread axis with two extents in one kernel
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_thread_extents_3.ir"),
                 "has extent 16, but loop %tx of the same kernel binds threadIdx.x with extent 32");
  // blockIdx inside threadIdx
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_thread_extents_4.ir"),
                 "loop %bx bound to blockIdx.x is inside loop %tx bound to threadIdx.x");
}

// A loop bound to threadIdx.x whose body is one block reducing over it:
// the threads combine their terms (a reduction across threads; its
// semantics under the CUDA emulation in codegen_cuda_test).
TEST(GpuCheck, AcceptsAReductionAcrossThreads) {
  const std::string sum = fixture("schedule_rules_gpu/gpu_check_reduction_across_threads.ir");
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(sum), kCuda));
  auto variant = [&](const std::string& from, const std::string& to) {
    std::string v = sum;
    v.replace(v.find(from), from.size(), to);
    return v;
  };
  // Another operation than + * max min.
  expectGpuError(
      variant("%b[%v0] + %a", "%b[%v0] - %a"),
      "block \"sum\" reduces across the threads of loop %tx (bound to threadIdx.x), which the GPU "
      "cannot do: block \"sum\" combines with '-' (a reduction across threads needs `C[I] = C[I] op f`, op "
      "one of + * max min)");
  // With an init, the reduced variable must be the thread index itself.
  expectGpuError(
      variant("reduce(32, %tx)", "reduce(32, 31 - %tx)"),
      "reduce iteration variable %vk of block \"sum\" is bound to 31 - tx, not to %tx itself, and the "
      "block has an init (decompose_reduction first)");
  // Its threads meet at barriers: not under an if.
  std::string under_if = variant("    for %tx", "    if %bx < 8 {\n    for %tx");
  under_if.replace(under_if.rfind("  }\n}"), 5, "  }\n  }\n}");
  expectGpuError(under_if,
                 "block \"sum\" reduces across the threads of loop %tx (bound to threadIdx.x) under an if");
}

TEST(GpuCheck, RejectsReductionsAcrossThreads) {
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_reductions_across_threads.ir"),
                 "block \"sum\": loop %tx bound to threadIdx.x carries a reduction (iteration variable %vk");
  // every thread would update the same sums
  expectGpuError(
      fixture("schedule_rules_gpu/gpu_check_rejects_reductions_across_threads_2.ir"),
      "block \"sum\" is a reduction that every threadIdx.x of the kernel at loop %bx (block \"sum\") runs on "
      "the same "
      "elements");
  // the same when the block is outside the threadIdx.y loop of its kernel
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_reductions_across_threads_3.ir"),
                 "block \"sum\" is a reduction that every threadIdx.y of the kernel at loop %bx");
}

TEST(GpuCheck, SharedMemoryPerThreadBlock) {
  // A 1024 x 64 shared buffer of which each thread block uses 16 rows (4 KiB).
  const std::string kStaged = fixture("schedule_rules_gpu/staged.ir");
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(kStaged), kCuda));
  // The same with 256 rows per thread block: 64 KiB.
  std::string big = kStaged;
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"0..64 thread_binding(blockIdx", "0..4 thread_binding(blockIdx"},
        {"%bx * 16", "%bx * 256"},
        {"%i in 0..16", "%i in 0..256"}})
    for (size_t p; (p = big.find(from)) != std::string::npos;) big.replace(p, from.size(), to);
  expectGpuError(big, "needs 65536 bytes of shared memory (%s 65536), over max_shared_memory_bytes 49152");
}

TEST(GpuCheck, SharedMemoryPerReductionStep) {
  // Each step of %ko stages a 64 x 16 tile of %a (4 KiB) that the threads
  // then read: the buffer is allocated per step, though the steps together
  // touch 64 x 1024 elements (256 KiB). The copy's fused index is bounded
  // by its predicate.
  EXPECT_NO_THROW(verifyGpuFunc(
      parsePrim(fixture("schedule_rules_gpu/gpu_check_shared_memory_per_reduction_step.ir")), kCuda));
}

TEST(GpuCheck, RejectsTwoLoopsOfOneAxis) {
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_two_loops_of_one_axis.ir"),
                 "what loop %tx2 runs uses loop %tx (bound to threadIdx.x too)");
}

TEST(GpuCheck, LocalBuffersBelongToOneKernel) {
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_local_buffers_belong_to_one_kernel.ir"),
                 "local buffer %t is used by block \"b\"");
}

// Thread blocks run in no set order and no barrier orders them: what one
// of them reads of a global buffer the kernel writes must be its own.
// Accepted: each thread block reads back its own 16 rows (other threads'
// elements: barriers order those), the grid of two axes flattened into
// one dimension. Rejected: the rows of another thread block, along either
// axis.
TEST(GpuCheck, ThreadBlocksReadOnlyTheirOwnElementsOfAGlobalBuffer) {
  const std::string own = fixture("schedule_rules_gpu/thread_blocks_exchange_in_global.ir");
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(own), kCuda));
  const std::string race =
      "block \"use\" reads global buffer %s, which block \"load\" writes, and it cannot be shown that the "
      "elements one thread block (blockIdx.";
  expectGpuError(fixture("schedule_rules_gpu/gpu_check_rejects_thread_blocks_reading_each_other.ir"), race);
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"%by * 512 + %bx * 16 + 15", "%by * 512 + (31 - %bx) * 16 + 15"},
        {"%by * 512 + %bx * 16 + 15", "(1 - %by) * 512 + %bx * 16 + 15"},
        {"%by * 512 + %bx * 16 + 15 - %i", "%by * 512 + ((%bx + 1) % 32) * 16 + 15 - %i"}}) {
    SCOPED_TRACE(to);
    expectGpuError(replaced(own, from, to), race);
  }
  // A grid of symbolic extent: a row per thread block, read back reversed
  // by the threads (accepted), or the row of another thread block.
  const std::string rows = R"(prim @f(%a: f32[n, 32], %b: f32[n, 32]) {
  alloc_buffer %s: f32[n, 32] global
  for %bx in 0..n thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "load" (%v0 = spatial(n, %bx), %v1 = spatial(32, %tx)) {
        reads(%a[%v0, %v1])
        writes(%s[%v0, %v1])
        %s[%v0, %v1] = %a[%v0, %v1]
      }
    }
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "use" (%v0 = spatial(n, %bx), %v1 = spatial(32, %tx), %v2 = spatial(n, ROW)) {
        reads(%s[%v2, 31 - %v1])
        writes(%b[%v0, %v1])
        %b[%v0, %v1] = %s[%v2, 31 - %v1]
      }
    }
  }
}
)";
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(replaced(rows, "ROW", "%bx")), kCuda));
  expectGpuError(replaced(rows, "ROW", "n - 1 - %bx"), race);
  // Loops fused into one grid axis: a thread block is a tile of 4 rows (%bx
  // / 2) by 32 columns (%bx % 2), read back transposed within the tile
  // (accepted), or the other column tile.
  const std::string tiles = R"(prim @f(%a: f32[64, 64], %b: f32[64, 64]) {
  alloc_buffer %s: f32[64, 64] global
  for %bx in 0..32 thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      for %i in 0..4 {
        block "load" (%v0 = spatial(64, %bx / 2 * 4 + %i), %v1 = spatial(64, %bx % 2 * 32 + %tx)) {
          reads(%a[%v0, %v1])
          writes(%s[%v0, %v1])
          %s[%v0, %v1] = %a[%v0, %v1]
        }
      }
    }
    for %tx in 0..32 thread_binding(threadIdx.x) {
      for %i in 0..4 {
        block "use" (%v0 = spatial(64, %bx / 2 * 4 + %i), %v1 = spatial(64, %bx % 2 * 32 + %tx), %v2 = spatial(64, %bx / 2 * 4 + 3 - %i), %v3 = spatial(64, COLUMN)) {
          reads(%s[%v2, %v3])
          writes(%b[%v0, %v1])
          %b[%v0, %v1] = %s[%v2, %v3]
        }
      }
    }
  }
}
)";
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(replaced(tiles, "COLUMN", "%bx % 2 * 32 + 31 - %tx")), kCuda));
  expectGpuError(replaced(tiles, "COLUMN", "(1 - %bx % 2) * 32 + %tx"), race);
}

// Two thread blocks storing to one element race too (which value stays is
// chance). Accepted: a copy fused into one loop, split over 196 thread
// blocks of 256 threads and back into four dimensions, its divisions
// simplified apart (apart only by the element's offset, b * 256 + t); a
// grid axis split as mixed-radix digits (b / 6, b / 2 % 3, b % 2); a
// reduction's last step that one thread of each block stores (its
// predicate bounds the store). Rejected: the copy with its dimensions
// mixed up, the digits overlapping, the last step stored by more threads.
TEST(GpuCheck, ThreadBlocksWriteDisjointElementsOfAGlobalBuffer) {
  const std::string race =
      "block \"copy\" writes global buffer %y, and it cannot be shown that no two thread blocks (blockIdx.x) "
      "write one element";
  const std::string copy = R"(prim @f(%x: f32[16, 14, 14, 16], %y: f32[16, 14, 14, 16]) {
  for %b in 0..196 thread_binding(blockIdx.x) {
    for %t in 0..256 thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(16, (%b * 256 + %t) / 3136), %v1 = spatial(14, (%b * 256 + %t) / 224 % 14), %v2 = spatial(14, (%b * 16 + %t / 16) % 14), %v3 = spatial(16, %t % 16)) {
        reads(%x[%v0, %v1, %v2, %v3])
        writes(%y[%v0, %v1, %v2, %v3])
        %y[%v0, %v1, %v2, %v3] = %x[%v0, %v1, %v2, %v3]
      }
    }
  }
}
)";
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(copy), kCuda));
  expectGpuError(replaced(copy, "(%b * 16 + %t / 16) % 14", "(%b * 16 + %t / 16) % 7"), race);
  expectGpuError(replaced(copy, "(%b * 256 + %t) / 224 % 14", "(%b * 256 + %t) / 256 % 14"), race);
  const std::string digits = R"(prim @f(%x: f32[2, 3, 2, 64], %y: f32[2, 3, 2, 64]) {
  for %b in 0..12 thread_binding(blockIdx.x) {
    for %t in 0..64 thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(2, %b / 6), %v1 = spatial(3, %b / 2 % 3), %v2 = spatial(2, %b % 2), %v3 = spatial(64, %t)) {
        reads(%x[%v0, %v1, %v2, %v3])
        writes(%y[%v0, %v1, %v2, %v3])
        %y[%v0, %v1, %v2, %v3] = %x[%v0, %v1, %v2, %v3]
      }
    }
  }
}
)";
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(digits), kCuda));
  expectGpuError(replaced(digits, "%b / 2 % 3", "%b / 4 % 3"), race);
  const std::string last = R"(prim @f(%x: f32[130, 128], %y: f32[130]) {
  for %b in 0..3 thread_binding(blockIdx.x) {
    for %t in 0..128 thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(130, %b + %t)) {
        where(%t < 1)
        reads(%x[%v0, 0])
        writes(%y[%v0])
        %y[%v0] = %x[%v0, 0]
      }
    }
  }
}
)";
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(last), kCuda));
  expectGpuError(replaced(last, "where(%t < 1)", "where(%t < 2)"), race);
  expectGpuError(replaced(last, "        where(%t < 1)\n", ""), race);
}

// Two threads of a thread block storing to one element race as well.
// Accepted: a cooperative fetch, the threads' linear index t = ty * 8 + tx
// (one step, t < 30) split by the tile's rows of 10, `t / 10` and `t % 10`;
// the same over several steps f of 32 threads (x = f * 32 + t, x < 90), in
// a loop k whose iterations a barrier separates (the loop also reads the
// buffer), so each holds its own copy. Rejected: rows of 10 read as 8
// (elements of two threads meet), the loop k without the read (no barrier:
// one iteration's threads store over another's), two threads per element
// (t / 2, also as a read-modify-write), and every ty storing the row of
// tx.
TEST(GpuCheck, ThreadsOfAThreadBlockStoreToTheirOwnElements) {
  const std::string race =
      "and it cannot be shown that no two threads of a thread block store to one element";
  const std::string fetch = R"(prim @f(%x: f32[4, 17, 10], %y: f32[4, 2, 32]) {
  alloc_buffer %s: f32[17, 10] shared
  for %b in 0..4 thread_binding(blockIdx.x) {
    for %k in 0..2 {
      for %f in 0..STEPS {
        for %ty in 0..4 thread_binding(threadIdx.y) {
          for %tx in 0..8 thread_binding(threadIdx.x) {
            block "fetch" (%vb = spatial(4, %b), %v0 = spatial(17, %k * 8 + (%f * 32 + %ty * 8 + %tx) / 10), %v1 = spatial(10, (%f * 32 + %ty * 8 + %tx) % 10)) {
              where(%f * 32 + %ty * 8 + %tx < TILE)
              reads(%x[%vb, %v0, %v1])
              writes(%s[%v0, %v1])
              %s[%v0, %v1] = %x[%vb, %v0, %v1]
            }
          }
        }
      }
      for %ty in 0..4 thread_binding(threadIdx.y) {
        for %tx in 0..8 thread_binding(threadIdx.x) {
          block "use" (%v0 = spatial(4, %b), %v1 = spatial(2, %k), %v2 = spatial(32, %ty * 8 + %tx)) {
            reads(%s[%v1 * 8 + %v2 / 10, %v2 % 10])
            writes(%y[%v0, %v1, %v2])
            %y[%v0, %v1, %v2] = %s[%v1 * 8 + %v2 / 10, %v2 % 10]
          }
        }
      }
    }
  }
}
)";
  const std::string one_step = replaced(replaced(fetch, "STEPS", "1"), "TILE", "30");
  const std::string steps = replaced(replaced(fetch, "STEPS", "3"), "TILE", "90");
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(one_step), kCuda));
  EXPECT_NO_THROW(verifyGpuFunc(parsePrim(steps), kCuda));
  expectGpuError(replaced(one_step, "%tx) % 10)", "%tx) % 8)"),
                 "block \"fetch\" stores to shared buffer %s, " + race);
  const std::string use = "%y[%v0, %v1, %v2] = %s[%v1 * 8 + %v2 / 10, %v2 % 10]";
  expectGpuError(replaced(replaced(replaced(steps, use, "%y[%v0, %v1, %v2] = 0.0"),
                                   "reads(%s[%v1 * 8 + %v2 / 10, %v2 % 10])", "reads()"),
                          "%k * 8 + (", "%k * 2 + ("),
                 "block \"fetch\" stores to shared buffer %s, " + race);
  const std::string pairs = R"(prim @f(%x: f32[64], %y: f32[32]) {
  for %b in 0..2 thread_binding(blockIdx.x) {
    for %ty in 0..2 thread_binding(threadIdx.y) {
      for %t in 0..32 thread_binding(threadIdx.x) {
        block "copy" (%v0 = spatial(32, %b * 16 + INDEX), %v1 = spatial(64, %b * 32 + %t)) {
          reads(%x[%v1])
          writes(%y[%v0])
          %y[%v0] = %x[%v1]
        }
      }
    }
  }
}
)";
  expectGpuError(replaced(pairs, "INDEX", "%t / 2"), "block \"copy\" stores to global buffer %y, " + race);
  expectGpuError(replaced(replaced(pairs, "INDEX", "%t % 16"), "0..2 thread_binding(threadIdx.y)",
                          "0..1 thread_binding(threadIdx.y)"),
                 "block \"copy\" stores to global buffer %y, " + race);
  expectGpuError(replaced(replaced(pairs, "32 thread_binding(threadIdx.x)", "16 thread_binding(threadIdx.x)"),
                          "INDEX", "%t"),
                 "block \"copy\" stores to global buffer %y, " +
                     race);  // The same as a spatial block's read-modify-write (not a reduction: the
  // reduction checks do not see it).
  expectGpuError(
      replaced(replaced(replaced(pairs, "INDEX", "%t / 2"), "reads(%x[%v1])", "reads(%y[%v0], %x[%v1])"),
               "%y[%v0] = %x[%v1]", "%y[%v0] = %y[%v0] + %x[%v1]"),
      "block \"copy\" stores to global buffer %y, " + race);
}

// --- the rules on legalized functions -------------------------------------------

namespace {

// The prim funcs of a graph after fuse-ops and legalize.
ir::Module lowered(const std::string& graph) {
  ir::Module m = test::parseVerified(graph);
  transform::PassContext ctx;
  ctx.verify_each = true;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  return m;
}

std::vector<ir::PrimFunc> prims(const ir::Module& m) {
  std::vector<ir::PrimFunc> out;
  for (const auto& f : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&f)) out.push_back(*p);
  return out;
}

struct Scheduled {
  std::string rule;
  ir::PrimFunc func;
  std::string text;  // printed
};

// Schedules every prim func of the lowered graph with the cuda rules and
// checks each: a GPU-valid result, the same meaning (symbolic dimensions
// taking the values of each of `dims`), and a trace that replays to it.
// Returns the results by function name.
std::map<std::string, Scheduled> scheduleGraph(const std::string& graph,
                                               const std::vector<std::map<std::string, int64_t>>& dims = {{}},
                                               const Target& target = kCuda) {
  ir::Module m = lowered(graph);
  std::vector<ir::PrimFunc> before = prims(m);
  auto report = applyDefaultRules(m, target);
  std::vector<ir::PrimFunc> after = prims(m);
  std::map<std::string, Scheduled> out;
  EXPECT_EQ(before.size(), after.size());
  for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
    const ir::PrimFunc& f = after[i];
    Scheduled& r = out[f.name];
    for (const auto& x : report)
      if (x.func == f.name) r.rule = x.rule;
    r.func = f;
    r.text = ir::printFunction(f);
    SCOPED_TRACE(f.name + " scheduled by " + r.rule);
    try {
      verifyGpuFunc(f, target);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\n" << r.text;
    }
    for (const auto& d : dims) test::expectSameMeaning(before[i], f, 1e-4, d);
    ir::PrimFunc replayed = replayTrace(before[i], f.trace);
    EXPECT_TRUE(ir::structuralEqual(replayed, f)) << ir::printFunction(replayed) << "\nvs\n" << r.text;
  }
  return out;
}

// The only prim func of the lowered graph, scheduled and checked.
Scheduled scheduleOne(const std::string& graph,
                      const std::vector<std::map<std::string, int64_t>>& dims = {{}},
                      const Target& target = kCuda) {
  auto all = scheduleGraph(graph, dims, target);
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? Scheduled{} : all.begin()->second;
}

// The number of kernels: top-level loop nests bound to blockIdx.
int kernels(const ir::PrimFunc& f) {
  int n = 0;
  for (const auto& s :
       f.body ? (f.body->as<ir::SeqNode>() ? f.body->as<ir::SeqNode>()->stmts : std::vector<ir::Stmt>{f.body})
              : std::vector<ir::Stmt>{}) {
    const auto* loop = s->as<ir::ForNode>();
    n += loop && loop->loop_kind == ir::LoopKind::thread_binding;
  }
  return n;
}

std::string graph(const std::string& params, const std::string& results, const std::string& body,
                  const std::string& ret) {
  return "\ngraph @main(" + params + ") -> " + results + " attrs(entry = true) {\n  dataflow {\n" + body +
         "  }\n  return " + ret + "\n}\n";
}

}  // namespace

// One graph lowered to a single prim func, scheduled by the cuda rules
// (scheduleOne, with `dims`): the rule that applied, the number of kernels
// where given, text the result must contain and how often some text occurs.
struct OneFuncCase {
  std::string name;
  std::string graph;
  std::string rule;
  std::optional<int> kernels = std::nullopt;
  std::vector<std::string> contains = {};
  std::map<std::string, int> counts = {};
  std::vector<std::map<std::string, int64_t>> dims = {{}};
};

void PrintTo(const OneFuncCase& c, std::ostream* os) { *os << c.name; }

class CudaRuleOnOneFunc : public testing::TestWithParam<OneFuncCase> {};

TEST_P(CudaRuleOnOneFunc, Result) {
  const OneFuncCase& c = GetParam();
  auto r = scheduleOne(c.graph, c.dims);
  EXPECT_EQ(r.rule, c.rule);
  if (c.kernels) {
    EXPECT_EQ(kernels(r.func), *c.kernels) << r.text;
  }
  for (const std::string& part : c.contains)
    EXPECT_NE(r.text.find(part), std::string::npos) << part << " in\n" << r.text;
  for (const auto& [what, n] : c.counts)
    EXPECT_EQ(test::occurrences(r.text, what), n) << what << " in\n" << r.text;
}

INSTANTIATE_TEST_SUITE_P(
    CudaRules, CudaRuleOnOneFunc,
    testing::Values(
        // exp and add inlined into relu.
        OneFuncCase{.name = "ElementwiseChainIsOneKernel",
                    .graph = fixture("schedule_rules_gpu/cuda_rules_elementwise_chain_is_one_kernel.ir"),
                    .rule = "Fallback",
                    .kernels = 1,
                    .contains = {"sample_categorical(candidates = [32, 64, 128, 256, 512]"}},
        // 1000 outputs per row: tiles of 40 (10 threads x 4), the bias and
        // relu in the write-back; the accumulator and two operand tiles.
        OneFuncCase{.name = "DenseIsTiledThroughSharedAndLocalMemory",
                    .graph = fixture(
                        "schedule_rules_gpu/cuda_rules_dense_is_tiled_through_shared_and_local_memory.ir"),
                    .rule = "Matmul",
                    .kernels = 1,
                    // 128 x 1000: at least 128 thread blocks (200 of 8 x 5 threads)
                    .contains = {"n = 3) decision [50, 5, 4]", "n = 3) decision [4, 8, 4]",
                                 "thread_binding(threadIdx.y)"},
                    .counts = {{"alloc_buffer", 3}, {" shared\n", 2}, {" local\n", 1}}},
        OneFuncCase{.name = "DenseWithASymbolicBatch",
                    .graph = fixture("schedule_rules_gpu/cuda_rules_dense_with_a_symbolic_batch.ir"),
                    .rule = "Matmul",
                    .contains = {"in 0..(n + 63) / 64 * 2 thread_binding(blockIdx.x)"},
                    .dims = {{{"n", 37}}, {{"n", 1}}, {{"n", 64}}}},
        OneFuncCase{.name = "BatchMatmul",
                    .graph = fixture("schedule_rules_gpu/cuda_rules_batch_matmul.ir"),
                    .rule = "Matmul",
                    .kernels = 1},
        // One operand is not reused across outputs: one thread per output,
        // the relu in the same thread.
        OneFuncCase{.name = "DepthwiseConvIsAGemv",
                    .graph = fixture("schedule_rules_gpu/cuda_rules_depthwise_conv_is_a_gemv.ir"),
                    .rule = "GEMV",
                    .kernels = 1},
        // The partial sums, then their sum with the bias.
        OneFuncCase{
            .name = "GemvSplitsTheReductionAcrossThreads",
            .graph = fixture("schedule_rules_gpu/cuda_rules_gemv_splits_the_reduction_across_threads.ir"),
            .rule = "GEMV",
            .kernels = 1,
            // each thread's partial sum in a register, the partials added
            // across the threads, the bias added by the first thread
            .contains = {"rfactor(", "%d_rf: f32[128, 1, 1000] local", "%d: f32[1, 1000] local",
                         "      block \"dense\" (%v0 = spatial(1, 0), %v1 = spatial(1000, %ax0_ax1_fused), "
                         "%vk0_1 = reduce(128, %ax2))",
                         "where(%ax0_ax1_fused_0 * 128 + %ax0_ax1_fused_1 < 1)"},
            .counts = {{"thread_binding(threadIdx.x)", 3}}},
        OneFuncCase{
            .name = "LongReductionOfFewOutputsIsSplitAcrossThreads",
            .graph = fixture(
                "schedule_rules_gpu/cuda_rules_long_reduction_of_few_outputs_is_split_across_threads.ir"),
            .rule = "Reduction",
            .kernels = 1,
            .contains = {"rfactor("}}),
    [](const testing::TestParamInfo<OneFuncCase>& info) { return info.param.name; });

TEST(CudaRules, Conv2dBiasReluWithPaddingAndStride) {
  // The padded input is computed straight into shared memory per stage.
  auto r = scheduleOne(
      graph("%x: f32[1, 16, 15, 15], %w: f32[32, 16, 3, 3], %b: f32[1, 32, 1, 1]", "f32[1, 32, 8, 8]",
            "    %c: f32[1, 32, 8, 8] = conv2d(%x, %w, strides = [2, 2], padding = [1, 1, 1, 1])\n"
            "    %cb: f32[1, 32, 8, 8] = add(%c, %b)\n"
            "    %y: f32[1, 32, 8, 8] = relu(%cb)\n",
            "%y"));
  EXPECT_EQ(r.rule, "Matmul");
  EXPECT_EQ(kernels(r.func), 1) << r.text;
  EXPECT_NE(r.text.find("alloc_buffer %pad: f32[1, 16, 17, 17] shared"), std::string::npos) << r.text;
  // 7 x 7 outputs: tiles that do not divide them.
  auto s = scheduleOne(graph("%x: f32[1, 32, 7, 7], %w: f32[64, 32, 3, 3]", "f32[1, 64, 7, 7]",
                             "    %c: f32[1, 64, 7, 7] = conv2d(%x, %w, padding = [1, 1, 1, 1])\n"
                             "    %y: f32[1, 64, 7, 7] = relu(%c)\n",
                             "%y"));
  EXPECT_EQ(s.rule, "Matmul");
}

TEST(CudaRules, FewOutputsOfALongReductionAreSplitOverThreadBlocks) {
  // 49 x 128 outputs of a 1152-long reduction (ResNet's last stage at
  // batch 1, narrower): split-K, partial sums over 4 parts of the input
  // channels, then a kernel adding them up with the bias and relu.
  auto r = scheduleOne(graph("%x: f32[1, 128, 7, 7], %w: f32[128, 128, 3, 3], %b: f32[1, 128, 1, 1]",
                             "f32[1, 128, 7, 7]",
                             "    %c: f32[1, 128, 7, 7] = conv2d(%x, %w, padding = [1, 1, 1, 1])\n"
                             "    %cb: f32[1, 128, 7, 7] = add(%c, %b)\n"
                             "    %y: f32[1, 128, 7, 7] = relu(%cb)\n",
                             "%y"));
  EXPECT_EQ(r.rule, "Matmul");
  EXPECT_EQ(kernels(r.func), 2) << r.text;
  EXPECT_NE(r.text.find("rfactor("), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("alloc_buffer %c_rf: f32[4, 1, 128, 7, 7]"), std::string::npos) << r.text;
  // A short reduction is not split (a 1 x 1 convolution: 128 deep).
  auto s = scheduleOne(graph("%x: f32[1, 128, 7, 7], %w: f32[128, 128, 1, 1]", "f32[1, 128, 7, 7]",
                             "    %y: f32[1, 128, 7, 7] = conv2d(%x, %w)\n", "%y"));
  EXPECT_EQ(s.rule, "Matmul");
  EXPECT_EQ(s.text.find("rfactor("), std::string::npos) << s.text;
}

// A softmax over rows of `softmax_width` and a layer_norm over rows of
// `norm_width`, each scheduled by the GeneralReduction rule into one kernel.
std::map<std::string, Scheduled> softmaxAndLayerNorm(int softmax_width, int norm_width) {
  const std::string s = std::to_string(softmax_width), w = std::to_string(norm_width);
  auto all = scheduleGraph(
      graph("%s: f32[n, " + s + "], %x: f32[2, 8, " + w + "], %g: f32[" + w + "], %b: f32[" + w + "]",
            "(f32[n, " + s + "], f32[2, 8, " + w + "])",
            "    %y: f32[n, " + s + "] = softmax(%s, axis = 1)\n    %z: f32[2, 8, " + w +
                "] = layer_norm(%x, %g, %b, axis = -1, epsilon = 0.001)\n",
            "(%y, %z)"),
      {{{"n", 3}}, {{"n", 70}}});
  for (const char* name : {"fused_softmax", "fused_layer_norm"}) {
    EXPECT_EQ(all[name].rule, "GeneralReduction") << name;
    EXPECT_EQ(kernels(all[name].func), 1) << all[name].text;
  }
  return all;
}

// Rows of 32 elements or more: a thread block per row, its threads
// sharing each reduction (partial results in registers, combined across
// the threads into every thread's registers) and the normalization.
TEST(CudaRules, SoftmaxAndLayerNormSplitRowsAcrossThreads) {
  for (const auto& [name, r] : softmaxAndLayerNorm(100, 64)) {
    SCOPED_TRACE(name);
    EXPECT_EQ(test::occurrences(r.text, "rfactor("), 2) << r.text;
    EXPECT_EQ(test::occurrences(r.text, "_rf: f32[32, "), 2) << r.text;  // 100 and 64 wide: 32 threads
    EXPECT_EQ(test::occurrences(r.text, " shared\n"), 0) << r.text;
    // two partial results, two totals (across the threads), the output
    EXPECT_EQ(test::occurrences(r.text, "thread_binding(threadIdx.x)"), 5) << r.text;
    EXPECT_EQ(test::occurrences(r.text, " local\n"), 4) << r.text;
  }
}

// Shorter rows: a thread block per group of rows, a thread per row.
TEST(CudaRules, SoftmaxAndLayerNormOfShortRowsShareAThreadBlockPerRowGroup) {
  for (const auto& [name, r] : softmaxAndLayerNorm(20, 16)) {
    SCOPED_TRACE(name);
    EXPECT_EQ(test::occurrences(r.text, "rfactor("), 0) << r.text;
    EXPECT_EQ(test::occurrences(r.text, " shared\n"), 2) << r.text;  // the two row statistics
    // each accumulated in a register, stored to shared memory once per row
    EXPECT_EQ(test::occurrences(r.text, "_local: f32[2, 8] local\n") +
                  test::occurrences(r.text, "_local: f32[n] local\n"),
              2)
        << r.text;
  }
}

// An LSTM's steps (a scan): the copies of the initial states, then one
// kernel of one thread block with the step loop inside, each step's blocks
// split over its threads (their semantics under the CUDA emulation in
// codegen_cuda_test). In more thread blocks the steps would not wait for
// each other: the GPU check refuses.
TEST(CudaRules, ScanIsOneThreadBlock) {
  auto r = scheduleOne(graph(
      "%xw: f32[5, 3, 64], %rt: f32[16, 64], %h0: f32[3, 16], %c0: f32[3, 16], %p: f32[48], %lens: i64[3]",
      "f32[5, 3, 16]",
      "    %r: (f32[5, 3, 16], f32[3, 16], f32[3, 16]) = recurrence(%xw, %rt, %h0, %c0, %p, %lens, cell = "
      "\"lstm\")\n    %y: f32[5, 3, 16] = %r[0]\n",
      "%y"));
  EXPECT_EQ(r.rule, "Scan");
  EXPECT_EQ(kernels(r.func), 3) << r.text;
  EXPECT_EQ(test::occurrences(r.text,
                              "for %step_unit in 0..1 thread_binding(blockIdx.x) {\n    for %step in 0..5 {"),
            1)
      << r.text;
  EXPECT_EQ(test::occurrences(r.text, "0..256 thread_binding(threadIdx.x)"), 6)
      << r.text;  // the step's blocks
  std::string wide = r.text;
  const std::string one_block = "%step_unit in 0..1";
  wide.replace(wide.find(one_block), one_block.size(), "%step_unit in 0..2");
  expectGpuError(wide,
                 "is a step of a scan in the kernel at loop %step_unit (block \"recurrence_gates\"), whose "
                 "loop %step_unit binds blockIdx.x with extent 2: a scan's steps need all of its threads in "
                 "one thread block");
}

TEST(CudaRules, PoolingIsAReduction) {
  auto all =
      scheduleGraph(graph("%x: f32[1, 16, 14, 14]", "(f32[1, 16, 7, 7], f32[1, 16, 4, 4], f32[1, 16, 1, 1])",
                          "    %m: f32[1, 16, 7, 7] = max_pool2d(%x, pool_size = [3, 3], strides = [2, 2], "
                          "padding = [1, 1, 1, 1])\n"
                          "    %a: f32[1, 16, 4, 4] = avg_pool2d(%x, pool_size = [3, 3], strides = [3, 3])\n"
                          "    %g: f32[1, 16, 1, 1] = global_avg_pool2d(%x)\n",
                          "(%m, %a, %g)"));
  ASSERT_EQ(all.size(), 3u);
  for (const auto& [name, r] : all) {
    SCOPED_TRACE(name);
    EXPECT_EQ(r.rule, "Reduction");
    // One thread per output, the division in the same thread; the global
    // pool (16 outputs of 196 elements) sums partials over 32 threads, then
    // across them, in the same kernel.
    bool global = name == "fused_global_avg_pool2d";
    EXPECT_EQ(kernels(r.func), 1) << r.text;
    EXPECT_EQ(r.text.find("rfactor(") != std::string::npos, global) << r.text;
  }
}

TEST(CudaRules, RespectTheTargetLimits) {
  const std::string dense = graph("%x: f32[64, 128], %w: f32[128, 128]", "f32[64, 128]",
                                  "    %y: f32[64, 128] = dense(%x, %w)\n", "%y");
  Target few_threads = Target::parse("cuda -max-threads-per-block=64");
  EXPECT_EQ(scheduleOne(dense, {{}}, few_threads).rule, "Matmul");
  // Every rule within a 16-thread limit.
  Target sixteen = Target::parse("cuda -max-threads-per-block=16");
  auto all =
      scheduleGraph(graph("%x: f32[64, 128], %w: f32[128, 128], %s: f32[n, 100], %p: f32[1, 8, 9, 9], "
                          "%v: f32[1, 512], %vw: f32[10, 512]",
                          "(f32[64, 128], f32[n, 100], f32[1, 8, 4, 4], f32[1, 10])",
                          "    %y: f32[64, 128] = dense(%x, %w)\n"
                          "    %z: f32[n, 100] = softmax(%s, axis = 1)\n"
                          "    %q: f32[1, 8, 4, 4] = max_pool2d(%p, pool_size = [3, 3], strides = [2, 2])\n"
                          "    %g: f32[1, 10] = dense(%v, %vw)\n",
                          "(%y, %z, %q, %g)"),
                    {{{"n", 70}}}, sixteen);
  std::map<std::string, std::string> expected = {{"fused_dense", "Matmul"},
                                                 {"fused_softmax", "GeneralReduction"},
                                                 {"fused_max_pool2d", "Reduction"},
                                                 {"fused_dense_1", "GEMV"}};
  for (const auto& [name, rule] : expected) EXPECT_EQ(all[name].rule, rule) << name;
  Target little_shared = kCuda;
  little_shared.max_shared_memory_bytes = 2048;
  EXPECT_EQ(scheduleOne(dense, {{}}, little_shared).rule, "Matmul");
}

TEST(CudaRules, AreDeterministic) {
  const std::string g =
      graph("%x: f32[1, 16, 15, 15], %w: f32[32, 16, 3, 3]", "f32[1, 32, 8, 8]",
            "    %c: f32[1, 32, 8, 8] = conv2d(%x, %w, strides = [2, 2], padding = [1, 1, 1, 1])\n", "%c");
  ir::Module a = lowered(g), b = lowered(g);
  applyDefaultRules(a, kCuda);
  applyDefaultRules(b, kCuda, /*seed=*/7);
  EXPECT_EQ(ir::printModule(a), ir::printModule(b));
}

TEST(CudaRules, RuleNames) {
  EXPECT_EQ(ruleNames(Target::Kind::cuda), (std::vector<std::string>{"Scan", "Matmul", "GEMV", "Reduction",
                                                                     "GeneralReduction", "Fallback"}));
}

// --- ResNet-18 ------------------------------------------------------------------

namespace {

// The prim funcs of an ONNX model after fuse-ops and legalize, each
// scheduled by the cuda rules: every one must be valid for the GPU and, with
// `meaning`, interpret as before.
void checkModel(const std::string& onnx, bool meaning, bool resnet) {
  SCOPED_TRACE(onnx);
  auto imported = frontend::importOnnxFile(onnx);
  ir::Module m = std::move(imported.module);
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  std::vector<ir::PrimFunc> before = prims(m);
  auto report = applyDefaultRules(m, kCuda);
  std::vector<ir::PrimFunc> after = prims(m);
  ASSERT_EQ(before.size(), after.size());
  ASSERT_EQ(report.size(), after.size());
  std::map<std::string, int> rules;
  for (size_t i = 0; i < after.size(); ++i) {
    SCOPED_TRACE(after[i].name + " scheduled by " + report[i].rule);
    ++rules[report[i].rule];
    // Every convolution (and the classifier, a GEMV at batch 1) gets its rule.
    const std::string& name = after[i].name;
    if (resnet && name.rfind("fused_conv2d", 0) == 0) {
      EXPECT_EQ(report[i].rule, "Matmul");
    } else if (resnet && name.rfind("fused_dense", 0) == 0) {
      EXPECT_EQ(report[i].rule, "GEMV");
    }
    EXPECT_NE(report[i].rule, "none");
    try {
      verifyGpuFunc(after[i], kCuda);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
    if (meaning) test::expectSameMeaning(before[i], after[i], 1e-4, {{"batch", 3}});
  }
  std::string summary;
  for (const auto& [rule, count] : rules) summary += " " + rule + " " + std::to_string(count);
  std::cout << onnx << ": " << after.size() << " prim funcs:" << summary << "\n";
}

}  // namespace

// ResNet-18 as the model suite exports it (224 x 224): every prim func valid
// for the GPU after the rules. The same network exported at 64 x 64 (the
// same prim funcs on smaller images, which the interpreter runs in seconds)
// also keeps its meaning, function by function.
TEST(CudaRules, ResNet18EveryPrimFuncIsValidAndKeepsItsMeaning) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"resnet18"}), 0);
  ASSERT_EQ(test::exportResNet18(dir.path(), 64), 0);
  checkModel(dir.file("resnet18.onnx"), false, true);
  checkModel(dir.file("resnet18_64.onnx"), true, true);
}

// The small public models (an MLP with a symbolic batch, the MLC course CNN,
// a Transformer encoder: attention matmuls, softmax, layer norms as ONNX
// spells them, GELU): every prim func valid and equal in meaning.
TEST(CudaRules, SmallPublicModels) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"mlp", "cnn", "transformer"}), 0);
  for (const char* m : {"mlp", "cnn", "transformer"})
    checkModel(dir.file(std::string(m) + ".onnx"), true, false);
}
