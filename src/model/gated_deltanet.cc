#include "model/gated_deltanet.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace tern {
namespace {

// Prompt chunks of at least this many tokens use the chunked form.
constexpr int64_t kChunkedMinTokens = 16;

}  // namespace

Result<GatedDeltaNet> GatedDeltaNet::Load(const WeightLoader& w, const std::string& p, const ModelConfig& cfg) {
  GatedDeltaNet g;
  g.key_heads = cfg.linear_num_key_heads;
  g.value_heads = cfg.linear_num_value_heads;
  g.key_dim = cfg.linear_key_head_dim;
  g.value_dim = cfg.linear_value_head_dim;
  g.kernel = cfg.linear_conv_kernel_dim;
  g.norm_eps = float(cfg.rms_norm_eps);
  if (g.key_heads <= 0 || g.value_heads <= 0 || g.key_dim <= 0 || g.value_dim <= 0 || g.kernel <= 1 ||
      g.kernel > kernels::kMaxConvKernel)
    return Status::Errorf("{}: linear attention needs positive linear_num_key_heads, linear_num_value_heads, "
                          "linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim in [2, {}]",
                          p, kernels::kMaxConvKernel);
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
  if (conv->dtype != DType::kF32 && conv->dtype != DType::kBF16 && conv->dtype != DType::kF16)
    return Status::Errorf("{}: tensor '{}' has dtype {}; expected F32, BF16 or F16", *conv->file, conv->name,
                          DTypeName(conv->dtype));
  std::vector<float> conv_ck(size_t(C * g.kernel));  // [C, K] as stored
  kernels::ConvertToF32(conv->dtype, conv->data, C * g.kernel, conv_ck.data());
  g.conv_weight.resize(conv_ck.size());  // [K, C]: what kernels::CausalConvSilu reads
  for (int64_t c = 0; c < C; ++c)
    for (int64_t j = 0; j < g.kernel; ++j) g.conv_weight[size_t(j * C + c)] = conv_ck[size_t(c * g.kernel + j)];
  TERN_ASSIGN_OR_RETURN(g.dt_bias, w.Vector(p + "dt_bias", g.value_heads));
  TERN_ASSIGN_OR_RETURN(std::vector<float> a_log, w.Vector(p + "A_log", g.value_heads));
  g.neg_exp_a.resize(a_log.size());
  for (size_t i = 0; i < a_log.size(); ++i) g.neg_exp_a[i] = -std::exp(a_log[i]);
  TERN_ASSIGN_OR_RETURN(g.norm_weight, w.Vector(p + "norm.weight", g.value_dim));
  return g;
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
    float* conv_state = state;                      // [K-1, C]: inputs t-K+1 .. t-1, oldest first
    float* rec = state + conv_state_floats;         // [Hv, dk, dv]
    if (c.start_pos == 0) std::memset(state, 0, size_t(state_bytes()));
    // Per-token checkpoints (SequenceChunk::step_state_slots): checkpoint j is
    // the state after chunk token p_j = n - 1 - m + j. Its conv state is the K-1
    // conv inputs ending at p_j: rows p_j + 1 .. p_j + K - 1 of [state | chunk],
    // copied before the conv overwrites the chunk's rows.
    const int64_t m = int64_t(c.step_state_slots.size());
    auto checkpoint = [&](int64_t j) {
      return reinterpret_cast<float*>(cache.State(c.step_state_slots[size_t(j)]) + state_offset);
    };
    for (int64_t j = 0; j < m; ++j) {
      const int64_t p = n - 1 - m + j;
      float* dst = checkpoint(j);
      for (int64_t r = 0; r < K - 1; ++r) {
        const int64_t in = p + 1 + r;  // index into [state (K-1 rows) | chunk (n rows)]
        const float* src = in < K - 1 ? conv_state + in * C : qkv + (r0 + in - (K - 1)) * C;
        std::memcpy(dst + r * C, src, size_t(C) * sizeof(float));
      }
    }
    // Causal depthwise conv + SiLU over [state | chunk], in place, channel blocks in parallel.
    pool.ParallelFor(size_t(C), 64, [&](size_t c0, size_t c1, size_t) {
      kernels::CausalConvSilu({.x = qkv + r0 * C + int64_t(c0), .x_stride = C, .channels = int64_t(c1 - c0), .n = n,
                               .state = conv_state + c0, .state_stride = C, .w = conv_weight.data() + c0,
                               .w_stride = C, .kernel = K});
    });
    // q, k: L2-normalised per head (q also scaled by dk^-1/2); beta, g.
    for (int64_t t = 0; t < n; ++t) {
      float* row = qkv + (r0 + t) * C;
      kernels::L2NormRows(row, Hk, dk, dk, 1e-6f, float(1.0 / std::sqrt(double(dk))));
      kernels::L2NormRows(row + Hk * dk, Hk, dk, dk, 1e-6f, 1.0f);
    }
    kernels::DeltaGates(b + r0 * Hv, a + r0 * Hv, neg_exp_a.data(), dt_bias.data(), n, Hv);  // a becomes g, the log-decay
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
      // Tokens [t0, t1) of the chunk through the delta rule.
      auto run = [&](int64_t t0, int64_t t1) {
        const kernels::DeltaRuleArgs args{.S = S, .dk = dk, .dv = dv, .n = t1 - t0, .q = q + t0 * C,
                                          .k = k + t0 * C, .qk_stride = C, .v = v + t0 * C, .v_stride = C,
                                          .g = g + t0 * Hv, .beta = beta + t0 * Hv, .gb_stride = Hv,
                                          .o = out + t0 * V, .o_stride = V};
        if (t1 - t0 >= kChunkedMinTokens) {
          kernels::GatedDeltaRuleChunked(args);
        } else {
          kernels::GatedDeltaRuleRecurrent(args);
        }
      };
      // With checkpoints: up to the first, then one token at a time, copying
      // this head's state after each of tokens n - 1 - m .. n - 2.
      int64_t t = 0;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t p = n - 1 - m + j;
        run(t, p + 1);
        t = p + 1;
        std::memcpy(checkpoint(j) + conv_state_floats + int64_t(h) * dk * dv, S, size_t(dk * dv) * sizeof(float));
      }
      run(t, n);
    });
  }
  // Gated RMSNorm per head: w * o / rms(o) * silu(z), rows [T * Hv, dv].
  kernels::GatedRmsNorm(o, z, norm_weight.data(), T * Hv, dv, norm_eps);
  out_proj.Forward(o, T, out, pool);
}

}  // namespace tern
