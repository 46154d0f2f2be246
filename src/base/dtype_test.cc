#include "base/dtype.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(DType, NamesRoundTrip) {
  for (auto name : {"F32", "F16", "BF16", "F8_E4M3", "U8", "I8", "I32", "I64"}) {
    auto t = DTypeFromName(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(DTypeName(*t), name);
  }
  EXPECT_FALSE(DTypeFromName("F8_E5M2").has_value());
  EXPECT_FALSE(DTypeFromName("bf16").has_value());
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
}

TEST(DType, Bf16KnownBits) {
  // Values from the bfloat16 definition: top 16 bits of the IEEE float.
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even -> 1.0.
  EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> rounds up.
  EXPECT_EQ(F32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

TEST(DType, F16KnownBits) {
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToF32(0xc400), -4.0f);
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(1e6f), 0x7c00);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);
  for (uint32_t h = 0; h < 0x7c00; ++h) ASSERT_EQ(F32ToF16(F16ToF32(uint16_t(h))), h) << h;
}

TEST(DType, E4M3Table) {
  // OCP FP8 E4M3FN: max normal 448 (0x7e), min subnormal 2^-9 (0x01), 0x7f NaN.
  EXPECT_EQ(E4M3ToF32(0x7e), 448.0f);
  EXPECT_EQ(E4M3ToF32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(E4M3ToF32(0x38), 1.0f);
  EXPECT_EQ(E4M3ToF32(0xb8), -1.0f);
  EXPECT_EQ(E4M3ToF32(0x08), std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0x7f)));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0xff)));
  for (int c = 0; c < 0x7f; ++c) ASSERT_EQ(F32ToE4M3(E4M3ToF32(uint8_t(c))), c) << c;
  EXPECT_EQ(F32ToE4M3(1000.0f), 0x7e);
  // 1.0625 is halfway between 1.0 (0x38, even) and 1.125 (0x39): ties to even.
  EXPECT_EQ(F32ToE4M3(1.0625f), 0x38);
}

TEST(DType, E2M1RoundingBoundaries) {
  // From ModelOpt's _cast_fp4 (spec section 4.3).
  struct Case { float in; float out; };
  for (Case c : {Case{0.25f, 0.0f}, {0.26f, 0.5f}, {0.75f, 1.0f}, {1.25f, 1.0f}, {1.26f, 1.5f},
                 {1.75f, 2.0f}, {2.5f, 2.0f}, {2.6f, 3.0f}, {3.5f, 4.0f}, {5.0f, 4.0f}, {5.01f, 6.0f},
                 {100.0f, 6.0f}, {-3.5f, -4.0f}}) {
    EXPECT_EQ(E2M1ToF32(F32ToE2M1(c.in)), c.out) << c.in;
  }
}

}  // namespace
}  // namespace tern

namespace tern {
namespace {

// F32ToE4M3 against a brute-force scan of every code (nearest, ties to the
// even code), on every midpoint between neighbouring codes, the codes
// themselves, their neighbours in f32, and random values across the range.
TEST(DType, E4M3RoundingMatchesExhaustiveScan) {
  const auto scan = [](float f) -> uint8_t {
    const uint8_t sign = std::signbit(f) ? 0x80 : 0;
    const float a = std::fabs(f);
    if (a >= 448.0f) return sign | 0x7e;
    uint8_t best = 0;
    float best_err = a;
    for (int c = 1; c <= 0x7e; ++c) {
      const float err = std::fabs(E4M3ToF32(uint8_t(c)) - a);
      if (err < best_err || (err == best_err && (c & 1) == 0)) {
        best = uint8_t(c);
        best_err = err;
      }
    }
    return sign | best;
  };
  std::vector<float> xs;
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = E4M3ToF32(uint8_t(c)), hi = E4M3ToF32(uint8_t(c + 1));
    for (float x : {lo, hi, (lo + hi) / 2, std::nextafter((lo + hi) / 2, 0.0f), std::nextafter((lo + hi) / 2, 1e9f),
                    std::nextafter(lo, 1e9f)})
      xs.push_back(x);
  }
  uint32_t s = 12345;
  for (int i = 0; i < 20000; ++i) {
    s = s * 1664525u + 1013904223u;
    xs.push_back(std::ldexp(float(s >> 8) / float(1 << 24), int(s % 24) - 14));
  }
  xs.push_back(500.0f);
  xs.push_back(1e-12f);
  for (float x : xs) {
    ASSERT_EQ(F32ToE4M3(x), scan(x)) << x;
    ASSERT_EQ(F32ToE4M3(-x), scan(-x)) << -x;
  }
}

}  // namespace
}  // namespace tern
