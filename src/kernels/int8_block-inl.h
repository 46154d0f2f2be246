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
// amax >= 0. d = amax / 127 in double is a power of two exactly when amax is
// 127 times one (amax has 24 significant bits, so a quotient that is not one
// lies at least 2^-25 of it away, far past double's rounding): then its
// exponent is e, else the next one up. d is a normal double (amax >= 2^-149),
// read from its bits (frexp and ldexp are calls, each as long as the rest of
// a block's quantization).
inline int Int8BlockExponent(float amax) {
  if (amax == 0.0f) return kInt8MinExponent;
  const double d = double(amax) / double(kInt8Max);
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  const int exponent = int(bits >> 52) - 1023;  // d = 1.m * 2^exponent (d > 0)
  const int e = (bits & ((uint64_t(1) << 52) - 1)) == 0 ? exponent : exponent + 1;
  return e < kInt8MinExponent ? kInt8MinExponent : e;
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
