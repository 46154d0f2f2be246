// Stochastic BF16 rounding (ops.h: the numerics check's rounded references).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;
using testing::QuantTestMatrix;
using testing::RandomFloats;
using testing::TestMatrix;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// BF16's neighbours of a finite normal or subnormal f, in double arithmetic:
// the 8-bit significands just below and above |f| in magnitude, with f's sign.
void Neighbours(float f, double* lo, double* hi) {
  const double a = std::fabs(double(f));
  // A normal value's exponent; subnormals share the spacing 2^-133.
  const int e = a >= 0x1p-126 ? int(std::floor(std::log2(a))) : -126;
  const double ulp = std::ldexp(1.0, e - 7);
  const double down = std::floor(a / ulp) * ulp;
  *lo = std::copysign(down, double(f));
  *hi = std::copysign(down + ulp, double(f));
}

TEST(StochasticRoundBf16Test, GivesANeighbourAndKeepsWhatIsExact) {
  std::mt19937 rng(3);
  std::vector<float> x;
  for (float scale : {1e-40f, 1e-30f, 1e-3f, 1.0f, 3e4f, 1e30f}) {
    const std::vector<float> r = RandomFloats(rng, 400, -scale, scale);
    x.insert(x.end(), r.begin(), r.end());
  }
  const size_t exact_from = x.size();
  for (float f : {0.0f, -0.0f, 1.0f, -0.5f, 1.0078125f, 3.0f}) x.push_back(f);  // exact in BF16
  const float inf = std::numeric_limits<float>::infinity();
  x.push_back(inf);
  x.push_back(-inf);
  x.push_back(std::nanf(""));
  std::vector<float> out(x.size());
  for (uint64_t seed : {1u, 2u, 77u}) {
    StochasticRoundBf16(x.data(), 1, int64_t(x.size()), int64_t(x.size()), seed, out.data());
    for (size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "x = " << x[i] << " seed " << seed);
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(out[i]));
        continue;
      }
      if (std::isinf(x[i])) {
        EXPECT_EQ(out[i], x[i]);
        continue;
      }
      EXPECT_EQ(Bits(out[i]) & 0xFFFFu, 0u) << "not a BF16 value";
      if (i >= exact_from) {
        EXPECT_EQ(Bits(out[i]), Bits(x[i]));
        continue;
      }
      double lo, hi;
      Neighbours(x[i], &lo, &hi);
      EXPECT_TRUE(double(out[i]) == lo || double(out[i]) == hi) << "got " << out[i] << ", neighbours " << lo << ", " << hi;
    }
  }
  // Past BF16's largest finite (0x7F7F0000) a value may round to infinity, never to NaN.
  const float big = std::numeric_limits<float>::max();
  float got;
  int infinite = 0;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    StochasticRoundBf16(&big, 1, 1, 1, seed, &got);
    EXPECT_TRUE(Bits(got) == 0x7F7F0000u || std::isinf(got)) << got;
    infinite += std::isinf(got);
  }
  EXPECT_GT(infinite, 32);  // 0xFFFF / 0x10000 of the draws go up
}

// Unbiased: a value a quarter of the gap above a BF16 value goes up a quarter
// of the time, and the mean error over many values is 0 (within 5 standard errors).
TEST(StochasticRoundBf16Test, IsUnbiased) {
  const int n = 200000;
  const double ulp = 0x1p-7;  // BF16's spacing in [1, 2)
  std::vector<float> x(n), out(n);
  for (int i = 0; i < n; ++i) x[size_t(i)] = float(1.0 + (double(i % 128) + 0.25) * ulp + double(i / 128) * 0x1p-20);
  // (i / 128 moves the low bits, so the values and their draws differ; each value's own distance to
  // its lower neighbour, up to ~0.44 of the gap, is what expect_up sums.)
  StochasticRoundBf16(x.data(), 1, n, n, 5, out.data());
  int up = 0;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    double lo, hi;
    Neighbours(x[size_t(i)], &lo, &hi);
    up += double(out[size_t(i)]) == hi;
    err += double(out[size_t(i)]) - double(x[size_t(i)]);
  }
  double expect_up = 0;
  for (int i = 0; i < n; ++i) {
    double lo, hi;
    Neighbours(x[size_t(i)], &lo, &hi);
    expect_up += (double(x[size_t(i)]) - lo) / ulp;
  }
  const double sd = std::sqrt(n * 0.25 * 0.75);
  EXPECT_NEAR(double(up), expect_up, 5 * sd);
  EXPECT_NEAR(err / n, 0.0, 5 * ulp * 0.5 / std::sqrt(double(n)));
}

// A row rounds the same alone or in any batch, and each seed differently.
TEST(StochasticRoundBf16Test, DependsOnlyOnSeedColumnAndValue) {
  std::mt19937 rng(9);
  const int64_t M = 7, K = 300, ldx = 311;
  const std::vector<float> x = RandomFloats(rng, size_t(M * ldx));
  std::vector<float> all(size_t(M * K)), one(static_cast<size_t>(K)), other(size_t(M * K));
  StochasticRoundBf16(x.data(), M, ldx, K, 11, all.data());
  for (int64_t r = 0; r < M; ++r) {
    StochasticRoundBf16(x.data() + r * ldx, 1, ldx, K, 11, one.data());
    EXPECT_EQ(std::memcmp(one.data(), all.data() + r * K, size_t(K) * 4), 0) << "row " << r;
  }
  StochasticRoundBf16(x.data(), M, ldx, K, 12, other.data());
  int differ = 0;
  for (size_t i = 0; i < all.size(); ++i) differ += Bits(all[i]) != Bits(other[i]);
  EXPECT_GT(differ, int(all.size()) / 4);  // two draws at distance p differ with probability 2p(1 - p): ~1/3
}

// Under a seed, MatMul and MatMulMany are the f32 kernels on the rounded x
// (bit for bit, on every path), and without one they are as before.
TEST(StochasticRoundBf16Test, MatMulRoundsItsInputWhileASeedIsSet) {
  std::mt19937 rng(21);
  ThreadPool pool(2);
  const int64_t K = 256, N = 48;
  TestMatrix bf16(rng, DType::kBF16, N, K, K);
  QuantTestMatrix nvfp4(rng, WeightFormat::kNvfp4, false, N, K);
  ForEachSimdTarget([&] {
    for (const MatrixView* w : {&bf16.view, &nvfp4.view}) {
      for (int64_t M : {1, 3, 9, 40}) {
        SCOPED_TRACE(::testing::Message() << "M=" << M << " format " << int(w->format));
        const std::vector<float> x = RandomFloats(rng, size_t(M * K));
        std::vector<float> plain(size_t(M * N)), plain_again(size_t(M * N)), got(size_t(M * N)),
            want(size_t(M * N)), many0(size_t(M * N)), many1(size_t(M * N)), rounded(size_t(M * K)), ref(size_t(M * N));
        MatMul(x.data(), M, K, *w, plain.data(), N, pool);
        SetStochasticBf16Seed(4);
        MatMul(x.data(), M, K, *w, got.data(), N, pool);
        const MatMulTarget targets[] = {{.w = *w, .y = many0.data(), .ldy = N}, {.w = *w, .y = many1.data(), .ldy = N}};
        MatMulMany(x.data(), M, K, targets, pool);
        SetStochasticBf16Seed(0);
        StochasticRoundBf16(x.data(), M, K, K, 4, rounded.data());
        MatMulF32Activations(rounded.data(), M, K, *w, want.data(), N, pool);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
        EXPECT_EQ(std::memcmp(many0.data(), want.data(), got.size() * 4), 0);
        EXPECT_EQ(std::memcmp(many1.data(), want.data(), got.size() * 4), 0);
        // Not garbage: the scalar reference on the rounded x, to f32 rounding.
        ref::MatMul(rounded.data(), M, K, *w, ref.data(), N);
        double worst = 0, largest = 0;
        for (size_t i = 0; i < ref.size(); ++i) {
          worst = std::max(worst, std::fabs(double(got[i]) - double(ref[i])));
          largest = std::max(largest, std::fabs(double(ref[i])));
        }
        EXPECT_LE(worst, 1e-4 * (1 + largest));
        MatMul(x.data(), M, K, *w, plain_again.data(), N, pool);
        EXPECT_EQ(std::memcmp(plain.data(), plain_again.data(), plain.size() * 4), 0) << "seed 0 is off";
      }
    }
  });
}

}  // namespace
}  // namespace tern::kernels
