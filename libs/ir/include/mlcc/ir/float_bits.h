// Exact conversions between doubles and the 16-bit float formats (IEEE
// binary16 "f16" and bfloat16 "bf16"), and the shortest-decimal float text
// shared by the printer and the parser. Used by the printer, the parser, literals and host tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mlcc/ir/dtype.h"

namespace mlcc::ir::detail {

// Rounds `v` to nearest-even in f16 / bf16 and returns the bit pattern
// (NaN becomes the canonical quiet NaN, values too large become inf).
uint16_t doubleToHalfBits(double v);
uint16_t doubleToBF16Bits(double v);
double halfBitsToDouble(uint16_t bits);
double bf16BitsToDouble(uint16_t bits);

// `v` rounded to the precision of float dtype `t` (f32, f16 or bf16).
double roundToDType(double v, DType t);

// Parses decimal float text (no sign handling beyond what from_chars does,
// no suffix) into a value of float dtype `t`, correctly rounded. Returns
// nullopt when the text is malformed or a nonzero value overflows or
// underflows to zero in `t`. `t` = i64 means "plain double" (attributes).
std::optional<double> parseFloatText(std::string_view text, DType t);

// The shortest text that parseFloatText reads back to the same value of
// dtype `t` ("1.0", "0.1", "1e-07", "inf", "-inf", "nan"); `t` = i64 means a
// plain double.
std::string shortestFloatText(double v, DType t);

// The double that shortestFloatText(v, t) reads as (0.01f gives 0.01, not
// 0.009999999776482582): a float attribute taken from a value of dtype `t`
// prints as the short decimal. Non-finite values are returned as they are.
double shortestDecimalValue(double v, DType t);

}  // namespace mlcc::ir::detail
