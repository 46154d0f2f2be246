// W4A8 (ops.h QuantizeInt8Activations, MatMulW4A8) against the scalar
// reference quantizer (its exponent found by search, not frexp), the
// contract's error bound taken from x itself, and a float64 product, on every
// SIMD target and CPU path this machine has (the AVX-512 VNNI and AVX2
// integer kernels, the portable quantizer and the MatMulMany fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

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

// Blocks that reach every edge of the definition: largest magnitudes at
// 127 * 2^k exactly (e = k) and one f32 step either side, elements on the
// ties (n + 1/2) * 2^e of both signs (to even), all-zero blocks, blocks
// under the exponent floor (127 * 2^-134 and f32 subnormals), near FLT_MAX,
// and random ones of every scale.
std::vector<float> EdgeRows(int64_t K, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(K));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-60, 60);
  for (int64_t b = 0; b < K / 16; ++b) {
    float* xb = x.data() + b * 16;
    const int k = scale(rng);
    const float edge = std::ldexp(127.0f, k);
    switch (b % 8) {
      case 0:
      case 1:
      case 2: {  // amax on, just below, just above 127 * 2^k; ties of 2^k (or 2^(k+1)) between
        const float amax = b % 8 == 0 ? edge : b % 8 == 1 ? std::nextafter(edge, 0.0f) : std::nextafter(edge, 1e38f);
        const float unit = std::ldexp(1.0f, b % 8 == 2 ? k + 1 : k);
        for (int i = 0; i < 16; ++i) xb[i] = (i % 2 ? -1.0f : 1.0f) * (float(i % 7) + 0.5f) * unit;
        xb[15] = (b % 2 ? -amax : amax);
        break;
      }
      case 3:
        std::fill(xb, xb + 16, 0.0f);
        break;
      case 4:  // under the floor (the exponent stays -133), and just under 2^-126 (subnormal, e = -132)
        for (int i = 0; i < 16; ++i) xb[i] = u(rng) * (b % 16 == 4 ? 1e-39f : 127.0f * 0x1p-135f);
        if (b % 24 == 20) xb[7] = -std::nextafter(0x1p-126f, 0.0f);
        if (b % 24 == 12) xb[7] = std::nextafter(127.0f * 0x1p-133f, 1.0f);
        break;
      case 5:
        for (int i = 0; i < 16; ++i) xb[i] = u(rng) * 3.0e38f;
        break;
      default:
        for (int i = 0; i < 16; ++i) xb[i] = u(rng) * std::ldexp(1.0f, k);
        break;
    }
  }
  return x;
}

TEST(W4A8Test, QuantizeMatchesReferenceAndItsBound) {
  std::mt19937 rng(17);
  const int64_t M = 3, K = 1024;
  std::vector<float> x = EdgeRows(K, rng);
  for (float f : testing::RandomFloats(rng, size_t(K), -3.0f, 3.0f)) x.push_back(f);
  for (float f : EdgeRows(K, rng)) x.push_back(f);
  std::vector<float> want(size_t(M * K)), got(size_t(M * K));
  ref::QuantizeInt8Activations(x.data(), M, K, K, want.data(), K);
  // The contract, from x alone: |out - x| <= amax / 127 (or 2^-134 under the
  // floor), and out / 2^e an integer of at most 127 for e from amax.
  for (int64_t b = 0; b < M * K / 16; ++b) {
    double amax = 0;
    for (int64_t i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(double(x[size_t(b * 16 + i)])));
    for (int64_t i = 0; i < 16; ++i) {
      const double err = std::fabs(double(want[size_t(b * 16 + i)]) - double(x[size_t(b * 16 + i)]));
      ASSERT_LE(err, std::max(amax / 127.0, 0x1p-134)) << "block " << b << " element " << i;
    }
  }
  ASSERT_EQ(want[15], x[15]);  // block 0: amax 127 * 2^k is q = 127 exactly
  ForEachSimdTarget([&] {
    std::fill(got.begin(), got.end(), -1.0f);
    QuantizeInt8Activations(x.data(), M, K, K, got.data(), K);
    for (int64_t i = 0; i < M * K; ++i)
      ASSERT_EQ(got[size_t(i)], want[size_t(i)]) << "element " << i << " x " << x[size_t(i)];
  });
}

// By hand: a block whose largest magnitude is 127 keeps e = 0 (unit steps:
// 0.5 ties to 0, 1.5 to 2); one whose largest is just above 127 takes e = 1
// (steps of 2: 3 is 1.5 steps and ties to 2 steps, 4; 1 is half a step and
// ties to 0; -5 ties to -4; the largest rounds to 128).
TEST(W4A8Test, QuantizeByHand) {
  std::vector<float> x(32, 0.0f), out(32);
  x[0] = 127.0f;
  x[1] = -3.0f;
  x[2] = 0.5f;  // 0.5 / 1: ties to even 0
  x[3] = 1.5f;  // ties to 2
  x[16] = std::nextafter(127.0f, 200.0f);
  x[17] = 3.0f;  // 3 / 2 = 1.5: ties to 2 -> 4
  x[18] = 1.0f;  // 1 / 2 = 0.5: ties to 0
  x[19] = -5.0f;  // -2.5: ties to -2 -> -4
  ForEachSimdTarget([&] {
    QuantizeInt8Activations(x.data(), 1, 32, 32, out.data(), 32);
    EXPECT_EQ(out[0], 127.0f);
    EXPECT_EQ(out[1], -3.0f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 2.0f);
    EXPECT_EQ(out[16], 128.0f);
    EXPECT_EQ(out[17], 4.0f);
    EXPECT_EQ(out[18], 0.0f);
    EXPECT_EQ(out[19], -4.0f);
    for (int i = 4; i < 16; ++i) EXPECT_EQ(out[size_t(i)], 0.0f);
  });
}

TEST(W4A8Test, QuantizeMakesNonFiniteBlocksNaN) {
  const int64_t K = 64;
  std::vector<float> x(size_t(2 * K), 0.5f), out(size_t(2 * K));
  x[20] = std::numeric_limits<float>::quiet_NaN();
  x[K + 50] = -std::numeric_limits<float>::infinity();
  ForEachSimdTarget([&] {
    QuantizeInt8Activations(x.data(), 2, K, K, out.data(), K);
    for (int64_t i = 0; i < 2 * K; ++i) {
      const bool bad_block = i / 16 == 1 || i / 16 == (K + 50) / 16;
      EXPECT_EQ(std::isnan(out[size_t(i)]), bad_block) << i;
    }
  });
}

// float64 of Q8(x) · W^T; the sum of the terms' magnitudes; and the sum over
// blocks of the block's largest |Q8(x)| times its sum of |W|.
void Expected(const std::vector<float>& q, int64_t m, const MatrixView& w, int64_t n, double& y, double& mag,
              double& block_mag) {
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
}

TEST(W4A8Test, MatMulMatchesFloat64) {
  ThreadPool pool(2);
  std::mt19937 rng(6);
  struct Shape {
    int64_t K;
    std::vector<int64_t> N;  // one target per entry
  };
  const Shape shapes[] = {{16, {5}}, {48, {33}}, {192, {192, 7}}, {224, {9}}, {240, {18, 4}}, {272, {40}},
                          {1040, {65, 17, 3}}, {2048, {24}}, {3104, {13}}};
  for (const Shape& sh : shapes)
    for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13}) {
      std::vector<QuantTestMatrix> ws;
      for (int64_t n : sh.N) ws.emplace_back(rng, WeightFormat::kNvfp4, false, n, sh.K, /*stride_pad=*/n % 2);
      std::vector<float> x = testing::RandomFloats(rng, size_t(M * sh.K), -2.0f, 2.0f);
      for (int64_t i = 0; i < sh.K; ++i)  // row 0: magnitudes from 2^-20 to 2^20, block by block
        x[size_t(i)] *= std::ldexp(1.0f, int((i / 16) % 41) - 20);
      std::vector<float> q(x.size());
      ref::QuantizeInt8Activations(x.data(), M, sh.K, sh.K, q.data(), sh.K);
      ForEachNvfp4Path([&] {
        // The integer kernels (AVX-512 VNNI; AVX2 on x86's AVX2 and AVX3
        // targets): every block's term exact, f32 adding K / 16 of them;
        // otherwise MatMul's numerics on Q8(x) (the AVX2 W4A16 GEMV rounds
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
        MatMulW4A8(x.data(), M, sh.K, targets, pool);
        for (size_t t = 0; t < ws.size(); ++t)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < ws[t].view.rows; ++n) {
              double want, mag, block_mag;
              Expected(q, m, ws[t].view, n, want, mag, block_mag);
              const double bound = integer ? (double(sh.K / 16) + 8) * 0x1p-24 * mag + 1e-30
                                           : (2.0 * double(sh.K) + 16) * 0x1p-24 * mag + 0x1p-22 * block_mag + 1e-30;
              const float got = ys[t][size_t(m * targets[t].ldy + n)];
              ASSERT_NEAR(got, want, bound) << "K " << sh.K << " M " << M << " target " << t << " row " << m
                                            << " n " << n << (integer ? " (integer kernel)" : "");
            }
      });
    }
}

// The quantization is what the mode costs: against the float64 product of x
// itself, each output is within sum over blocks of amax / 127 * sum |W| (the
// contract's element bound) plus the kernel's own f32 terms.
TEST(W4A8Test, MatMulIsWithinTheModesBoundOfTheUnquantizedProduct) {
  ThreadPool pool(2);
  std::mt19937 rng(9);
  const int64_t K = 1024, N = 96;
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, N, K);
  for (int64_t M : {1, 4, 12}) {
    const std::vector<float> x = testing::RandomFloats(rng, size_t(M * K), -1.0f, 1.0f);
    ForEachNvfp4Path([&] {
      std::vector<float> y(size_t(M * N));
      const MatMulTarget t{.w = w.view, .y = y.data(), .ldy = N};
      MatMulW4A8(x.data(), M, K, {&t, 1}, pool);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0, mag = 0, quant = 0;
          for (int64_t b = 0; b < K; b += 16) {
            double amax = 0, wsum = 0;
            for (int64_t k = b; k < b + 16; ++k) {
              const double xk = x[size_t(m * K + k)], wk = ref::MatrixAt(w.view, n, k);
              want += xk * wk;
              mag += std::fabs(xk * wk);
              amax = std::max(amax, std::fabs(xk));
              wsum += std::fabs(wk);
            }
            quant += amax / 127.0 * wsum;
          }
          const double bound = quant + (2.0 * double(K) + 16) * 0x1p-24 * (mag + quant) + 0x1p-21 * quant * 127.0;
          const double err = std::fabs(double(y[size_t(m * N + n)]) - want);
          ASSERT_LE(err, bound) << "M " << M << " m " << m << " n " << n;
        }
    });
  }
}

TEST(W4A8Test, ManyTargetsEqualOneByOne) {
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
      MatMulW4A8(x.data(), M, K, targets, pool);
      for (size_t t = 0; t < ws.size(); ++t) {
        const MatMulTarget one{.w = ws[t].view, .y = alone[t].data(), .ldy = ws[t].view.rows};
        MatMulW4A8(x.data(), M, K, {&one, 1}, pool);
        ASSERT_EQ(together[t], alone[t]) << "M " << M << " target " << t;
      }
    });
  }
}

// Below AVX-512 VNNI on x86 (the AVX2 target, or AVX3 with the avx512 path),
// MatMulW4A8 and QuantizeInt8Activations are the AVX2 kernels of
// nvfp4_w4a4_int.h (a fallback would pass the float64 bound too).
TEST(W4A8Test, Avx2KernelsRunBelowVnni) {
  if (!kX86) GTEST_SKIP() << "x86 only";
  ThreadPool pool(2);
  std::mt19937 rng(14);
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
      MatMulW4A8(x.data(), M, K, {&t, 1}, pool);
      ASSERT_TRUE(w4a4_int::MatMulW4A8(x.data(), size_t(M), size_t(K), {&td, 1}, pool));
      EXPECT_EQ(y, direct) << "M " << M;
      QuantizeInt8Activations(x.data(), M, K, K, q.data(), K);
      ASSERT_TRUE(w4a4_int::QuantizeInt8(x.data(), size_t(M), size_t(K), size_t(K), q_direct.data(), size_t(K)));
      EXPECT_EQ(q, q_direct) << "M " << M;
    });
  }
  EXPECT_GT(runs, 0);  // every x86 machine this builds for has AVX2
}

TEST(W4A8Test, NonFiniteXMakesItsRowNaN) {
  ThreadPool pool(2);
  std::mt19937 rng(4);
  const int64_t K = 256, N = 40;
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, N, K);
  for (int64_t M : {2, 9}) {
    std::vector<float> x = testing::RandomFloats(rng, size_t(M * K));
    x[size_t(K + 100)] = std::numeric_limits<float>::infinity();  // row 1
    ForEachNvfp4Path([&] {
      std::vector<float> y(size_t(M * N));
      const MatMulTarget t{.w = w.view, .y = y.data(), .ldy = N};
      MatMulW4A8(x.data(), M, K, {&t, 1}, pool);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) EXPECT_EQ(std::isnan(y[size_t(m * N + n)]), m == 1) << m << " " << n;
    });
  }
}

}  // namespace
}  // namespace tern::kernels
