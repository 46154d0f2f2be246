// The tensor quantizers of `tern quantize`, on hand-derived cases (spec §4.4).
#include "model/quantize.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/dtype.h"

namespace tern {
namespace {

// A row holding every E2M1 magnitude times c, then their negatives: amax = 6c,
// so weight_scale_2 = 6c / 2688, the block scale is 448 (E4M3 0x7E) and
// scale * weight_scale_2 = c: every value is exact, code = its E2M1 index.
TEST(QuantizeTest, Nvfp4ExactValuesHaveTheirCodes) {
  const float c = 0.125f;
  const float mags[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  std::vector<float> w(32);
  for (int i = 0; i < 8; ++i) {
    w[size_t(i)] = mags[i] * c;
    w[size_t(8 + i)] = -mags[i] * c;
  }
  // Second block: all zero.
  Nvfp4Weights q = QuantizeNvfp4(w.data(), 1, 32, 6 * c);
  EXPECT_FLOAT_EQ(q.weight_scale_2, 6 * c / 2688.0f);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 0x7E);  // 448
  EXPECT_EQ(q.scales[1], 0x38);  // 1.0 for an all-zero block
  ASSERT_EQ(q.codes.size(), 16u);
  // Bytes pack element 2j in the low nibble. -0.0 * c is -0: encoded as +0 (sign only below zero).
  const uint8_t want[8] = {0x10, 0x32, 0x54, 0x76, 0x90, 0xBA, 0xDC, 0xFE};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(q.codes[size_t(j)], want[j]) << "byte " << j;
  for (int j = 8; j < 16; ++j) EXPECT_EQ(q.codes[size_t(j)], 0) << "byte " << j;
}

// Rounding to the nearest E2M1 value, ties to even, saturating at 6.
TEST(QuantizeTest, Nvfp4RoundsToNearestEven) {
  // amax 6 -> weight_scale_2 = 6/2688; block amax 6 -> scale 448 -> step 1.
  std::vector<float> w = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -0.26f, 0.74f, 2.4f, 4.9f, -5.1f, 0, 0, 0};
  Nvfp4Weights q = QuantizeNvfp4(w.data(), 1, 16, 6);
  const auto code = [&](int i) { return (q.codes[size_t(i / 2)] >> (4 * (i % 2))) & 0xf; };
  const int want[16] = {7, 0, 2, 2, 4, 4, 6, 6, 0x9, 1, 4, 6, 0xF, 0, 0, 0};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(code(i), want[i]) << "element " << i << " = " << w[size_t(i)];
}

TEST(QuantizeTest, Fp8PerTensorAndBlocks) {
  std::vector<float> w = {448.0f * 0.5f, -224.0f * 0.5f, 1.0f * 0.5f, 0.0f};  // amax 224 -> scale 0.5
  Fp8Weights q = QuantizeFp8(w.data(), 2, 2, /*blocks=*/false);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_FLOAT_EQ(q.scales[0], 0.5f);
  EXPECT_EQ(E4M3ToF32(q.codes[0]), 448.0f);
  EXPECT_EQ(E4M3ToF32(q.codes[1]), -224.0f);
  EXPECT_EQ(E4M3ToF32(q.codes[2]), 1.0f);
  EXPECT_EQ(q.codes[3], 0);
  // 130 x 3 in blocks: rows 0-127 and 128-129 get their own scales.
  std::vector<float> b(130 * 3, 1.0f);
  for (int k = 0; k < 3; ++k) b[size_t(129 * 3 + k)] = 896.0f;
  Fp8Weights qb = QuantizeFp8(b.data(), 130, 3, /*blocks=*/true);
  ASSERT_EQ(qb.scales.size(), 2u);
  EXPECT_FLOAT_EQ(qb.scales[0], 1.0f / 448.0f);
  EXPECT_FLOAT_EQ(qb.scales[1], 2.0f);
  EXPECT_EQ(E4M3ToF32(qb.codes[0]), 448.0f);
  EXPECT_EQ(E4M3ToF32(qb.codes[129 * 3]), 448.0f);
}

}  // namespace
}  // namespace tern
