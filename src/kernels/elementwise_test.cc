// RmsNorm, RopeNeox, SiluMul, AddInPlace and ConvertToF32 against the scalar
// reference on every SIMD target, with sizes that leave vector tails and
// misaligned pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;
using testing::RandomFloats;

constexpr double kU = 1.0 / (1 << 24);  // unit roundoff of f32

TEST(RmsNormTest, MatchesReference) {
  std::mt19937 rng(1);
  ForEachSimdTarget([&] {
    for (int64_t dim : {1, 7, 8, 33, 128, 1000}) {
      for (int64_t rows : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << "dim=" << dim << " rows=" << rows);
        // Offset by one float: misaligned rows.
        std::vector<float> xb = RandomFloats(rng, size_t(rows * dim) + 1, -3.0f, 3.0f);
        std::vector<float> wb = RandomFloats(rng, size_t(dim) + 1, 0.5f, 1.5f);
        const float* x = xb.data() + 1;
        const float* w = wb.data() + 1;
        std::vector<float> got(size_t(rows * dim) + 1), want(size_t(rows * dim));
        RmsNorm(x, w, rows, dim, 1e-6f, got.data() + 1);
        ref::RmsNorm(x, w, rows, dim, 1e-6f, want.data());
        // The sum of squares is accumulated in f32: relative error <= dim * u,
        // then a few roundings (sqrt, divide, two products).
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i + 1], want[i], std::fabs(want[i]) * (double(dim) + 8) * kU + 1e-30) << "i=" << i;
        // In place (out == x) gives the same.
        std::vector<float> inplace(x, x + rows * dim);
        RmsNorm(inplace.data(), w, rows, dim, 1e-6f, inplace.data());
        for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(inplace[i], got[i + 1]);
      }
    }
  });
}

TEST(RopeNeoxTest, MatchesReference) {
  std::mt19937 rng(2);
  ForEachSimdTarget([&] {
    struct Shape {
      int64_t tokens, heads, head_dim, rotary_dim;
    };
    for (Shape s :
         {Shape{1, 1, 2, 2}, Shape{3, 2, 16, 16}, Shape{2, 3, 64, 32}, Shape{5, 2, 128, 128}, Shape{2, 1, 50, 38}}) {
      SCOPED_TRACE(::testing::Message() << "tokens=" << s.tokens << " heads=" << s.heads << " head_dim=" << s.head_dim
                                        << " rotary_dim=" << s.rotary_dim);
      const size_t n = size_t(s.tokens * s.heads * s.head_dim), half = size_t(s.rotary_dim / 2);
      std::vector<float> x = RandomFloats(rng, n, -2.0f, 2.0f);
      std::vector<float> angles = RandomFloats(rng, size_t(s.tokens) * half, -3.0f, 3.0f), cos(angles.size()),
                         sin(angles.size());
      for (size_t i = 0; i < angles.size(); ++i) {
        cos[i] = std::cos(angles[i]);
        sin[i] = std::sin(angles[i]);
      }
      std::vector<float> got = x, want = x;
      RopeNeox(got.data(), s.tokens, s.heads, s.head_dim, s.rotary_dim, cos.data(), sin.data());
      ref::RopeNeox(want.data(), s.tokens, s.heads, s.head_dim, s.rotary_dim, cos.data(), sin.data());
      // |error| <= 2u (|a c| + |b s|) <= 2u (|a| + |b|); the reference rounds too.
      for (size_t i = 0; i < n; ++i) {
        const size_t in_head = i % size_t(s.head_dim);
        if (in_head >= 2 * half) {
          ASSERT_EQ(got[i], x[i]) << "changed past rotary_dim, i=" << i;
          continue;
        }
        const size_t base = i - in_head, j = in_head % half;
        const double mag = std::fabs(x[base + j]) + std::fabs(x[base + j + half]);
        ASSERT_NEAR(got[i], want[i], 4 * kU * mag + 1e-30) << "i=" << i;
      }
    }
  });
}

TEST(SiluMulTest, MatchesReference) {
  std::mt19937 rng(3);
  ForEachSimdTarget([&] {
    for (int64_t n : {1, 5, 8, 17, 100, 1027}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n);
      std::vector<float> gate = RandomFloats(rng, size_t(n) + 1, -12.0f, 12.0f), up = RandomFloats(rng, size_t(n) + 1);
      // Extremes: exp(-g) overflows or vanishes.
      gate[1] = -200.0f;
      if (n > 2) gate[2] = 150.0f;
      std::vector<float> got(size_t(n) + 1), want(static_cast<size_t>(n));
      SiluMul(gate.data() + 1, up.data() + 1, n, got.data() + 1);
      ref::SiluMul(gate.data() + 1, up.data() + 1, n, want.data());
      for (size_t i = 0; i < size_t(n); ++i)
        ASSERT_NEAR(got[i + 1], want[i], std::fabs(want[i]) * 16 * kU + 1e-30) << "i=" << i << " gate=" << gate[i + 1];
    }
  });
}

TEST(AddInPlaceTest, MatchesReference) {
  std::mt19937 rng(4);
  ForEachSimdTarget([&] {
    for (int64_t n : {1, 9, 64, 333}) {
      std::vector<float> a = RandomFloats(rng, size_t(n) + 1), b = RandomFloats(rng, size_t(n) + 1);
      std::vector<float> want(a.begin() + 1, a.end());
      AddInPlace(a.data() + 1, b.data() + 1, n);
      ref::AddInPlace(want.data(), b.data() + 1, n);
      for (size_t i = 0; i < size_t(n); ++i) ASSERT_EQ(a[i + 1], want[i]);  // one rounding: exact match
    }
  });
}

// The scalar definition ArgMax keeps (ops.h).
int64_t ScalarArgMax(const std::vector<float>& v) {
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[size_t(best)]) best = int64_t(i);
  return best;
}

TEST(ArgMaxTest, FirstLargestNaNsNeverChosen) {
  std::mt19937 rng(11);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  ForEachSimdTarget([&] {
    for (size_t n : {0, 1, 2, 7, 15, 16, 17, 63, 64, 65, 100, 1000, 151936}) {
      for (int variant = 0; variant < 7; ++variant) {
        std::vector<float> v = RandomFloats(rng, n, -3.0f, 3.0f);
        if (n > 0) {
          std::uniform_int_distribution<size_t> at(0, n - 1);
          if (variant == 1)  // ties: the largest value at several places, the first must win
            for (int k = 0; k < 4; ++k) v[at(rng)] = 5.0f;
          if (variant == 2)  // NaNs everywhere, some larger-looking neighbours
            for (size_t k = 0; k < n / 3 + 1; ++k) v[at(rng)] = nan;
          if (variant == 3) v[0] = nan;                           // a NaN first: 0
          if (variant == 4) std::fill(v.begin(), v.end(), -inf);  // all -inf: 0
          if (variant == 5) v[n - 1] = inf;                       // the maximum in the tail
          if (variant == 6) {                                     // -inf and NaN only, one finite value
            for (float& x : v) x = (rng() & 1) ? -inf : nan;
            v[n / 2] = -1.0f;
            v[0] = -inf;
          }
        }
        SCOPED_TRACE(::testing::Message() << "n=" << n << " variant=" << variant);
        EXPECT_EQ(ArgMax(v.data(), int64_t(n)), ScalarArgMax(v));
      }
    }
  });
}

TEST(ConvertToF32Test, ExactForEveryFormat) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
      for (int64_t n : {1, 7, 16, 259}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dt) << " n=" << n);
        // Random bit patterns (every encoding: subnormals, inf, NaN), odd byte offset.
        std::vector<uint8_t> src(size_t(n) * DTypeSize(dt) + 1);
        for (uint8_t& b : src) b = uint8_t(byte(rng));
        std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        ConvertToF32(dt, src.data() + 1, n, got.data());
        ref::ConvertToF32(dt, src.data() + 1, n, want.data());
        for (size_t i = 0; i < size_t(n); ++i) {
          if (std::isnan(want[i])) {
            ASSERT_TRUE(std::isnan(got[i])) << "i=" << i;
          } else {
            ASSERT_EQ(got[i], want[i]) << "i=" << i;
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace tern::kernels
