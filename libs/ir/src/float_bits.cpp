// f16/bf16 bit conversions and shortest float formatting (see float_bits.h).
#include "mlcc/ir/float_bits.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace mlcc::ir::detail {

namespace {

// Encodes `v` in a binary format with `exp_bits` exponent and `man_bits`
// mantissa bits, rounding to nearest even.
uint16_t encodeSmallFloat(double v, int exp_bits, int man_bits) {
  const uint32_t sign = std::signbit(v) ? 1u << (exp_bits + man_bits) : 0u;
  const uint32_t exp_mask = ((1u << exp_bits) - 1) << man_bits;
  if (std::isnan(v)) return static_cast<uint16_t>(exp_mask | (1u << (man_bits - 1)));
  double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | exp_mask);
  if (a == 0) return static_cast<uint16_t>(sign);
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int min_exp = 1 - bias;
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;  // a = 1.xxx * 2^exponent
  if (exponent < min_exp) exponent = min_exp;
  double r = std::nearbyint(std::ldexp(a, man_bits - exponent));  // exact scaling, then RNE
  const double one = std::ldexp(1.0, man_bits);
  if (r >= 2 * one) {
    r /= 2;
    exponent += 1;
  }
  if (exponent > bias) return static_cast<uint16_t>(sign | exp_mask);
  if (r < one) return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));  // subnormal
  uint32_t biased = static_cast<uint32_t>(exponent + bias);
  return static_cast<uint16_t>(sign | (biased << man_bits) | static_cast<uint32_t>(r - one));
}

double decodeSmallFloat(uint16_t bits, int exp_bits, int man_bits) {
  const bool neg = (bits >> (exp_bits + man_bits)) & 1;
  const uint32_t exp_field = (bits >> man_bits) & ((1u << exp_bits) - 1);
  const uint32_t man = bits & ((1u << man_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  if (exp_field == (1u << exp_bits) - 1)
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp_field == 0)
    v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
  else
    v = std::ldexp(static_cast<double>(man) + std::ldexp(1.0, man_bits),
                   static_cast<int>(exp_field) - bias - man_bits);
  return neg ? -v : v;
}

// Appends ".0" to integral-looking output such as "100" so it reads as a float.
std::string withFloatMarker(std::string s) {
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf, nan
  return s;
}

std::string toCharsShortest(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return withFloatMarker(std::string(buf, r.ptr));
}

std::string toCharsShortest(float v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return withFloatMarker(std::string(buf, r.ptr));
}

}  // namespace

uint16_t doubleToHalfBits(double v) { return encodeSmallFloat(v, 5, 10); }
uint16_t doubleToBF16Bits(double v) { return encodeSmallFloat(v, 8, 7); }
double halfBitsToDouble(uint16_t bits) { return decodeSmallFloat(bits, 5, 10); }
double bf16BitsToDouble(uint16_t bits) { return decodeSmallFloat(bits, 8, 7); }

double roundToDType(double v, DType t) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return halfBitsToDouble(doubleToHalfBits(v));
    case DType::bf16: return bf16BitsToDouble(doubleToBF16Bits(v));
    default: return v;
  }
}

std::optional<double> parseFloatText(std::string_view text, DType t) {
  const char* end = text.data() + text.size();
  if (t == DType::f32) {
    float f = 0;
    auto r = std::from_chars(text.data(), end, f);
    if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
    return static_cast<double>(f);
  }
  double d = 0;
  auto r = std::from_chars(text.data(), end, d);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  if (t != DType::f16 && t != DType::bf16) return d;
  double rounded = roundToDType(d, t);
  if (std::isinf(rounded) || (rounded == 0 && d != 0)) return std::nullopt;
  return rounded;
}

std::string shortestFloatText(double v, DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (t == DType::f32) {
    float f = static_cast<float>(v);
    if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
    return toCharsShortest(f);
  }
  if (t != DType::f16 && t != DType::bf16) return toCharsShortest(v);
  // 16-bit formats: the fewest significant digits that read back to the same bits.
  const double target = roundToDType(v, t);
  if (std::isinf(target)) return target < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    auto r = std::to_chars(buf, buf + sizeof buf, target, std::chars_format::general, precision);
    double candidate = 0;
    std::from_chars(buf, r.ptr, candidate);
    double back = roundToDType(candidate, t);
    if (back == target && std::signbit(back) == std::signbit(target)) return toCharsShortest(candidate);
  }
  return toCharsShortest(target);
}

double shortestDecimalValue(double v, DType t) {
  if (!std::isfinite(v)) return v;
  return parseFloatText(shortestFloatText(v, t), DType::i64).value_or(v);
}

}  // namespace mlcc::ir::detail
