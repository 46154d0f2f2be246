// The BF16-activation GEMMs: AMX tiles (matmul_amx.h) on CPUs that run the
// amx path, VDPBF16PS (matmul_bf16dot.h) on CPUs that run avx512-bf16.
//
// The strong check: with x rounded to BF16 first (base/dtype.h's
// round-to-nearest-even, independent of the kernel), the scalar reference
// and each GEMM must agree to the f32 rounding of a K-term sum alone. A
// rounding that is not RNE, a weight that is not exact in BF16, a missing or
// repeated product shows up far above that bound. matmul_test.cc checks the
// looser bound of the numerics contract against the unrounded x.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "kernels/matmul_bf16dot.h"
#include "kernels/matmul_internal.h"
#include "kernels/nvfp4_gemv_vnni.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/simd_target.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::QuantTestMatrix;
using testing::RandomFloats;
using testing::TestMatrix;

using GemmFn = void (*)(const float*, int64_t, int64_t, const MatrixView&, float*, int64_t, ThreadPool&);

// A BF16-activation GEMM and the CPU path MatMul takes it on.
struct Bf16GemmImpl {
  const char* name;
  const char* path;
  GemmFn gemm;
  bool (*supports)(const MatrixView&);
  bool matmul_entry = true;  // what MatMul calls (not a kernel inside one)
};

bool HavePath(const char* path) {
  const std::vector<std::string> paths = AvailableCpuPaths();
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

// The GEMMs this CPU runs (none: the tests skip, saying so).
std::vector<Bf16GemmImpl> Bf16Gemms() {
  std::vector<Bf16GemmImpl> out;
  if (HavePath("amx")) out.push_back({"amx::Gemm", "amx", amx::Gemm, amx::Supports});
  if (HavePath("avx512-bf16")) {
    out.push_back({"bf16dot::Gemm", "avx512-bf16", bf16dot::Gemm, bf16dot::Supports});
    // Gemm's kernel for few rows, on every shape (Gemm takes it up to RowsGemmMaxRows).
    out.push_back({"bf16dot::RowsGemm", "avx512-bf16", bf16dot::RowsGemm, bf16dot::RowsGemmSupports, false});
  }
  return out;
}

struct Shape {
  int64_t M, N, K;
  int64_t ldx_pad = 0, stride_pad = 0, ldy_pad = 0;
};

// gemm(x) against ref::MatMul(bf16(x)): |err| <= (K + 2) * 2^-24 * sum|x_k w_k| (+ flushed denormals).
void CheckRoundedX(GemmFn gemm, const Shape& s, const MatrixView& w, std::mt19937& rng, ThreadPool& pool) {
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
  gemm(x.data(), s.M, ldx, w, y.data(), ldy, pool);
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

// Rows of x around the tile sizes (AMX: 16, 32; VDPBF16PS: 8, 16 at once in
// packing), N around the task (32) and tile (16; VDPBF16PS: 48-row panels)
// sizes, K with and without a tail of the 32-element step (16 for NVFP4),
// odd K, several steps and K blocks (256; 128 for FP8 block scales), row
// superblocks, padded strides.
const Shape kShapes[] = {
    {.M = 1, .N = 1, .K = 32},     {.M = 15, .N = 17, .K = 64},
    {.M = 16, .N = 32, .K = 96},   {.M = 17, .N = 33, .K = 48, .ldx_pad = 3, .stride_pad = 1, .ldy_pad = 2},
    {.M = 31, .N = 64, .K = 1024}, {.M = 32, .N = 65, .K = 272},
    {.M = 33, .N = 31, .K = 1040, .ldy_pad = 5}, {.M = 100, .N = 130, .K = 512, .ldx_pad = 16},
    // Several superblocks of rows (128 at K = 2048) and K blocks, the last superblock partial.
    {.M = 300, .N = 40, .K = 2048, .ldy_pad = 1},
    // Odd K (dense only: NVFP4 needs whole 16-blocks), a partial last pair; panels of 48 rows, 8-row tiles.
    {.M = 9, .N = 49, .K = 33, .ldx_pad = 1, .stride_pad = 3}, {.M = 8, .N = 97, .K = 31},
    {.M = 24, .N = 48, .K = 400, .ldy_pad = 3}, {.M = 130, .N = 200, .K = 784},
};

TEST(Bf16GemmTest, IsTheF32SumOfBf16RoundedX) {
  const std::vector<Bf16GemmImpl> gemms = Bf16Gemms();
  if (gemms.empty()) GTEST_SKIP() << "no amx or avx512-bf16 path on this CPU: " << CpuPathDescription();
  for (const Bf16GemmImpl& impl : gemms) {
    SCOPED_TRACE(impl.name);
    std::mt19937 rng(11);
    for (size_t threads : {1, 3}) {
      ThreadPool pool(threads);
      for (const Shape& s : kShapes) {
        {
          SCOPED_TRACE("bf16");
          TestMatrix w(rng, DType::kBF16, s.N, s.K, s.K + s.stride_pad, 2 * (s.stride_pad % 2));
          CheckRoundedX(impl.gemm, s, w.view, rng, pool);
        }
        if (s.K % kNvfp4Block == 0) {
          SCOPED_TRACE("nvfp4");
          QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
          CheckRoundedX(impl.gemm, s, w.view, rng, pool);
        }
        {
          SCOPED_TRACE("fp8");
          QuantTestMatrix w(rng, WeightFormat::kFp8, false, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
          CheckRoundedX(impl.gemm, s, w.view, rng, pool);
        }
        {
          SCOPED_TRACE("fp8 block scales");
          QuantTestMatrix w(rng, WeightFormat::kFp8, true, s.N, s.K, s.stride_pad, size_t(s.stride_pad));
          if (impl.supports(w.view)) CheckRoundedX(impl.gemm, s, w.view, rng, pool);  // (not RowsGemm)
        }
      }
    }
  }
}

// Which MatMuls take a BF16 GEMM: on its path from Bf16MinRowsFor(w) rows of
// x for the formats exact in BF16 (bit-identical to that GEMM); below that,
// or with another path forced, the f32 kernels (bit-identical to the
// avx512-vnni path, except NVFP4's decode, which rounds x to 16 bits there).
TEST(Bf16GemmTest, MatMulTakesItOnlyOnItsPathFromMinRows) {
  const std::vector<Bf16GemmImpl> gemms = Bf16Gemms();
  if (gemms.empty()) GTEST_SKIP() << "no amx or avx512-bf16 path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(12);
  ThreadPool pool(2);
  TestMatrix bf16(rng, DType::kBF16, 70, 256, 256);
  QuantTestMatrix nvfp4(rng, WeightFormat::kNvfp4, false, 70, 256);
  QuantTestMatrix fp8_blocks(rng, WeightFormat::kFp8, true, 70, 256);
  TestMatrix f32(rng, DType::kF32, 70, 256, 256);
  for (const Bf16GemmImpl& impl : gemms) {
    if (!impl.matmul_entry) continue;
    SCOPED_TRACE(impl.name);
    ASSERT_TRUE(SetCpuPath(impl.path).ok());
    const int64_t dense_rows = Bf16MinRowsFor(bf16.view), quant_rows = Bf16MinRowsFor(nvfp4.view);
    ASSERT_TRUE(SetCpuPath("auto").ok());
    for (const MatrixView* w : {&bf16.view, &nvfp4.view, &fp8_blocks.view, &f32.view}) {
      const int64_t min_rows = w->format == WeightFormat::kDense ? dense_rows : quant_rows;
      for (int64_t M : {min_rows - 1, min_rows, int64_t(40)}) {
        if (M < 1) continue;
        SCOPED_TRACE(::testing::Message() << "M=" << M << " format=" << int(w->format) << " dtype=" << DTypeName(w->dtype));
        std::vector<float> x = RandomFloats(rng, size_t(M * 256)), y(size_t(M * 70)), other(size_t(M * 70));
        ASSERT_TRUE(SetCpuPath(impl.path).ok());
        MatMul(x.data(), M, 256, *w, y.data(), 70, pool);
        if (M >= min_rows && impl.supports(*w)) {
          impl.gemm(x.data(), M, 256, *w, other.data(), 70, pool);
        } else {
          ASSERT_TRUE(SetCpuPath("avx512-vnni").ok());
          MatMul(x.data(), M, 256, *w, other.data(), 70, pool);
        }
        // NVFP4 below min_rows: its VNNI decode takes x in 16 bits on this path, 24 on avx512-vnni
        // (cpu_features.h Nvfp4DecodeX16; its bound: MatMulTest.Nvfp4DecodeX16RoundsAsDocumented).
        const bool x16 = w->format == WeightFormat::kNvfp4 && M < min_rows && M <= int64_t(vnni::kMaxRows);
        EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)) == 0, !x16);
        ASSERT_TRUE(SetCpuPath("auto").ok());
      }
    }
    // MatMulF32Activations and TERN_ACTIVATIONS=f32 keep NVFP4 decode's x in 24 bits: bit-identical to
    // the avx512-vnni path.
    for (int64_t M : {int64_t(1), int64_t(vnni::kMaxRows)}) {
      SCOPED_TRACE(::testing::Message() << "NVFP4 decode in f32, M=" << M);
      std::vector<float> xq = RandomFloats(rng, size_t(M * 256)), yq(size_t(M * 70)), want(size_t(M * 70));
      ASSERT_TRUE(SetCpuPath("avx512-vnni").ok());
      MatMul(xq.data(), M, 256, nvfp4.view, want.data(), 70, pool);
      ASSERT_TRUE(SetCpuPath(impl.path).ok());
      ASSERT_TRUE(Nvfp4DecodeX16());
      MatMulF32Activations(xq.data(), M, 256, nvfp4.view, yq.data(), 70, pool);
      EXPECT_EQ(std::memcmp(yq.data(), want.data(), yq.size() * sizeof(float)), 0);
      EXPECT_TRUE(Nvfp4DecodeX16());  // (the scope ended with the call)
      ASSERT_TRUE(SetActivations("f32").ok());
      EXPECT_FALSE(Nvfp4DecodeX16());
      MatMul(xq.data(), M, 256, nvfp4.view, yq.data(), 70, pool);
      EXPECT_EQ(std::memcmp(yq.data(), want.data(), yq.size() * sizeof(float)), 0);
      ASSERT_TRUE(SetActivations("bf16").ok());
      ASSERT_TRUE(SetCpuPath("auto").ok());
    }
    // MatMulF32Activations and TERN_ACTIVATIONS=f32 never take it.
    std::vector<float> x = RandomFloats(rng, 40 * 256), y(40 * 70), other(40 * 70);
    ASSERT_TRUE(SetCpuPath(impl.path).ok());
    MatMulF32Activations(x.data(), 40, 256, bf16.view, y.data(), 70, pool);
    ASSERT_TRUE(SetCpuPath("avx512-vnni").ok());
    MatMul(x.data(), 40, 256, bf16.view, other.data(), 70, pool);
    EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)), 0);
    ASSERT_TRUE(SetCpuPath(impl.path).ok());
    ASSERT_TRUE(SetActivations("f32").ok());
    EXPECT_FALSE(UseAmx());
    EXPECT_FALSE(UseBf16Dot());
    MatMul(x.data(), 40, 256, bf16.view, y.data(), 70, pool);
    EXPECT_EQ(std::memcmp(y.data(), other.data(), y.size() * sizeof(float)), 0);
    ASSERT_TRUE(SetActivations("bf16").ok());
    ASSERT_TRUE(SetCpuPath("auto").ok());
    EXPECT_FALSE(SetActivations("fp16").ok());
    EXPECT_TRUE(impl.supports(bf16.view));
    EXPECT_TRUE(impl.supports(nvfp4.view));
    EXPECT_TRUE(impl.supports(fp8_blocks.view));
    EXPECT_FALSE(impl.supports(f32.view));
  }
}

// bf16dot::Gemm hands few rows of x to RowsGemm (bit-identical), up to
// RowsGemmMaxRows(w), where RowsGemmSupports(w).
TEST(Bf16GemmTest, Bf16DotTakesRowsGemmForFewRows) {
  if (!HavePath("avx512-bf16")) GTEST_SKIP() << "no avx512-bf16 path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(14);
  ThreadPool pool(2);
  TestMatrix bf16(rng, DType::kBF16, 70, 256, 256);
  QuantTestMatrix nvfp4(rng, WeightFormat::kNvfp4, false, 70, 256);
  QuantTestMatrix fp8(rng, WeightFormat::kFp8, false, 70, 256);
  QuantTestMatrix fp8_blocks(rng, WeightFormat::kFp8, true, 70, 256);
  EXPECT_FALSE(bf16dot::RowsGemmSupports(fp8_blocks.view));
  for (const MatrixView* w : {&bf16.view, &nvfp4.view, &fp8.view}) {
    ASSERT_TRUE(bf16dot::RowsGemmSupports(*w));
    const int64_t max_rows = bf16dot::RowsGemmMaxRows(*w);
    EXPECT_GE(max_rows, int64_t(bf16dot::kRowsGemmMaxTile));
    for (int64_t M : {int64_t(1), int64_t(9), int64_t(bf16dot::kRowsGemmMaxTile) + 1, max_rows}) {
      SCOPED_TRACE(::testing::Message() << "M=" << M << " format=" << int(w->format));
      std::vector<float> x = RandomFloats(rng, size_t(M * 256)), y(size_t(M * 70)), want(size_t(M * 70));
      bf16dot::RowsGemm(x.data(), M, 256, *w, want.data(), 70, pool);
      bf16dot::Gemm(x.data(), M, 256, *w, y.data(), 70, pool);
      EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0);
    }
  }
}

// Rows of x are independent: a NaN or infinity in one row makes that row's
// outputs non-finite and leaves the others as they were.
TEST(Bf16GemmTest, NonFiniteStaysInItsRow) {
  const std::vector<Bf16GemmImpl> gemms = Bf16Gemms();
  if (gemms.empty()) GTEST_SKIP() << "no amx or avx512-bf16 path on this CPU: " << CpuPathDescription();
  std::mt19937 rng(13);
  ThreadPool pool(2);
  QuantTestMatrix w(rng, WeightFormat::kNvfp4, false, 40, 128);
  for (const Bf16GemmImpl& impl : gemms) {
    SCOPED_TRACE(impl.name);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      std::vector<float> x = RandomFloats(rng, 20 * 128), clean(20 * 40), y(20 * 40);
      impl.gemm(x.data(), 20, 128, w.view, clean.data(), 40, pool);
      x[17 * 128 + 100] = bad;
      impl.gemm(x.data(), 20, 128, w.view, y.data(), 40, pool);
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
}

// The path is offered exactly when the CPU reports AMX-BF16 and AVX512-BF16
// and the startup probe (grant + a checked tile product) passed; the probe
// itself is what SelfTest runs, here again on a thread of its own.
TEST(Bf16GemmTest, AmxPathMatchesTheCpuAndTheProbe) {
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

// avx512-bf16 is offered exactly when the CPU has AVX512-BF16 (with VNNI);
// it is the default only on AMD CPUs without amx (cpu_features.h says why).
TEST(Bf16GemmTest, Avx512Bf16PathMatchesTheCpu) {
  const CpuExtensions& e = DetectedCpuExtensions();
  ASSERT_EQ(HavePath("avx512-bf16"), e.avx512_bf16 && e.avx512_vnni) << CpuPathDescription();
  if (!HavePath("avx512-bf16")) {
    EXPECT_FALSE(SetCpuPath("avx512-bf16").ok());
    return;
  }
  const bool want_default = e.amd && !HavePath("amx");
  EXPECT_EQ(DefaultCpuPath() == "avx512-bf16", want_default) << CpuPathDescription();
  ASSERT_TRUE(SetCpuPath("avx512-bf16").ok());
  EXPECT_TRUE(UseBf16Dot());
  EXPECT_FALSE(UseAmx());
  EXPECT_TRUE(UseAvx512Vnni());
  EXPECT_NE(CpuPathDescription().find("AVX512-BF16 GEMM"), std::string::npos) << CpuPathDescription();
  ASSERT_TRUE(SetCpuPath("auto").ok());
}

}  // namespace
}  // namespace tern::kernels
