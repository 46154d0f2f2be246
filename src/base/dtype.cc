#include "base/dtype.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

namespace tern {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {DType::kF32, "F32", 4},
    {DType::kF16, "F16", 2},
    {DType::kBF16, "BF16", 2},
    {DType::kF8E4M3, "F8_E4M3", 1},
    {DType::kU8, "U8", 1},
    {DType::kI8, "I8", 1},
    {DType::kI32, "I32", 4},
    {DType::kI64, "I64", 8},
    {DType::kF64, "F64", 8},
    {DType::kBool, "BOOL", 1},
}};
}  // namespace

size_t DTypeSize(DType t) { return kDTypes[size_t(t)].size; }
std::string_view DTypeName(DType t) { return kDTypes[size_t(t)].name; }
std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  return std::nullopt;
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24.
    const float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return BitsToF32(sign | 0x7f800000u | (man << 13));
  return BitsToF32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t F32ToF16(float f) {
  const uint32_t u = F32ToBits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {                // subnormal range: quantum 2^-24
    const float q = std::nearbyint(a * 16777216.0f);  // current rounding mode: nearest-even
    return sign | uint16_t(q);
  }
  uint32_t x = F32ToBits(a);
  x += 0xfffu + ((x >> 13) & 1u);  // round mantissa to 10 bits, ties to even
  const uint32_t exp = (x >> 23) - 112;
  return sign | uint16_t((exp << 10) | ((x >> 13) & 0x3ff));
}

float E4M3ToF32(uint8_t v) {
  const bool neg = v & 0x80;
  const int exp = (v >> 3) & 0xf;
  const int man = v & 0x7;
  float r;
  if (exp == 0xf && man == 0x7) {
    r = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    r = std::ldexp(float(man), -9);  // subnormal: man/8 * 2^-6
  } else {
    r = std::ldexp(1.0f + float(man) / 8.0f, exp - 7);
  }
  return neg ? -r : r;
}

const float* E4M3Values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[size_t(i)] = E4M3ToF32(uint8_t(i));
    return t;
  }();
  return table.data();
}

uint8_t F32ToE4M3(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7e;
  if (a < 0x1p-6f) {
    // Subnormals (and zero): m * 2^-9, m = a * 2^9 rounded to nearest even
    // (exact scaling; m == 8 is the smallest normal, code 0x08, as it should be).
    return uint8_t(sign | uint8_t(std::nearbyint(a * 512.0f)));
  }
  // Normals: round the f32 mantissa to 3 bits, ties to even (a carry moves
  // into the exponent), then rebias the exponent from 127 to 7.
  uint32_t u = F32ToBits(a);
  u += 0x7ffffu + ((u >> 20) & 1u);
  return uint8_t(sign | uint8_t((u >> 20) - ((127u - 7u) << 3)));
}

uint8_t F32ToE2M1(float f) {
  const uint8_t sign = f < 0.0f ? 0x8 : 0;  // (-0 and NaN encode as +, as ModelOpt's sign(x) < 0)
  const float a = std::fabs(f);
  uint8_t m;
  // Boundaries from ModelOpt's _cast_fp4: ties go to the even mantissa.
  if (a <= 0.25f) m = 0;
  else if (a < 0.75f) m = 1;
  else if (a <= 1.25f) m = 2;
  else if (a < 1.75f) m = 3;
  else if (a <= 2.5f) m = 4;
  else if (a < 3.5f) m = 5;
  else if (a <= 5.0f) m = 6;
  else m = 7;
  if (std::isnan(f)) m = 7;
  return sign | m;
}

}  // namespace tern
