// The default cuda rules and the GPU validity check: verifyGpuFunc's rules
// on hand-written functions, then each rule on prim funcs made the way
// mlcc-legalize makes them (dense, matmul, conv2d + bias + relu, softmax,
// layer_norm, pooling, elementwise chains, symbolic batches): the rule that
// applies, a GPU-valid result with the same meaning, and a trace that
// replays to it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/structural.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/gpu_check.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"
#include "schedule_check.h"
#include "mlcc/frontend/onnx.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::schedule;
using mlcc::test::parsePrim;

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
const char* kRowSumGpu = R"(
prim @f(%a: f32[64, 32], %b: f32[64]) {
  for %bx in 0..64 thread_binding(blockIdx.x) {
    for %tx in 0..1 thread_binding(threadIdx.x) {
      for %k in 0..32 {
        block "sum" (%v0 = spatial(64, %bx + %tx), %vk = reduce(32, %k)) {
          reads(%a[%v0, %vk])
          writes(%b[%v0])
          init {
            %b[%v0] = 0.0
          }
          %b[%v0] = %b[%v0] + %a[%v0, %vk]
        }
      }
    }
  }
}
)";

const char* kRowSum = R"(
prim @f(%a: f32[64, 32], %b: f32[64]) {
  for %i in 0..64 {
    for %k in 0..32 {
      block "sum" (%v0 = spatial(64, %i), %vk = reduce(32, %k)) {
        reads(%a[%v0, %vk])
        writes(%b[%v0])
        init {
          %b[%v0] = 0.0
        }
        %b[%v0] = %b[%v0] + %a[%v0, %vk]
      }
    }
  }
}
)";

}  // namespace

// --- verifyGpuFunc -----------------------------------------------------------

TEST(GpuCheck, AcceptsAKernel) { EXPECT_NO_THROW(verifyGpuFunc(parsePrim(kRowSumGpu), kCuda)); }

TEST(GpuCheck, RejectsUnscheduledFunctions) {
  expectGpuError(kRowSum,
                 "block \"sum\" is not inside a GPU kernel: it is not under a loop bound to blockIdx.*");
  expectGpuError(R"(
prim @f(%a: f32[64], %b: f32[64]) {
  for %bx in 0..64 thread_binding(blockIdx.x) {
    block "copy" (%v0 = spatial(64, %bx)) {
      reads(%a[%v0])
      writes(%b[%v0])
      %b[%v0] = %a[%v0]
    }
  }
}
)",
                 "block \"copy\" is not inside a GPU kernel: it is not under a loop bound to threadIdx.*");
}

TEST(GpuCheck, RejectsThreadExtents) {
  // symbolic thread extent
  expectGpuError(R"(
prim @f(%a: f32[n], %b: f32[n]) {
  for %bx in 0..1 thread_binding(blockIdx.x) {
    for %tx in 0..n thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(n, %tx)) {
        reads(%a[%v0])
        writes(%b[%v0])
        %b[%v0] = %a[%v0]
      }
    }
  }
}
)",
                 "loop %tx bound to threadIdx.x has a non-constant extent");
  // too many threads per block
  const char* k2048 = R"(
prim @f(%a: f32[2048], %b: f32[2048]) {
  for %bx in 0..1 thread_binding(blockIdx.x) {
    for %ty in 0..2 thread_binding(threadIdx.y) {
      for %tx in 0..1024 thread_binding(threadIdx.x) {
        block "copy" (%v0 = spatial(2048, %ty * 1024 + %tx)) {
          reads(%a[%v0])
          writes(%b[%v0])
          %b[%v0] = %a[%v0]
        }
      }
    }
  }
}
)";
  expectGpuError(
      k2048,
      "has 2048 threads per block (threadIdx.x 1024 * threadIdx.y 2), over max_threads_per_block 1024");
  Target small = Target::parse("cuda -max-threads-per-block=256");
  expectGpuError(R"(
prim @f(%a: f32[512], %b: f32[512]) {
  for %bx in 0..1 thread_binding(blockIdx.x) {
    for %tx in 0..512 thread_binding(threadIdx.x) {
      block "copy" (%v0 = spatial(512, %tx)) {
        reads(%a[%v0])
        writes(%b[%v0])
        %b[%v0] = %a[%v0]
      }
    }
  }
}
)",
                 "512 threads per block", small);
  // a thread axis with two extents in one kernel
  expectGpuError(R"(
prim @f(%a: f32[64], %b: f32[64], %c: f32[64]) {
  for %bx in 0..2 thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "b" (%v0 = spatial(64, %bx * 32 + %tx)) {
        reads(%a[%v0])
        writes(%b[%v0])
        %b[%v0] = %a[%v0]
      }
    }
    for %tx in 0..16 thread_binding(threadIdx.x) {
      for %i in 0..2 {
        block "c" (%v0 = spatial(64, %bx * 32 + %tx * 2 + %i)) {
          reads(%a[%v0])
          writes(%c[%v0])
          %c[%v0] = %a[%v0]
        }
      }
    }
  }
}
)",
                 "has extent 16, but loop %tx of the same kernel binds threadIdx.x with extent 32");
  // blockIdx inside threadIdx
  expectGpuError(R"(
prim @f(%a: f32[64], %b: f32[64]) {
  for %tx in 0..8 thread_binding(threadIdx.x) {
    for %bx in 0..8 thread_binding(blockIdx.x) {
      block "copy" (%v0 = spatial(64, %bx * 8 + %tx)) {
        reads(%a[%v0])
        writes(%b[%v0])
        %b[%v0] = %a[%v0]
      }
    }
  }
}
)",
                 "loop %bx bound to blockIdx.x is inside loop %tx bound to threadIdx.x");
}

TEST(GpuCheck, RejectsReductionsAcrossThreads) {
  expectGpuError(R"(
prim @f(%a: f32[64, 32], %b: f32[64]) {
  for %bx in 0..64 thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "sum" (%v0 = spatial(64, %bx), %vk = reduce(32, %tx)) {
        reads(%a[%v0, %vk])
        writes(%b[%v0])
        init {
          %b[%v0] = 0.0
        }
        %b[%v0] = %b[%v0] + %a[%v0, %vk]
      }
    }
  }
}
)",
                 "block \"sum\": loop %tx bound to threadIdx.x carries a reduction (iteration variable %vk");
  // every thread would update the same sums
  expectGpuError(
      R"(
prim @f(%a: f32[64, 32], %b: f32[64]) {
  for %bx in 0..64 thread_binding(blockIdx.x) {
    for %tx in 0..4 thread_binding(threadIdx.x) {
      for %k in 0..32 {
        block "sum" (%v0 = spatial(64, %bx), %vk = reduce(32, %k)) {
          reads(%a[%v0, %vk])
          writes(%b[%v0])
          init {
            %b[%v0] = 0.0
          }
          %b[%v0] = %b[%v0] + %a[%v0, %vk]
        }
      }
    }
  }
}
)",
      "block \"sum\" is a reduction that every threadIdx.x of the kernel at loop %bx (block \"sum\") runs on "
      "the same "
      "elements");
  // the same when the block is outside the threadIdx.y loop of its kernel
  expectGpuError(R"(
prim @f(%a: f32[64, 32], %b: f32[64], %c: f32[64, 32]) {
  for %bx in 0..16 thread_binding(blockIdx.x) {
    for %tx in 0..4 thread_binding(threadIdx.x) {
      for %ty in 0..32 thread_binding(threadIdx.y) {
        block "copy" (%v0 = spatial(64, %bx * 4 + %tx), %v1 = spatial(32, %ty)) {
          reads(%a[%v0, %v1])
          writes(%c[%v0, %v1])
          %c[%v0, %v1] = %a[%v0, %v1]
        }
      }
    }
    for %tx in 0..4 thread_binding(threadIdx.x) {
      for %k in 0..32 {
        block "sum" (%v0 = spatial(64, %bx * 4 + %tx), %vk = reduce(32, %k)) {
          reads(%c[%v0, %vk])
          writes(%b[%v0])
          init {
            %b[%v0] = 0.0
          }
          %b[%v0] = %b[%v0] + %c[%v0, %vk]
        }
      }
    }
  }
}
)",
                 "block \"sum\" is a reduction that every threadIdx.y of the kernel at loop %bx");
}

TEST(GpuCheck, SharedMemoryPerThreadBlock) {
  // A 1024 x 64 shared buffer of which each thread block uses 16 rows (4 KiB).
  const char* kStaged = R"(
prim @f(%a: f32[1024, 64], %b: f32[1024, 64]) {
  alloc_buffer %s: f32[1024, 64] shared
  for %bx in 0..64 thread_binding(blockIdx.x) {
    for %tx in 0..64 thread_binding(threadIdx.x) {
      for %i in 0..16 {
        block "load" (%v0 = spatial(1024, %bx * 16 + %i), %v1 = spatial(64, %tx)) {
          reads(%a[%v0, %v1])
          writes(%s[%v0, %v1])
          %s[%v0, %v1] = %a[%v0, %v1]
        }
      }
    }
    for %tx in 0..64 thread_binding(threadIdx.x) {
      for %i in 0..16 {
        block "use" (%v0 = spatial(1024, %bx * 16 + %i), %v1 = spatial(64, %tx)) {
          reads(%s[%v0, 63 - %v1])
          writes(%b[%v0, %v1])
          %b[%v0, %v1] = %s[%v0, 63 - %v1]
        }
      }
    }
  }
}
)";
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

TEST(GpuCheck, LocalBuffersBelongToOneKernel) {
  expectGpuError(R"(
prim @f(%a: f32[64], %b: f32[64]) {
  alloc_buffer %t: f32[64] local
  for %bx in 0..2 thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "t" (%v0 = spatial(64, %bx * 32 + %tx)) {
        reads(%a[%v0])
        writes(%t[%v0])
        %t[%v0] = %a[%v0]
      }
    }
  }
  for %bx in 0..2 thread_binding(blockIdx.x) {
    for %tx in 0..32 thread_binding(threadIdx.x) {
      block "b" (%v0 = spatial(64, %bx * 32 + %tx)) {
        reads(%t[%v0])
        writes(%b[%v0])
        %b[%v0] = %t[%v0]
      }
    }
  }
}
)",
                 "local buffer %t is used by block \"b\"");
}

// --- the rules on legalized functions -------------------------------------------

namespace {

// The prim funcs of a graph after fuse-ops and legalize.
ir::Module lowered(const std::string& graph) {
  ops::installIrHooks();
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

// Schedules every prim func of the lowered graph with the cuda rules and
// checks each: the rule expected for it (by function name; "" to skip), a
// GPU-valid result, the same meaning, and a trace that replays to it.
// Returns the rule per function.
std::map<std::string, std::string> checkRules(const std::string& graph,
                                              const std::map<std::string, std::string>& expected,
                                              const std::map<std::string, int64_t>& dims = {},
                                              const Target& target = kCuda, bool print = false) {
  ir::Module m = lowered(graph);
  std::vector<ir::PrimFunc> before = prims(m);
  auto report = applyDefaultRules(m, target);
  std::vector<ir::PrimFunc> after = prims(m);
  std::map<std::string, std::string> rules;
  for (const auto& r : report) rules[r.func] = r.rule;
  EXPECT_EQ(before.size(), after.size());
  for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
    const ir::PrimFunc& f = after[i];
    SCOPED_TRACE(f.name + " scheduled by " + rules[f.name]);
    if (print) std::cout << "rule " << rules[f.name] << ":\n" << ir::printFunction(f) << "\n";
    auto it = expected.find(f.name);
    if (it != expected.end()) EXPECT_EQ(rules[f.name], it->second);
    try {
      verifyGpuFunc(f, target);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\n" << ir::printFunction(f);
    }
    test::expectSameMeaning(before[i], f, 1e-4, dims);
    ir::PrimFunc replayed = replayTrace(before[i], f.trace);
    EXPECT_TRUE(ir::structuralEqual(replayed, f)) << ir::printFunction(replayed) << "\nvs\n"
                                                  << ir::printFunction(f);
  }
  return rules;
}

const char* kElementwise = R"(
graph @main(%x: f32[4, 1000], %y: f32[1000]) -> f32[4, 1000] attrs(entry = true) {
  dataflow {
    %a: f32[4, 1000] = exp(%x)
    %b: f32[4, 1000] = add(%a, %y)
    %c: f32[4, 1000] = relu(%b)
  }
  return %c
}
)";

}  // namespace

TEST(CudaRules, ElementwiseChainFallback) {
  checkRules(kElementwise, {{"fused_exp_add_relu", "Fallback"}}, {}, kCuda, true);
}

namespace {

const char* kOps = R"(
graph @main(%x: f32[2, 8, 16], %g: f32[16], %b: f32[16], %p: f32[1, 4, 9, 9], %dw: f32[4, 1, 3, 3], %fx: f32[1, 512], %fw: f32[1000, 512], %fb: f32[1000], %s: f32[n, 10]) -> (f32[2, 8, 16], f32[1, 4, 3, 3], f32[1, 4, 5, 5], f32[1, 4, 5, 5], f32[1, 1000], f32[n, 10], f32[1, 4, 1, 1]) attrs(entry = true) {
  dataflow {
    %y: f32[2, 8, 16] = layer_norm(%x, %g, %b, axis=-1, epsilon=0.001)
    %q: f32[1, 4, 3, 3] = avg_pool2d(%p, pool_size=[3, 3], strides=[3, 3], padding=[0, 0, 0, 0], dilation=[1, 1], ceil_mode=false, count_include_pad=false)
    %d: f32[1, 4, 5, 5] = conv2d(%p, %dw, strides=[2, 2], padding=[1, 1, 1, 1], groups=4)
    %dr: f32[1, 4, 5, 5] = relu(%d)
    %m: f32[1, 4, 5, 5] = max_pool2d(%p, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[1, 1], ceil_mode=false)
    %f: f32[1, 1000] = dense(%fx, %fw)
    %fo: f32[1, 1000] = add(%f, %fb)
    %sm: f32[n, 10] = softmax(%s, axis=1)
    %ga: f32[1, 4, 1, 1] = global_avg_pool2d(%p)
  }
  return (%y, %q, %dr, %m, %fo, %sm, %ga)
}
)";

}  // namespace

TEST(CudaRules, Scratch) { checkRules(kOps, {}, {}, kCuda, true); }

namespace {
const char* kMatmuls = R"(
graph @main(%x: f32[1, 3, 8, 8], %w: f32[4, 3, 3, 3], %b: f32[1, 4, 1, 1], %d: f32[n, 16], %dw: f32[10, 16], %a: f32[32, 24], %c: f32[24, 40]) -> (f32[1, 4, 4, 4], f32[n, 10], f32[32, 40]) attrs(entry = true) {
  dataflow {
    %cv: f32[1, 4, 4, 4] = conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1])
    %cb: f32[1, 4, 4, 4] = add(%cv, %b)
    %r: f32[1, 4, 4, 4] = relu(%cb)
    %y: f32[n, 10] = dense(%d, %dw)
    %mm: f32[32, 40] = matmul(%a, %c)
  }
  return (%r, %y, %mm)
}
)";
}  // namespace

TEST(CudaRules, Scratch2) { checkRules(kMatmuls, {}, {}, kCuda, true); }

// --- ResNet-18 ------------------------------------------------------------------

TEST(CudaRules, ResNet18EveryPrimFuncIsValidAndKeepsItsMeaning) {
  if (std::string why = test::pythonNumpyUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  if (test::runPython("import torch, torchvision, onnx", dir.path()) != 0) GTEST_SKIP() << "no torch";
  ASSERT_EQ(test::runPython("import subprocess, sys\nsys.exit(subprocess.call(['/usr/bin/python3', '" +
                                std::string(MLCC_SOURCE_DIR) + "/tests/models/generate.py', '--out', '" +
                                dir.path() + "', '--only', 'resnet18']))",
                            dir.path()),
            0);
  ops::installIrHooks();
  auto imported = frontend::importOnnxFile(dir.file("resnet18.onnx"));
  ir::Module m = std::move(imported.module);
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  std::vector<ir::PrimFunc> before = prims(m);
  auto start = std::chrono::steady_clock::now();
  auto report = applyDefaultRules(m, kCuda);
  std::vector<ir::PrimFunc> after = prims(m);
  std::cout << "scheduled in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < after.size(); ++i) {
    std::cout << after[i].name << ": " << report[i].rule << std::endl;
    SCOPED_TRACE(after[i].name + " scheduled by " + report[i].rule);
    try {
      verifyGpuFunc(after[i], kCuda);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
    auto t0 = std::chrono::steady_clock::now();
    test::expectSameMeaning(before[i], after[i], 1e-4);
    std::cout << "  checked in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s" << std::endl;
  }
}
TEST(CudaRules, DumpScratch) {
  const char* in = getenv("RG_IN");
  if (!in) GTEST_SKIP();
  ops::installIrHooks();
  ir::Module m = ir::parseModuleFile(in);
  applyDefaultRules(m, kCuda);
  std::ofstream(getenv("RG_OUT")) << ir::printModule(m);
}
