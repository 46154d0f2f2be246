// Linear::Forward under W4A4 numerics (quantize_input on NVFP4 layers) against
// the float64 product of the scalar reference quantizer's values, and
// ForwardLinears against one Forward per layer when plain, W4A4 (two input
// scales) and individually run layers share an input; the same for W4A8
// (int8_input), whose Forward is the product of the reference's 8-bit values
// unless the layer keeps f32 activations (a router).
#include "model/linear.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/thread_pool.h"
#include "kernels/reference.h"

namespace tern {
namespace {

struct Nvfp4Layer {
  std::vector<uint8_t> codes, scales;
  Linear l;
};

// A random NVFP4 [N, K] layer (positive E4M3 scales, every code).
Nvfp4Layer RandomLayer(int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  Nvfp4Layer m;
  m.codes.resize(size_t(N * K / 2));
  m.scales.resize(size_t(N * K / 16));
  for (auto& b : m.codes) b = uint8_t(rng());
  for (auto& b : m.scales) b = uint8_t(0x28 + rng() % 32);  // E4M3 0.25 .. 3.75
  m.l.name = "test.proj";
  m.l.format = QuantFormat::kNvfp4;
  m.l.w = {.dtype = DType::kU8, .data = m.codes.data(), .rows = N, .cols = K, .row_stride = K,
           .format = kernels::WeightFormat::kNvfp4, .scales = m.scales.data(), .scale_stride = K / 16,
           .global_scale = 0.03f};
  return m;
}

std::vector<float> RandomX(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = d(rng);
  return x;
}

TEST(LinearTest, W4A4ForwardIsTheQuantizedProduct) {
  ThreadPool pool(2);
  const int64_t N = 96, K = 320;
  Nvfp4Layer m = RandomLayer(N, K, 1);
  m.l.quantize_input = true;
  m.l.input_scale = 0.0125f;
  for (int64_t M : {1, 4, 8, 11}) {
    const std::vector<float> x = RandomX(M * K, uint32_t(M));
    std::vector<float> q(x.size()), y(size_t(M * N));
    kernels::ref::QuantizeNvfp4Activations(x.data(), M, K, K, m.l.input_scale, q.data(), K);
    m.l.Forward(x.data(), M, y.data(), pool);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0, mag = 0, block_mag = 0;
        for (int64_t b = 0; b < K; b += 16) {
          double amax = 0, wsum = 0;
          for (int64_t k = b; k < b + 16; ++k) {
            const double t = double(q[size_t(r * K + k)]) * kernels::ref::MatrixAt(m.l.w, n, k);
            want += t;
            mag += std::fabs(t);
            amax = std::max(amax, std::fabs(double(q[size_t(r * K + k)])));
            wsum += std::fabs(kernels::ref::MatrixAt(m.l.w, n, k));
          }
          block_mag += amax * wsum;
        }
        const double s = m.l.input_scale;
        // MatMul's bound on any path (the VNNI kernel's is tighter: kernels' W4A4Test).
        const double bound = s * ((2.0 * K + 16) * 0x1p-24 * mag + 0x1p-22 * block_mag) + 1e-30;
        ASSERT_NEAR(y[size_t(r * N + n)], want * s, bound) << "M " << M << " row " << r << " n " << n;
      }
  }
}

TEST(LinearTest, ForwardLinearsEqualsEachForward) {
  ThreadPool pool(2);
  const int64_t K = 256;
  std::vector<Nvfp4Layer> layers;
  const int64_t rows[] = {64, 48, 80, 32, 40, 24};
  for (size_t i = 0; i < 6; ++i) layers.push_back(RandomLayer(rows[i], K, uint32_t(10 + i)));
  // 0, 2, 5: W4A4 under one input scale; 3: under another; 1: plain; 4: W4A4 with a bias (runs alone).
  for (size_t i : {0, 2, 3, 4, 5}) layers[i].l.quantize_input = true;
  for (size_t i : {0, 2, 4, 5}) layers[i].l.input_scale = 0.02f;
  layers[3].l.input_scale = 0.05f;
  for (int64_t n = 0; n < rows[4]; ++n) layers[4].l.bias.push_back(0.25f * float(n));
  for (int64_t M : {1, 3, 8, 12}) {
    const std::vector<float> x = RandomX(M * K, uint32_t(100 + M));
    std::vector<std::vector<float>> together, alone;
    std::vector<const Linear*> ls;
    std::vector<float*> ys;
    for (size_t i = 0; i < layers.size(); ++i) {
      together.emplace_back(size_t(M * rows[i]), -1.0f);
      alone.emplace_back(size_t(M * rows[i]), -2.0f);
      ls.push_back(&layers[i].l);
      ys.push_back(together.back().data());
    }
    ForwardLinears(ls, x.data(), M, ys, pool);
    for (size_t i = 0; i < layers.size(); ++i) {
      layers[i].l.Forward(x.data(), M, alone[i].data(), pool);
      EXPECT_EQ(together[i], alone[i]) << "M " << M << " layer " << i;
    }
  }
}

TEST(LinearTest, W4A8ForwardIsThe8BitProductAndRoutersKeepF32) {
  ThreadPool pool(2);
  const int64_t N = 64, K = 192;
  Nvfp4Layer m = RandomLayer(N, K, 3);
  m.l.int8_input = true;
  for (int64_t M : {1, 5, 12}) {
    const std::vector<float> x = RandomX(M * K, uint32_t(30 + M));
    std::vector<float> q(x.size()), y(size_t(M * N)), y_router(size_t(M * N));
    kernels::ref::QuantizeInt8Activations(x.data(), M, K, K, q.data(), K);
    m.l.Forward(x.data(), M, y.data(), pool);
    m.l.f32_activations = true;
    m.l.Forward(x.data(), M, y_router.data(), pool);
    m.l.f32_activations = false;
    // |y - the 8-bit product| and |y_router - the f32 product| over the bound; and how far apart the two
    // products are, over it (so that either output would fail the other's check).
    double worst_q = 0, worst_x = 0, apart = 0;
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double want_q = 0, want_x = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double w = kernels::ref::MatrixAt(m.l.w, n, k);
          want_q += double(q[size_t(r * K + k)]) * w;
          want_x += double(x[size_t(r * K + k)]) * w;
          mag += std::fabs(double(x[size_t(r * K + k)]) * w) * 1.01;
        }
        // MatMul's f32 bound (the x-side rounding of the W4A16 GEMV included) on either product.
        const double bound = (2.0 * K + 16) * 0x1p-24 * mag + 0x1p-22 * mag * 16 + 1e-30;
        worst_q = std::max(worst_q, std::fabs(y[size_t(r * N + n)] - want_q) / bound);
        worst_x = std::max(worst_x, std::fabs(y_router[size_t(r * N + n)] - want_x) / bound);
        apart = std::max(apart, std::fabs(want_q - want_x) / bound);
      }
    EXPECT_GT(apart, 10.0) << "M " << M;
    EXPECT_LE(worst_q, 1.0) << "M " << M;
    EXPECT_LE(worst_x, 1.0) << "M " << M << " (f32_activations)";
  }
}

TEST(LinearTest, ForwardLinearsEqualsEachForwardUnderW4A8) {
  ThreadPool pool(2);
  const int64_t K = 256;
  std::vector<Nvfp4Layer> layers;
  const int64_t rows[] = {64, 48, 80, 32};
  for (size_t i = 0; i < 4; ++i) layers.push_back(RandomLayer(rows[i], K, uint32_t(20 + i)));
  // 0, 2: W4A8 (grouped); 1: plain; 3: W4A8 with f32 activations (a router: alone, unquantized).
  for (size_t i : {0, 2, 3}) layers[i].l.int8_input = true;
  layers[3].l.f32_activations = true;
  for (int64_t M : {1, 3, 8, 12}) {
    const std::vector<float> x = RandomX(M * K, uint32_t(200 + M));
    std::vector<std::vector<float>> together, alone;
    std::vector<const Linear*> ls;
    std::vector<float*> ys;
    for (size_t i = 0; i < layers.size(); ++i) {
      together.emplace_back(size_t(M * rows[i]), -1.0f);
      alone.emplace_back(size_t(M * rows[i]), -2.0f);
      ls.push_back(&layers[i].l);
      ys.push_back(together.back().data());
    }
    ForwardLinears(ls, x.data(), M, ys, pool);
    for (size_t i = 0; i < layers.size(); ++i) {
      layers[i].l.Forward(x.data(), M, alone[i].data(), pool);
      EXPECT_EQ(together[i], alone[i]) << "M " << M << " layer " << i;
    }
  }
}

}  // namespace
}  // namespace tern
