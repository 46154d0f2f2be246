// W4A4 (ops.h QuantizeNvfp4Activations, MatMulW4A4) against the scalar
// reference quantizer and a float64 product, on every SIMD target and CPU
// path this machine has (the AVX-512 VNNI and AVX2 integer kernels, the
// portable quantizer and MatMulMany fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "base/thread_pool.h"
#include "kernels/cpu_features.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/nvfp4_w4a4_int.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/simd_target.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachNvfp4Path;
using testing::ForEachSimdTarget;
using testing::QuantTestMatrix;

#if defined(__x86_64__)
constexpr bool kX86 = true;
#else
constexpr bool kX86 = false;
#endif

// Rows of x that exercise every rounding boundary: for a block scale s, the
// values t * s * input_scale for t on and beside each of ModelOpt's E2M1
// boundaries (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5: ties go to the even
// mantissa), both signs, a saturating 6, zero blocks, blocks whose scale
// underflows E4M3 to 0, and scales at E4M3's top (448) and past it.
std::vector<float> BoundaryRows(int64_t K, float input_scale, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(K));
  const float ts[] = {0.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  std::uniform_real_distribution<float> jitter(-1e-3f, 1e-3f);
  for (int64_t b = 0; b < K / 16; ++b) {
    float* xb = x.data() + b * 16;
    const int kind = int(b % 6);
    // The block's amax is 6 * s * input_scale, so its scale is exactly s.
    const float s = kind == 4 ? 448.0f : kind == 5 ? 0.001953125f * (1 + b % 3) : 0.5f + 0.125f * float(b % 8);
    for (int i = 0; i < 16; ++i) {
      const float t = ts[size_t(i) % 9] + (i >= 9 ? jitter(rng) : 0.0f);
      xb[i] = (i % 2 ? -t : t) * s * input_scale;
    }
    xb[15] = 6.0f * s * input_scale;
    if (kind == 2) std::fill(xb, xb + 16, 0.0f);
    if (kind == 3) std::fill(xb, xb + 16, 1e-30f);  // s rounds to 0
    if (kind == 4 && b % 12 == 4) xb[3] = 1e9f;      // past 448 * 6: the scale saturates
  }
  return x;
}

TEST(W4A4Test, QuantizeMatchesReference) {
  std::mt19937 rng(11);
  const int64_t M = 3, K = 768;
  const float input_scale = 0.0173f;
  std::vector<float> x = BoundaryRows(K, input_scale, rng);
  for (float f : testing::RandomFloats(rng, size_t(K), -3.0f, 3.0f)) x.push_back(f);
  for (float f : testing::RandomFloats(rng, size_t(K), -1e-4f, 1e-4f)) x.push_back(f);
  std::vector<float> want(size_t(M * K)), got(size_t(M * K));
  ref::QuantizeNvfp4Activations(x.data(), M, K, K, input_scale, want.data(), K);
  int64_t nonzero = 0;
  for (float v : want) nonzero += v != 0.0f;
  ASSERT_GT(nonzero, M * K / 3);  // (the boundary row holds zeros by design)
  ForEachSimdTarget([&] {
    std::fill(got.begin(), got.end(), -1.0f);
    QuantizeNvfp4Activations(x.data(), M, K, K, input_scale, got.data(), K);
    for (int64_t i = 0; i < M * K; ++i) ASSERT_EQ(got[size_t(i)], want[size_t(i)]) << "element " << i << " x " << x[size_t(i)];
  });
}

// The block scale's E4M3 rounding: blocks whose wanted scale (amax / 6
// with input_scale 1) sits on every midpoint between two E4M3 values —
// normal ones (ties to the even mantissa) and subnormal ones (multiples of
// 2^-9) — and just beside it, at the subnormal/normal edge 2^-6 and at the
// top (448, past it). The block's largest element then quantizes to 6 * s,
// which shows s.
TEST(W4A4Test, QuantizeRoundsBlockScalesAsE4M3) {
  std::vector<float> wanted = {7.5f * 0x1p-9f, std::nextafter(0x1p-6f, 0.0f), 0x1p-6f, 440.0f,
                               std::nextafter(448.0f, 0.0f), 448.0f, 464.0f, 1e6f};
  const float* e4m3 = E4M3Values();
  for (int code = 0; code < 0x7e; ++code) {
    const float mid = (e4m3[code] + e4m3[code + 1]) / 2.0f;  // exact: at most 5 significant bits
    for (float f : {mid * (1.0f - 0x1p-16f), mid, mid * (1.0f + 0x1p-16f)}) wanted.push_back(f);
  }
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> frac(-1.0f, 1.0f);
  const int64_t K = int64_t(wanted.size()) * 16;
  std::vector<float> x(static_cast<size_t>(K)), want(x.size()), got(x.size());
  for (size_t b = 0; b < wanted.size(); ++b) {
    for (size_t i = 1; i < 16; ++i) x[16 * b + i] = frac(rng) * 6.0f * wanted[b];
    x[16 * b] = (b % 2 ? -6.0f : 6.0f) * wanted[b];  // amax: 6 f exactly (f has at most 21 significant bits)
  }
  ref::QuantizeNvfp4Activations(x.data(), 1, K, K, 1.0f, want.data(), K);
  // (The reference, by hand: 7.5 * 2^-9 ties to the even 8 * 2^-9 = 2^-6; just below 2^-6 rounds to it.)
  ASSERT_EQ(want[0], 6.0f * 0x1p-6f);
  ASSERT_EQ(want[16], -6.0f * 0x1p-6f);
  ForEachSimdTarget([&] {
    QuantizeNvfp4Activations(x.data(), 1, K, K, 1.0f, got.data(), K);
    for (int64_t i = 0; i < K; ++i)
      ASSERT_EQ(got[size_t(i)], want[size_t(i)]) << "block " << i / 16 << " wanted scale " << wanted[size_t(i / 16)];
  });
}

TEST(W4A4Test, QuantizeMakesNonFiniteBlocksNaN) {
  const int64_t K = 64;
  std::vector<float> x(size_t(2 * K), 0.5f), out(size_t(2 * K));
  x[20] = std::numeric_limits<float>::quiet_NaN();
  x[K + 50] = -std::numeric_limits<float>::infinity();
  ForEachSimdTarget([&] {
    QuantizeNvfp4Activations(x.data(), 2, K, K, 1.0f, out.data(), K);
    for (int64_t i = 0; i < 2 * K; ++i) {
      const bool bad_block = i / 16 == 1 || i / 16 == (K + 50) / 16;
      EXPECT_EQ(std::isnan(out[size_t(i)]), bad_block) << i;
    }
  });
}

// float64 of (Q(x) . W^T) * input_scale; the sum of the terms' magnitudes;
// and the sum over blocks of the block's largest |Q(x)| times its sum of |W|.
void Expected(const std::vector<float>& q, int64_t m, const MatrixView& w, int64_t n, float input_scale, double& y,
              double& mag, double& block_mag) {
  y = mag = block_mag = 0;
  for (int64_t b = 0; b < w.cols; b += 16) {
    double amax = 0, wsum = 0;
    for (int64_t k = b; k < b + 16; ++k) {
      const double xq = q[size_t(m * w.cols + k)], wk = ref::MatrixAt(w, n, k);
      y += xq * wk;
      mag += std::fabs(xq * wk);
      amax = std::max(amax, std::fabs(xq));
      wsum += std::fabs(wk);
    }
    block_mag += amax * wsum;
  }
  y *= input_scale;
  mag *= input_scale;
  block_mag *= input_scale;
}

TEST(W4A4Test, MatMulMatchesFloat64) {
  ThreadPool pool(2);
  std::mt19937 rng(5);
  const float input_scale = 0.0311f;
  struct Shape {
    int64_t K;
    std::vector<int64_t> N;  // one target per entry
  };
  const Shape shapes[] = {{16, {5}}, {48, {33}}, {192, {192, 7}}, {224, {9}}, {240, {18, 4}}, {272, {40}},
                          {1040, {65, 17, 3}}, {2048, {24}}, {3104, {13}}};  // 3104: 8 rows' x past L1
  for (const Shape& sh : shapes)
    for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
      std::vector<QuantTestMatrix> ws;
      for (int64_t n : sh.N) ws.emplace_back(rng, WeightFormat::kNvfp4, false, n, sh.K, /*stride_pad=*/n % 2);
      std::vector<float> x = testing::RandomFloats(rng, size_t(M * sh.K), -2.0f, 2.0f);
      const std::vector<float> b = BoundaryRows(sh.K, input_scale, rng);
      std::copy(b.begin(), b.end(), x.begin());  // row 0: the rounding boundaries
      std::vector<float> q(x.size());
      ref::QuantizeNvfp4Activations(x.data(), M, sh.K, sh.K, input_scale, q.data(), sh.K);
      ForEachNvfp4Path([&] {
        // The integer kernels (AVX-512 VNNI; AVX2 on x86's AVX2 and AVX3
        // targets): every block's term exact, f32 adding K / 16 of them;
        // otherwise MatMul's numerics on Q(x) (the AVX2 W4A16 GEMV rounds
        // each element to 2^-23 of its block's largest magnitude).
        const std::string target = SimdTargetName();
        const bool vnni = target == "AVX3" && UseAvx512Vnni();
        const bool integer = vnni ? size_t(M) <= vnni::kMaxRows || sh.K >= 1024  // (kVnniManyRowsMinK)
                                  : kX86 && (target == "AVX2" || target == "AVX3") && size_t(M) <= w4a4_int::kMaxRows;
        std::vector<std::vector<float>> ys;
        std::vector<MatMulTarget> targets;
        for (const QuantTestMatrix& w : ws) {
          ys.emplace_back(size_t(M * (w.view.rows + 3)), std::nanf(""));
          targets.push_back({.w = w.view, .y = ys.back().data(), .ldy = w.view.rows + 3});
        }
        MatMulW4A4(x.data(), M, sh.K, input_scale, targets, pool);
        for (size_t t = 0; t < ws.size(); ++t)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < ws[t].view.rows; ++n) {
              double want, mag, block_mag;
              Expected(q, m, ws[t].view, n, input_scale, want, mag, block_mag);
              const double bound = integer ? (double(sh.K / 16) + 8) * 0x1p-24 * mag + 1e-30
                                           : (2.0 * double(sh.K) + 16) * 0x1p-24 * mag + 0x1p-22 * block_mag + 1e-30;
              const float got = ys[t][size_t(m * targets[t].ldy + n)];
              ASSERT_NEAR(got, want, bound) << "K " << sh.K << " M " << M << " target " << t << " row " << m
                                            << " n " << n << (integer ? " (integer kernel)" : "");
            }
      });
    }
}

TEST(W4A4Test, ManyTargetsEqualOneByOne) {
  ThreadPool pool(2);
  std::mt19937 rng(8);
  const int64_t K = 512;
  std::vector<QuantTestMatrix> ws;
  for (int64_t n : {64, 100, 32}) ws.emplace_back(rng, WeightFormat::kNvfp4, false, n, K);
  for (int64_t M : {1, 4, 8, 12}) {
    const std::vector<float> x = testing::RandomFloats(rng, size_t(M * K));
    ForEachNvfp4Path([&] {
      std::vector<std::vector<float>> together, alone;
      std::vector<MatMulTarget> targets;
      for (const QuantTestMatrix& w : ws) {
        together.emplace_back(size_t(M * w.view.rows));
        alone.emplace_back(size_t(M * w.view.rows));
        targets.push_back({.w = w.view, .y = together.back().data(), .ldy = w.view.rows});
      }
      MatMulW4A4(x.data(), M, K, 0.02f, targets, pool);
      for (size_t t = 0; t < ws.size(); ++t) {
        const MatMulTarget one{.w = ws[t].view, .y = alone[t].data(), .ldy = ws[t].view.rows};
        MatMulW4A4(x.data(), M, K, 0.02f, {&one, 1}, pool);
        ASSERT_EQ(together[t], alone[t]) << "M " << M << " target " << t;
      }
    });
  }
}

// Below AVX-512 VNNI on x86 (the AVX2 target, or AVX3 with the avx512 path),
// MatMulW4A4 and QuantizeNvfp4Activations are the AVX2 kernels of
// nvfp4_w4a4_int.h (a fallback would pass the float64 bound too).
TEST(W4A4Test, Avx2KernelsRunBelowVnni) {
  if (!kX86) GTEST_SKIP() << "x86 only";
  ThreadPool pool(2);
  std::mt19937 rng(13);
  const int64_t K = 384, N = 50;
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, N, K);
  int runs = 0;
  for (int64_t M : {1, 4, 8}) {
    const std::vector<float> x = testing::RandomFloats(rng, size_t(M * K));
    ForEachSimdTarget([&] {
      const std::string target = SimdTargetName();
      if ((target != "AVX2" && target != "AVX3") || (target == "AVX3" && UseAvx512Vnni())) return;
      ++runs;
      std::vector<float> y(size_t(M * N)), direct(size_t(M * N)), q(size_t(M * K)), q_direct(size_t(M * K));
      const MatMulTarget t{.w = w.view, .y = y.data(), .ldy = N}, td{.w = w.view, .y = direct.data(), .ldy = N};
      MatMulW4A4(x.data(), M, K, 0.03f, {&t, 1}, pool);
      ASSERT_TRUE(w4a4_int::MatMul(x.data(), size_t(M), size_t(K), 0.03f, {&td, 1}, pool));
      EXPECT_EQ(y, direct) << "M " << M;
      QuantizeNvfp4Activations(x.data(), M, K, K, 0.03f, q.data(), K);
      ASSERT_TRUE(w4a4_int::Quantize(x.data(), size_t(M), size_t(K), size_t(K), 0.03f, q_direct.data(), size_t(K)));
      EXPECT_EQ(q, q_direct) << "M " << M;
    });
  }
  EXPECT_GT(runs, 0);  // every x86 machine this builds for has AVX2
}

TEST(W4A4Test, NonFiniteXMakesItsRowNaN) {
  ThreadPool pool(2);
  std::mt19937 rng(3);
  const int64_t K = 256, N = 40;
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, N, K);
  for (int64_t M : {2, 9}) {
    std::vector<float> x = testing::RandomFloats(rng, size_t(M * K));
    x[size_t(K + 100)] = std::numeric_limits<float>::infinity();  // row 1
    ForEachNvfp4Path([&] {
      std::vector<float> y(size_t(M * N));
      const MatMulTarget t{.w = w.view, .y = y.data(), .ldy = N};
      MatMulW4A4(x.data(), M, K, 0.05f, {&t, 1}, pool);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) EXPECT_EQ(std::isnan(y[size_t(m * N + n)]), m == 1) << m << " " << n;
    });
  }
}

}  // namespace
}  // namespace tern::kernels
