// DType names and properties (see dtype.h).
#include "mlcc/ir/dtype.h"

namespace mlcc::ir {

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::u8: return "u8";
    case DType::f64: return "f64";
    case DType::i16: return "i16";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType t : kAllDTypes)
    if (dtypeName(t) == name) return t;
  return std::nullopt;
}

int32_t dtypeAbiCode(DType t) {
  switch (t) {
    case DType::f32: return 0;  // MLCC_F32 ...
    case DType::f16: return 1;
    case DType::bf16: return 2;
    case DType::i8: return 3;
    case DType::i32: return 4;
    case DType::i64: return 5;
    case DType::boolean: return 6;
    case DType::u8: return 7;
    case DType::f64: return 8;
    case DType::i16: return 9;
    case DType::u16: return 10;
    case DType::u32: return 11;
  }
  return -1;
}

int dtypeBytes(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
    case DType::u32: return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16: return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 1;
    case DType::i64:
    case DType::f64: return 8;
  }
  return 0;
}

bool isFloat(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }
bool isInt(DType t) {
  switch (t) {
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
    case DType::u8:
    case DType::u16:
    case DType::u32: return true;
    default: return false;
  }
}
bool isUnsigned(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32; }

int64_t intMin(DType t) {
  switch (t) {
    case DType::i8: return INT8_MIN;
    case DType::i16: return INT16_MIN;
    case DType::i32: return INT32_MIN;
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::boolean: return 0;
    default: return INT64_MIN;
  }
}

int64_t intMax(DType t) {
  switch (t) {
    case DType::i8: return INT8_MAX;
    case DType::i16: return INT16_MAX;
    case DType::i32: return INT32_MAX;
    case DType::u8: return UINT8_MAX;
    case DType::u16: return UINT16_MAX;
    case DType::u32: return UINT32_MAX;
    case DType::boolean: return 1;
    default: return INT64_MAX;
  }
}

}  // namespace mlcc::ir
