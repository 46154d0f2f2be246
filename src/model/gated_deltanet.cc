#include "model/gated_deltanet.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace tern {
namespace {

float Silu(float x) { return x / (1.0f + std::exp(-x)); }
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Prompt chunks of at least this many tokens use the chunked form.
constexpr int64_t kChunkedMinTokens = 16;

// A per-thread buffer of at least n floats (the delta rule runs per head on
// the pool's threads, every layer of every step).
float* ThreadBuffer(int slot, int64_t n) {
  thread_local std::vector<float> bufs[6];
  std::vector<float>& b = bufs[slot];
  if (int64_t(b.size()) < n) b.resize(size_t(n));
  return b.data();
}

}  // namespace

Result<GatedDeltaNet> GatedDeltaNet::Load(const WeightLoader& w, const std::string& p, const ModelConfig& cfg) {
  GatedDeltaNet g;
  g.key_heads = cfg.linear_num_key_heads;
  g.value_heads = cfg.linear_num_value_heads;
  g.key_dim = cfg.linear_key_head_dim;
  g.value_dim = cfg.linear_value_head_dim;
  g.kernel = cfg.linear_conv_kernel_dim;
  g.norm_eps = float(cfg.rms_norm_eps);
  if (g.key_heads <= 0 || g.value_heads <= 0 || g.key_dim <= 0 || g.value_dim <= 0 || g.kernel <= 1)
    return Status::Errorf("{}: linear attention needs positive linear_num_key_heads, linear_num_value_heads, "
                          "linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim > 1",
                          p);
  if (g.value_heads % g.key_heads != 0)
    return Status::Errorf("{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}", p,
                          g.value_heads, g.key_heads);
  const int64_t H = cfg.hidden_size, C = g.conv_dim(), V = g.value_heads * g.value_dim;
  if (w.store().Find(p + "in_proj_qkvz.weight")) {
    g.fused_inputs = true;
    TERN_ASSIGN_OR_RETURN(g.in_proj_qkvz, w.Load(p + "in_proj_qkvz", C + V, H));
    TERN_ASSIGN_OR_RETURN(g.in_proj_ba, w.Load(p + "in_proj_ba", 2 * g.value_heads, H));
  } else {
    TERN_ASSIGN_OR_RETURN(g.in_proj_qkv, w.Load(p + "in_proj_qkv", C, H));
    TERN_ASSIGN_OR_RETURN(g.in_proj_z, w.Load(p + "in_proj_z", V, H));
    TERN_ASSIGN_OR_RETURN(g.in_proj_b, w.Load(p + "in_proj_b", g.value_heads, H));
    TERN_ASSIGN_OR_RETURN(g.in_proj_a, w.Load(p + "in_proj_a", g.value_heads, H));
  }
  TERN_ASSIGN_OR_RETURN(g.out_proj, w.Load(p + "out_proj", H, V));
  TERN_ASSIGN_OR_RETURN(const TensorView* conv, w.store().Get(p + "conv1d.weight", {C, 1, g.kernel}));
  g.conv_weight.resize(size_t(C * g.kernel));
  kernels::ConvertToF32(conv->dtype, conv->data, C * g.kernel, g.conv_weight.data());
  TERN_ASSIGN_OR_RETURN(g.dt_bias, w.Vector(p + "dt_bias", g.value_heads));
  TERN_ASSIGN_OR_RETURN(std::vector<float> a_log, w.Vector(p + "A_log", g.value_heads));
  g.neg_exp_a.resize(a_log.size());
  for (size_t i = 0; i < a_log.size(); ++i) g.neg_exp_a[i] = -std::exp(a_log[i]);
  TERN_ASSIGN_OR_RETURN(g.norm_weight, w.Vector(p + "norm.weight", g.value_dim));
  return g;
}

void DeltaRuleRecurrent(float* S, int64_t dk, int64_t dv, int64_t n, const float* q, const float* k,
                        int64_t qk_stride, const float* v, int64_t v_stride, const float* g, const float* beta,
                        int64_t gb_stride, float* o, int64_t o_stride) {
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

void DeltaRuleChunked(float* S, int64_t dk, int64_t dv, int64_t n, const float* q, const float* k,
                      int64_t qk_stride, const float* v, int64_t v_stride, const float* g, const float* beta,
                      int64_t gb_stride, float* o, int64_t o_stride, int64_t chunk) {
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

void GatedDeltaNet::Forward(const BatchLayout& batch, const float* x, float* out, KvCache& cache, Scratch& s,
                            ThreadPool& pool) const {
  const int64_t T = batch.rows, C = conv_dim(), Hk = key_heads, Hv = value_heads, dk = key_dim, dv = value_dim;
  const int64_t K = kernel, V = Hv * dv, group = Hv / Hk;
  float* qkv = Scratch::Get(s.q, T * C);    // [T, C], then conv output in place
  float* z = Scratch::Get(s.gate, T * V);   // [T, V]
  float* ab = Scratch::Get(s.router, T * 2 * Hv);  // [T, Hv] b, then [T, Hv] a
  float* o = Scratch::Get(s.attn, T * V);   // [T, Hv, dv]
  float* b = ab;
  float* a = ab + T * Hv;
  if (fused_inputs) {
    // Ungroup [q | k | v | z] and [b | a] per key head into the split layout.
    const int64_t gq = 2 * dk + 2 * group * dv;  // one key head's group of in_proj_qkvz
    float* fused = Scratch::Get(s.tmp2, T * (C + V));
    in_proj_qkvz.Forward(x, T, fused, pool);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hk; ++h) {
        const float* src = fused + t * (C + V) + h * gq;
        float* row = qkv + t * C;
        std::memcpy(row + h * dk, src, size_t(dk) * sizeof(float));
        std::memcpy(row + Hk * dk + h * dk, src + dk, size_t(dk) * sizeof(float));
        std::memcpy(row + 2 * Hk * dk + h * group * dv, src + 2 * dk, size_t(group * dv) * sizeof(float));
        std::memcpy(z + t * V + h * group * dv, src + 2 * dk + group * dv, size_t(group * dv) * sizeof(float));
      }
    in_proj_ba.Forward(x, T, fused, pool);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < Hk; ++h)
        for (int64_t j = 0; j < group; ++j) {
          b[t * Hv + h * group + j] = fused[t * 2 * Hv + h * 2 * group + j];
          a[t * Hv + h * group + j] = fused[t * 2 * Hv + h * 2 * group + group + j];
        }
  } else {
    ForwardLinears(std::array{&in_proj_qkv, &in_proj_z, &in_proj_b, &in_proj_a}, x, T, std::array{qkv, z, b, a}, pool);
  }

  const int64_t conv_state_floats = C * (K - 1);
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const SequenceChunk& c = batch.seqs[i];
    const int64_t r0 = batch.row_begin[i], n = int64_t(c.tokens.size());
    float* state = reinterpret_cast<float*>(cache.State(c.state_slot) + state_offset);
    float* conv_state = state;                      // [C, K-1]: inputs t-K+1 .. t-1, oldest first
    float* rec = state + conv_state_floats;         // [Hv, dk, dv]
    if (c.start_pos == 0) std::memset(state, 0, size_t(state_bytes()));
    // Causal depthwise conv + SiLU per channel, over [state | chunk], in place
    // (each channel's window is saved before its outputs overwrite it).
    pool.ParallelFor(size_t(C), 64, [&](size_t c0, size_t c1, size_t) {
      float* window = ThreadBuffer(5, K - 1 + n);
      for (size_t ch = c0; ch < c1; ++ch) {
        float* st = conv_state + ch * size_t(K - 1);
        for (int64_t j = 0; j < K - 1; ++j) window[j] = st[j];
        for (int64_t t = 0; t < n; ++t) window[K - 1 + t] = qkv[(r0 + t) * C + int64_t(ch)];
        const float* wch = conv_weight.data() + ch * size_t(K);
        for (int64_t t = 0; t < n; ++t) {
          float acc = 0.0f;
          for (int64_t j = 0; j < K; ++j) acc += wch[j] * window[t + j];
          qkv[(r0 + t) * C + int64_t(ch)] = Silu(acc);
        }
        for (int64_t j = 0; j < K - 1; ++j) st[j] = window[n + j];
      }
    });
    // q, k: L2-normalised per head (q also scaled by dk^-1/2); beta, g.
    for (int64_t t = 0; t < n; ++t) {
      float* row = qkv + (r0 + t) * C;
      for (int64_t h = 0; h < 2 * Hk; ++h) {
        float* v = row + h * dk;
        double ss = 0;
        for (int64_t d = 0; d < dk; ++d) ss += double(v[d]) * v[d];
        float inv = float(1.0 / std::sqrt(ss + 1e-6));
        if (h < Hk) inv *= float(1.0 / std::sqrt(double(dk)));
        for (int64_t d = 0; d < dk; ++d) v[d] *= inv;
      }
      for (int64_t h = 0; h < Hv; ++h) {
        float& bb = b[(r0 + t) * Hv + h];
        float& aa = a[(r0 + t) * Hv + h];
        bb = Sigmoid(bb);
        aa = neg_exp_a[size_t(h)] * Softplus(aa + dt_bias[size_t(h)]);  // g, the log-decay
      }
    }
    // The delta rule, one value head per task (value head h reads key head h /
    // group): the chunked form for prompt chunks, the recurrent step for decode.
    pool.Run(size_t(Hv), [&](size_t h, size_t) {
      const int64_t kh = int64_t(h) / group;
      float* S = rec + int64_t(h) * dk * dv;
      const float* q = qkv + r0 * C + kh * dk;
      const float* k = qkv + r0 * C + Hk * dk + kh * dk;
      const float* v = qkv + r0 * C + 2 * Hk * dk + int64_t(h) * dv;
      const float* g = a + r0 * Hv + int64_t(h);
      const float* beta = b + r0 * Hv + int64_t(h);
      float* out = o + r0 * V + int64_t(h) * dv;
      if (n >= kChunkedMinTokens) {
        DeltaRuleChunked(S, dk, dv, n, q, k, C, v, C, g, beta, Hv, out, V);
      } else {
        DeltaRuleRecurrent(S, dk, dv, n, q, k, C, v, C, g, beta, Hv, out, V);
      }
    });
  }
  // Gated RMSNorm per head: w * o / rms(o) * silu(z).
  for (int64_t r = 0; r < T; ++r)
    for (int64_t h = 0; h < Hv; ++h) {
      float* oh = o + r * V + h * dv;
      const float* zh = z + r * V + h * dv;
      double ss = 0;
      for (int64_t d = 0; d < dv; ++d) ss += double(oh[d]) * oh[d];
      const float inv = float(1.0 / std::sqrt(ss / double(dv) + double(norm_eps)));
      for (int64_t d = 0; d < dv; ++d) oh[d] = norm_weight[size_t(d)] * (oh[d] * inv) * Silu(zh[d]);
    }
  out_proj.Forward(o, T, out, pool);
}

}  // namespace tern
