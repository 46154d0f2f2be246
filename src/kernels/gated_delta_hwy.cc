// The gated delta rule (ops.h), compiled per SIMD target: every inner loop
// runs along a state row (dv floats) or a key row (dk floats) as vectors with
// a scalar tail; the per-chunk triangular solve (c x c, c <= 64) stays scalar.
// Same operation order per element as the reference (gated_delta: reference_delta_rule.cc)
// except that dot products are summed in vector lanes.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/gated_delta_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// The includes below are re-read once per target by foreach_target.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "hwy/highway.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace tern::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

float* ThreadBuffer(int slot, int64_t n) {
  thread_local std::vector<float> bufs[5];
  std::vector<float>& b = bufs[slot];
  if (int64_t(b.size()) < n) b.resize(size_t(n));
  return b.data();
}

// y += a * x over n floats.
void Axpy(int64_t n, float a, const float* x, float* y) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const VF va = hn::Set(df, a);
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::MulAdd(va, hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, y + i);
  for (; i < n; ++i) y[i] += a * x[i];
}

// x . y over n floats.
float Dot(int64_t n, const float* x, const float* y) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  VF acc = hn::Zero(df);
  int64_t i = 0;
  for (; i + L <= n; i += L) acc = hn::MulAdd(hn::LoadU(df, x + i), hn::LoadU(df, y + i), acc);
  float s = hn::GetLane(hn::SumOfLanes(df, acc));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// x *= a over n floats.
void Scale(int64_t n, float a, float* x) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const VF va = hn::Set(df, a);
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Mul(va, hn::LoadU(df, x + i)), df, x + i);
  for (; i < n; ++i) x[i] *= a;
}

}  // namespace

void GatedDeltaRuleRecurrentImpl(const DeltaRuleArgs& args) {
  const auto& [S, dk, dv, n, q, k, qk_stride, v, v_stride, g, beta, gb_stride, o, o_stride] = args;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  float* u = ThreadBuffer(0, dv);
  for (int64_t t = 0; t < n; ++t) {
    const float* qt = q + t * qk_stride;
    const float* kt = k + t * qk_stride;
    const float* vt = v + t * v_stride;
    const float decay = std::exp(g[t * gb_stride]), b = beta[t * gb_stride];
    // S = decay * S; u = S^T k (row by row: each row scaled, then added in).
    std::fill(u, u + dv, 0.0f);
    const VF vdecay = hn::Set(df, decay);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const VF vk = hn::Set(df, kt[i]);
      int64_t j = 0;
      for (; j + L <= dv; j += L) {
        const VF r = hn::Mul(hn::LoadU(df, row + j), vdecay);
        hn::StoreU(r, df, row + j);
        hn::StoreU(hn::MulAdd(r, vk, hn::LoadU(df, u + j)), df, u + j);
      }
      for (; j < dv; ++j) {
        row[j] *= decay;
        u[j] += row[j] * kt[i];
      }
    }
    // u = beta (v - u); S += k (x) u; o = S^T q.
    for (int64_t j = 0; j < dv; ++j) u[j] = b * (vt[j] - u[j]);
    float* ot = o + t * o_stride;
    std::fill(ot, ot + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const VF vk = hn::Set(df, kt[i]), vq = hn::Set(df, qt[i]);
      int64_t j = 0;
      for (; j + L <= dv; j += L) {
        const VF r = hn::MulAdd(vk, hn::LoadU(df, u + j), hn::LoadU(df, row + j));
        hn::StoreU(r, df, row + j);
        hn::StoreU(hn::MulAdd(r, vq, hn::LoadU(df, ot + j)), df, ot + j);
      }
      for (; j < dv; ++j) {
        row[j] += kt[i] * u[j];
        ot[j] += row[j] * qt[i];
      }
    }
  }
}

void GatedDeltaRuleChunkedImpl(const DeltaRuleArgs& args, int64_t chunk) {
  const auto& [S, dk, dv, n, q, k, qk_stride, v, v_stride, g, beta, gb_stride, o, o_stride] = args;
  const int64_t C = chunk;
  // The reference's steps (reference_delta_rule.cc has the formulas), with the
  // row operations as vectors.
  float* G = ThreadBuffer(0, C);
  float* A = ThreadBuffer(1, C * C);
  float* U = ThreadBuffer(2, C * dv);
  float* W = ThreadBuffer(3, C * dk);
  float* Sq = ThreadBuffer(4, dv);
  for (int64_t c0 = 0; c0 < n; c0 += C) {
    const int64_t c = std::min(C, n - c0);
    const float* qc = q + c0 * qk_stride;
    const float* kc = k + c0 * qk_stride;
    const float* vc = v + c0 * v_stride;
    const auto bt = [&](int64_t i) { return beta[(c0 + i) * gb_stride]; };
    float acc = 0.0f;
    for (int64_t i = 0; i < c; ++i) G[i] = acc += g[(c0 + i) * gb_stride];
    std::fill(A, A + C * C, 0.0f);
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < i; ++j)
        A[i * C + j] = -bt(i) * Dot(dk, kc + i * qk_stride, kc + j * qk_stride) * std::exp(G[i] - G[j]);
    for (int64_t i = 1; i < c; ++i)
      for (int64_t j = 0; j < i; ++j) {
        float s = 0.0f;
        for (int64_t m = j + 1; m < i; ++m) s += A[i * C + m] * A[m * C + j];
        A[i * C + j] += s;
      }
    for (int64_t i = 0; i < c; ++i) A[i * C + i] = 1.0f;
    // U = A (beta v), W = A (beta k exp(G)).
    for (int64_t i = 0; i < c; ++i) {
      float* u = U + i * dv;
      float* w = W + i * dk;
      std::fill(u, u + dv, 0.0f);
      std::fill(w, w + dk, 0.0f);
      for (int64_t j = 0; j <= i; ++j) {
        const float a = A[i * C + j];
        if (a == 0.0f) continue;
        const float av = a * bt(j), ak = av * std::exp(G[j]);
        Axpy(dv, av, vc + j * v_stride, u);
        Axpy(dk, ak, kc + j * qk_stride, w);
      }
    }
    // Vn = U - W S (in U).
    for (int64_t i = 0; i < c; ++i) {
      float* u = U + i * dv;
      const float* w = W + i * dk;
      for (int64_t d = 0; d < dk; ++d) Axpy(dv, -w[d], S + d * dv, u);
    }
    // Outputs.
    for (int64_t i = 0; i < c; ++i) {
      float* out = o + (c0 + i) * o_stride;
      const float* qi = qc + i * qk_stride;
      std::fill(Sq, Sq + dv, 0.0f);
      for (int64_t d = 0; d < dk; ++d) Axpy(dv, qi[d], S + d * dv, Sq);
      const float gi = std::exp(G[i]);
      for (int64_t e = 0; e < dv; ++e) out[e] = gi * Sq[e];
      for (int64_t j = 0; j <= i; ++j)
        Axpy(dv, Dot(dk, qi, kc + j * qk_stride) * std::exp(G[i] - G[j]), U + j * dv, out);
    }
    // Carry the state past the chunk.
    const float glast = G[c - 1];
    Scale(dk * dv, std::exp(glast), S);
    for (int64_t j = 0; j < c; ++j) {
      const float f = std::exp(glast - G[j]);
      const float* kj = kc + j * qk_stride;
      for (int64_t d = 0; d < dk; ++d) Axpy(dv, f * kj[d], U + j * dv, S + d * dv);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tern::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tern::kernels {

HWY_EXPORT(GatedDeltaRuleRecurrentImpl);
HWY_EXPORT(GatedDeltaRuleChunkedImpl);

void GatedDeltaRuleRecurrent(const DeltaRuleArgs& a) { HWY_DYNAMIC_DISPATCH(GatedDeltaRuleRecurrentImpl)(a); }
void GatedDeltaRuleChunked(const DeltaRuleArgs& a, int64_t chunk) {
  HWY_DYNAMIC_DISPATCH(GatedDeltaRuleChunkedImpl)(a, chunk);
}

}  // namespace tern::kernels
#endif  // HWY_ONCE
