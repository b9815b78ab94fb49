// The C++ element type of a dtype, for code that works on raw tensor data:
// withStorageType(t, f) calls f(T{}) with T the storage type of `t` (bool
// is bool, one byte holding 0 or 1; u8 uint8_t, i16 int16_t, f64 double,
// ...). f16 and bf16 have no C++ arithmetic type: it throws for them
// (callers stage them in f32).
#pragma once

#include <cstdint>
#include <string>

#include "mlcc/ir/dtype.h"
#include "mlcc/support/diagnostic.h"

namespace mlcc::ir {

template <class Fn>
decltype(auto) withStorageType(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    case DType::i8: return fn(int8_t{});
    case DType::i16: return fn(int16_t{});
    case DType::i32: return fn(int32_t{});
    case DType::i64: return fn(int64_t{});
    case DType::u8: return fn(uint8_t{});
    case DType::u16: return fn(uint16_t{});
    case DType::u32: return fn(uint32_t{});
    case DType::boolean: return fn(bool{});
    case DType::f16:
    case DType::bf16: break;
  }
  throw Error("internal: no storage type for " + std::string(dtypeName(t)));
}

}  // namespace mlcc::ir
