// Element types of checkpoint tensors and the scalar conversions between them.
//
// The conversions here are the scalar reference: exact where the format allows
// (bf16/f16/e4m3/e2m1 -> f32) and round-to-nearest-even on the way down.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace tern {

enum class DType : uint8_t { kF32, kF16, kBF16, kF8E4M3, kU8, kI8, kI32, kI64, kF64, kBool };

// Bytes per element.
size_t DTypeSize(DType t);
// The safetensors spelling ("BF16", "F8_E4M3", ...).
std::string_view DTypeName(DType t);
// Parses a safetensors dtype name; nullopt for names tern does not load.
std::optional<DType> DTypeFromName(std::string_view name);

inline float BitsToF32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t F32ToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// bfloat16 stored as its raw 16 bits.
inline float Bf16ToF32(uint16_t b) { return BitsToF32(uint32_t(b) << 16); }
// Round to nearest even; NaN stays NaN (quiet).
inline uint16_t F32ToBf16(float f) {
  uint32_t u = F32ToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE half precision stored as raw 16 bits.
float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);

// OCP FP8 E4M3 ("float8_e4m3fn"): bias 7, no infinities, 0x7f/0xff are NaN, max 448.
float E4M3ToF32(uint8_t v);
// E4M3ToF32 of every byte value, for the kernels' scale lookups (built on first use).
const float* E4M3Values();
// Round to nearest even, saturating to +-448 (what ModelOpt's scale casting does after clamping).
uint8_t F32ToE4M3(float f);

// FP4 E2M1 code (4 bits: sign bit 3, magnitude index bits 0-2) -> value.
inline constexpr float kE2M1Values[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline float E2M1ToF32(uint8_t code) { return kE2M1Values[code & 0xf]; }
// Nearest E2M1 value, ties to even mantissa, |x| >= 5 saturates to 6.
uint8_t F32ToE2M1(float f);

}  // namespace tern
