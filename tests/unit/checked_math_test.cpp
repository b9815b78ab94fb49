// Checked size arithmetic (mlcc/support/checked_math.h): products and sums at
// the int64 limits, element counts and byte sizes of shapes with negative,
// zero and huge dims, the messages, and ranges near UINT64_MAX.
#include "mlcc/support/checked_math.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "mlcc/support/diagnostic.h"

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
using Shape = std::vector<int64_t>;

TEST(CheckedMath, MulAndAdd) {
  EXPECT_EQ(mlcc::checkedMul(3, 4), 12);
  EXPECT_EQ(mlcc::checkedMul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(mlcc::checkedMul(int64_t{1} << 62, 4), std::nullopt);
  EXPECT_EQ(mlcc::checkedMul(kMax, -1), -kMax);
  EXPECT_EQ(mlcc::checkedMul(kMin, -1), std::nullopt);
  EXPECT_EQ(mlcc::checkedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(mlcc::checkedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(mlcc::checkedAdd(kMin, -1), std::nullopt);
}

TEST(CheckedMath, Saturating) {
  EXPECT_EQ(mlcc::saturatingMul(int64_t{1} << 62, 4), kMax);
  EXPECT_EQ(mlcc::saturatingMul(int64_t{1} << 62, -4), kMin);
  EXPECT_EQ(mlcc::saturatingMul(6, 7), 42);
  EXPECT_EQ(mlcc::saturatingAdd(kMax, kMax), kMax);
  EXPECT_EQ(mlcc::saturatingAdd(kMin, -1), kMin);
  EXPECT_EQ(mlcc::saturatingAdd(40, 2), 42);
}

TEST(CheckedMath, ElementCountAndByteSize) {
  EXPECT_EQ(mlcc::checkedElementCount(Shape{}), 1);  // a scalar
  EXPECT_EQ(mlcc::checkedElementCount(Shape{2, 3, 4}), 24);
  EXPECT_EQ(mlcc::checkedByteSize(Shape{2, 3, 4}, 4), 96);
  EXPECT_EQ(mlcc::checkedByteSize(Shape{0, 5}, 4), 0);
  // [2^62] f32: the element count fits, the byte size (2^64) wraps to 0 unchecked.
  EXPECT_EQ(mlcc::checkedElementCount(Shape{int64_t{1} << 62}), int64_t{1} << 62);
  EXPECT_EQ(mlcc::checkedByteSize(Shape{int64_t{1} << 62}, 4), std::nullopt);
  EXPECT_EQ(mlcc::checkedElementCount(Shape{99999999999, 99999999999}), std::nullopt);
  EXPECT_EQ(mlcc::checkedElementCount(Shape{-1, 4}), std::nullopt);
  EXPECT_EQ(mlcc::checkedElementCount(Shape{0, -1}), std::nullopt);
  // An empty tensor still needs strides that fit: the non-zero dims are checked.
  EXPECT_EQ(mlcc::checkedElementCount(Shape{0, int64_t{1} << 40, int64_t{1} << 40}), std::nullopt);
  EXPECT_EQ(mlcc::checkedByteSize(Shape{3}, -1), std::nullopt);
}

TEST(CheckedMath, Messages) {
  EXPECT_EQ(mlcc::shapeSizeError(Shape{2, 3}, 4), "");
  EXPECT_EQ(mlcc::shapeSizeError(Shape{-1, 4}), "negative dimension -1 in shape [-1, 4]");
  EXPECT_NE(
      mlcc::shapeSizeError(Shape{int64_t{1} << 62}, 4).find("its size in bytes (4 per element) overflows"),
      std::string::npos);
  EXPECT_NE(mlcc::shapeSizeError(Shape{99999999999, 99999999999}).find("its element count overflows"),
            std::string::npos);
}

TEST(CheckedMath, Throwing) {
  EXPECT_EQ(mlcc::elementCount(Shape{5, 6}), 30);
  EXPECT_EQ(mlcc::byteSize(Shape{5, 6}, 2), 60);
  EXPECT_THROW(mlcc::elementCount(Shape{-2}), mlcc::Error);
  EXPECT_THROW(mlcc::byteSize(Shape{int64_t{1} << 62}, 4), mlcc::Error);
  EXPECT_EQ(mlcc::mulOrThrow(6, 7, "x"), 42);
  EXPECT_EQ(mlcc::addOrThrow(6, 7, "x"), 13);
  try {
    mlcc::mulOrThrow(kMax, 2, "the FLOP count");
    FAIL() << "no error";
  } catch (const mlcc::Error& e) {
    EXPECT_EQ(e.message(), "the FLOP count overflows a 64-bit integer (9223372036854775807 * 2)");
  }
  EXPECT_THROW(mlcc::addOrThrow(kMax, 1, "x"), mlcc::Error);
}

TEST(CheckedMath, RangeWithin) {
  constexpr uint64_t kU = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(mlcc::rangeWithin(0, 10, 10));
  EXPECT_TRUE(mlcc::rangeWithin(10, 0, 10));
  EXPECT_FALSE(mlcc::rangeWithin(5, 6, 10));
  EXPECT_FALSE(mlcc::rangeWithin(11, 0, 10));
  // offset + length wraps to 4 unchecked, which would pass `<= 10`.
  EXPECT_FALSE(mlcc::rangeWithin(kU - 4, 9, 10));
  EXPECT_FALSE(mlcc::rangeWithin(8, kU, 10));
}

}  // namespace
