// The CUDA backend without a GPU: the CUDA C of every prim func of the
// public models (scheduled by the default cuda rules) compiles with NVRTC,
// and runs under the CPU emulation (host/cuda_emulator.h) with the same
// results as the interpreter, its threads in both orders (a missing
// barrier shows in one of them). Unsupported constructs get clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "mlcc/codegen/cuda.h"
#include "mlcc/frontend/onnx.h"
#include "mlcc/host/cuda_emulator.h"
#include "mlcc/interp/interpreter.h"
#include "mlcc/ir/parser.h"
#include "mlcc/ir/printer.h"
#include "mlcc/ir/verifier.h"
#include "mlcc/ops/op.h"
#include "mlcc/schedule/gpu_check.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/script.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/transform/pass.h"
#include "tensor_files.h"
#include "testlib.h"

using namespace mlcc;

namespace {

const target::Target kCuda = target::Target::parse("cuda");

std::vector<int64_t> shapeOf(const ir::Buffer& b) {
  std::vector<int64_t> s;
  for (const auto& d : b->shape) {
    int64_t v = 0;
    EXPECT_TRUE(ir::asConstInt(d, &v));
    s.push_back(v);
  }
  return s;
}

// Prim func `f` (compiled as `cf`) run in the interpreter and under the
// emulation (threads in `order`) on copies of the same parameters. Where the
// interpreter refuses them (an index out of range...), `*refused` is set
// and nothing runs under the emulation; without `refused` its error
// propagates.
struct BothRuns {
  std::vector<ir::Tensor> interpreted, emulated;
};
BothRuns runBoth(const ir::PrimFunc& f, const codegen::CudaFunction& cf, const host::CudaEmulator& emu,
                 std::vector<ir::Tensor> params, host::CudaEmulator::Order order, bool* refused = nullptr) {
  BothRuns r;
  for (auto& t : params) {
    r.emulated.push_back(t.clone());
    r.interpreted.push_back(std::move(t));
  }
  ir::Module m;
  m.functions.push_back(f);
  std::vector<ir::Tensor*> ptrs;
  for (auto& t : r.interpreted) ptrs.push_back(&t);
  try {
    interp::Interpreter(m).runPrim(f.name, ptrs);
  } catch (const Error&) {
    if (!refused) throw;
    *refused = true;
    return r;
  }
  std::vector<void*> pointers;
  std::vector<std::vector<char>> scratch;
  for (auto& t : r.emulated) pointers.push_back(t.mutableBytes());
  for (size_t s = 0; s < cf.scratch_bytes.size(); ++s) {
    scratch.emplace_back(cf.scratch_bytes[s], cf.scratch_zeroed[s] ? 0 : 0x7f);
    pointers.push_back(scratch.back().data());
  }
  std::vector<void*> args;
  for (auto& p : pointers) args.push_back(&p);
  for (const auto& k : cf.kernels) emu.launch(k.name, args, order);
  return r;
}

// Random parameters for `f` (seeded by position).
std::vector<ir::Tensor> randomParams(const ir::PrimFunc& f) {
  std::vector<ir::Tensor> params;
  for (size_t i = 0; i < f.params.size(); ++i)
    params.push_back(interp::randomTensor(f.params[i]->dtype, shapeOf(f.params[i]), 11 + i));
  return params;
}

// Every parameter the same within `tol` (relative, NaN equal to NaN); up to
// five differences reported per parameter, each prefixed by `label`.
void expectClose(const ir::PrimFunc& f, const BothRuns& r, double tol, const std::string& label = "") {
  for (size_t p = 0; p < f.params.size(); ++p) {
    int bad = 0;
    for (int64_t i = 0; i < r.interpreted[p].numel() && bad < 5; ++i) {
      const double x = r.interpreted[p].at(i), y = r.emulated[p].at(i);
      if ((std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol * (1 + std::fabs(x)))
        continue;
      ADD_FAILURE() << label << "%" << f.params[p]->name << "[" << i << "]: interpreted " << x
                    << ", emulated " << y;
      ++bad;
    }
  }
}

// Runs each prim func of `funcs` under the emulation (threads in `order`)
// and in the interpreter on the same random inputs; compares every
// parameter.
void expectEmulationMatches(const std::vector<const ir::PrimFunc*>& funcs, const codegen::CudaSource& src,
                            const host::CudaEmulator& emu, host::CudaEmulator::Order order, double tol) {
  for (size_t fi = 0; fi < funcs.size(); ++fi) {
    const ir::PrimFunc& f = *funcs[fi];
    SCOPED_TRACE("@" + f.name + (order == host::CudaEmulator::Order::reverse ? " (threads reversed)" : ""));
    expectClose(f, runBoth(f, src.functions[fi], emu, randomParams(f), order), tol);
  }
}

// The prim funcs of an ONNX model after fuse-ops, legalize and the cuda rules.
ir::Module scheduled(ir::Module m) {
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  schedule::applyDefaultRules(m, kCuda);
  return m;
}

ir::Module scheduledModel(const std::string& onnx, const frontend::OnnxImportOptions& options = {}) {
  return scheduled(frontend::importOnnxFile(onnx, options).module);
}

std::vector<const ir::PrimFunc*> primFuncs(const ir::Module& m) {
  std::vector<const ir::PrimFunc*> funcs;
  for (const auto& f : m.functions)
    if (const auto* p = std::get_if<ir::PrimFunc>(&f)) funcs.push_back(p);
  return funcs;
}

// `both_orders`: also with the threads of each phase reversed.
void checkModel(const ir::Module& m, double tol, bool both_orders = true) {
  const std::vector<const ir::PrimFunc*> funcs = primFuncs(m);
  codegen::CudaSource src;
  try {
    src = codegen::emitCudaSource(funcs, kCuda);
  } catch (const Error& e) {
    FAIL() << e.format();
  }
  if (codegen::nvrtcAvailable()) {
    std::string ptx;
    EXPECT_NO_THROW(ptx = codegen::compileWithNvrtc(src.code, "sm_80"));
    EXPECT_NE(ptx.find(".entry " + src.functions[0].kernels[0].name), std::string::npos);
  } else {
    std::cout << "NVRTC is not available here: the PTX checks are skipped\n";
  }
  host::CudaEmulator emu = host::CudaEmulator::compile(src.code);
  expectEmulationMatches(funcs, src, emu, host::CudaEmulator::Order::forward, tol);
  if (both_orders) expectEmulationMatches(funcs, src, emu, host::CudaEmulator::Order::reverse, tol);
}

}  // namespace

TEST(CudaCodegen, SmallPublicModels) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"mlp", "cnn", "transformer"}), 0);
  frontend::OnnxImportOptions batch4;
  batch4.input_shapes["input"] = {4, 784};
  checkModel(scheduledModel(dir.file("mlp.onnx"), batch4), 1e-4);
  checkModel(scheduledModel(dir.file("cnn.onnx")), 1e-4);
  checkModel(scheduledModel(dir.file("transformer.onnx")), 1e-4);
}

// u8 arithmetic, integer pow and the integer intrinsics (shift amounts beyond the width
// included: the random inputs are 0..9, 28..37 for the i32 shifts), by the
// default cuda rules, against the interpreter.
TEST(CudaCodegen, UnsignedAndBitwise) {
  checkModel(scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%a: u8[4, 64], %n: u8[4, 64], %b: i32[4, 64], %m: i32[4, 64]) -> u8[4, 64] {
  dataflow {
    %s: u8[4, 64] = left_shift(%a, %n)
    %r: u8[4, 64] = right_shift(%a, %n)
    %x: u8[4, 64] = bitwise_xor(%s, %r)
    %y: u8[4, 64] = bitwise_not(%x)
    %one: u8[] = const 1
    %a1: u8[4, 64] = add(%a, %one)
    %d: u8[4, 64] = divide(%y, %a1)
    %k28: i32[] = const 28
    %k: i32[4, 64] = add(%m, %k28)
    %nb: i32[4, 64] = negative(%b)
    %t: i32[4, 64] = right_shift(%nb, %k)
    %u: i32[4, 64] = left_shift(%b, %k)
    %tu: i32[4, 64] = bitwise_and(%t, %u)
    %v: i32[4, 64] = bitwise_or(%tu, %u)
    %w: u8[4, 64] = cast(%v, dtype = "u8")
    %hi: u8[4, 64] = maximum(%d, %w)
    %lo: u8[4, 64] = minimum(%d, %a)
    %z: u8[4, 64] = subtract(%hi, %lo)
    %pw: u8[4, 64] = power(%a, %n)
    %pm: i32[4, 64] = power(%nb, %m)
    %pm8: u8[4, 64] = cast(%pm, dtype = "u8")
    %zp: u8[4, 64] = bitwise_xor(%z, %pw)
    %out: u8[4, 64] = add(%zp, %pm8)
  }
  return %out
}
)",
                                       "bits.ir")),
             0);
}

// Functions whose reductions have no output axis (layer_norm and softmax
// over every axis, the sum of a whole tensor next to other blocks) and a
// function without loops (a scalar division) by the default cuda rules: the
// Fallback rule binds such a block to one thread of one thread block
// (before, no rule applied and code generation refused the function),
// against the interpreter.
TEST(CudaCodegen, ReductionsToAScalarInsideLargerFunctions) {
  ir::Module m = ir::parseModule(R"(mlcc.ir 1

graph @main(%x: f32[3, 4], %g: f32[3, 4], %b: f32[3, 4], %v: f32[10]) -> (f32[3, 4], f32[10], f32[3, 4], f32[]) {
  dataflow {
    %n: f32[3, 4] = layer_norm(%x, %g, %b, axis = 0, epsilon = 0.001)
    %s: f32[10] = softmax(%v, axis = 0)
    %t: f32[1, 1] = sum(%x, axes = [0, 1], keepdims = true)
    %u: f32[3, 4] = subtract(%x, %t)
    %xs: f32[] = sum(%x, axes = [0, 1], keepdims = false)
    %gs: f32[] = sum(%g, axes = [0, 1], keepdims = false)
    %q: f32[] = divide(%xs, %gs)
  }
  return (%n, %s, %u, %q)
}
)",
                                 "scalar.ir");
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("fuse-ops,legalize"), ctx);
  // The division of the two sums is a function without loops (its body
  // one block), as a mean-reduced loss's is.
  bool loopless = false;
  for (const auto* f : primFuncs(m)) loopless |= f->body && f->body->as<ir::BlockNode>();
  EXPECT_TRUE(loopless);
  schedule::applyDefaultRules(m, kCuda);
  checkModel(m, 1e-5);
}

// f16 and bf16 models by the default cuda rules: elementwise chains, casts
// between the float types and from integers, a matmul, softmax and
// layer_norm rows reduced across threads (their partial sums in float),
// against the interpreter (which rounds the 16-bit types after each
// operation as the CUDA C does; the tolerance covers the order of the
// reductions).
TEST(CudaCodegen, HalfAndBFloat16) {
  checkModel(scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%a: f16[8, 256], %b: f16[8, 256], %w: f16[256, 48], %c: bf16[8, 256], %k: i32[8, 256], %g: f16[256], %be: f16[256]) -> (f16[8, 256], f16[8, 48], bf16[8, 256], f32[8, 256], f16[8, 256]) {
  dataflow {
    %s: f16[8, 256] = add(%a, %b)
    %e: f16[8, 256] = exp(%s)
    %d: f16[8, 256] = divide(%e, %b)
    %sm: f16[8, 256] = softmax(%d, axis = -1)
    %mm: f16[8, 48] = matmul(%a, %w)
    %ab: bf16[8, 256] = cast(%a, dtype = "bf16")
    %kb: bf16[8, 256] = cast(%k, dtype = "bf16")
    %cb: bf16[8, 256] = multiply(%c, %ab)
    %t: bf16[8, 256] = tanh(%cb)
    %u: bf16[8, 256] = add(%t, %kb)
    %f: f32[8, 256] = cast(%u, dtype = "f32")
    %h: f32[8, 256] = cast(%sm, dtype = "f32")
    %fh: f32[8, 256] = add(%f, %h)
    %ln: f16[8, 256] = layer_norm(%s, %g, %be, axis = -1, epsilon = 0.001)
  }
  return (%sm, %mm, %u, %fh, %ln)
}
)",
                                       "half.ir")),
             1e-2);
}

// f64 models by the default cuda rules: computed in double (CUDA's double
// math), casts to and from the other types (to f16 and bf16 rounded once),
// reductions (a mean across threads, a sum), against the interpreter.
TEST(CudaCodegen, DoublePrecision) {
  checkModel(scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%a: f64[8, 256], %b: f64[8, 256], %k: i32[8, 256]) -> (f64[8, 1], f32[8, 256], f16[8, 256], i32[8, 256], f64[8, 1]) {
  dataflow {
    %s: f64[8, 256] = add(%a, %b)
    %e: f64[8, 256] = exp(%s)
    %d: f64[8, 256] = divide(%e, %b)
    %t: f64[8, 256] = tanh(%d)
    %m: f64[8, 256] = maximum(%t, %a)
    %q: f64[8, 256] = sqrt(%m)
    %kd: f64[8, 256] = cast(%k, dtype = "f64")
    %r: f64[8, 256] = add(%q, %kd)
    %sm: f64[8, 1] = mean(%r, axes = [1], keepdims = true)
    %f: f32[8, 256] = cast(%d, dtype = "f32")
    %h: f16[8, 256] = cast(%d, dtype = "f16")
    %big: f64[8, 256] = multiply(%d, %e)
    %i: i32[8, 256] = cast(%big, dtype = "i32")
    %sum: f64[8, 1] = sum(%e, axes = [1], keepdims = true)
  }
  return (%sm, %f, %h, %i, %sum)
}
)",
                                       "double.ir")),
             1e-12);
}

// Rounding to f16 and bf16 (the emulation's integer code, the GPU's cvt
// instructions), bit for bit as the interpreter: ties to even, subnormals,
// overflow to infinity, NaN, and integers to bf16 rounded once.
TEST(CudaCodegen, RoundsToHalfAndBFloat16BitForBit) {
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%x: f32[64], %i: i32[64]) -> (f16[64], bf16[64], bf16[64], f32[64]) {
  dataflow {
    %h: f16[64] = cast(%x, dtype = "f16")
    %b: bf16[64] = cast(%x, dtype = "bf16")
    %ib: bf16[64] = cast(%i, dtype = "bf16")
    %back: f32[64] = cast(%h, dtype = "f32")
  }
  return (%h, %b, %ib, %back)
}
)",
                                           "rounding.ir"));
  const std::vector<double> specials = {0.0,
                                        -0.0,
                                        1.0,
                                        -1.0,
                                        65504.0,
                                        65519.99,
                                        65520.0,
                                        -65536.0,
                                        1e9,
                                        INFINITY,
                                        -INFINITY,
                                        NAN,
                                        6.103515625e-05 /* smallest normal */,
                                        6.0975551605224609e-05,
                                        5.9604644775390625e-08 /* smallest subnormal */,
                                        2.9802322387695312e-08 /* its half: a tie, to 0 */,
                                        8.9406967163085938e-08 /* 1.5 ulp: a tie, to 2 */,
                                        1.0e-8,
                                        -3.5e-6,
                                        1.00048828125 /* 1 + half an f16 ulp: to 1 */,
                                        1.00146484375 /* 1 + 1.5 ulp: to 1 + 2 ulp */,
                                        1.00390625 /* bf16 tie */,
                                        1.01171875 /* bf16 tie, to even */,
                                        3.0e38,
                                        -1.2e-38,
                                        1e-45};
  std::vector<double> x(64), ints(64);
  for (size_t j = 0; j < 64; ++j) {
    x[j] =
        j < specials.size() ? specials[j] : std::ldexp(1.0 + 0.37 * static_cast<double>(j), int(j % 40) - 30);
    ints[j] =
        j % 2 ? (16777217.0 + 2.0 * static_cast<double>(j) * 1048576.0) : -(static_cast<double>(j) * 33333.0);
  }
  // Every f32 parameter gets x, every i32 one the integers, every f16 one
  // halves of all kinds (the f16 -> f32 function's input); outputs are
  // overwritten.
  std::vector<double> halves(64);
  for (size_t j = 0; j < 64; ++j)
    halves[j] = j < 12 ? std::vector<double>{0.0,
                                             -0.0,
                                             5.9604644775390625e-08,
                                             -6.0975551605224609e-05,
                                             6.103515625e-05,
                                             65504.0,
                                             -INFINITY,
                                             INFINITY,
                                             NAN,
                                             1.0,
                                             0.333251953125,
                                             -2.0}[j]
                       : std::ldexp(static_cast<double>(j * 37 % 2048), int(j % 30) - 34);
  for (const ir::PrimFunc* f : primFuncs(m)) {
    SCOPED_TRACE("@" + f->name);
    const codegen::CudaSource src = codegen::emitCudaSource({f}, kCuda);
    if (codegen::nvrtcAvailable()) EXPECT_NO_THROW(codegen::compileWithNvrtc(src.code, "sm_75"));
    host::CudaEmulator emu = host::CudaEmulator::compile(src.code);
    std::vector<ir::Tensor> params;
    for (const auto& b : f->params)
      params.push_back(b->dtype == ir::DType::f32   ? ir::Tensor::fromValues(b->dtype, {64}, x)
                       : b->dtype == ir::DType::i32 ? ir::Tensor::fromValues(b->dtype, {64}, ints)
                       : b->dtype == ir::DType::f16 ? ir::Tensor::fromValues(b->dtype, {64}, halves)
                                                    : ir::Tensor::zeros(b->dtype, shapeOf(b)));
    BothRuns r = runBoth(*f, src.functions[0], emu, std::move(params), host::CudaEmulator::Order::forward);
    for (size_t p = 0; p < f->params.size(); ++p) {
      SCOPED_TRACE("%" + f->params[p]->name);
      ASSERT_EQ(r.interpreted[p].nbytes(), r.emulated[p].nbytes());
      EXPECT_EQ(std::memcmp(r.interpreted[p].mutableBytes(), r.emulated[p].mutableBytes(),
                            r.interpreted[p].nbytes()),
                0);
    }
  }
}

// Kernels scheduled by hand (the fixtures of the GPU checks): a tile staged
// in shared memory and read back by other threads (reversed: a missing
// barrier shows), a row sum bound to blocks and threads, and thread blocks
// staging their rows in a global buffer.
TEST(CudaCodegen, HandScheduledKernels) {
  for (const char* name : {"staged.ir", "row_sum_gpu.ir", "thread_blocks_exchange_in_global.ir"}) {
    SCOPED_TRACE(name);
    checkModel(
        ir::parseModuleFile(std::string(MLCC_TEST_DATA_DIR) + "/unit/fixtures/schedule_rules_gpu/" + name),
        1e-5);
  }
}

// Two blocks storing to one shared buffer, the second over elements the
// first's other threads stored (s[31 - t] after s[t]): a barrier between
// them, or the first's late threads would overwrite the second's values
// (the threads reversed show it).
TEST(CudaCodegen, ABarrierBetweenTwoBlocksStoringToOneSharedBuffer) {
  ir::Module m = ir::parseModule(R"(mlcc.ir 1
prim @f(%x: f32[2, 32], %y: f32[2, 32]) {
  alloc_buffer %s: f32[32] shared
  for %b in 0..2 thread_binding(blockIdx.x) {
    for %t in 0..32 thread_binding(threadIdx.x) {
      block "first" (%vb = spatial(2, %b), %v = spatial(32, %t)) {
        reads(%x[%vb, %v])
        writes(%s[%v])
        %s[%v] = %x[%vb, %v]
      }
    }
    for %t in 0..32 thread_binding(threadIdx.x) {
      block "second" (%vb = spatial(2, %b), %v = spatial(32, 31 - %t)) {
        reads(%x[%vb, %v])
        writes(%s[%v])
        %s[%v] = %x[%vb, %v] * 2.0
      }
    }
    for %t in 0..32 thread_binding(threadIdx.x) {
      block "out" (%vb = spatial(2, %b), %v = spatial(32, %t)) {
        reads(%s[%v])
        writes(%y[%vb, %v])
        %y[%vb, %v] = %s[%v]
      }
    }
  }
}
)",
                                 "two_writers.ir");
  checkModel(m, 0);
  const std::string code = codegen::emitCudaSource(primFuncs(m), kCuda).code;
  const size_t first = code.find("// block \"first\""), second = code.find("// block \"second\"");
  ASSERT_NE(second, std::string::npos) << code;
  EXPECT_NE(code.substr(first, second - first).find("__syncthreads();"), std::string::npos) << code;
}

// Reductions across threads (gpu_check.h's CrossThreadReduction), written
// by hand: a sum with an init over 32 threads; a max without one over 24
// threads of threadIdx.x in groups along threadIdx.y, two steps each; a sum
// without an init whose predicate leaves out two threads (their term is
// the identity) and four thread blocks (they store nothing). Both thread
// orders against the interpreter; the order of the additions differs.
// Groups of whole warps or of a power-of-two part of one exchange by warp
// shuffles (32 threads; the max over groups of 8 or 64 threads, and of 4 in
// a block of 16, a part of a warp); others through shared memory (24).
TEST(CudaCodegen, ReducesAcrossThreads) {
  const std::string dir = std::string(MLCC_TEST_DATA_DIR) + "/unit/fixtures/schedule_rules_gpu/";
  const std::string groups = test::readFile(dir + "reduction_across_thread_groups.ir");
  auto threads = [&](int n) {  // the max over rows of 2n in groups of n threads
    return test::replaced(test::replaced(groups, "48", std::to_string(2 * n)), "24", std::to_string(n));
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"32 threads", test::readFile(dir + "gpu_check_reduction_across_threads.ir"),
       "= mlcc_warp_allreduce_add(v6_term, mlcc_scratch_f32, (int)threadIdx.x, 32, 32 * ((int)threadIdx.y + "
       "1 * "
       "(int)threadIdx.z), 4294967295u)"},
      {"groups of 24", groups, "= mlcc_allreduce_max("},
      {"without init", test::readFile(dir + "reduction_across_threads_without_init.ir"),
       "= mlcc_warp_allreduce_add("},
      {"groups of 8", threads(8), ", 8, 8 * ((int)threadIdx.y + 4 * (int)threadIdx.z), 4294967295u)"},
      {"groups of 64", threads(64), ", 64, 64 * ((int)threadIdx.y + 4 * (int)threadIdx.z), 4294967295u)"},
      {"16 threads", threads(4), ", 4, 4 * ((int)threadIdx.y + 4 * (int)threadIdx.z), 65535u)"},
  };
  for (const auto& [name, text, call] : cases) {
    SCOPED_TRACE(name);
    ir::Module m = ir::parseModule(text, name + ".ir");
    checkModel(m, 1e-5);
    const std::string code = codegen::emitCudaSource(primFuncs(m), kCuda).code;
    EXPECT_EQ(test::occurrences(code, call), 1) << code;
  }
  // The default rules' split reductions: a sum to a scalar (one thread
  // block) and a mean over rows of 600 (128 threads, the last step
  // predicated), each in one kernel with its division.
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%x: f32[64, 100], %r: f32[3, 600]) -> (f32[], f32[3, 1]) {
  dataflow {
    %s: f32[] = sum(%x, axes = [0, 1])
    %m: f32[3, 1] = mean(%r, axes = [1], keepdims = true)
    %e: f32[3, 1] = exp(%m)
  }
  return (%s, %e)
}
)",
                                           "split.ir"));
  checkModel(m, 1e-5);
  int reductions = 0;
  for (const auto* f : primFuncs(m)) {
    const codegen::CudaSource src = codegen::emitCudaSource({f}, kCuda);
    EXPECT_EQ(src.functions[0].kernels.size(), 1u) << src.code;
    reductions += src.code.find("= mlcc_warp_allreduce_add") != std::string::npos;
  }
  EXPECT_EQ(reductions, 2);  // the sum and the mean (exp is a function of its own)
}

// The GeneralReduction rule's rows across threads: softmax over rows of 100
// (32 threads, the last step predicated) and 256 (64 threads), layer_norm
// over rows of 64, each one kernel; against the interpreter.
TEST(CudaCodegen, SplitsRowsAcrossThreads) {
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%s: f32[6, 100], %t: f32[4, 256], %x: f32[2, 8, 64], %g: f32[64], %b: f32[64]) -> (f32[6, 100], f32[4, 256], f32[2, 8, 64]) {
  dataflow {
    %y: f32[6, 100] = softmax(%s, axis = 1)
    %u: f32[4, 256] = softmax(%t, axis = -1)
    %z: f32[2, 8, 64] = layer_norm(%x, %g, %b, axis = -1, epsilon = 0.001)
  }
  return (%y, %u, %z)
}
)",
                                           "rows.ir"));
  checkModel(m, 1e-5);
  for (const auto* f : primFuncs(m)) {
    const codegen::CudaSource src = codegen::emitCudaSource({f}, kCuda);
    EXPECT_EQ(src.functions[0].kernels.size(), 1u) << src.code;
    EXPECT_EQ(test::occurrences(src.code, "= mlcc_warp_allreduce_"), 2) << src.code;
  }
}

// Recurrences (scans: a serial step loop) by the cuda Scan rule: an LSTM
// with peepholes and a clip, a reversed GRU (linear before reset) and an
// RNN, their batch entries ending at different steps (random lengths 0-9
// of 5 steps); each scan one kernel of one thread block whose steps meet
// at barriers, against the interpreter, the threads in both orders.
TEST(CudaCodegen, RunsScansInOneThreadBlock) {
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%xw: f32[5, 3, 64], %rt: f32[16, 64], %h0: f32[3, 16], %c0: f32[3, 16], %p: f32[48], %lens: i64[3], %xg: f32[5, 3, 48], %rg: f32[16, 48], %rbh: f32[16], %xr: f32[5, 3, 16], %rr: f32[16, 16]) -> (f32[5, 3, 16], f32[3, 16], f32[5, 3, 16], f32[5, 3, 16]) {
  dataflow {
    %l: (f32[5, 3, 16], f32[3, 16], f32[3, 16]) = recurrence(%xw, %rt, %h0, %c0, %p, %lens, cell = "lstm", clip = 2.0)
    %ly: f32[5, 3, 16] = %l[0]
    %lc: f32[3, 16] = %l[2]
    %g: (f32[5, 3, 16], f32[3, 16]) = recurrence(%xg, %rg, %h0, %rbh, %lens, cell = "gru", reverse = true, linear_before_reset = true)
    %gy: f32[5, 3, 16] = %g[0]
    %r: (f32[5, 3, 16], f32[3, 16]) = recurrence(%xr, %rr, %h0, %lens, cell = "rnn")
    %ry: f32[5, 3, 16] = %r[0]
  }
  return (%ly, %lc, %gy, %ry)
}
)",
                                           "scans.ir"));
  checkModel(m, 1e-5);
  int scans = 0;
  for (const auto* f : primFuncs(m)) {
    const std::string text = ir::printFunction(*f);
    if (text.find("opaque(") == std::string::npos) continue;
    ++scans;
    EXPECT_NE(text.find("0..1 thread_binding(blockIdx.x)"), std::string::npos) << text;
  }
  EXPECT_EQ(scans, 3);
}

// verifyGpuFunc counts a kernel's shared memory as the code generator
// declares it (the boxes of schedule/buffer_boxes.h): ResNet-18's stride-2
// convolution in the CPU pipeline's blocked layout (NCHW16c) passed the
// check, then needed 52 KiB of shared memory at code generation. For every
// function, the check passes at exactly the bytes its CUDA C declares and
// fails one byte below.
TEST(CudaCodegen, TheGpuCheckCountsSharedMemoryAsTheCudaCDeclaresIt) {
  ir::Module m = ir::parseModule(R"(mlcc.ir 1

graph @main(%x: f32[1, 256, 14, 14], %w: f32[512, 256, 3, 3], %b: f32[1, 512, 1, 1]) -> f32[1, 512, 7, 7] {
  dataflow {
    %c: f32[1, 512, 7, 7] = conv2d(%x, %w, strides = [2, 2], padding = [1, 1, 1, 1])
    %cb: f32[1, 512, 7, 7] = add(%c, %b)
    %y: f32[1, 512, 7, 7] = relu(%cb)
  }
  return %y
}
)",
                                 "conv.ir");
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("convert-layout,fuse-ops,legalize"), ctx);
  schedule::applyDefaultRules(m, kCuda);
  int staged = 0;
  for (const auto* f : primFuncs(m)) {
    SCOPED_TRACE(f->name);
    codegen::CudaSource src;
    ASSERT_NO_THROW(src = codegen::emitCudaSource({f}, kCuda));
    int64_t bytes = 0;
    for (const auto& k : src.functions[0].kernels) bytes = std::max(bytes, k.shared_bytes);
    if (bytes == 0) continue;
    ++staged;
    target::Target limit = kCuda;
    limit.max_shared_memory_bytes = bytes;
    EXPECT_NO_THROW(schedule::verifyGpuFunc(*f, limit));
    limit.max_shared_memory_bytes = bytes - 1;
    EXPECT_THROW(schedule::verifyGpuFunc(*f, limit), Error);
  }
  EXPECT_EQ(staged, 1);  // the convolution
}

// `graph` legalized, then its prim funcs scheduled by the script
// fixtures/schedule_rules_gpu/<script>.
ir::Module scheduledByScript(const std::string& graph, const std::string& script) {
  ir::Module m = ir::parseModule(graph, "graph.ir");
  transform::PassContext ctx;
  transform::runPipeline(m, transform::parsePipeline("legalize"), ctx);
  const std::string path = std::string(MLCC_TEST_DATA_DIR) + "/unit/fixtures/schedule_rules_gpu/" + script;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  schedule::applyScheduleScript(m, ir::parseScheduleScript(text.str(), path));
  return m;
}

// Vectorized copies (fixtures/schedule_rules_gpu/vector_copies.ir): only
// the aligned unit-stride one is a 16-byte copy, behind a run-time check
// of the global pointer; the misaligned and the strided ones stay scalar.
TEST(CudaCodegen, VectorizedCopies) {
  ir::Module m = ir::parseModuleFile(std::string(MLCC_TEST_DATA_DIR) +
                                     "/unit/fixtures/schedule_rules_gpu/vector_copies.ir");
  const std::string code = codegen::emitCudaSource({m.findPrim("f")}, kCuda).code;
  EXPECT_NE(code.find("if (mlcc_aligned(b0_a, 16)) {  // 4 lanes: one 16-byte copy"), std::string::npos)
      << code;
  size_t copies = 0;
  for (size_t at = code.find("mlcc_copy16(&"); at != std::string::npos;
       at = code.find("mlcc_copy16(&", at + 1))
    ++copies;
  EXPECT_EQ(copies, 1u) << code;
  EXPECT_EQ(code.find("mlcc_copy8(&"), std::string::npos) << code;
  checkModel(m, 0);
}

// The shared-memory GEMM of the MLC course's "GEMM on GPU", scheduled as
// the course writes it (fixtures/schedule_rules_gpu/mlc_shared_memory_gemm.sched):
// the operand tiles computed at the stage loop inside the thread loop,
// widened to the thread block's tile (64 x 8, 8 x 64) and fetched by the
// threads together (the copy loop bound to threadIdx.x again), barriers
// around the fetch; and the same GEMM with the stage loop above the thread
// loops (shared_memory_gemm_stage_outside_threads.sched: 32 x 8 tiles).
// Both fetches are vectorized by 4: 16-byte copies (the emulation fails a
// misaligned one).
TEST(CudaCodegen, MlcCourseSharedMemoryGemm) {
  for (const auto& [script, staged] : std::vector<std::pair<std::string, std::string>>{
           {"mlc_shared_memory_gemm.sched", "__shared__ __align__(16) float b4_a_shared[512];"},
           {"shared_memory_gemm_stage_outside_threads.sched",
            "__shared__ __align__(16) float b3_a_shared[256];"}}) {
    SCOPED_TRACE(script);
    ir::Module m = scheduledByScript(R"(mlcc.ir 1

graph @main(%a: f32[256, 256], %b: f32[256, 256]) -> f32[256, 256] {
  dataflow {
    %c: f32[256, 256] = matmul(%a, %b)
  }
  return %c
}
)",
                                     script);
    const codegen::CudaSource src = codegen::emitCudaSource({m.findPrim("matmul")}, kCuda);
    EXPECT_NE(src.code.find(staged), std::string::npos) << src.code;
    EXPECT_NE(src.code.find("mlcc_copy16(&"), std::string::npos) << src.code;
    EXPECT_EQ(src.code.find("_shared[z] = 0;"), std::string::npos) << src.code;  // written before read
    checkModel(m, 1e-4);
  }
}

// The MLC course's window sum (fixtures/schedule_rules_gpu/mlc_window_sum.sched):
// the staged input is the block's 130 elements, a halo over 128 threads.
TEST(CudaCodegen, MlcCourseWindowSum) {
  ir::Module m = scheduledByScript(R"(mlcc.ir 1
prim @window_sum(%A: f32[1027], %B: f32[1024]) {
  for %i in 0..1024 {
    block "C" (%vi = spatial(1024, %i)) {
      reads(%A[%vi +: 3])
      writes(%B[%vi])
      %B[%vi] = %A[%vi] + %A[%vi + 1] + %A[%vi + 2]
    }
  }
}
)",
                                   "mlc_window_sum.sched");
  const codegen::CudaSource src = codegen::emitCudaSource({m.findPrim("window_sum")}, kCuda);
  EXPECT_NE(src.code.find("__shared__ __align__(16) float b2_A_shared[130];"), std::string::npos) << src.code;
  EXPECT_EQ(src.code.find("_shared[z] = 0;"), std::string::npos) << src.code;  // written before read
  checkModel(m, 1e-6);
}

// An operand shared by all thread blocks staged in each block's shared
// memory (fixtures/schedule_rules_gpu/stage_operand_shared_by_all_blocks.sched).
TEST(CudaCodegen, StagesAnOperandSharedByAllThreadBlocks) {
  ir::Module m = scheduledByScript(R"(mlcc.ir 1

graph @main(%a: f32[1, 512], %b: f32[512, 256]) -> f32[1, 256] {
  dataflow {
    %c: f32[1, 256] = matmul(%a, %b)
  }
  return %c
}
)",
                                   "stage_operand_shared_by_all_blocks.sched");
  const codegen::CudaSource src = codegen::emitCudaSource({m.findPrim("matmul")}, kCuda);
  EXPECT_NE(src.code.find("__shared__ __align__(16) float b3_a_shared[128];"), std::string::npos) << src.code;
  checkModel(m, 1e-4);
}

// A GEMM with enough output tiles for the largest configuration of the
// Matmul rule (64 x 128 per thread block, 8 x 8 per thread, the per-thread
// loops unrolled), kept short along K for the emulation.
TEST(CudaCodegen, LargeMatmulTiles) {
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%a: f32[2048, 16], %b: f32[16, 2048]) -> f32[2048, 2048] {
  dataflow {
    %c: f32[2048, 2048] = matmul(%a, %b)
  }
  return %c
}
)",
                                           "gemm.ir"));
  const std::string text = ir::printModule(m);
  EXPECT_NE(text.find("decision [32, 8, 8]"), std::string::npos) << text;
  EXPECT_NE(text.find("decision [16, 16, 8]"), std::string::npos) << text;
  checkModel(m, 1e-4);
}

// Attention's batched products at 17 tokens (ViT's): no tile divides 17,
// so the staged tiles' fetches are predicated at the buffer's end; the
// codegen must see that they still write every element read (it refused
// them before: "may be read before it is written").
TEST(CudaCodegen, TilesThatDoNotDivideTheOperands) {
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%q: f32[2, 17, 16], %k: f32[2, 16, 17], %v: f32[2, 17, 16]) -> f32[2, 17, 16] {
  dataflow {
    %s: f32[2, 17, 17] = matmul(%q, %k)
    %p: f32[2, 17, 17] = softmax(%s, axis = -1)
    %o: f32[2, 17, 16] = matmul(%p, %v)
  }
  return %o
}
)",
                                           "attention.ir"));
  EXPECT_NE(ir::printModule(m).find("shared"), std::string::npos);
  checkModel(m, 1e-5);
}

// MobileNetV2 as the suite exports it (224 x 224): depthwise convolutions,
// and pointwise ones whose staged input tile is bounded by the copy's
// predicate only through a division (`%f * 3 + (%y * 6 + %x) / 14`).
TEST(CudaCodegen, MobileNetV2) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::generateModels(dir.path(), {"mobilenetv2"}), 0);
  checkModel(scheduledModel(dir.file("mobilenetv2.onnx")), 1e-3, /*both_orders=*/false);  // ~50 s
}

// Fast math only when the target asks (-fast-math): softmax's reciprocal is
// IEEE-rounded (rcp.rn) and its adds keep denormals by default; NVRTC's
// --use_fast_math makes them approximate and flushed (.ftz).
TEST(CudaCodegen, FastMathOnlyWhenRequested) {
  if (!codegen::nvrtcAvailable()) GTEST_SKIP() << "NVRTC is not available here";
  ir::Module m = scheduled(ir::parseModule(R"(mlcc.ir 1

graph @main(%x: f32[64, 128]) -> f32[64, 128] {
  dataflow {
    %y: f32[64, 128] = softmax(%x, axis = -1)
  }
  return %y
}
)",
                                           "softmax.ir"));
  const std::string code = codegen::emitCudaSource(primFuncs(m), kCuda).code;
  const std::string exact = codegen::compileWithNvrtc(code, "sm_80");
  const std::string fast = codegen::compileWithNvrtc(code, "sm_80", /*fast_math=*/true);
  // 1 / sum: IEEE-rounded by default, approximate with fast math; adds and
  // multiplies flush denormals only with fast math (expf's own ex2 always
  // does, inside its exact algorithm).
  EXPECT_NE(exact.find("rcp.rn.f32"), std::string::npos) << exact;
  EXPECT_EQ(exact.find("rcp.approx"), std::string::npos) << exact;
  EXPECT_EQ(exact.find("add.ftz.f32"), std::string::npos) << exact;
  EXPECT_NE(fast.find("rcp.approx.ftz.f32"), std::string::npos) << fast;
  EXPECT_EQ(fast.find("rcp.rn.f32"), std::string::npos) << fast;
  EXPECT_NE(fast.find("add.ftz.f32"), std::string::npos) << fast;
}

// The bias and relu after a cuBLAS GEMM: one thread per element, the last
// block partial.
TEST(CudaCodegen, GemmEpilogue) {
  codegen::CudaSource src = codegen::emitCudaSource({}, kCuda);
  const int64_t rows = 7, n = 45;  // 315 elements: two blocks of 256
  codegen::CudaKernel k = codegen::gemmEpilogue("epilogue", rows, n, true, true, src.code);
  EXPECT_EQ(k.grid[0], 2);
  if (codegen::nvrtcAvailable()) {
    EXPECT_NO_THROW(codegen::compileWithNvrtc(src.code, "sm_80"));
  }
  host::CudaEmulator emu = host::CudaEmulator::compile(src.code);
  std::vector<float> out(rows * n), bias(n), want(rows * n);
  for (int64_t i = 0; i < rows * n; ++i) out[i] = static_cast<float>((i * 37) % 19) - 9.5f;
  for (int64_t j = 0; j < n; ++j) bias[j] = static_cast<float>(j % 5) - 2.0f;
  for (int64_t i = 0; i < rows * n; ++i) want[i] = std::max(0.0f, out[i] + bias[i % n]);
  void *po = out.data(), *pb = bias.data();
  emu.launch("epilogue", {&po, &pb});
  EXPECT_EQ(out, want);
}

// ResNet-18 at 64 x 64 (its prim funcs on smaller images): convolutions as
// shared-memory GEMMs, pooling, the classifier as a GEMV.
TEST(CudaCodegen, ResNet18) {
  if (std::string why = test::modelGeneratorUnavailable(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  ASSERT_EQ(test::exportResNet18(dir.path(), 64), 0);
  checkModel(scheduledModel(dir.file("resnet18_64.onnx")), 1e-3);
}

// A block that tensorize marked calls a CPU routine: the cuda target refuses
// it by name instead of emitting the nest it stands for.
TEST(CudaCodegen, RefusesTensorizedBlocks) {
  ir::Module m = ir::parseModule(R"(mlcc.ir 1
extern "tile"(%A: f32[4, 8], %B: f32[8, 16]) -> f32[4, 16] attrs(kind = "tensor_intrin", library = "libtile.so", symbol = "tile")
prim @mm(%A: f32[8, 8], %B: f32[8, 16], %C: f32[8, 16]) {
  for %t in 0..2 thread_binding(blockIdx.x) {
   for %tx in 0..1 thread_binding(threadIdx.x) {
    block "C_o" () attrs(tensor_intrin = "tile") {
      reads(%A[%t * 4 +: 4, 0 +: 8], %B[0 +: 8, 0 +: 16])
      writes(%C[%t * 4 +: 4, 0 +: 16])
      for %i in 0..4 {
        for %j in 0..16 {
          for %k in 0..8 {
            block "C" (%vi = spatial(8, %t * 4 + %i), %vj = spatial(16, %j), %vk = reduce(8, %k)) {
              reads(%A[%vi, %vk], %B[%vk, %vj])
              writes(%C[%vi, %vj])
              %C[%vi, %vj] = %C[%vi, %vj] + %A[%vi, %vk] * %B[%vk, %vj]
            }
          }
        }
      }
    }
   }
  }
}
)",
                                 "t.ir");
  ir::verifyModule(m, ops::opTypeInfo());
  const std::string error = mlcc::test::errorOf([&] { codegen::emitCudaSource({m.findPrim("mm")}, kCuda); });
  EXPECT_NE(error.find("block \"C_o\""), std::string::npos) << error;
  EXPECT_NE(error.find("calls a tensor intrinsic (tensorize); the cuda target cannot call CPU routines"),
            std::string::npos)
      << error;
}

// A sweep over the ONNX node tests (not in CI: about 12 minutes): each
// test's model (its m.ir where the directory has one, as node_tests.py
// --keep --work DIR leaves it, imported with the inputs it binds; else its
// model.onnx imported as it is) fused, legalized and scheduled by the cuda
// rules; every prim func's CUDA C compiled with NVRTC and run under the
// emulation against the interpreter on random inputs (a function the
// interpreter refuses on them, e.g. an index out of range, is skipped).
// Refusals are counted by message; a compile failure or a different answer
// fails. MLCC_CUDA_NODE_SWEEP=build/release/onnx-node-data/node (as
// tests/onnx_node/node_tests.py --fetch leaves it), or node_tests.py's
// --work directory.
TEST(CudaCodegen, OnnxNodeTestsSweep) {
  const char* root = std::getenv("MLCC_CUDA_NODE_SWEEP");
  if (!root) GTEST_SKIP() << "set MLCC_CUDA_NODE_SWEEP to the ONNX node tests' directory to run the sweep";
  std::vector<std::filesystem::path> models;
  for (const auto& e : std::filesystem::directory_iterator(root))
    for (const char* file : {"m.ir", "model.onnx"})
      if (std::filesystem::exists(e.path() / file)) {
        models.push_back(e.path() / file);
        break;
      }
  std::sort(models.begin(), models.end());
  std::map<std::string, std::vector<std::string>> outcomes;  // -> the tests
  std::string name;
  auto note = [&](const std::string& what) { outcomes[what].push_back(name); };
  auto first_line = [](std::string m) {
    m = m.substr(0, m.find('\n'));
    const size_t colon = m.find(": ");  // drop "in prim @name: " and the like
    return colon != std::string::npos && m.rfind("in prim @", 0) == 0 ? m.substr(colon + 2) : m;
  };
  for (const auto& path : models) {
    name = path.parent_path().filename().string();
    SCOPED_TRACE(name);
    ir::Module m;
    try {
      m = path.extension() == ".ir" ? ir::parseModuleFile(path.string())
                                    : frontend::importOnnxFile(path.string()).module;
    } catch (const Error&) {
      note("import refused");
      continue;
    }
    try {
      m = scheduled(std::move(m));
    } catch (const Error& e) {
      note("schedule refused: " + first_line(e.message()));
      continue;
    }
    const std::vector<const ir::PrimFunc*> funcs = primFuncs(m);
    if (funcs.empty()) {
      note("no prim func");
      continue;
    }
    codegen::CudaSource src;
    try {
      src = codegen::emitCudaSource(funcs, kCuda);
    } catch (const Error& e) {
      note("codegen refused: " + first_line(e.message()));
      continue;
    }
    if (codegen::nvrtcAvailable()) {
      try {
        codegen::compileWithNvrtc(src.code, "sm_80");
      } catch (const Error& e) {
        ADD_FAILURE() << name << ": NVRTC: " << e.format();
        continue;
      }
    }
    std::optional<host::CudaEmulator> emu;
    try {
      emu.emplace(host::CudaEmulator::compile(src.code));
    } catch (const Error& e) {
      ADD_FAILURE() << name << ": the emulation does not compile: " << e.format();
      continue;
    }
    bool all_ran = true;
    for (size_t fi = 0; fi < funcs.size(); ++fi) {
      const ir::PrimFunc& f = *funcs[fi];
      bool symbolic = false;
      for (const auto& p : f.params)
        for (const auto& d : p->shape) symbolic |= !d->as<ir::IntImmNode>();
      if (symbolic) {
        all_ran = false;
        continue;
      }
      bool refused = false;
      BothRuns r;
      try {
        r = runBoth(f, src.functions[fi], *emu, randomParams(f), host::CudaEmulator::Order::reverse,
                    &refused);
      } catch (const Error& e) {  // the emulation's (a divergent barrier...)
        ADD_FAILURE() << name << " @" << f.name << ": " << e.format();
        continue;
      }
      if (refused) {
        all_ran = false;
        continue;
      }
      expectClose(f, r, 1e-4, name + " @" + f.name + " ");
    }
    note(all_ran ? "ran" : "ran (some functions skipped: symbolic or refused inputs)");
  }
  for (const auto& [what, tests] : outcomes) {
    std::cout << tests.size() << "  " << what << " (";
    for (size_t i = 0; i < tests.size() && i < 4; ++i) std::cout << (i ? ", " : "") << tests[i];
    std::cout << (tests.size() > 4 ? ", ...)\n" : ")\n");
  }
}
