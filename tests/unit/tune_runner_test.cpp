// The tuner's builder/runner (libs/tune runner.h): candidates of a 64x64
// matmul measured in worker processes (this binary, run as
// `tune_runner_test worker`). A correct candidate is timed; one that
// computes a wrong answer, segfaults, loops forever or does not match the
// reference's signature is recorded as such, and the candidates after it in
// the same batch are still measured, with one worker and with two. A
// reference that reads out of bounds cannot be set. No worker outlives the
// Runner.
#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "mlcc/ir/parser.h"
#include "mlcc/schedule/rules.h"
#include "mlcc/schedule/schedule.h"
#include "mlcc/support/diagnostic.h"
#include "mlcc/target/target.h"
#include "mlcc/tune/runner.h"
#include "testlib.h"

using namespace mlcc;
using namespace mlcc::test;
using tune::Measurement;
using tune::RecordStatus;

namespace {

// Candidates with the reference's signature, @mm(%A, %B, %C: f32[64, 64]).
// Reads %B transposed: a wrong result.
const char* kWrong = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      for %k in 0..64 {
        block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k)) {
          reads(%A[%vi, %vk], %B[%vj, %vk])
          writes(%C[%vi, %vj])
          init {
            %C[%vi, %vj] = 0.0
          }
          %C[%vi, %vj] = %C[%vi, %vj] + %A[%vi, %vk] * %B[%vj, %vk]
        }
      }
    }
  }
}
)";

// Stores 10^11 rows past the buffer once %vi reaches 1: far outside any
// mapping, a segfault without bounds checks.
const char* kCrash = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      for %k in 0..64 {
        block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j), %vk = reduce(64, %k)) {
          reads(%A[%vi, %vk], %B[%vk, %vj])
          writes(%C[%vi * 100000000000, %vj])
          init {
            %C[%vi * 100000000000, %vj] = 0.0
          }
          %C[%vi * 100000000000, %vj] = %C[%vi * 100000000000, %vj] + %A[%vi, %vk] * %B[%vk, %vj]
        }
      }
    }
  }
}
)";

// A reduction over 2^40 iterations, each a multiply-add the compiler cannot
// fold: hours of work.
const char* kEndless = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %k in 0..1099511627776 {
      block "C" (%vi = spatial(64, %i), %vk = reduce(1099511627776, %k)) {
        reads(%A[%vi, %vk % 64])
        writes(%C[%vi, 0])
        init {
          %C[%vi, 0] = 0.0
        }
        %C[%vi, 0] = %C[%vi, 0] * 0.5 + %A[%vi, %vk % 64]
      }
    }
  }
}
)";

// Another signature: not a candidate of the matmul.
const char* kOtherSignature = R"(
prim @mm(%A: f32[32, 64], %B: f32[64, 64], %C: f32[32, 64]) {
  for %i in 0..32 {
    for %j in 0..64 {
      %C[%i, %j] = %A[%i, %j] + %B[%i, %j]
    }
  }
}
)";

// A reference that reads row 64 of a 64-row buffer.
const char* kOutOfBoundsReference = R"(
prim @mm(%A: f32[64, 64], %B: f32[64, 64], %C: f32[64, 64]) {
  for %i in 0..64 {
    for %j in 0..64 {
      block "C" (%vi = spatial(64, %i), %vj = spatial(64, %j)) {
        reads(%A[%vi + 1, %vj])
        writes(%C[%vi, %vj])
        %C[%vi, %vj] = %A[%vi + 1, %vj]
      }
    }
  }
}
)";

ir::PrimFunc primOf(const ir::Module& m) { return std::get<ir::PrimFunc>(m.functions.at(0)); }

ir::PrimFunc reference() { return primOf(parseVerified(fixture("matmul_64.ir"))); }
ir::PrimFunc unverified(const char* text) { return primOf(parseUnverified(text)); }

// The matmul as the default CPU rules schedule it.
ir::PrimFunc defaultScheduled() {
  ir::Module m = parseVerified(fixture("matmul_64.ir"));
  schedule::applyDefaultRules(m, target::Target::parse("llvm"));
  return primOf(m);
}

// The matmul tiled by hand: i split by 8, j by 16 and vectorized.
ir::PrimFunc handScheduled() {
  schedule::Schedule sch(reference());
  schedule::BlockRV c = sch.getBlock("C");
  auto loops = sch.getLoops(c);
  auto i = sch.split(loops[0], {std::nullopt, int64_t{8}});
  auto j = sch.split(loops[1], {std::nullopt, int64_t{16}});
  sch.reorder({i[0], j[0], loops[2], i[1], j[1]});
  sch.vectorize(j[1]);
  return sch.func();
}

tune::RunnerOptions options(int jobs = 1, double timeout_s = 20) {
  tune::RunnerOptions o;
  o.worker = {"/proc/self/exe", "worker"};
  o.jobs = jobs;
  o.timeout_s = timeout_s;
  o.repeats = 3;
  o.min_sample_ms = 1;
  o.seed = 7;
  return o;
}

void expectOk(const Measurement& m, int repeats = 3) {
  EXPECT_EQ(m.status, RecordStatus::ok) << m.error;
  EXPECT_EQ(m.run_us.size(), static_cast<size_t>(repeats));
  for (double us : m.run_us) EXPECT_GT(us, 0);
  EXPECT_GT(m.build_ms, 0);
  EXPECT_EQ(m.error, "");
}

// The processes this one has started and not reaped (zombies included).
std::vector<std::string> children() {
  std::vector<std::string> kids;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return kids;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    for (std::string pid; in >> pid;) kids.push_back(pid);
  }
  closedir(dir);
  return kids;
}

TEST(TuneRunner, MeasuresCorrectCandidates) {
  tune::Runner runner(options());
  runner.setReference(reference());
  std::vector<Measurement> m = runner.measure({defaultScheduled(), handScheduled(), reference()});
  ASSERT_EQ(m.size(), 3u);
  for (const Measurement& r : m) expectOk(r);
  EXPECT_TRUE(runner.measure({}).empty());
}

TEST(TuneRunner, GivesUpOnSlowCandidates) {
  tune::Runner runner(options());
  runner.setReference(reference());
  // Every candidate's checked call takes longer than 0.001 us: one sample.
  std::vector<Measurement> m = runner.measure({defaultScheduled(), reference()}, 0.001);
  ASSERT_EQ(m.size(), 2u);
  for (const Measurement& r : m) expectOk(r, 1);
  // Without the limit, every sample.
  expectOk(runner.measure({defaultScheduled()}, 0).at(0));
}

TEST(TuneRunner, WrongResult) {
  tune::Runner runner(options());
  runner.setReference(reference());
  std::vector<Measurement> m = runner.measure({defaultScheduled(), unverified(kWrong), handScheduled()});
  ASSERT_EQ(m.size(), 3u);
  expectOk(m[0]);
  EXPECT_EQ(m[1].status, RecordStatus::wrong_result);
  EXPECT_TRUE(m[1].run_us.empty());
  EXPECT_NE(m[1].error.find("%C["), std::string::npos) << m[1].error;
  EXPECT_NE(m[1].error.find("expected"), std::string::npos) << m[1].error;
  expectOk(m[2]);
}

TEST(TuneRunner, CrashingCandidate) {
  tune::Runner runner(options());
  runner.setReference(reference());
  std::vector<Measurement> m = runner.measure({defaultScheduled(), unverified(kCrash), handScheduled()});
  ASSERT_EQ(m.size(), 3u);
  expectOk(m[0]);
  EXPECT_EQ(m[1].status, RecordStatus::crash);
  // (Under AddressSanitizer, the debug preset, the worker reports the SEGV and exits 1.)
  EXPECT_TRUE(m[1].error.find("worker killed by signal 11 (SIGSEGV)") != std::string::npos ||
              m[1].error.find("AddressSanitizer: SEGV") != std::string::npos)
      << m[1].error;
  expectOk(m[2]);  // built again on the fresh worker
  // And the replaced worker goes on measuring.
  m = runner.measure({handScheduled()});
  expectOk(m.at(0));
}

TEST(TuneRunner, EndlessCandidateTimesOut) {
  tune::Runner runner(options(1, 2));
  runner.setReference(reference());
  std::vector<Measurement> m = runner.measure({defaultScheduled(), unverified(kEndless), handScheduled()});
  ASSERT_EQ(m.size(), 3u);
  expectOk(m[0]);
  EXPECT_EQ(m[1].status, RecordStatus::timeout);
  EXPECT_NE(m[1].error.find("timed out after 2 s"), std::string::npos) << m[1].error;
  expectOk(m[2]);
}

TEST(TuneRunner, BadReference) {
  tune::Runner runner(options());
  const std::string error = errorOf([&] { runner.setReference(unverified(kOutOfBoundsReference)); });
  EXPECT_NE(error.find("reference @mm"), std::string::npos) << error;
  EXPECT_NE(error.find("out of bounds"), std::string::npos) << error;
  EXPECT_NE(errorOf([&] { runner.measure({reference()}); }).find("no reference"), std::string::npos);

  const ir::Module symbolic = parseVerified(R"(
prim @scale(%x: f32[n], %y: f32[n]) {
  for %i in 0..n {
    block "y" (%vi = spatial(n, %i)) {
      reads(%x[%vi])
      writes(%y[%vi])
      %y[%vi] = %x[%vi] * 2.0
    }
  }
}
)");
  EXPECT_NE(errorOf([&] { runner.setReference(primOf(symbolic)); }).find("symbolic shapes"),
            std::string::npos);

  // A good reference still works afterwards.
  runner.setReference(reference());
  expectOk(runner.measure({defaultScheduled()}).at(0));
}

TEST(TuneRunner, TwoWorkers) {
  {
    tune::Runner runner(options(2));
    runner.setReference(reference());
    std::vector<Measurement> m = runner.measure({defaultScheduled(), unverified(kCrash), handScheduled(),
                                                 unverified(kWrong), unverified(kOtherSignature), reference(),
                                                 defaultScheduled(), unverified(kCrash), handScheduled()});
    ASSERT_EQ(m.size(), 9u);
    expectOk(m[0]);
    EXPECT_EQ(m[1].status, RecordStatus::crash) << m[1].error;
    expectOk(m[2]);
    EXPECT_EQ(m[3].status, RecordStatus::wrong_result) << m[3].error;
    EXPECT_EQ(m[4].status, RecordStatus::build_error);
    EXPECT_NE(m[4].error.find("f32[32, 64]"), std::string::npos) << m[4].error;
    expectOk(m[5]);
    expectOk(m[6]);
    EXPECT_EQ(m[7].status, RecordStatus::crash) << m[7].error;
    expectOk(m[8]);
    EXPECT_EQ(children().size(), 2u);
  }
  EXPECT_TRUE(children().empty());  // killed and reaped
}

// A worker's stderr is kept, not shown: an error carries its last lines.
TEST(TuneRunner, WorkerStderrTail) {
  tune::RunnerOptions o = options();
  o.worker = {"/bin/sh", "-c",
              "head -c 200000 /dev/zero | tr '\\0' x >&2; echo >&2; echo last words >&2; kill -SEGV $$"};
  tune::Runner runner(o);
  const std::string error = errorOf([&] { runner.setReference(reference()); });
  EXPECT_NE(error.find("worker killed by signal 11 (SIGSEGV); stderr: "), std::string::npos) << error;
  EXPECT_NE(error.find("last words"), std::string::npos) << error;
  EXPECT_LT(error.size(), 1200u);

  o.worker = {"/bin/sh", "-c", "read request; echo not json; read request"};
  tune::Runner garbled(o);
  EXPECT_NE(
      errorOf([&] { garbled.setReference(reference()); }).find("malformed reply from the worker: not json"),
      std::string::npos);
}

TEST(TuneRunner, WorkerThatCannotStart) {
  tune::RunnerOptions o = options();
  o.worker = {"/nonexistent/mlcc-tune", "worker"};
  EXPECT_NE(errorOf([&] { tune::Runner runner(o); }).find("cannot start"), std::string::npos);
  EXPECT_TRUE(children().empty());
}

}  // namespace

// Run as `tune_runner_test worker`, this binary is the Runner's worker.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "worker") return tune::workerMain(0, 1);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
