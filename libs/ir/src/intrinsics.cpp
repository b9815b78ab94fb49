// The table of TensorIR math intrinsics (see intrinsics.h).
#include "mlcc/ir/intrinsics.h"

#include <array>

namespace mlcc::ir {

namespace {
using R = IntrinsicResult;
constexpr std::array kIntrinsics = {
    IntrinsicInfo{"exp", 1, R::SameAsArg, true},   IntrinsicInfo{"exp2", 1, R::SameAsArg, true},
    IntrinsicInfo{"expm1", 1, R::SameAsArg, true}, IntrinsicInfo{"log", 1, R::SameAsArg, true},
    IntrinsicInfo{"log2", 1, R::SameAsArg, true},  IntrinsicInfo{"log1p", 1, R::SameAsArg, true},
    IntrinsicInfo{"sqrt", 1, R::SameAsArg, true},  IntrinsicInfo{"rsqrt", 1, R::SameAsArg, true},
    IntrinsicInfo{"tanh", 1, R::SameAsArg, true},  IntrinsicInfo{"sigmoid", 1, R::SameAsArg, true},
    IntrinsicInfo{"erf", 1, R::SameAsArg, true},   IntrinsicInfo{"sin", 1, R::SameAsArg, true},
    IntrinsicInfo{"cos", 1, R::SameAsArg, true},   IntrinsicInfo{"tan", 1, R::SameAsArg, true},
    IntrinsicInfo{"asin", 1, R::SameAsArg, true},  IntrinsicInfo{"acos", 1, R::SameAsArg, true},
    IntrinsicInfo{"atan", 1, R::SameAsArg, true},  IntrinsicInfo{"sinh", 1, R::SameAsArg, true},
    IntrinsicInfo{"cosh", 1, R::SameAsArg, true},  IntrinsicInfo{"asinh", 1, R::SameAsArg, true},
    IntrinsicInfo{"acosh", 1, R::SameAsArg, true}, IntrinsicInfo{"atanh", 1, R::SameAsArg, true},
    IntrinsicInfo{"floor", 1, R::SameAsArg, true}, IntrinsicInfo{"ceil", 1, R::SameAsArg, true},
    IntrinsicInfo{"round", 1, R::SameAsArg, true}, IntrinsicInfo{"trunc", 1, R::SameAsArg, true},
    IntrinsicInfo{"abs", 1, R::SameAsArg, false},  IntrinsicInfo{"isnan", 1, R::Bool, true},
    IntrinsicInfo{"isinf", 1, R::Bool, true},      IntrinsicInfo{"pow", 2, R::SameAsArg, true},
    IntrinsicInfo{"atan2", 2, R::SameAsArg, true}, IntrinsicInfo{"fmod", 2, R::SameAsArg, true},
};
}  // namespace

const IntrinsicInfo* findIntrinsic(std::string_view name) {
  for (const auto& info : kIntrinsics)
    if (info.name == name) return &info;
  return nullptr;
}

std::span<const IntrinsicInfo> allIntrinsics() { return kIntrinsics; }

}  // namespace mlcc::ir
