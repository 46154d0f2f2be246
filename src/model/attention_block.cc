#include "model/attention_block.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

namespace tern {

Result<AttentionBlock> AttentionBlock::Load(const WeightLoader& w, const std::string& prefix,
                                            const ModelConfig& cfg, const Options& o) {
  const int64_t cache_layer = o.cache_layer;
  const bool output_gate = o.output_gate;
  AttentionBlock a;
  a.q_heads = cfg.num_attention_heads;
  a.kv_heads = cfg.num_key_value_heads;
  a.head_dim = cfg.head_dim;
  a.rotary_dim = cfg.RotaryDim();
  a.norm_eps = float(cfg.rms_norm_eps);
  a.cache_layer = cache_layer;
  const int64_t H = cfg.hidden_size, D = cfg.head_dim;
  const bool bias = cfg.attention_bias;
  a.output_gate = output_gate;
  TERN_ASSIGN_OR_RETURN(a.q_proj, w.Load(prefix + "q_proj", (output_gate ? 2 : 1) * a.q_heads * D, H, bias));
  TERN_ASSIGN_OR_RETURN(a.k_proj, w.Load(prefix + "k_proj", a.kv_heads * D, H, bias));
  TERN_ASSIGN_OR_RETURN(a.v_proj, w.Load(prefix + "v_proj", a.kv_heads * D, H, bias));
  TERN_ASSIGN_OR_RETURN(a.o_proj, w.Load(prefix + "o_proj", H, a.q_heads * D, bias));
  if (o.qk_norm) {
    TERN_ASSIGN_OR_RETURN(a.q_norm, w.Norm(prefix + "q_norm.weight", D, o.norms));
    TERN_ASSIGN_OR_RETURN(a.k_norm, w.Norm(prefix + "k_norm.weight", D, o.norms));
  }
  // ModelOpt names them k_proj.k_scale / v_proj.v_scale; some exports use self_attn.k_scale.
  for (auto [dst, names] : {std::pair{&a.k_scale, std::array{"k_proj.k_scale", "k_scale"}},
                            std::pair{&a.v_scale, std::array{"v_proj.v_scale", "v_scale"}}}) {
    for (const char* name : names) {
      TERN_ASSIGN_OR_RETURN(std::optional<float> s, w.Scalar(prefix + name));
      if (!s) continue;
      if (!(*s > 0.0f) || !std::isfinite(*s))
        return Status::Errorf("'{}{}' is {}; expected a positive finite KV-cache scale", prefix, name, *s);
      *dst = *s;
    }
  }
  return a;
}

void AttentionBlock::Forward(const BatchLayout& batch, const float* x, float* out, KvCache& cache, Scratch& s,
                             ThreadPool& pool) const {
  const int64_t T = batch.rows, D = head_dim;
  float* q = Scratch::Get(s.q, T * q_heads * D);  // [T, q_heads, D]
  float* k = Scratch::Get(s.k, T * kv_heads * D);  // [T, kv_heads, D]
  float* v = Scratch::Get(s.v, T * kv_heads * D);  // [T, kv_heads, D]
  float* attn = Scratch::Get(s.attn, T * q_heads * D);
  float* gate = nullptr;  // [T, q_heads * D]
  if (output_gate) {
    // q_proj rows per head: [q_h | gate_h]; split into q and gate.
    float* qg = Scratch::Get(s.tmp2, T * 2 * q_heads * D);
    gate = Scratch::Get(s.up, T * q_heads * D);
    ForwardLinears(std::array{&q_proj, &k_proj, &v_proj}, x, T, std::array{qg, k, v}, pool);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < q_heads; ++h) {
        const float* src = qg + (t * q_heads + h) * 2 * D;
        std::memcpy(q + (t * q_heads + h) * D, src, size_t(D) * sizeof(float));
        std::memcpy(gate + (t * q_heads + h) * D, src + D, size_t(D) * sizeof(float));
      }
  } else {
    ForwardLinears(std::array{&q_proj, &k_proj, &v_proj}, x, T, std::array{q, k, v}, pool);
  }
  if (!q_norm.empty()) {
    kernels::RmsNorm(q, q_norm.data(), T * q_heads, D, norm_eps, q);
    kernels::RmsNorm(k, k_norm.data(), T * kv_heads, D, norm_eps, k);
  }
  kernels::RopeNeox(q, T, q_heads, D, rotary_dim, batch.rope_cos.data(), batch.rope_sin.data());
  kernels::RopeNeox(k, T, kv_heads, D, rotary_dim, batch.rope_cos.data(), batch.rope_sin.data());
  for (auto [obs, data] : {std::pair{k_observer, k}, std::pair{v_observer, v}})
    if (obs != nullptr)
      for (int64_t i = 0; i < T * kv_heads * D; ++i) obs->amax = std::max(obs->amax, std::fabs(data[i]));

  std::vector<kernels::AttentionJob>& jobs = s.attention_jobs;  // (capacity kept: no allocation per step)
  jobs.clear();
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const SequenceChunk& c = batch.seqs[i];
    const int64_t r0 = batch.row_begin[i], n = int64_t(c.tokens.size());
    kernels::KvPages pages = cache.Pages(cache_layer, c.block_table);
    if (k_scale > 0.0f) pages.k_scale = k_scale;  // (FP8 caches only; 1.0 without checkpoint scales)
    if (v_scale > 0.0f) pages.v_scale = v_scale;
    kernels::KvWrite(pages, c.start_pos, n, k + r0 * kv_heads * D, v + r0 * kv_heads * D);
    jobs.push_back({.q = q + r0 * q_heads * D, .out = attn + r0 * q_heads * D, .num_queries = n,
                    .ctx_len = c.start_pos + n, .kv = pages});
  }
  kernels::PagedAttention(jobs, q_heads, float(1.0 / std::sqrt(double(D))), pool,
                          kernels::WeightsExactInBf16(q_proj.w));
  if (gate != nullptr) kernels::SigmoidMul(attn, gate, T * q_heads * D);
  o_proj.Forward(attn, T, out, pool);
}

}  // namespace tern
