// The math intrinsics a TensorIR CallNode may name, with their arity and
// result dtype rule. One table serves the parser, verifier, interpreter and
// code generators.
#pragma once

#include <span>
#include <string_view>

#include "mlcc/ir/dtype.h"

namespace mlcc::ir {

enum class IntrinsicResult : uint8_t {
  SameAsArg,  // result dtype = dtype of the (first) argument
  Bool        // a predicate (isnan, isinf)
};

// The argument dtypes an intrinsic takes (all its arguments have one dtype).
enum class IntrinsicArgs : uint8_t {
  Float,   // f32, f16, bf16
  Number,  // float or integer, not bool (abs)
  Integer  // i8, u8, i32, i64: the bitwise operations and shifts
};

// The integer intrinsics work on the dtype's two's-complement bits:
// bitwise_and/or/xor/not; shift_left(x, n) is x << n wrapped to the dtype,
// shift_right(x, n) is logical for unsigned and arithmetic for signed
// dtypes. A shift amount outside [0, bits) gives 0 (shift_right of a
// negative signed x by n >= bits gives -1; by n < 0 gives 0). pow of
// integers is x^n wrapped to the dtype; for n < 0 it is 1 when x is 1, ±1
// when x is -1 (by n's parity), else 0.
struct IntrinsicInfo {
  std::string_view name;
  int arity;
  IntrinsicResult result;
  IntrinsicArgs args;
};

// Whether dtype `t` is allowed as the arguments of `info`, and what is, for
// messages: "a float", "a number (not bool)", "an integer".
bool intrinsicAccepts(const IntrinsicInfo& info, DType t);
const char* intrinsicArgsText(const IntrinsicInfo& info);

const IntrinsicInfo* findIntrinsic(std::string_view name);
std::span<const IntrinsicInfo> allIntrinsics();

}  // namespace mlcc::ir
