// The block exponent of ops.h QuantizeInt8Activations (W4A8), shared by its
// kernels: the portable quantizer (nvfp4_activations.cc), AVX2
// (nvfp4_w4a4_hwy.cc) and AVX-512 VNNI (nvfp4_w4a4_vnni.cc).
//
// Internal linkage in each including file, as nvfp4_vnni_w-inl.h: the VNNI
// file compiles everything under an AVX-512 target pragma, and an inline
// function with external linkage compiled there could be the copy the linker
// keeps for every caller, on any CPU.
#pragma once

#include <cstdint>
#include <cstring>

namespace tern::kernels {
namespace {

// Largest |q| of an 8-bit activation, and the smallest block exponent (BF16's
// smallest subnormal is 2^-133: every q * 2^e stays exact in f32 and BF16).
constexpr int kInt8Max = 127;
constexpr int kInt8MinExponent = -133;

// max(kInt8MinExponent, the least e with amax <= 127 * 2^e) for a finite
// amax >= 0, from amax's bits. A normal amax = 1.m * 2^k lies in [2^k,
// 2^(k+1)), above 127 * 2^(k-7) < 2^k, so e is k - 6 when 1.m <= 127/64 =
// 1.984375 (mantissa bits 0x7E0000) and k - 5 past it. A subnormal amax
// (below 2^-126 < 127 * 2^-132) needs e = -132 only above 127 * 2^-133.
inline int Int8BlockExponent(float amax) {
  uint32_t bits;
  std::memcpy(&bits, &amax, 4);
  const int biased = int(bits >> 23) & 0xff;
  if (biased == 0) return amax > 127.0f * 0x1p-133f ? -132 : kInt8MinExponent;  // (127 * 2^-133: exact)
  const int e = biased - 127 - 6 + ((bits & 0x7fffff) > 0x7e0000u);
  return e < kInt8MinExponent ? kInt8MinExponent : e;
}

// 2^-e as a float where that is one (e >= -127), else 0: the kernels then
// scale x by it in f32, exactly (a power of two; a product that falls below
// f32's normals is under 2^-126 and rounds to 0 either way).
inline float Int8InverseUnit(int e) {
  if (e < -127) return 0.0f;
  const uint32_t bits = uint32_t(127 - e) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// 2^n as a double, for n in [-1022, 1023].
inline double Pow2(int n) {
  const uint64_t bits = uint64_t(n + 1023) << 52;
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

}  // namespace
}  // namespace tern::kernels
