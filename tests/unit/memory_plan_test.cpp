// The static memory plan of codegen (libs/codegen/src/memory_plan.h): no two
// tensors live at the same step overlap (random live ranges), offsets are
// aligned, dead tensors' space is reused, and bad ranges are errors; the same
// for the plan of symbolic sizes, evaluated for several values.
#include "memory_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "mlcc/ir/expr.h"
#include "mlcc/support/diagnostic.h"

using mlcc::codegen::LiveTensor;
using mlcc::codegen::MemoryPlan;
using mlcc::codegen::planMemory;

namespace {

void expectValid(const std::vector<LiveTensor>& ts, const MemoryPlan& p, uint64_t align) {
  ASSERT_EQ(p.offsets.size(), ts.size());
  EXPECT_EQ(p.workspace_bytes % align, 0u);
  uint64_t sum = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    sum += ts[i].bytes;
    EXPECT_EQ(p.offsets[i] % align, 0u) << "tensor " << i;
    EXPECT_LE(p.offsets[i] + ts[i].bytes, p.workspace_bytes) << "tensor " << i;
    for (size_t j = 0; j < i; ++j) {
      if (ts[i].bytes == 0 || ts[j].bytes == 0) continue;
      bool live = ts[i].first <= ts[j].last && ts[j].first <= ts[i].last;
      bool overlap = p.offsets[i] < p.offsets[j] + ts[j].bytes && p.offsets[j] < p.offsets[i] + ts[i].bytes;
      EXPECT_FALSE(live && overlap) << "tensors " << j << " and " << i << " are live together and overlap";
    }
  }
  EXPECT_EQ(p.sum_bytes, sum);
}

}  // namespace

TEST(MemoryPlan, Empty) {
  MemoryPlan p = planMemory({});
  EXPECT_EQ(p.workspace_bytes, 0u);
  EXPECT_EQ(p.sum_bytes, 0u);
}

TEST(MemoryPlan, ChainReusesDeadBuffers) {
  // a -> b -> c -> d: each tensor is read only by the next step.
  std::vector<LiveTensor> ts = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan p = planMemory(ts);
  expectValid(ts, p, 64);
  EXPECT_EQ(p.sum_bytes, 4000u);
  EXPECT_EQ(p.workspace_bytes, 2 * 1024u);  // two buffers of 1000 rounded to 64 ping-pong
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_EQ(p.offsets[1], p.offsets[3]);
}

TEST(MemoryPlan, ReadAndWrittenBySameStepNeverShare) {
  std::vector<LiveTensor> ts = {{64, 0, 1}, {64, 1, 1}};
  MemoryPlan p = planMemory(ts);
  expectValid(ts, p, 64);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
}

TEST(MemoryPlan, SmallTensorFillsGapOfDeadOne) {
  // A large tensor dies at step 1; a small and a medium one then fit in its space.
  std::vector<LiveTensor> ts = {{4096, 0, 1}, {128, 0, 5}, {1024, 2, 3}, {2048, 2, 4}};
  MemoryPlan p = planMemory(ts);
  expectValid(ts, p, 64);
  EXPECT_EQ(p.workspace_bytes, 4096u + 128u);
}

TEST(MemoryPlan, ZeroSizedTensorsNeedNoSpace) {
  std::vector<LiveTensor> ts = {{0, 0, 3}, {100, 1, 2}};
  MemoryPlan p = planMemory(ts);
  expectValid(ts, p, 64);
  EXPECT_EQ(p.workspace_bytes, 128u);
}

TEST(MemoryPlan, BadInputs) {
  EXPECT_THROW(planMemory({{10, 3, 2}}), mlcc::Error);
  EXPECT_THROW(planMemory({{10, 0, 1}}, 48), mlcc::Error);
}

TEST(MemoryPlan, RandomLiveRangesNeverOverlap) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 60);
    const int steps = 1 + static_cast<int>(rng() % 40);
    const uint64_t align = uint64_t{1} << (rng() % 8);
    std::vector<LiveTensor> ts;
    for (int i = 0; i < n; ++i) {
      LiveTensor t;
      t.first = static_cast<int>(rng() % steps);
      t.last = t.first + static_cast<int>(rng() % (steps - t.first));
      t.bytes = rng() % 5 == 0 ? rng() % 8 : rng() % 100000;
      ts.push_back(t);
    }
    MemoryPlan p = planMemory(ts, align);
    expectValid(ts, p, align);
    EXPECT_LE(p.workspace_bytes, p.sum_bytes + n * align) << "trial " << trial;
    // Never worse than the peak of live bytes by more than fragmentation allows:
    // at least the peak, since live tensors are disjoint.
    uint64_t peak = 0;
    for (int s = 0; s < steps; ++s) {
      uint64_t live = 0;
      for (const auto& t : ts)
        if (t.first <= s && s <= t.last) live += t.bytes;
      peak = std::max(peak, live);
    }
    EXPECT_GE(p.workspace_bytes, peak);
    if (HasFailure()) break;
  }
}

// Symbolic sizes: evaluated for several values of n, both kinds of plan
// are valid (no overlap of tensors live together, aligned offsets). Sizes
// c * n (and constants) get the scaled plan, which reuses dead tensors'
// space like the static one; other sizes (a * n + b) the stacked one.
namespace {

void expectValidForEachN(const std::vector<mlcc::codegen::LiveSymbolicTensor>& ts,
                         const std::vector<std::pair<int64_t, int64_t>>& ab, const mlcc::ir::Var& n) {
  const std::vector<const mlcc::ir::VarNode*> dims = {n.get()};
  mlcc::codegen::SymbolicMemoryPlan sp = mlcc::codegen::planSymbolicMemory(ts, 64);
  for (int64_t value : {0, 1, 3, 17, 1000}) {
    std::vector<LiveTensor> st;
    for (size_t i = 0; i < ts.size(); ++i)
      st.push_back({static_cast<uint64_t>(ab[i].first * value + ab[i].second), ts[i].first, ts[i].last});
    SCOPED_TRACE("n = " + std::to_string(value));
    expectValid(st, mlcc::codegen::evaluateMemoryPlan(sp, dims, {value}), 64);
  }
}

}  // namespace

TEST(MemoryPlan, SymbolicSizesNeverOverlapForAnyValue) {
  using mlcc::ir::BinaryOp;
  const mlcc::ir::Var n = mlcc::ir::makeVar("n");
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 100; ++trial) {
    const int count = 1 + static_cast<int>(rng() % 20);
    const int steps = 1 + static_cast<int>(rng() % 15);
    const bool scaled = trial % 2 == 0;  // c * n or a constant; else a * n + b
    std::vector<mlcc::codegen::LiveSymbolicTensor> ts;
    std::vector<std::pair<int64_t, int64_t>> ab;
    for (int i = 0; i < count; ++i) {
      mlcc::codegen::LiveSymbolicTensor t;
      t.first = static_cast<int>(rng() % steps);
      t.last = t.first + static_cast<int>(rng() % (steps - t.first));
      int64_t a = static_cast<int64_t>(rng() % 3000), b = static_cast<int64_t>(rng() % 5000);
      if (scaled) (rng() % 4 == 0 ? a : b) = 0;
      ab.emplace_back(a, b);
      t.bytes = mlcc::ir::makeBinary(
          BinaryOp::Add, mlcc::ir::makeBinary(BinaryOp::Mul, n, mlcc::ir::makeInt(a)), mlcc::ir::makeInt(b));
      ts.push_back(t);
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expectValidForEachN(ts, ab, n);
    if (HasFailure()) break;
  }
  const std::vector<const mlcc::ir::VarNode*> dims = {n.get()};
  auto bytes = [&](int64_t k) { return mlcc::ir::makeBinary(BinaryOp::Mul, n, mlcc::ir::makeInt(k)); };
  // A chain a -> b -> c of sizes 64 n: c reuses a's space (scaled).
  auto chain =
      mlcc::codegen::planSymbolicMemory({{bytes(64), 0, 1}, {bytes(64), 1, 2}, {bytes(64), 2, 3}}, 64);
  MemoryPlan p = mlcc::codegen::evaluateMemoryPlan(chain, dims, {5});
  EXPECT_EQ(p.offsets, (std::vector<uint64_t>{0, 5 * 64, 0}));
  EXPECT_EQ(p.workspace_bytes, 2u * 5 * 64);
  // Sizes 64 n + 64: stacked, so c goes above b.
  auto plus = [&](int64_t k) { return mlcc::ir::makeBinary(BinaryOp::Add, bytes(k), mlcc::ir::makeInt(64)); };
  auto stacked =
      mlcc::codegen::planSymbolicMemory({{plus(64), 0, 1}, {plus(64), 1, 2}, {plus(64), 2, 3}}, 64);
  EXPECT_EQ(mlcc::codegen::evaluateMemoryPlan(stacked, dims, {1}).workspace_bytes, 3u * 128);
}
