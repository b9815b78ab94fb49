// Element data types of tensors and TensorIR expressions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mlcc::ir {

enum class DType : uint8_t { f32, f16, bf16, i8, i32, i64, boolean, u8, f64, i16, u16, u32 };

// The text spelling: "f32", "f16", "bf16", "i8", "i32", "i64", "bool", "u8", "f64",
// "i16", "u16", "u32".
std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);

int dtypeBytes(DType t);
// The mlcc_dtype value of the C ABI (include/mlcc/runtime.h, extern.h).
int32_t dtypeAbiCode(DType t);
bool isFloat(DType t);     // f32, f16, bf16, f64
bool isInt(DType t);       // i8, i16, i32, i64, u8, u16, u32
bool isUnsigned(DType t);  // u8, u16, u32 (bool is neither int nor unsigned)
// The range of an integer dtype (i64: [INT64_MIN, INT64_MAX]).
int64_t intMin(DType t);
int64_t intMax(DType t);

// All dtypes, in declaration order (for generators and tables).
inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16,    DType::i8,
                                       DType::i32, DType::i64, DType::boolean, DType::u8,
                                       DType::f64, DType::i16, DType::u16,     DType::u32};

}  // namespace mlcc::ir
