// Scalar references of the gated delta rule (ops.h): the token-by-token
// recurrence and transformers' chunked form, written as plain loops over the
// formulas. The Highway versions (gated_delta_hwy.cc) are tested against them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference.h"

namespace tern::kernels::ref {
namespace {

float* ThreadBuffer(int slot, int64_t n) {
  thread_local std::vector<float> bufs[5];
  std::vector<float>& b = bufs[slot];
  if (int64_t(b.size()) < n) b.resize(size_t(n));
  return b.data();
}

}  // namespace

void GatedDeltaRuleRecurrent(const DeltaRuleArgs& args) {
  auto [S, dk, dv, n, q, k, qk_stride, v, v_stride, g, beta, gb_stride, o, o_stride] = args;
  float* u = ThreadBuffer(0, dv);
  for (int64_t t = 0; t < n; ++t) {
    const float* qt = q + t * qk_stride;
    const float* kt = k + t * qk_stride;
    const float* vt = v + t * v_stride;
    const float decay = std::exp(g[t * gb_stride]), b = beta[t * gb_stride];
    // S = decay * S; u = S^T k.
    std::fill(u, u + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const float ki = kt[i];
      for (int64_t j = 0; j < dv; ++j) {
        row[j] *= decay;
        u[j] += row[j] * ki;
      }
    }
    // S += k (beta (v - u)); o = S^T q.
    for (int64_t j = 0; j < dv; ++j) u[j] = b * (vt[j] - u[j]);
    float* ot = o + t * o_stride;
    std::fill(ot, ot + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      float* row = S + i * dv;
      const float ki = kt[i], qi = qt[i];
      for (int64_t j = 0; j < dv; ++j) {
        row[j] += ki * u[j];
        ot[j] += row[j] * qi;
      }
    }
  }
}

void GatedDeltaRuleChunked(const DeltaRuleArgs& args, int64_t chunk) {
  auto [S, dk, dv, n, q, k, qk_stride, v, v_stride, g, beta, gb_stride, o, o_stride] = args;
  const int64_t C = chunk;
  // Per chunk (c rows, the last one possibly short; padding rows would add nothing):
  //   G[i]     = cumulative log-decay within the chunk, D[i][j] = exp(G[i] - G[j]) (j <= i)
  //   A        = -(beta_i k_i . k_j) D[i][j] for j < i, solved in place into (I - A')^-1 form
  //   U        = A (beta v)            [c, dv]  (values corrected within the chunk)
  //   W        = A (beta k exp(G))     [c, dk]  (how the carried state enters each row)
  //   Vn       = U - W S               [c, dv]
  //   o_i      = exp(G[i]) q_i S + sum_{j<=i} (q_i . k_j) D[i][j] Vn_j
  //   S        = exp(G[c-1]) S + sum_j exp(G[c-1] - G[j]) k_j (x) Vn_j
  float* G = ThreadBuffer(0, C);
  float* A = ThreadBuffer(1, C * C);
  float* U = ThreadBuffer(2, C * dv);
  float* W = ThreadBuffer(3, C * dk);
  float* Sq = ThreadBuffer(4, dv);
  for (int64_t c0 = 0; c0 < n; c0 += C) {
    const int64_t c = std::min(C, n - c0);
    const auto qr = [&](int64_t i) { return q + (c0 + i) * qk_stride; };
    const auto kr = [&](int64_t i) { return k + (c0 + i) * qk_stride; };
    const auto vr = [&](int64_t i) { return v + (c0 + i) * v_stride; };
    const auto bt = [&](int64_t i) { return beta[(c0 + i) * gb_stride]; };
    float acc = 0.0f;
    for (int64_t i = 0; i < c; ++i) G[i] = acc += g[(c0 + i) * gb_stride];
    // A: strictly lower part, then the forward substitution of transformers'
    // loop (row i += row i . A[:i, :i]), then + I.
    std::fill(A, A + C * C, 0.0f);
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < i; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < dk; ++d) dot += kr(i)[d] * kr(j)[d];
        A[i * C + j] = -bt(i) * dot * std::exp(G[i] - G[j]);
      }
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
        for (int64_t d = 0; d < dv; ++d) u[d] += av * vr(j)[d];
        for (int64_t d = 0; d < dk; ++d) w[d] += ak * kr(j)[d];
      }
    }
    // Vn = U - W S (in U).
    for (int64_t i = 0; i < c; ++i) {
      float* u = U + i * dv;
      const float* w = W + i * dk;
      for (int64_t d = 0; d < dk; ++d) {
        const float wd = w[d];
        const float* srow = S + d * dv;
        for (int64_t e = 0; e < dv; ++e) u[e] -= wd * srow[e];
      }
    }
    // Outputs.
    for (int64_t i = 0; i < c; ++i) {
      float* out = o + (c0 + i) * o_stride;
      std::fill(Sq, Sq + dv, 0.0f);
      for (int64_t d = 0; d < dk; ++d) {
        const float qd = qr(i)[d];
        const float* srow = S + d * dv;
        for (int64_t e = 0; e < dv; ++e) Sq[e] += qd * srow[e];
      }
      const float gi = std::exp(G[i]);
      for (int64_t e = 0; e < dv; ++e) out[e] = gi * Sq[e];
      for (int64_t j = 0; j <= i; ++j) {
        float dot = 0.0f;
        for (int64_t d = 0; d < dk; ++d) dot += qr(i)[d] * kr(j)[d];
        const float w = dot * std::exp(G[i] - G[j]);
        const float* u = U + j * dv;
        for (int64_t e = 0; e < dv; ++e) out[e] += w * u[e];
      }
    }
    // Carry the state past the chunk.
    const float glast = G[c - 1], decay = std::exp(glast);
    for (int64_t d = 0; d < dk; ++d) {
      float* srow = S + d * dv;
      for (int64_t e = 0; e < dv; ++e) srow[e] *= decay;
    }
    for (int64_t j = 0; j < c; ++j) {
      const float f = std::exp(glast - G[j]);
      const float* u = U + j * dv;
      for (int64_t d = 0; d < dk; ++d) {
        const float kd = f * kr(j)[d];
        float* srow = S + d * dv;
        for (int64_t e = 0; e < dv; ++e) srow[e] += kd * u[e];
      }
    }
  }
}

}  // namespace tern::kernels::ref
