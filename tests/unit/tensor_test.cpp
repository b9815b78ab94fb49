// Host tensors: allocation, views, element access across dtypes, reshaping.
#include "mlcc/ir/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "mlcc/support/diagnostic.h"

using namespace mlcc::ir;

TEST(Tensor, ZerosAreZeroAndAligned) {
  Tensor t = Tensor::zeros(DType::f32, {3, 5});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.nbytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.bytes()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.at(i), 0.0);
}

TEST(Tensor, ElementAccessConvertsPerDType) {
  Tensor f16 = Tensor::fromValues(DType::f16, {3}, {1.0, 0.1, 65520.0});
  EXPECT_EQ(f16.at(0), 1.0);
  EXPECT_NEAR(f16.at(1), 0.1, 1e-4);
  EXPECT_TRUE(std::isinf(f16.at(2)));  // rounds past f16's max
  Tensor i8 = Tensor::fromValues(DType::i8, {3}, {-3.7, 300, 5});
  EXPECT_EQ(i8.at(0), -3);   // truncates toward zero
  EXPECT_EQ(i8.at(1), 127);  // saturates
  Tensor b = Tensor::fromValues(DType::boolean, {2}, {0.0, 2.0});
  EXPECT_EQ(b.at(1), 1.0);
  Tensor i64 = Tensor::scalar(DType::i64, 1e15);
  EXPECT_EQ(i64.rank(), 0);
  EXPECT_EQ(i64.data<int64_t>()[0], 1000000000000000);
}

// A bool byte other than 0 or 1 (a file may hold one: a fuzzed ONNX
// initializer's raw data) is read as true, never kept as an invalid bool.
TEST(Tensor, BoolBytesFromFilesAreZeroOrOne) {
  const std::byte raw[] = {std::byte{0}, std::byte{1}, std::byte{202}, std::byte{128}};
  Tensor b = Tensor::copyOf(DType::boolean, {4}, raw);
  const auto* p = reinterpret_cast<const uint8_t*>(b.bytes());
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 1);
  EXPECT_EQ(p[2], 1);
  EXPECT_EQ(p[3], 1);
  Tensor u8 = Tensor::copyOf(DType::u8, {4}, raw);  // other dtypes keep their bytes
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(u8.bytes())[2], 202);
}

TEST(Tensor, ViewsAreReadOnlyAndKeepOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  Tensor v = Tensor::view(DType::f32, {2, 2}, owner->data(), owner);
  owner.reset();
  EXPECT_EQ(v.at(3), 4.0);
  EXPECT_THROW(v.set(0, 1.0), mlcc::Error);
  Tensor c = v.clone();
  c.set(0, 9.0);
  EXPECT_EQ(c.at(0), 9.0);
  EXPECT_EQ(v.at(0), 1.0);
}

TEST(Tensor, ReshapeSharesStorageAndChecksCount) {
  Tensor t = Tensor::fromValues(DType::f32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.bytes(), t.bytes());
  EXPECT_THROW(t.reshaped({4}), mlcc::Error);
  EXPECT_THROW(Tensor::zeros(DType::f32, {-1}), mlcc::Error);
  EXPECT_THROW(Tensor::zeros(DType::f32, {1LL << 40, 1LL << 40}), mlcc::Error);
}

// Sizes are checked before anything is allocated (issue 12): a shape whose
// byte size wraps, and copyOf given too few bytes for a 16 GiB shape.
TEST(Tensor, SizesAreCheckedBeforeAllocation) {
  EXPECT_THROW(Tensor::zeros(DType::f32, {int64_t{1} << 62}), mlcc::Error);  // 2^64 bytes wraps to 0
  EXPECT_THROW(Tensor::zeros(DType::f32, {0, -1}), mlcc::Error);
  std::vector<std::byte> four(4);
  try {
    Tensor::copyOf(DType::f32, {int64_t{1} << 32}, four);
    FAIL() << "no error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.message(), "tensor data has 4 bytes, but its type needs 17179869184");
  }
  float one = 1;
  EXPECT_THROW(Tensor::view(DType::f32, {int64_t{1} << 62}, &one, nullptr), mlcc::Error);
  EXPECT_EQ(Tensor::zeros(DType::f32, {0, 5}).nbytes(), 0u);
}
