// The math intrinsics a TensorIR CallNode may name, with their arity and
// result dtype rule. One table serves the parser, verifier, interpreter and
// code generators.
#pragma once

#include <span>
#include <string_view>

namespace mlcc::ir {

enum class IntrinsicResult : uint8_t {
  SameAsArg,  // result dtype = dtype of the (first) argument
  Bool        // a predicate (isnan, isinf)
};

struct IntrinsicInfo {
  std::string_view name;
  int arity;
  IntrinsicResult result;
  bool float_only;  // arguments must be floating point
};

const IntrinsicInfo* findIntrinsic(std::string_view name);
std::span<const IntrinsicInfo> allIntrinsics();

}  // namespace mlcc::ir
