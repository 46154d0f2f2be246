// The Gated DeltaNet steps (CausalConvSilu, L2NormRows, DeltaGates,
// GatedRmsNorm) and the gates (SigmoidMul, Axpy) against the scalar
// reference on every SIMD target, with odd sizes and misaligned pointers;
// tolerances from each op's rounding (u = 2^-24 per f32 operation; Highway's
// exp / log1p are within a few u).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/reference.h"
#include "kernels/test_util.h"

namespace tern::kernels {
namespace {

using testing::ForEachSimdTarget;
using testing::RandomFloats;

constexpr double kU = 1.0 / (1 << 24);

TEST(CausalConvSiluTest, MatchesReferenceAndCarriesTheState) {
  std::mt19937 rng(11);
  ForEachSimdTarget([&] {
    for (int64_t K : {2, 4}) {
      for (int64_t C : {1, 7, 16, 37}) {
        for (int64_t n : {1, 2, 5, 19}) {
          SCOPED_TRACE(::testing::Message() << "K=" << K << " C=" << C << " n=" << n);
          // A channel range [3, 3 + C) of wider rows: strides beyond C, misaligned starts.
          const int64_t stride = C + 5, off = 3;
          std::vector<float> x = RandomFloats(rng, size_t(n * stride), -2.0f, 2.0f);
          std::vector<float> state = RandomFloats(rng, size_t((K - 1) * stride), -2.0f, 2.0f);
          std::vector<float> w = RandomFloats(rng, size_t(K * stride), -1.0f, 1.0f);
          std::vector<float> gx = x, gs = state, rx = x, rs = state;
          const CausalConvArgs got{.x = gx.data() + off, .x_stride = stride, .channels = C, .n = n,
                                   .state = gs.data() + off, .state_stride = stride, .w = w.data() + off,
                                   .w_stride = stride, .kernel = K};
          CausalConvArgs want = got;
          want.x = rx.data() + off;
          want.state = rs.data() + off;
          CausalConvSilu(got);
          ref::CausalConvSilu(want);
          for (int64_t t = 0; t < n; ++t)
            for (int64_t c = 0; c < stride; ++c) {
              const size_t i = size_t(t * stride + c);
              if (c < off || c >= off + C) {
                ASSERT_EQ(gx[i], x[i]) << "outside the channel range, t=" << t << " c=" << c;
                continue;
              }
              // |sum error| <= K u sum|w in| (f32 FMAs); silu' <= 1.1; then silu's own rounding.
              double mag = 0;
              for (int64_t j = 0; j < K; ++j) {
                const int64_t row = t + j;  // of [state | x]
                const float in = row < K - 1 ? state[size_t(row * stride + c)] : x[size_t((row - K + 1) * stride + c)];
                mag += std::fabs(double(w[size_t(j * stride + c)]) * in);
              }
              ASSERT_NEAR(gx[i], rx[i], 1.1 * (K + 2) * kU * mag + 16 * kU * std::fabs(rx[i]) + 1e-30)
                  << "t=" << t << " c=" << c;
            }
          // The state is the last K-1 inputs, copied: exact.
          for (size_t i = 0; i < gs.size(); ++i) ASSERT_EQ(gs[i], rs[i]) << "state element " << i;
        }
      }
    }
  });
}

TEST(L2NormRowsTest, MatchesReference) {
  std::mt19937 rng(12);
  ForEachSimdTarget([&] {
    for (int64_t dim : {1, 5, 16, 33, 128}) {
      SCOPED_TRACE(::testing::Message() << "dim=" << dim);
      const int64_t rows = 3, stride = dim + 3;
      std::vector<float> x = RandomFloats(rng, size_t(rows * stride) + 1, -3.0f, 3.0f);
      std::vector<float> got = x, want = x;
      L2NormRows(got.data() + 1, rows, dim, stride, 1e-6f, 0.25f);
      ref::L2NormRows(want.data() + 1, rows, dim, stride, 1e-6f, 0.25f);
      for (size_t i = 0; i < x.size(); ++i) {
        const int64_t c = (int64_t(i) - 1) % stride;
        if (i == 0 || c >= dim) {
          ASSERT_EQ(got[i], x[i]) << "changed outside the rows, i=" << i;
          continue;
        }
        ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * (double(dim) + 8) * kU + 1e-30) << "i=" << i;
      }
    }
  });
}

TEST(DeltaGatesTest, MatchesReference) {
  std::mt19937 rng(13);
  ForEachSimdTarget([&] {
    for (int64_t heads : {1, 4, 16, 37}) {
      SCOPED_TRACE(::testing::Message() << "heads=" << heads);
      const int64_t rows = 3;
      std::vector<float> b = RandomFloats(rng, size_t(rows * heads), -30.0f, 30.0f);
      // a + dt_bias spans both sides of softplus's threshold 20 and very negative values.
      std::vector<float> a = RandomFloats(rng, size_t(rows * heads), -40.0f, 40.0f);
      std::vector<float> nea = RandomFloats(rng, size_t(heads), -8.0f, -0.01f);
      std::vector<float> dtb = RandomFloats(rng, size_t(heads), -1.0f, 1.0f);
      std::vector<float> gb = b, ga = a, rb = b, ra = a;
      DeltaGates(gb.data(), ga.data(), nea.data(), dtb.data(), rows, heads);
      ref::DeltaGates(rb.data(), ra.data(), nea.data(), dtb.data(), rows, heads);
      for (size_t i = 0; i < b.size(); ++i) {
        ASSERT_NEAR(gb[i], rb[i], 16 * kU * std::fabs(rb[i]) + 1e-30) << "beta " << i;
        // softplus(u) for u + dt near -40 is ~4e-18: relative error, with an
        // absolute floor for the (sub)normal end. The kernel adds u + dt in
        // f32 (the reference in f64): that rounding, up to |u + dt| * kU,
        // moves softplus by up to |u + dt| * kU relative for u + dt < 0
        // (softplus ~ exp there) and by kU for u + dt > 0.
        const double u = std::fabs(double(a[i]) + double(dtb[i % size_t(heads)]));
        ASSERT_NEAR(ga[i], ra[i], (32 + u) * kU * std::fabs(ra[i]) + 1e-37) << "g " << i;
      }
    }
  });
}

TEST(GatedRmsNormTest, MatchesReference) {
  std::mt19937 rng(14);
  ForEachSimdTarget([&] {
    for (int64_t dim : {1, 9, 16, 128}) {
      SCOPED_TRACE(::testing::Message() << "dim=" << dim);
      const int64_t rows = 4;
      std::vector<float> o = RandomFloats(rng, size_t(rows * dim), -3.0f, 3.0f);
      std::vector<float> z = RandomFloats(rng, size_t(rows * dim), -6.0f, 6.0f);
      std::vector<float> w = RandomFloats(rng, size_t(dim), 0.5f, 1.5f);
      std::vector<float> got = o, want = o;
      GatedRmsNorm(got.data(), z.data(), w.data(), rows, dim, 1e-6f);
      ref::GatedRmsNorm(want.data(), z.data(), w.data(), rows, dim, 1e-6f);
      for (size_t i = 0; i < o.size(); ++i)
        ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * (double(dim) + 24) * kU + 1e-30) << "i=" << i;
    }
  });
}

TEST(GatesTest, SigmoidMulAndAxpyMatchReference) {
  std::mt19937 rng(15);
  ForEachSimdTarget([&] {
    for (int64_t n : {1, 7, 64, 1001}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n);
      std::vector<float> x = RandomFloats(rng, size_t(n) + 1, -4.0f, 4.0f);
      std::vector<float> g = RandomFloats(rng, size_t(n) + 1, -100.0f, 100.0f);  // past exp's f32 range
      std::vector<float> got = x, want = x;
      SigmoidMul(got.data() + 1, g.data() + 1, n);
      ref::SigmoidMul(want.data() + 1, g.data() + 1, n);
      // Past gate < -88 the kernel clamps exp's argument: sigmoid is then
      // 1/(1+e^88) ~ 6.1e-39 instead of ~0, an absolute error of |x| * 6.1e-39.
      for (size_t i = 1; i < x.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 16 * kU * std::fabs(want[i]) + 6.2e-39 * std::fabs(x[i]) + 1e-45) << i;
      std::vector<float> y = RandomFloats(rng, size_t(n) + 1, -4.0f, 4.0f);
      std::vector<float> gy = y, ry = y;
      Axpy(0.37f, x.data() + 1, gy.data() + 1, n);
      ref::Axpy(0.37f, x.data() + 1, ry.data() + 1, n);
      for (size_t i = 1; i < y.size(); ++i)
        ASSERT_NEAR(gy[i], ry[i], 2 * kU * (std::fabs(y[i]) + 0.37 * std::fabs(x[i])) + 1e-38) << i;
    }
  });
}

}  // namespace
}  // namespace tern::kernels
