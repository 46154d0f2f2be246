// Gated DeltaNet linear attention (Qwen3.5 / Qwen3-Next linear_attention
// layers), spec §2.3: projections, causal depthwise conv + SiLU, L2-normalised
// q and k, decay g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b), the
// delta-rule recurrence in f32, gated RMSNorm, output projection.
//
// Per-sequence state (in the KvCache's state slot, at state_offset): the conv
// state [K-1, conv_dim] (the last K-1 conv inputs, oldest first) and the recurrent state
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
  std::vector<float> conv_weight;  // [K, conv_dim] (time-major: the checkpoint's [conv_dim, 1, K] transposed)
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

}  // namespace tern
