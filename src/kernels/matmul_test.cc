// MatMul against the scalar reference on every SIMD target: odd sizes, strides,
// misaligned pointers, every weight dtype, thread counts.
#include <bit>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/simd_target.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;
using testing::ForEachFp8Decode;
using testing::ForEachNvfp4Path;
using testing::RandomFloats;
using testing::TestMatrix;

struct Case {
  int64_t M, N, K;
  int64_t ldx_pad = 0, stride_pad = 0, ldy_pad = 0;
  size_t x_offset = 0, w_byte_offset = 0;  // misalignment, in floats and bytes
};

// Checks MatMul on one case against ref::MatMul. Each output may differ from
// the exact result by the f32 rounding of a K-term sum in any order,
// |err| <= (K + 2 * lanes) * 2^-24 * sum_k |x_k * w_k|; a wrong or missing term
// is ~sum/K, orders of magnitude above that.
using MatMulFn = void (*)(const float*, int64_t, int64_t, const MatrixView&, float*, int64_t, ThreadPool&);

struct Impl {
  const char* name;
  MatMulFn fn;
};
// MatMul itself and every implementation it chooses between, each on every shape.
constexpr Impl kImpls[] = {{"MatMul", MatMul},
                           {"MatMulGemv", MatMulGemv},
                           {"MatMulGemm", MatMulGemm},
                           {"MatMulSmallBatch", MatMulSmallBatch}};

// Runs every implementation on x [M, K] times w and compares with ref::MatMul.
void CheckAgainstReference(const Case& c, const MatrixView& w, const std::vector<float>& xbuf, ThreadPool& pool) {
  const int64_t ldx = c.K + c.ldx_pad, ldy = c.N + c.ldy_pad;
  const float* x = xbuf.data() + c.x_offset;
  const float kSentinel = -12345.0f;
  std::vector<float> want(size_t(c.M * ldy), kSentinel), tol(size_t(c.M * ldy)), tol_bf16(size_t(c.M * ldy)),
      tol_x16(size_t(c.M * ldy));
  ref::MatMul(x, c.M, ldx, w, want.data(), ldy);
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double mag = 0;
      for (int64_t k = 0; k < c.K; ++k) mag += std::fabs(double(x[m * ldx + k]) * ref::MatrixAt(w, n, k));
      double t = double(c.K + 64) * std::ldexp(1.0, -24) * mag + 1e-30, x16 = 0;
      if (w.format == WeightFormat::kNvfp4) {
        // MatMul's contract: x may be rounded to 2^-23 of its block's max
        // (the integer decode path, a few rows of x).
        for (int64_t k0 = 0; k0 < c.K; k0 += kNvfp4Block) {
          double amax = 0, wsum = 0;
          for (int64_t k = k0; k < std::min(c.K, k0 + kNvfp4Block); ++k) {
            amax = std::max(amax, std::fabs(double(x[m * ldx + k])));
            wsum += std::fabs(ref::MatrixAt(w, n, k));
          }
          t += wsum * amax * std::ldexp(1.0, -23);
          x16 += wsum * amax * (1.0 / 65278.0) * (1.0 + 0x1p-20);
        }
      }
      tol[size_t(m * ldy + n)] = float(t);
      tol_x16[size_t(m * ldy + n)] = float(t + x16);
      // The BF16-activation GEMMs (matmul_amx.h): one rounding of each x_k.
      tol_bf16[size_t(m * ldy + n)] = float(t + (std::ldexp(1.0, -8) + double(c.K / 64) * 0x1p-24) * mag + double(c.K) * 0x1p-126);
    }

  std::vector<Impl> impls(std::begin(kImpls), std::end(kImpls));
  const bool avx3 = std::string(SimdTargetName()) == "AVX3";
  if (UseAmx() && amx::Supports(w) && avx3) impls.push_back({"amx::Gemm", amx::Gemm});
  if (UseBf16Dot() && bf16dot::Supports(w) && avx3) impls.push_back({"bf16dot::Gemm", bf16dot::Gemm});
  for (const Impl& impl : impls) {
    SCOPED_TRACE(impl.name);
    std::vector<float> y(size_t(c.M * ldy), kSentinel);
    impl.fn(x, c.M, ldx, w, y.data(), ldy, pool);
    const bool bf16 = (impl.fn == MatMul && MatMulBf16Gemm(c.M, w) != Bf16Gemm::kNone) || impl.fn == amx::Gemm ||
                      impl.fn == bf16dot::Gemm;
    // The VNNI NVFP4 decode with BF16 activations in effect: x in 16 bits (Nvfp4DecodeX16). MatMulSmallBatch
    // hands quantized W to the GEMV.
    const bool x16 = impl.fn != MatMulGemm && !bf16 && w.format == WeightFormat::kNvfp4 &&
                     c.M <= 8 && avx3 && UseAvx512Vnni() && Nvfp4DecodeX16();
    const std::vector<float>& tol_impl = bf16 ? tol_bf16 : x16 ? tol_x16 : tol;
    int failures = 0;
    for (int64_t m = 0; m < c.M && failures < 5; ++m) {
      for (int64_t n = 0; n < c.N && failures < 5; ++n) {
        const size_t i = size_t(m * ldy + n);
        if (!(std::fabs(double(y[i]) - want[i]) <= tol_impl[i])) {
          ADD_FAILURE() << "y[" << m << "," << n << "] = " << y[i] << ", want " << want[i] << " (tol " << tol_impl[i]
                        << ")";
          ++failures;
        }
      }
      for (int64_t n = c.N; n < ldy; ++n) ASSERT_EQ(y[size_t(m * ldy + n)], kSentinel) << "wrote past N";
    }
  }
}

void CheckCase(const Case& c, DType dtype, ThreadPool& pool, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K << " dtype=" << DTypeName(dtype)
                                    << " threads=" << pool.size());
  std::mt19937 rng(seed);
  std::vector<float> xbuf = RandomFloats(rng, size_t(c.M * (c.K + c.ldx_pad)) + c.x_offset);
  TestMatrix w(rng, dtype, c.N, c.K, c.K + c.stride_pad, c.w_byte_offset);
  CheckAgainstReference(c, w.view, xbuf, pool);
}

TEST(MatMulTest, MatchesReferenceOnOddShapes) {
  ThreadPool pool(2);
  const Case cases[] = {
      {.M = 1, .N = 1, .K = 1},    {.M = 1, .N = 7, .K = 31},    {.M = 1, .N = 33, .K = 64}, {.M = 2, .N = 5, .K = 17},
      {.M = 3, .N = 13, .K = 100}, {.M = 4, .N = 9, .K = 33},    {.M = 5, .N = 31, .K = 48}, {.M = 6, .N = 10, .K = 65},
      {.M = 7, .N = 29, .K = 257}, {.M = 17, .N = 51, .K = 130}, {.M = 29, .N = 23, .K = 77},
      {.M = 33, .N = 7, .K = 9},
  };
  uint32_t seed = 1;
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (const Case& c : cases) CheckCase(c, dt, pool, seed++);
  });
}

TEST(MatMulTest, StridesAndMisalignedPointers) {
  ThreadPool pool(2);
  const Case cases[] = {
      {.M = 1, .N = 9, .K = 37, .ldx_pad = 3, .stride_pad = 5, .ldy_pad = 2, .x_offset = 1, .w_byte_offset = 2},
      {.M = 1, .N = 60, .K = 291, .ldx_pad = 2, .stride_pad = 1, .ldy_pad = 1, .x_offset = 1, .w_byte_offset = 6},
      {.M = 6, .N = 27, .K = 70, .ldx_pad = 1, .stride_pad = 3, .ldy_pad = 3, .x_offset = 3, .w_byte_offset = 6},
      {.M = 11, .N = 26, .K = 33, .ldx_pad = 7, .stride_pad = 1, .ldy_pad = 5, .x_offset = 2, .w_byte_offset = 4},
      // An odd byte offset: 16-bit weights that are not even 2-byte aligned.
      {.M = 3, .N = 8, .K = 40, .stride_pad = 2, .w_byte_offset = 1},
  };
  uint32_t seed = 100;
  ForEachSimdTarget([&] {
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
      for (const Case& c : cases) CheckCase(c, dt, pool, seed++);
  });
}

// Large enough for several K blocks in the GEMV (1024 when M > its row block)
// and the GEMM (256), several row blocks, many chunks of N shared by the
// threads, and MatMulSmallBatch's parallel transpose of x (K * rows >= 2^15).
TEST(MatMulTest, BlockedPathsAndThreadCounts) {
  uint32_t seed = 200;
  ForEachSimdTarget([&] {
    for (size_t threads : {1, 3}) {
      ThreadPool pool(threads);
      CheckCase({.M = 13, .N = 150, .K = 1100, .ldy_pad = 1}, DType::kBF16, pool, seed++);
      CheckCase({.M = 2, .N = 301, .K = 530}, DType::kF32, pool, seed++);
      CheckCase({.M = 9, .N = 70, .K = 1030, .stride_pad = 4}, DType::kF16, pool, seed++);
      CheckCase({.M = 16, .N = 50, .K = 2100, .ldx_pad = 2}, DType::kBF16, pool, seed++);
      CheckCase({.M = 7, .N = 45, .K = 4700}, DType::kF32, pool, seed++);
      // MatMulSmallBatch's 256-bit vectors on AVX-512 full (8 rows), and the
      // GEMV's full row block on AVX-512 (6).
      CheckCase({.M = 8, .N = 37, .K = 515, .ldx_pad = 1}, DType::kBF16, pool, seed++);
      CheckCase({.M = 6, .N = 41, .K = 333}, DType::kBF16, pool, seed++);
      // One row of x: dense W read row after row (RowStream): whole groups of
      // four steps, single steps after them and a partial last step.
      CheckCase({.M = 1, .N = 301, .K = 1100, .stride_pad = 3}, DType::kBF16, pool, seed++);
      CheckCase({.M = 1, .N = 77, .K = 530, .ldx_pad = 1}, DType::kF16, pool, seed++);
      CheckCase({.M = 1, .N = 130, .K = 2048}, DType::kF32, pool, seed++);
    }
  });
}

TEST(MatMulTest, EmptyShapes) {
  ThreadPool pool(2);
  std::mt19937 rng(7);
  TestMatrix w(rng, DType::kBF16, 4, 0, 0);
  std::vector<float> x(8, 1.0f), y;
  for (const Impl& impl : kImpls) {
    SCOPED_TRACE(impl.name);
    y.assign(8, -1.0f);
    impl.fn(x.data(), 2, 0, w.view, y.data(), 4, pool);  // K = 0: y = 0
    for (float v : y) EXPECT_EQ(v, 0.0f);
    y.assign(8, -1.0f);
    impl.fn(x.data(), 0, 4, w.view, y.data(), 4, pool);  // M = 0: untouched
    for (float v : y) EXPECT_EQ(v, -1.0f);
  }
}

// Quantized weights: every implementation against the reference's exact
// dequantization, on shapes that cover the GEMV tail (K not a multiple of the
// SIMD step), several K blocks (1024 in GEMV, 256 in GEMM), FP8 block scales
// changing along both N and K, and padded row and scale strides.
struct QuantCase {
  WeightFormat format;
  bool block_scales;
  Case c;
};

void CheckQuantCase(const QuantCase& q, ThreadPool& pool, uint32_t seed) {
  const Case& c = q.c;
  SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K << " format="
                                    << (q.format == WeightFormat::kNvfp4 ? "nvfp4" : "fp8")
                                    << (q.block_scales ? " (block scales)" : "") << " threads=" << pool.size());
  std::mt19937 rng(seed);
  std::vector<float> xbuf = RandomFloats(rng, size_t(c.M * (c.K + c.ldx_pad)) + c.x_offset);
  testing::QuantTestMatrix w(rng, q.format, q.block_scales, c.N, c.K, c.stride_pad, c.w_byte_offset);
  CheckAgainstReference(c, w.view, xbuf, pool);
}

TEST(MatMulTest, QuantizedWeightsMatchReference) {
  const Case shapes[] = {
      {.M = 1, .N = 1, .K = 16},   {.M = 1, .N = 7, .K = 48},      {.M = 2, .N = 9, .K = 80},
      {.M = 5, .N = 31, .K = 272}, {.M = 6, .N = 10, .K = 64},     {.M = 7, .N = 29, .K = 1056},
      {.M = 17, .N = 51, .K = 144, .ldx_pad = 3, .stride_pad = 1, .ldy_pad = 2, .x_offset = 1, .w_byte_offset = 3},
      {.M = 3, .N = 300, .K = 400},
      // More rows than the GEMV decodes in registers, several K blocks.
      {.M = 12, .N = 70, .K = 1104, .ldy_pad = 3},
      // Decode rows with a 128-column block, a whole FP8 block of two steps
      // and a tail after it (AVX-512: 128 + 64 + 16).
      {.M = 4, .N = 33, .K = 208},
      {.M = 16, .N = 41, .K = 2096},
  };
  uint32_t seed = 400;
  ForEachFp8Decode([&] {
    ForEachNvfp4Path([&] {
      for (size_t threads : {1, 2}) {
        ThreadPool pool(threads);
        for (const Case& c : shapes) {
          CheckQuantCase({WeightFormat::kNvfp4, false, c}, pool, seed++);
          CheckQuantCase({WeightFormat::kFp8, false, c}, pool, seed++);
          CheckQuantCase({WeightFormat::kFp8, true, c}, pool, seed++);
        }
        // FP8 with K not a multiple of 16 (no block constraint there).
        CheckQuantCase({WeightFormat::kFp8, true, {.M = 3, .N = 130, .K = 131}}, pool, seed++);
        CheckQuantCase({WeightFormat::kFp8, false, {.M = 9, .N = 5, .K = 37}}, pool, seed++);
      }
    });
  });
}

// FP8 whose scales are far from 1 (checkpoints' block scales are usually
// small, but nothing bounds them): block scales of 2^10-2^11, 2^80-2^81 and
// 2^-40, a per-tensor scale of 2^100, x scaled by 2^-60. (Before the F16
// decode, the block scale times 2^120 overflowed to inf for any scale of
// 2^8 or more; a first integer decode's block scale times 2^56, from 2^72.)
TEST(MatMulTest, Fp8LargeAndSmallScalesMatchReference) {
  uint32_t seed = 1000;
  ForEachFp8Decode([&] {
    ForEachSimdTarget([&] {
      ThreadPool pool(2);
      for (const Case& c : {Case{.M = 1, .N = 150, .K = 300}, Case{.M = 3, .N = 140, .K = 272},
                            Case{.M = 9, .N = 33, .K = 1100}, Case{.M = 30, .N = 40, .K = 256}}) {
        for (bool block : {false, true}) {
          for (float factor : {0x1p10f, 0x1p80f, 0x1p-40f}) {
            SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K
                                              << (block ? " block" : " per-tensor") << " factor=" << factor);
            std::mt19937 rng(seed++);
            std::vector<float> x = RandomFloats(rng, size_t(c.M * c.K));
            for (float& v : x) v *= 0x1p-60f;
            testing::QuantTestMatrix w(rng, WeightFormat::kFp8, block, c.N, c.K);
            if (block) {
              for (size_t i = 0; i + 4 <= w.scale_bytes.size(); i += 4) {
                float sc;
                std::memcpy(&sc, &w.scale_bytes[i], 4);
                sc *= factor;
                std::memcpy(&w.scale_bytes[i], &sc, 4);
              }
            } else {
              w.view.global_scale = 0x1p100f;
            }
            CheckAgainstReference(c, w.view, x, pool);
          }
        }
      }
    });
  });
}

// NVFP4 decode (1 to 8 rows of x) rounds x per block of 16, never per row or
// across rows: blocks whose magnitudes differ by up to 10^8 each stay within
// 2^-23 of their own max (2^-15.99 where Nvfp4DecodeX16) (a per-row scale would lose the small blocks
// entirely), and rows 10^3 apart keep their own blocks. Shapes cover several
// 128-element steps with and without a partial last one, padded row and
// scale strides (padding 0xFF: the f32 tile would read it past K as code -6;
// the integer kernels' x is zero there, so QuantizedReadsNothingPastTheMatrix
// checks their masks), odd row addresses and padded x rows.
TEST(MatMulTest, Nvfp4DecodeRoundsXPerBlock) {
  uint32_t seed = 700;
  ForEachNvfp4Path([&] {
    ThreadPool pool(2);
    for (const Case& c : {Case{.M = 1, .N = 37, .K = 1072, .stride_pad = 2, .w_byte_offset = 3},
                          Case{.M = 1, .N = 130, .K = 512}, Case{.M = 1, .N = 3, .K = 144, .stride_pad = 1},
                          Case{.M = 1, .N = 64, .K = 2048, .x_offset = 1},
                          Case{.M = 2, .N = 45, .K = 1072, .ldx_pad = 5, .stride_pad = 2, .ldy_pad = 1, .w_byte_offset = 1},
                          Case{.M = 3, .N = 19, .K = 400, .ldx_pad = 16, .x_offset = 3},
                          Case{.M = 3, .N = 70, .K = 2048, .ldy_pad = 7},
                          // (The integer kernels' rows: up to 8.)
                          Case{.M = 5, .N = 33, .K = 1072, .ldx_pad = 2, .stride_pad = 2, .w_byte_offset = 1},
                          Case{.M = 8, .N = 40, .K = 656, .ldy_pad = 3, .x_offset = 2},
                          // Prepared x past L1 (two W rows side by side on VNNI), an odd row count.
                          Case{.M = 8, .N = 37, .K = 2064, .ldy_pad = 1, .w_byte_offset = 1},
                          Case{.M = 6, .N = 21, .K = 3072, .stride_pad = 2},
                          // Partial last steps of 96 and 112 (the masked loads' widest tails).
                          Case{.M = 1, .N = 21, .K = 224, .stride_pad = 1, .w_byte_offset = 2},
                          Case{.M = 4, .N = 17, .K = 240, .stride_pad = 2, .ldy_pad = 1},
                          // An odd number of whole steps and no partial one (the VNNI kernel takes steps in pairs).
                          Case{.M = 1, .N = 11, .K = 128, .stride_pad = 1},
                          Case{.M = 2, .N = 23, .K = 384, .w_byte_offset = 1}}) {
      SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K);
      std::mt19937 rng(seed++);
      const int64_t ldx = c.K + c.ldx_pad;
      std::vector<float> x = RandomFloats(rng, size_t(c.M * ldx) + c.x_offset);
      for (int64_t m = 0; m < c.M; ++m) {
        float* row = x.data() + c.x_offset + m * ldx;
        for (int64_t k = 0; k < c.K; ++k) row[k] *= std::pow(10.0f, float(k / 16 % 9) - 4.0f + 3.0f * float(m));
        for (int64_t k = 32 + 16 * m; k < 48 + 16 * m && k < c.K; ++k) row[k] = 0.0f;  // an all-zero block
      }
      testing::QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, c.N, c.K, c.stride_pad, c.w_byte_offset);
      CheckAgainstReference(c, w.view, x, pool);
    }
  });
}

// Where BF16 activations are in effect (the avx512-bf16 and amx paths), the
// VNNI NVFP4 decode of 1 to 8 rows rounds x per block of 16 to 16-bit fixed
// point, xq = round-half-even(x * (32639 / amax)) in f64, and is otherwise
// exact up to f32's sums: against that rounding reproduced in f64, within
// (K / 16 + 32) * 2^-24 of the sum of the block terms' magnitudes. Every x
// sits 0.375 of a step from its rounded value, with the sign of row 0's
// weight, so that row's rounding error adds up to ~0.375 * step * sum |w|,
// far above that bound: the test tells 16 bits from 24 (checked below).
TEST(MatMulTest, Nvfp4DecodeX16RoundsAsDocumented) {
  constexpr double kXMax = 32639.0;
  uint32_t seed = 730;
  int runs = 0, cases = 0;
  ForEachNvfp4Path([&] {
    if (std::string(SimdTargetName()) != "AVX3" || !UseAvx512Vnni() || !Nvfp4DecodeX16()) return;
    ++runs;
    ThreadPool pool(2);
    for (const auto& [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 19, 1072}, {1, 7, 256}, {3, 9, 400},
                                  {8, 5, 2064}, {5, 13, 144}}) {
      SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K);
      std::mt19937 rng(seed++);
      testing::QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, N, K);
      if (MatMulBf16Gemm(M, w.view) != Bf16Gemm::kNone) continue;  // (amx: the tiles from 8 rows)
      ++cases;
      MatrixView unit_scale = w.view;  // W's values times its block scales: exact in f32
      unit_scale.global_scale = 1.0f;
      std::uniform_int_distribution<int> digits(1, 1000);  // small beside the block max: its error stands out
      std::uniform_real_distribution<double> log_amax(-8.0, 8.0);
      std::vector<float> x(size_t(M * K));
      std::vector<double> xq(x.size()), step(x.size());  // per element: its rounded value and its block's step
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k0 = 0; k0 < K; k0 += kNvfp4Block) {
          const float amax = float(std::exp2(log_amax(rng)));
          for (int64_t k = k0; k < k0 + kNvfp4Block; ++k) {
            const double sign = ref::MatrixAt(unit_scale, 0, k) < 0 ? -1.0 : 1.0;
            x[size_t(m * K + k)] = k == k0 ? float(sign) * amax : float(sign * amax * (digits(rng) + 0.375) / kXMax);
          }
          const double inv = kXMax / double(amax);
          for (int64_t k = k0; k < k0 + kNvfp4Block; ++k) {
            xq[size_t(m * K + k)] = std::nearbyint(double(x[size_t(m * K + k)]) * inv);
            step[size_t(m * K + k)] = double(float(double(amax) / kXMax * 0.5)) * 2.0;
          }
        }
      std::vector<float> y(size_t(M * N));
      MatMul(x.data(), M, K, w.view, y.data(), N, pool);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0, mag = 0, exact = 0;
          for (int64_t k0 = 0; k0 < K; k0 += kNvfp4Block) {
            double block = 0;
            for (int64_t k = k0; k < k0 + kNvfp4Block; ++k) {
              const size_t i = size_t(m * K + k);
              block += double(ref::MatrixAt(unit_scale, n, k)) * xq[i] * step[i];
              exact += double(ref::MatrixAt(unit_scale, n, k)) * double(x[i]);
            }
            want += block;
            mag += std::fabs(block);
          }
          const double gs = double(w.view.global_scale);
          const double tol = (double(K / kNvfp4Block) + 32.0) * 0x1p-24 * mag * gs;
          EXPECT_NEAR(double(y[size_t(m * N + n)]), want * gs, tol) << "y[" << m << "," << n << "]";
          if (n == 0) {
            EXPECT_GT(std::fabs(want - exact) * gs, 4.0 * tol) << "the test cannot tell 16 bits from more";
          }
        }
    }
  });
  if (runs == 0) GTEST_SKIP() << "no CPU path here rounds NVFP4 decode's x to 16 bits (needs AVX512-BF16 or AMX)";
  EXPECT_GE(cases, 4 * runs);
}

// NVFP4 decode gives the same bits wherever W sits in memory (a kernel that
// reads rows differently by their alignment must still sum in one order):
// codes placed at every byte offset of a cache line and scales at another,
// for rows of a multiple of 64 bytes (one alignment per matrix), of 8-byte
// multiples (alignments cycling row to row), a row of one partial 128-element
// step and rows of whole and partial pairs of steps, equal the placement at
// offset 0 bit for bit, and that one the reference within the decode bound.
TEST(MatMulTest, Nvfp4DecodeSameAtEveryAlignment) {
  uint32_t seed = 750;
  ForEachNvfp4Path([&] {
    ThreadPool pool(2);
    for (const Case& c : {Case{.M = 1, .N = 9, .K = 2048}, Case{.M = 1, .N = 13, .K = 16},
                          Case{.M = 2, .N = 11, .K = 112}, Case{.M = 3, .N = 17, .K = 192},
                          Case{.M = 1, .N = 10, .K = 240}, Case{.M = 8, .N = 7, .K = 256},
                          Case{.M = 5, .N = 12, .K = 400}, Case{.M = 1, .N = 21, .K = 1024, .stride_pad = 1}}) {
      SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K);
      std::mt19937 rng(seed++);
      const std::vector<float> x = RandomFloats(rng, size_t(c.M * c.K));
      testing::QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, c.N, c.K, c.stride_pad);
      CheckAgainstReference(c, w.view, x, pool);
      const size_t code_bytes = size_t(c.N * w.view.row_stride / 2), scale_bytes = size_t(c.N * w.view.scale_stride);
      std::vector<float> want(size_t(c.M * c.N)), got(want.size());
      std::vector<uint8_t> storage(code_bytes + scale_bytes + 4 * 64);
      uint8_t* line = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
      for (size_t offset = 0; offset < 64; ++offset) {
        SCOPED_TRACE(::testing::Message() << "codes at " << offset << " bytes past a 64-byte boundary");
        uint8_t* codes = line + offset;
        uint8_t* scales = line + (code_bytes + 127) / 64 * 64 + (offset * 24 + 8) % 64;
        std::memcpy(codes, w.codes.data(), code_bytes);
        std::memcpy(scales, w.scale_bytes.data(), scale_bytes);
        MatrixView placed = w.view;
        placed.data = codes;
        placed.scales = scales;
        MatMul(x.data(), c.M, c.K, placed, (offset == 0 ? want : got).data(), c.N, pool);
        if (offset != 0) {
          EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
        }
      }
    }
  });
}

// A NaN or infinity in x makes every output non-finite, as f32 arithmetic does:
// in either step of a pair of 128-element steps (the VNNI kernel's unit) and
// in either step of a masked last pair (K = 144: 128 + 16).
TEST(MatMulTest, Nvfp4DecodePropagatesNonFinite) {
  ForEachNvfp4Path([&] {
    ThreadPool pool(2);
    std::mt19937 rng(77);
    for (const auto& [K, at] : {std::pair<int64_t, size_t>{256, 200}, {256, 60}, {144, 136}, {144, 20}}) {
      SCOPED_TRACE(::testing::Message() << "K=" << K << " x[" << at << "]");
      testing::QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, 9, K);
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        std::vector<float> x = RandomFloats(rng, size_t(K)), y(9, 0.0f);
        x[at] = bad;
        MatMul(x.data(), 1, K, w.view, y.data(), 9, pool);
        for (float v : y) EXPECT_FALSE(std::isfinite(v)) << "x = " << bad;
        // Rows of x are independent: with 2 to 8 rows, only the row holding
        // the non-finite value has non-finite outputs.
        for (int64_t M = 2; M <= 8; ++M) {
          SCOPED_TRACE(::testing::Message() << "M=" << M);
          std::vector<float> xs = RandomFloats(rng, size_t(M * K)), ys(size_t(M * 9), 0.0f);
          xs[size_t((M - 2) * K) + at] = bad;  // row M - 2
          MatMul(xs.data(), M, K, w.view, ys.data(), 9, pool);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < 9; ++n) EXPECT_EQ(std::isfinite(ys[size_t(m * 9 + n)]), m != M - 2) << "row " << m;
        }
      }
    }
  });
}

// The VNNI kernels' two decodes of W's codes (vpermb where the CPU has VBMI,
// vpshufb) give the same bytes, so MatMul (x as 24- and 16-bit fixed point)
// and MatMulW4A4 agree bit for bit for every row count the kernels take, with
// whole and partial pairs of steps. Each is held to the float64 reference
// by the tests above (ForEachNvfp4Path); this pins down that the choice
// never changes a result.
TEST(MatMulTest, Nvfp4CodeDecodesAgreeBitForBit) {
  EXPECT_FALSE(SetNvfp4CodeDecode("vpermi2b").ok());
  if (!DetectedCpuExtensions().avx512_vbmi) {
    EXPECT_FALSE(SetNvfp4CodeDecode("vpermb").ok());
    GTEST_SKIP() << "no AVX512-VBMI on this CPU: only the vpshufb decode runs here";
  }
  if (!DetectedCpuExtensions().avx512_vnni) GTEST_SKIP() << "VBMI without VNNI (Cannon Lake): no VNNI kernels here";
  std::vector<std::string> paths;
  for (const std::string& p : AvailableCpuPaths())
    if (p == "avx512-vnni" || p == "avx512-bf16" || p == "amx") paths.push_back(p);  // x 24-bit, 16-bit, 16-bit
  ASSERT_FALSE(paths.empty()) << CpuPathDescription();
  struct Restore {  // the defaults, also when an ASSERT below returns early
    ~Restore() {
      EXPECT_TRUE(SetNvfp4CodeDecode("auto").ok());
      EXPECT_TRUE(SetCpuPath("auto").ok());
    }
  } restore;
  ThreadPool pool(2);
  std::mt19937 rng(1234);
  int compared = 0;
  for (const std::string& path : paths) {
    SCOPED_TRACE("cpu path " + path);
    ASSERT_TRUE(SetCpuPath(path).ok());
    for (int64_t K : {16, 144, 256, 1072, 3104}) {
      testing::QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, 37, K, /*stride_pad=*/1);
      for (int64_t M = 1; M <= 8; ++M) {
        SCOPED_TRACE(::testing::Message() << "K=" << K << " M=" << M);
        const std::vector<float> x = RandomFloats(rng, size_t(M * K), -3.0f, 3.0f);
        std::vector<float> y[2], y4[2];
        for (int v = 0; v < 2; ++v) {
          ASSERT_TRUE(SetNvfp4CodeDecode(v == 0 ? "vpshufb" : "vpermb").ok());
          EXPECT_EQ(CpuPathDescription().find("codes by vpermb") != std::string::npos, v == 1) << CpuPathDescription();
          y[v].assign(size_t(M * 37), 0.0f);
          y4[v].assign(size_t(M * 37), 0.0f);
          MatMul(x.data(), M, K, w.view, y[v].data(), 37, pool);
          const MatMulTarget t{.w = w.view, .y = y4[v].data(), .ldy = 37};
          MatMulW4A4(x.data(), M, K, 0.04f, {&t, 1}, pool);
        }
        for (float f : y[0]) ASSERT_TRUE(std::isfinite(f));
        for (float f : y4[0]) ASSERT_TRUE(std::isfinite(f));
        EXPECT_EQ(0, std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(y4[0].data(), y4[1].data(), y4[0].size() * sizeof(float)));
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, int(paths.size()) * 5 * 8);
}

// n bytes that end where an inaccessible page begins: a read one byte past
// them faults.
class GuardedBytes {
 public:
  explicit GuardedBytes(const uint8_t* src, size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    size_ = (n + page - 1) / page * page + page;
    base_ = static_cast<uint8_t*>(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap failed");
    if (mprotect(base_ + size_ - page, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    data_ = base_ + size_ - page - n;
    std::memcpy(data_, src, n);
  }
  ~GuardedBytes() { munmap(base_, size_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The last row's codes and scales end at an inaccessible page: no kernel
// reads past the matrix. (The other tests pad W with 0xFF, which a too-wide
// mask in the integer kernels would read without changing a result: x is
// zero past K there.) Results equal those on the padded copy, bit for bit.
TEST(MatMulTest, QuantizedReadsNothingPastTheMatrix) {
  ForEachFp8Decode([&] {
    ForEachNvfp4Path([&] {
      ThreadPool pool(2);
      std::mt19937 rng(91);
      for (int64_t K : {16, 48, 144, 240, 384, 1072}) {
        for (auto [format, block] : {std::pair{WeightFormat::kNvfp4, false}, std::pair{WeightFormat::kFp8, false},
                                     std::pair{WeightFormat::kFp8, true}}) {
          const int64_t N = 5;
          testing::QuantTestMatrix w(rng, format, block, N, K);
          const bool nvfp4 = format == WeightFormat::kNvfp4;
          GuardedBytes codes(w.codes.data(), size_t(N * K) / (nvfp4 ? 2 : 1));
          std::unique_ptr<GuardedBytes> scales;
          MatrixView guarded = w.view;
          guarded.data = codes.data();
          if (nvfp4) {
            scales = std::make_unique<GuardedBytes>(w.scale_bytes.data(), size_t(N * K / kNvfp4Block));
            guarded.scales = scales->data();
          } else if (block) {  // one f32 per 128 x 128 block (N = 5: one row of them), the last at the page's end
            ASSERT_EQ(w.view.scale_stride, (K + kFp8Block - 1) / kFp8Block);
            scales = std::make_unique<GuardedBytes>(w.scale_bytes.data(), size_t(w.view.scale_stride) * sizeof(float));
            guarded.scales = scales->data();
          }
          for (int64_t M : {1, 2, 3, 5, 8, 12, 17}) {
            SCOPED_TRACE(::testing::Message() << "K=" << K << " M=" << M
                                              << (nvfp4 ? " NVFP4" : block ? " FP8 block" : " FP8"));
            const std::vector<float> x = RandomFloats(rng, size_t(M * K));
            std::vector<float> want(size_t(M * N)), got(size_t(M * N));
            MatMul(x.data(), M, K, w.view, want.data(), N, pool);
            MatMul(x.data(), M, K, guarded, got.data(), N, pool);
            EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
          }
        }
      }
    });
  });
}

// Each row of MatMul(x[M, K]) bit for bit what MatMul computes for that row
// alone.
void ExpectOneRowEqualsBatchRow(const std::vector<float>& x, int64_t M, int64_t K, const MatrixView& w,
                                ThreadPool& pool, std::string_view what) {
  const int64_t N = w.rows;
  std::vector<float> batch(size_t(M * N)), one(static_cast<size_t>(N));
  MatMul(x.data(), M, K, w, batch.data(), N, pool);
  for (int64_t m = 0; m < M; ++m) {
    MatMul(x.data() + m * K, 1, K, w, one.data(), N, pool);
    for (int64_t n = 0; n < N; ++n)
      ASSERT_EQ(std::bit_cast<uint32_t>(one[size_t(n)]), std::bit_cast<uint32_t>(batch[size_t(m * N + n)]))
          << what << " M=" << M << " row " << m << " n=" << n;
  }
}

// One row of x (decode) gives each y bit for bit what the same row gets in a
// batch of up to 4 rows, and dense W up to GemvStreamRows() (the GEMV's row
// block, 5 or 6: it sums them over all of K in the same order): a
// speculative verify of up to 3 drafts (NEXTN's default) scores its rows as
// plain decode would. (Past that the small-batch kernel, the BF16 GEMMs and
// the GEMV's K blocks sum in their own orders.)
TEST(MatMulTest, OneRowEqualsItsRowInASmallBatch) {
  uint32_t seed = 800;
  ForEachFp8Decode([&] {
    ForEachSimdTarget([&] {
      ThreadPool pool(2);
      for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
        for (int64_t M : {int64_t(2), int64_t(4), GemvStreamRows()}) {
          const int64_t N = 97, K = 1100;
          std::mt19937 rng(seed++);
          std::vector<float> x = RandomFloats(rng, size_t(M * K));
          TestMatrix w(rng, dt, N, K, K + 2);
          if (MatMulBf16Gemm(M, w.view) != Bf16Gemm::kNone) continue;  // the amx path's tiles from 5 rows: BF16 x
          ExpectOneRowEqualsBatchRow(x, M, K, w.view, pool, DTypeName(dt));
        }
      }
      // FP8, per-tensor and with 128x128 block scales (K = 1100: a partial
      // last block and step). NVFP4's one-row decode has kernels of its own
      // on x86 and is not held to this.
      for (bool block : {false, true}) {
        for (int64_t M : {2, 4}) {
          const int64_t N = 97, K = 1100;
          std::mt19937 rng(seed++);
          std::vector<float> x = RandomFloats(rng, size_t(M * K));
          testing::QuantTestMatrix w(rng, WeightFormat::kFp8, block, N, K, 3);
          ExpectOneRowEqualsBatchRow(x, M, K, w.view, pool, block ? "FP8 block" : "FP8");
        }
      }
    });
  });
}

// With MXCSR.DAZ set (tern never sets it; a process embedding it might) the
// FP8 decode picked by default still reads E4M3's subnormal codes: the
// integer decode, whose subnormal codes are subnormal f32 operands, gives
// way to the F16 route.
TEST(MatMulTest, Fp8SubnormalCodesWithDenormalsAreZero) {
  ASSERT_TRUE(SetFp8Decode("auto").ok());
  const int64_t N = 3, K = 256;
  std::vector<uint8_t> codes(size_t(N * K), 0x07);  // 7 * 2^-9, E4M3's largest subnormal
  for (int64_t k = 0; k < K; k += 3) codes[size_t(k)] = 0x81;  // -2^-9, and on the other rows
  const MatrixView w{.dtype = DType::kF8E4M3, .data = codes.data(), .rows = N, .cols = K, .row_stride = K,
                     .format = WeightFormat::kFp8, .global_scale = 2.0f};
  std::vector<float> x(static_cast<size_t>(K), 1.0f), want(static_cast<size_t>(N)), got(static_cast<size_t>(N), -1.0f);
  ref::MatMul(x.data(), 1, K, w, want.data(), N);
  ASSERT_NE(want[0], 0.0f);
  ThreadPool pool(2);
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | (1u << 6));  // DAZ
  const bool integer = UseFp8IntegerDecode();
  MatMul(x.data(), 1, K, w, got.data(), N, pool);
  _mm_setcsr(csr);
  EXPECT_FALSE(integer);
  for (int64_t n = 0; n < N; ++n) EXPECT_EQ(got[size_t(n)], want[size_t(n)]) << "row " << n;
}

// MatMulMany: each target bit for bit what MatMul computes for it alone, for
// q/k/v-like groups (different N, same K) in every format, with MatMul's
// contract checked against the reference by the tests above.
TEST(MatMulTest, ManyEqualsOneByOne) {
  uint32_t seed = 900;
  ForEachFp8Decode([&] {
    ForEachNvfp4Path([&] {
      for (size_t threads : {1, 2}) {
        ThreadPool pool(threads);
        for (int64_t M : {1, 2, 3, 5, 6, 9, 17}) {
          const int64_t K = 272;
          std::mt19937 rng(seed++);
          std::vector<float> x = RandomFloats(rng, size_t(M * (K + 3)));
          std::vector<TestMatrix> dense;
          std::vector<testing::QuantTestMatrix> quant;
          std::vector<std::vector<MatrixView>> groups(4);
          for (int64_t N : {200, 24, 24, 0, 7}) {
            dense.emplace_back(rng, DType::kBF16, N, K, K + 1, 2);
            quant.emplace_back(rng, WeightFormat::kNvfp4, false, N, K, 1, 1);
            quant.emplace_back(rng, WeightFormat::kFp8, false, N, K);
            quant.emplace_back(rng, WeightFormat::kFp8, true, N, K);
          }
          for (size_t i = 0; i < dense.size(); ++i) {
            groups[0].push_back(dense[i].view);
            for (size_t f = 0; f < 3; ++f) groups[f + 1].push_back(quant[3 * i + f].view);
          }
          groups.push_back({dense[0].view, quant[0].view, dense[1].view});  // mixed formats: grouped by format
          for (const auto& views : groups) {
            std::vector<std::vector<float>> got, want;
            std::vector<MatMulTarget> targets;
            for (const MatrixView& w : views) {
              const int64_t ldy = w.rows + 2;
              got.emplace_back(size_t(M * ldy), -7.0f);
              want.emplace_back(size_t(M * ldy), -7.0f);
              MatMul(x.data(), M, K + 3, w, want.back().data(), ldy, pool);
              targets.push_back({.w = w, .y = got.back().data(), .ldy = ldy});
            }
            MatMulMany(x.data(), M, K + 3, targets, pool);
            for (size_t i = 0; i < views.size(); ++i) {
              SCOPED_TRACE(::testing::Message() << "M=" << M << " target " << i << " N=" << views[i].rows);
              ASSERT_EQ(0, std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)));
            }
          }
        }
      }
    });
  });
}

// DequantizeRows equals the reference element by element, bit for bit, for
// any row range and K range (including ranges that start mid-step).
TEST(DequantizeRowsTest, ExactForEveryFormat) {
  uint32_t seed = 500;
  ForEachFp8Decode([&] {
    ForEachSimdTarget([&] {
      for (auto [format, block] : {std::pair{WeightFormat::kNvfp4, false}, std::pair{WeightFormat::kFp8, false},
                                   std::pair{WeightFormat::kFp8, true}}) {
        std::mt19937 rng(seed++);
        testing::QuantTestMatrix w(rng, format, block, 133, 272, 1, 5);
        for (auto [k0, k1] : {std::pair<int64_t, int64_t>{0, 272}, {16, 144}, {128, 272}, {32, 48}}) {
          const int64_t n0 = 3, rows = 130, width = k1 - k0;
          std::vector<float> got(size_t(rows * (width + 1)), -1.0f), want(got.size(), -1.0f);
          DequantizeRows(w.view, n0, rows, k0, k1, got.data(), width + 1);
          ref::DequantizeRows(w.view, n0, rows, k0, k1, want.data(), width + 1);
          for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(F32ToBits(got[i]), F32ToBits(want[i])) << "element " << i;
        }
      }
    });
  });
}

TEST(SimdTargetTest, ReportsAndSwitchesTargets) {
  const std::vector<int64_t> targets = SimdTargetsForTest();
  ASSERT_FALSE(targets.empty());
  const std::string best = SimdTargetName();
  EXPECT_EQ(best, SimdTargetNameOf(targets.front()));
  for (int64_t t : targets) {
    SetSimdTargetForTest(t);
    EXPECT_STREQ(SimdTargetName(), SimdTargetNameOf(t));
  }
  SetSimdTargetForTest(0);
  EXPECT_EQ(best, SimdTargetName());
}

}  // namespace
}  // namespace tern::kernels
