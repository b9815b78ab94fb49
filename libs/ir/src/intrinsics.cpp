// The table of TensorIR math intrinsics (see intrinsics.h).
#include "mlcc/ir/intrinsics.h"

#include <array>

namespace mlcc::ir {

namespace {
using R = IntrinsicResult;
using A = IntrinsicArgs;
constexpr std::array kIntrinsics = {
    IntrinsicInfo{"exp", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"exp2", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"expm1", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"log", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"log2", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"log1p", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"sqrt", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"rsqrt", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"tanh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"sigmoid", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"erf", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"sin", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"cos", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"tan", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"asin", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"acos", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"atan", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"sinh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"cosh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"asinh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"acosh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"atanh", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"floor", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"ceil", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"round", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"trunc", 1, R::SameAsArg, A::Float},
    IntrinsicInfo{"abs", 1, R::SameAsArg, A::Number},
    IntrinsicInfo{"isnan", 1, R::Bool, A::Float},
    IntrinsicInfo{"isinf", 1, R::Bool, A::Float},
    IntrinsicInfo{"pow", 2, R::SameAsArg, A::Number},
    IntrinsicInfo{"atan2", 2, R::SameAsArg, A::Float},
    IntrinsicInfo{"fmod", 2, R::SameAsArg, A::Float},
    IntrinsicInfo{"bitwise_and", 2, R::SameAsArg, A::Integer},
    IntrinsicInfo{"bitwise_or", 2, R::SameAsArg, A::Integer},
    IntrinsicInfo{"bitwise_xor", 2, R::SameAsArg, A::Integer},
    IntrinsicInfo{"bitwise_not", 1, R::SameAsArg, A::Integer},
    IntrinsicInfo{"shift_left", 2, R::SameAsArg, A::Integer},
    IntrinsicInfo{"shift_right", 2, R::SameAsArg, A::Integer},
};
}  // namespace

const IntrinsicInfo* findIntrinsic(std::string_view name) {
  for (const auto& info : kIntrinsics)
    if (info.name == name) return &info;
  return nullptr;
}

std::span<const IntrinsicInfo> allIntrinsics() { return kIntrinsics; }

bool intrinsicAccepts(const IntrinsicInfo& info, DType t) {
  switch (info.args) {
    case IntrinsicArgs::Float: return isFloat(t);
    case IntrinsicArgs::Number: return isFloat(t) || isInt(t);
    case IntrinsicArgs::Integer: return isInt(t);
  }
  return false;
}

const char* intrinsicArgsText(const IntrinsicInfo& info) {
  switch (info.args) {
    case IntrinsicArgs::Float: return "a float";
    case IntrinsicArgs::Number: return "a number (not bool)";
    case IntrinsicArgs::Integer: return "an integer";
  }
  return "?";
}

}  // namespace mlcc::ir
