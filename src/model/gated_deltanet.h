// Gated DeltaNet linear attention (Qwen3.5 / Qwen3-Next linear_attention
// layers), spec §2.3: projections, causal depthwise conv + SiLU, L2-normalised
// q and k, decay g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b), the
// delta-rule recurrence in f32, gated RMSNorm, output projection.
//
// Per-sequence state (in the KvCache's state slot, at state_offset): the conv
// state [conv_dim, K-1] (the last K-1 conv inputs) and the recurrent state
// [Hv, dk, dv], both f32. A chunk with start_pos == 0 starts from zero state.
#pragma once

#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/linear.h"

namespace tern {

struct GatedDeltaNet {
  Linear in_proj_qkv;  // [2*Hk*dk + Hv*dv, H]: q | k | v
  Linear in_proj_z;    // [Hv*dv, H]
  Linear in_proj_b;    // [Hv, H]
  Linear in_proj_a;    // [Hv, H]
  Linear out_proj;     // [H, Hv*dv]
  // Qwen3-Next instead fuses the input projections, grouped per key head:
  // in_proj_qkvz [Hk * (2 dk + 2 g dv), H] with groups [q(dk) | k(dk) | v(g dv) | z(g dv)]
  // and in_proj_ba [2 Hv, H] with groups [b(g) | a(g)], g = Hv / Hk.
  bool fused_inputs = false;
  Linear in_proj_qkvz, in_proj_ba;
  std::vector<float> conv_weight;  // [conv_dim, K]
  std::vector<float> dt_bias;      // [Hv]
  std::vector<float> neg_exp_a;    // [Hv]: -exp(A_log)
  std::vector<float> norm_weight;  // [dv]
  int64_t key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0, kernel = 0;
  float norm_eps = 1e-6f;
  int64_t state_offset = 0;  // bytes into the sequence's state slot

  int64_t conv_dim() const { return 2 * key_heads * key_dim + value_heads * value_dim; }
  // Bytes of per-sequence state.
  int64_t state_bytes() const {
    return (conv_dim() * (kernel - 1) + value_heads * key_dim * value_dim) * int64_t(sizeof(float));
  }

  // Loads `<prefix>in_proj_qkv` etc. (prefix like "model.language_model.layers.0.linear_attn.").
  static Result<GatedDeltaNet> Load(const WeightLoader& w, const std::string& prefix, const ModelConfig& cfg);

  // x: [rows, hidden] (already normed); out: [rows, hidden]. Reads and updates
  // each sequence's state slot.
  void Forward(const BatchLayout& batch, const float* x, float* out, KvCache& cache, Scratch& s,
               ThreadPool& pool) const;
  int64_t bytes() const {
    if (fused_inputs) return in_proj_qkvz.bytes() + in_proj_ba.bytes() + out_proj.bytes();
    return in_proj_qkv.bytes() + in_proj_z.bytes() + in_proj_b.bytes() + in_proj_a.bytes() + out_proj.bytes();
  }
};

// The delta rule for one value head over n tokens, in place on its state
// S [dk, dv]: for each t, S = exp(g_t) S; u = S^T k_t; S += k_t (beta_t (v_t - u));
// o_t = S^T q_t. q, k: row t at q + t * q_stride (dk values); v, o: row t at
// v + t * v_stride / o + t * o_stride (dv values); g, beta: row t at g[t * gb_stride].
void DeltaRuleRecurrent(float* S, int64_t dk, int64_t dv, int64_t n, const float* q, const float* k,
                        int64_t qk_stride, const float* v, int64_t v_stride, const float* g, const float* beta,
                        int64_t gb_stride, float* o, int64_t o_stride);

// The same n steps in the chunked (WY / UT-transform) form transformers uses for
// prompts (torch_chunk_gated_delta_rule, chunks of `chunk` tokens): within a
// chunk the corrections are solved as one unit lower-triangular system and
// applied with matrix products; between chunks the state is carried exactly.
// Mathematically equal to DeltaRuleRecurrent (checked by model_test).
void DeltaRuleChunked(float* S, int64_t dk, int64_t dv, int64_t n, const float* q, const float* k,
                      int64_t qk_stride, const float* v, int64_t v_stride, const float* g, const float* beta,
                      int64_t gb_stride, float* o, int64_t o_stride, int64_t chunk = 64);

}  // namespace tern
