// The AMX BF16 GEMM (matmul_amx.h), on CPUs that run the amx path.
//
// The strong check: with x rounded to BF16 first (base/dtype.h's
// round-to-nearest-even, independent of the kernel), the scalar reference
// and amx::Gemm must agree to the f32 rounding of a K-term sum alone. A
// rounding that is not RNE, a weight that is not exact in BF16, a missing or
// repeated product shows up far above that bound. matmul_test.cc checks the
// looser bound of the numerics contract against the unrounded x.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu_features.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/simd_target.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::QuantTestMatrix;
using testing::RandomFloats;
using testing::TestMatrix;

bool HaveAmx() { return AvailableCpuPaths().front() == "amx" && UseAmx(); }

struct Shape {
  int64_t M, N, K;
  int64_t ldx_pad = 0, stride_pad = 0, ldy_pad = 0;
};

// amx::Gemm(x) against ref::MatMul(bf16(x)): |err| <= (K + 2) * 2^-24 * sum|x_k w_k| (+ flushed denormals).
void CheckRoundedX(const Shape& s, const MatrixView& w, std::mt19937& rng, ThreadPool& pool) {
  SCOPED_TRACE(::testing::Message() << "M=" << s.M << " N=" << s.N << " K=" << s.K << " threads=" << pool.size());
  const int64_t ldx = s.K + s.ldx_pad, ldy = s.N + s.ldy_pad;
  std::vector<float> x = RandomFloats(rng, size_t(s.M * ldx));
  // Magnitudes over 2^-20 .. 2^20, so BF16's rounding is exercised across exponents.
  for (float& v : x) v = std::ldexp(v, int(rng() % 41) - 20);
  std::vector<float> xr(x);
  for (float& v : xr) v = Bf16ToF32(F32ToBf16(v));
  const float kSentinel = -12345.0f;
  std::vector<float> want(size_t(s.M * ldy), kSentinel), y(size_t(s.M * ldy), kSentinel);
  ref::MatMul(xr.data(), s.M, ldx, w, want.data(), ldy);
  amx::Gemm(x.data(), s.M, ldx, w, y.data(), ldy, pool);
  int failures = 0;
  for (int64_t m = 0; m < s.M && failures < 5; ++m) {
    for (int64_t n = 0; n < s.N && failures < 5; ++n) {
      double mag = 0;
      for (int64_t k = 0; k < s.K; ++k) mag += std::fabs(double(xr[size_t(m * ldx + k)]) * ref::MatrixAt(w, n, k));
      const double tol = double(s.K + 2 + s.K / 64) * 0x1p-24 * mag + double(s.K) * 0x1p-126;
      const size_t i = size_t(m * ldy + n);
      if (!(std::fabs(double(y[i]) - double(want[i])) <= tol)) {
        ADD_FAILURE() << "y[" << m << "," << n << "] = " << y[i] << ", want " << want[i] << " (tol " << tol << ")";
        ++failures;
      }
    }
    for (int64_t n = s.N; n < ldy; ++n) ASSERT_EQ(y[size_t(m * ldy + n)], kSentinel) << "wrote past N";
  }
}

// Rows of x around the tile sizes (16, 32), N around the task (32) and tile
// (16) sizes, K with and without a tail of the 32-element step (16 for
// NVFP4), several steps and K blocks (256), row superblocks, padded strides.
const Shape kShapes[] = {
    {.M = 1, .N = 1, .K = 32},     {.M = 15, .N = 17, .K = 64},
    {.M = 16, .N = 32, .K = 96},   {.M = 17, .N = 33, .K = 48, .ldx_pad = 3, .stride_pad = 1, .ldy_pad = 2},
    {.M = 31, .N = 64, .K = 1024}, {.M = 32, .N = 65, .K = 272},
    {.M = 33, .N = 31, .K = 1040, .ldy_pad = 5}, {.M = 100, .N = 130, .K = 512, .ldx_pad = 16},
    // Several superblocks of rows (128 at K = 2048) and K blocks, the last superblock partial.
    {.M = 300, .N = 40, .K = 2048, .ldy_pad = 1},
};

TEST(AmxGemmTest, IsTheF32SumOfBf16RoundedX) {
  if (!HaveAmx()) GTEST_SKIP() << "no amx path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(11);
  for (size_t threads : {1, 3}) {
    ThreadPool pool(threads);
    for (const Shape& s : kShapes) {
      {
        SCOPED_TRACE("bf16");
        TestMatrix w(rng, DType::kBF16, s.N, s.K, s.K + s.stride_pad, 2 * (s.stride_pad % 2));
        CheckRoundedX(s, w.view, rng, pool);
      }
      if (s.K % kNvfp4Block == 0) {
        SCOPED_TRACE("nvfp4");
        QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
        CheckRoundedX(s, w.view, rng, pool);
      }
      {
        SCOPED_TRACE("fp8");
        QuantTestMatrix w(rng, WeightFormat::kFp8, false, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
        CheckRoundedX(s, w.view, rng, pool);
      }
      {
        SCOPED_TRACE("fp8 block scales");
        QuantTestMatrix w(rng, WeightFormat::kFp8, true, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
        CheckRoundedX(s, w.view, rng, pool);
      }
    }
  }
}

// Which MatMuls take the tiles: on the amx path from AmxMinRowsFor(w) rows of x
// for the formats exact in BF16 (bit-identical to amx::Gemm); below that, or
// with another path forced, the f32 kernels (bit-identical to the avx512-vnni path).
TEST(AmxGemmTest, MatMulTakesTheTilesOnlyOnTheAmxPathFromMinRows) {
  if (!HaveAmx()) GTEST_SKIP() << "no amx path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(12);
  ThreadPool pool(2);
  TestMatrix bf16(rng, DType::kBF16, 70, 256, 256);
  QuantTestMatrix nvfp4(rng, WeightFormat::kNvfp4, false, 70, 256);
  QuantTestMatrix fp8_blocks(rng, WeightFormat::kFp8, true, 70, 256);
  TestMatrix f32(rng, DType::kF32, 70, 256, 256);
  for (const MatrixView* w : {&bf16.view, &nvfp4.view, &fp8_blocks.view, &f32.view}) {
    for (int64_t M : {AmxMinRowsFor(*w) - 1, AmxMinRowsFor(*w), int64_t(40)}) {
      if (M < 1) continue;
      SCOPED_TRACE(::testing::Message() << "M=" << M << " format=" << int(w->format) << " dtype=" << DTypeName(w->dtype));
      std::vector<float> x = RandomFloats(rng, size_t(M * 256)), y(size_t(M * 70)), other(size_t(M * 70));
      ASSERT_TRUE(SetCpuPath("amx").ok());
      MatMul(x.data(), M, 256, *w, y.data(), 70, pool);
      if (M >= AmxMinRowsFor(*w) && amx::Supports(*w)) {
        amx::Gemm(x.data(), M, 256, *w, other.data(), 70, pool);
      } else {
        ASSERT_TRUE(SetCpuPath("avx512-vnni").ok());
        MatMul(x.data(), M, 256, *w, other.data(), 70, pool);
      }
      EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)), 0);
      ASSERT_TRUE(SetCpuPath("auto").ok());
    }
  }
  // MatMulF32Activations and TERN_ACTIVATIONS=f32 never take them.
  std::vector<float> x = RandomFloats(rng, 40 * 256), y(40 * 70), other(40 * 70);
  MatMulF32Activations(x.data(), 40, 256, bf16.view, y.data(), 70, pool);
  ASSERT_TRUE(SetCpuPath("avx512-vnni").ok());
  MatMul(x.data(), 40, 256, bf16.view, other.data(), 70, pool);
  EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)), 0);
  ASSERT_TRUE(SetCpuPath("auto").ok());
  ASSERT_TRUE(SetActivations("f32").ok());
  EXPECT_FALSE(UseAmx());
  MatMul(x.data(), 40, 256, bf16.view, y.data(), 70, pool);
  EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)), 0);
  ASSERT_TRUE(SetActivations("bf16").ok());
  EXPECT_FALSE(SetActivations("fp16").ok());
  EXPECT_TRUE(amx::Supports(bf16.view));
  EXPECT_TRUE(amx::Supports(nvfp4.view));
  EXPECT_TRUE(amx::Supports(fp8_blocks.view));
  EXPECT_FALSE(amx::Supports(f32.view));
}

// Rows of x are independent: a NaN or infinity in one row makes that row's
// outputs non-finite and leaves the others as they were.
TEST(AmxGemmTest, NonFiniteStaysInItsRow) {
  if (!HaveAmx()) GTEST_SKIP() << "no amx path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(13);
  ThreadPool pool(2);
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, 40, 128);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> x = RandomFloats(rng, 20 * 128), clean(20 * 40), y(20 * 40);
    amx::Gemm(x.data(), 20, 128, w.view, clean.data(), 40, pool);
    x[17 * 128 + 100] = bad;
    amx::Gemm(x.data(), 20, 128, w.view, y.data(), 40, pool);
    for (int64_t m = 0; m < 20; ++m)
      for (int64_t n = 0; n < 40; ++n) {
        if (m == 17) {
          EXPECT_FALSE(std::isfinite(y[size_t(m * 40 + n)])) << "n=" << n;
        } else {
          EXPECT_EQ(y[size_t(m * 40 + n)], clean[size_t(m * 40 + n)]) << "m=" << m << " n=" << n;
        }
      }
  }
}

// The path is offered exactly when the CPU reports AMX-BF16 and AVX512-BF16
// and the startup probe (grant + a checked tile product) passed; the probe
// itself is what SelfTest runs, here again on a thread of its own.
TEST(AmxGemmTest, PathMatchesTheCpuAndTheProbe) {
  const CpuExtensions& e = DetectedCpuExtensions();
  const bool features = e.amx_tile && e.amx_bf16 && e.avx512_bf16 && e.avx512_vnni && e.os_amx;
  if (!features) {
    EXPECT_NE(AvailableCpuPaths().front(), "amx");
    EXPECT_FALSE(SetCpuPath("amx").ok());
    return;
  }
  ASSERT_EQ(AvailableCpuPaths().front(), "amx") << CpuPathDescription();
  bool ok = false;
  std::thread t([&] { ok = amx::SelfTest(); });
  t.join();
  EXPECT_TRUE(ok);
  EXPECT_NE(CpuPathDescription().find("AMX"), std::string::npos) << CpuPathDescription();
}

}  // namespace
}  // namespace tern::kernels
