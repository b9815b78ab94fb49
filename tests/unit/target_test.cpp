// libs/target: the one --target parser (options, defaults from the CPU or
// GPU description, last value wins, str() round trip), the CPU description
// from LLVM (vector width from the features, -mattr applied, the checks of
// -mcpu/-mattr with their messages), the GPU table, and the errors' locations.
#include "mlcc/target/target.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

using mlcc::Error;
using mlcc::SourceLoc;
using namespace mlcc::target;

namespace {

// The message of the error parsing `text` throws (its location must be `where`).
std::string parseError(const std::string& text, const std::string& where = "--target") {
  try {
    Target::parse(text, SourceLoc{where, 0, 0});
  } catch (const Error& e) {
    EXPECT_EQ(e.loc().file, where) << text;
    return e.message();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return "";
}

TEST(Target, LlvmDefaultsComeFromTheHost) {
  Target t = Target::parse("llvm");
  EXPECT_EQ(t.kind, Target::Kind::llvm);
  EXPECT_EQ(t.mcpu, "");
  EXPECT_EQ(t.vector_bits, t.cpu.vector_bits);
  EXPECT_EQ(t.num_cores, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(t.num_cores, t.cpu.cores);
  EXPECT_FALSE(t.cpu.name.empty());
  EXPECT_FALSE(t.cpu.triple.empty());
  EXPECT_FALSE(t.cpu.features.empty());
  EXPECT_TRUE(std::is_sorted(t.cpu.features.begin(), t.cpu.features.end()));
  EXPECT_EQ(Target::parse("llvm -mcpu=native").cpu, t.cpu);
}

TEST(Target, ExplicitOptionsOverrideTheDescriptionInAnyOrder) {
  Target a = Target::parse("llvm -vector-bits=64 -num-cores=3");
  EXPECT_EQ(a.vector_bits, 64);
  EXPECT_EQ(a.num_cores, 3);
  Target b = Target::parse("llvm -num-cores=5 -num-cores=7");  // the last value wins
  EXPECT_EQ(b.num_cores, 7);
  EXPECT_EQ(Target::parse("llvm").parallel_grain, Target::kDefaultParallelGrain);
  EXPECT_EQ(Target::parse("llvm -parallel-grain=4096").parallel_grain, 4096);
}

TEST(Target, StrRoundTrips) {
  for (const char* text :
       {"llvm", "llvm -num-cores=3", "llvm -vector-bits=256", "llvm -mcpu=native",
        "llvm -parallel-grain=1000", "cuda", "cuda -arch=sm_90",
        "cuda -arch=sm_75 -max-threads-per-block=256", "cuda -arch=sm_100a", "cuda -fast-math"}) {
    Target t = Target::parse(text);
    EXPECT_EQ(Target::parse(t.str()), t) << text << " -> " << t.str();
    EXPECT_EQ(Target::parse(t.str()).str(), t.str()) << text;
  }
  EXPECT_EQ(Target::parse("cuda").str(), "cuda -arch=sm_80");
  EXPECT_EQ(Target::parse("cuda -fast-math -arch=sm_90").str(), "cuda -arch=sm_90 -fast-math");
  EXPECT_FALSE(Target::parse("cuda").fast_math);
  EXPECT_TRUE(Target::parse("cuda -fast-math").fast_math);
  EXPECT_EQ(Target::parse("llvm -num-cores=3 -vector-bits=128").str(), "llvm -num-cores=3 -vector-bits=128");
  // The default grain is not written (the workload keys of tuning databases stay the same).
  EXPECT_EQ(Target::parse("llvm -num-cores=3 -vector-bits=128 -parallel-grain=262144").str(),
            "llvm -num-cores=3 -vector-bits=128");
  EXPECT_EQ(Target::parse("llvm -num-cores=3 -vector-bits=128 -parallel-grain=131072").str(),
            "llvm -num-cores=3 -vector-bits=128 -parallel-grain=131072");
  EXPECT_EQ(Target::parse("llvm -num-cores=3 -vector-bits=128 -parallel-grain=8").str(),
            "llvm -num-cores=3 -vector-bits=128 -parallel-grain=8");
}

TEST(Target, ErrorsNameTheBadPartAtTheCallersLocation) {
  EXPECT_EQ(parseError("wasm"), "unknown target 'wasm' (expected llvm or cuda, e.g. \"llvm -num-cores=2\")");
  EXPECT_EQ(parseError(""), "unknown target '' (expected llvm or cuda, e.g. \"llvm -num-cores=2\")");
  EXPECT_NE(
      parseError("llvm -arch=sm_80").find("unknown or malformed option '-arch=sm_80' for llvm (known: -mcpu"),
      std::string::npos);
  EXPECT_NE(parseError("cuda -mcpu=x").find("unknown or malformed option '-mcpu=x' for cuda (known: -arch"),
            std::string::npos);
  EXPECT_NE(parseError("llvm -mcpu").find("'-mcpu'"), std::string::npos);
  EXPECT_EQ(parseError("llvm -num-cores=0", "-mcpu"), "-num-cores must be a positive integer, not '0'");
  EXPECT_EQ(parseError("llvm -vector-bits=2x"), "-vector-bits must be a positive integer, not '2x'");
  EXPECT_EQ(parseError("llvm -vector-bits=7"), "-vector-bits must be a power of two from 32 to 2048, not 7");
  EXPECT_EQ(parseError("llvm -vector-bits=384"),
            "-vector-bits must be a power of two from 32 to 2048, not 384");
  EXPECT_EQ(parseError("llvm -vector-bits=4096"),
            "-vector-bits must be a power of two from 32 to 2048, not 4096");
  EXPECT_EQ(parseError("llvm -parallel-grain=0"), "-parallel-grain must be a positive integer, not '0'");
  EXPECT_EQ(
      parseError("cuda -fast-math=1"),
      "unknown or malformed option '-fast-math=1' for cuda (known: -arch=sm_XX, -max-threads-per-block=N, "
      "-fast-math)");
  EXPECT_EQ(parseError("cuda -max-threads-per-block=-1"),
            "-max-threads-per-block must be a positive integer, not '-1'");
}

TEST(Target, CudaArchitecturesFromTheTable) {
  Target t = Target::parse("cuda -arch=sm_90");
  EXPECT_EQ(t.kind, Target::Kind::cuda);
  EXPECT_EQ(t.gpu.compute_major, 9);
  EXPECT_EQ(t.gpu.compute_minor, 0);
  EXPECT_EQ(t.max_threads_per_block, 1024);
  EXPECT_EQ(t.max_shared_memory_bytes, 48 * 1024);
  EXPECT_EQ(t.gpu.max_shared_memory_optin_bytes, 227 * 1024);
  EXPECT_EQ(Target::parse("cuda").arch, "sm_80");
  EXPECT_EQ(Target::parse("cuda -arch=sm_86").gpu.max_threads_per_sm, 1536);
  // An arch-specific variant has its base's limits.
  GpuInfo a = describeGpu("sm_90a");
  EXPECT_EQ(a.arch, "sm_90a");
  EXPECT_EQ(a.max_shared_memory_optin_bytes, t.gpu.max_shared_memory_optin_bytes);
  EXPECT_EQ(Target::parse("cuda -arch=sm_75 -max-threads-per-block=64").max_threads_per_block, 64);
  const std::vector<std::string> archs = knownGpuArchs();
  ASSERT_FALSE(archs.empty());
  EXPECT_EQ(archs.front(), "sm_75");
  for (size_t i = 0; i < archs.size(); ++i) {
    GpuInfo g = describeGpu(archs[i]);
    EXPECT_LE(g.max_shared_memory_bytes, g.max_shared_memory_optin_bytes) << archs[i];
    EXPECT_LE(g.max_shared_memory_optin_bytes, g.shared_memory_per_sm_bytes) << archs[i];
    if (i > 0) {
      GpuInfo before = describeGpu(archs[i - 1]);
      EXPECT_GE(g.compute_major * 10 + g.compute_minor, before.compute_major * 10 + before.compute_minor);
    }
  }
}

TEST(Target, UnknownCudaArchitecturesAreRefused) {
  for (const char* arch : {"sm_12", "sm_70", "sm_75a", "sm_", "compute_80", "sm_90x"})
    EXPECT_NE(parseError(std::string("cuda -arch=") + arch)
                  .find("unknown CUDA architecture '" + std::string(arch) + "' (known: sm_75, sm_80"),
              std::string::npos)
        << arch;
  EXPECT_EQ(parseError("cuda -arch=sm_80 -max-threads-per-block=2048"),
            "-max-threads-per-block=2048 is over sm_80's limit of 1024");
}

#if defined(__x86_64__)

TEST(Target, VectorBitsFollowTheCpuFeatures) {
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64").vector_bits, 128);
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64-v3").vector_bits, 256);
  EXPECT_EQ(Target::parse("llvm -mcpu=haswell").vector_bits, 256);
  EXPECT_EQ(Target::parse("llvm -mcpu=sandybridge").vector_bits, 256);  // avx without avx2
  EXPECT_EQ(Target::parse("llvm -mcpu=skylake-avx512").vector_bits, 512);
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64-v4").vector_bits, 512);
  // -mattr changes the features, and with them the width.
  Target t = Target::parse("llvm -mcpu=x86-64-v4 -mattr=-avx512f");
  EXPECT_EQ(t.vector_bits, 256);
  EXPECT_FALSE(t.cpu.has("avx512f"));
  EXPECT_TRUE(t.cpu.has("avx2"));
  EXPECT_EQ(t.cpu.llvm_features, "-avx512f");
  EXPECT_EQ(Target::parse("llvm -mcpu=x86-64 -mattr=+avx2").vector_bits, 256);
  // An explicit -vector-bits wins over the CPU, before or after -mcpu.
  EXPECT_EQ(Target::parse("llvm -vector-bits=128 -mcpu=skylake-avx512").vector_bits, 128);
  Target v3 = Target::parse("llvm -mcpu=x86-64-v3");
  EXPECT_EQ(v3.cpu.name, "x86-64-v3");
  EXPECT_TRUE(v3.cpu.has("fma"));
  EXPECT_FALSE(v3.cpu.has("avx512f"));
}

TEST(Target, CpusAndFeaturesAreCheckedAgainstLLVM) {
  const std::string bogus = parseError("llvm -mcpu=bogus");
  EXPECT_EQ(bogus.rfind("unknown CPU 'bogus' for x86_64", 0), 0u) << bogus;
  EXPECT_NE(bogus.find("(valid: native, x86-64, x86-64-v2"), std::string::npos) << bogus;
  EXPECT_NE(parseError("llvm -mcpu=skylake-avx51").find("did you mean skylake-avx512"), std::string::npos);
  EXPECT_EQ(
      parseError("llvm -mattr=+avx2,+avx9").rfind("unknown CPU feature '+avx9' in -mattr=+avx2,+avx9", 0),
      0u);
  EXPECT_NE(parseError("llvm -mattr=avx2").find("features are +NAME or -NAME"), std::string::npos);
  EXPECT_EQ(parseError("llvm -mcpu=i386").rfind("CPU 'i386' cannot run 64-bit code", 0), 0u);
  EXPECT_NE(parseError("llvm -mattr=-64bit").find("cannot run 64-bit code"), std::string::npos);
  const std::vector<std::string> names = validCpuNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "x86-64-v3"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "i386"), names.end());
}

TEST(Target, DescribeSaysWhatTheCompilerAssumes) {
  const std::string cpu = Target::parse("llvm -mcpu=x86-64-v3 -num-cores=3").describe();
  EXPECT_NE(cpu.find("target: llvm -mcpu=x86-64-v3 -num-cores=3 -vector-bits=256\n"), std::string::npos)
      << cpu;
  EXPECT_NE(cpu.find("cpu: x86-64-v3\n"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("features: sse4.2 avx avx2 fma f16c ("), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("vector bits: 256\n"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("cores: 3 (-num-cores)\n"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("l1d cache: "), std::string::npos) << cpu;
  EXPECT_NE(Target::parse("llvm").describe().find(" (this machine)\n"), std::string::npos);
}

// Zen 4 issues a 512-bit FMA as two 256-bit halves (the CPU rules then leave
// out their L1 blocking of convolution weights); AVX-512 Xeons and CPUs
// without AVX-512 do not.
TEST(Target, Zen4Splits512BitFmas) {
  const Target zen4 = Target::parse("llvm -mcpu=znver4");
  EXPECT_TRUE(zen4.cpu.split_512bit_fma);
  EXPECT_NE(zen4.describe().find("vector bits: 512 (512-bit FMAs issue as two 256-bit halves)\n"),
            std::string::npos)
      << zen4.describe();
  EXPECT_FALSE(Target::parse("llvm -mcpu=icelake-server").cpu.split_512bit_fma);
  EXPECT_FALSE(Target::parse("llvm -mcpu=x86-64-v3").cpu.split_512bit_fma);
  EXPECT_FALSE(Target::parse("llvm -mcpu=znver4 -mattr=-avx512f").cpu.split_512bit_fma);
}

#endif

TEST(Target, DescribeGpuLimits) {
  const std::string gpu = Target::parse("cuda -arch=sm_90").describe();
  EXPECT_NE(gpu.find("arch: sm_90 (compute capability 9.0)\n"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("max threads per block: 1024\n"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("shared memory per block: 48 KiB (static), 227 KiB (opt-in)\n"), std::string::npos)
      << gpu;
}

}  // namespace
