// Grouped-query self-attention with per-head q/k RMSNorm and NeoX RoPE
// (Qwen3), reading and writing the paged KV cache.
#pragma once

#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/linear.h"

namespace tern {

struct AttentionBlock {
  Linear q_proj, k_proj, v_proj, o_proj;
  std::vector<float> q_norm, k_norm;  // [head_dim] each; empty when the model has none
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0, rotary_dim = 0;
  float norm_eps = 1e-6f;
  int64_t cache_layer = 0;  // index among the model's attention layers
  // Qwen3.5 gated attention: q_proj yields [q_h | gate_h] per head (2 * head_dim
  // rows per head) and the attention output is multiplied by sigmoid(gate)
  // before o_proj.
  bool output_gate = false;
  // FP8 KV-cache scales from the checkpoint (`k_proj.k_scale`, `v_proj.v_scale`:
  // k = e4m3 * k_scale); 0 when the checkpoint has none.
  float k_scale = 0.0f, v_scale = 0.0f;
  // When set, Forward records max |k| (after norm and RoPE) and max |v| as
  // written to the cache (calibration of FP8 KV scales by `tern quantize`).
  ActivationObserver* k_observer = nullptr;
  ActivationObserver* v_observer = nullptr;

  struct Options {
    int64_t cache_layer = 0;               // index among the model's attention layers
    bool qk_norm = true;                   // per-head q_norm / k_norm before RoPE (the Qwen3 family)
    bool output_gate = false;              // see output_gate above
    NormStyle norms = NormStyle::kPlain;   // how q_norm / k_norm are stored
  };
  // Loads `<prefix>q_proj` etc. (prefix like "model.layers.3.self_attn.").
  static Result<AttentionBlock> Load(const WeightLoader& w, const std::string& prefix, const ModelConfig& cfg,
                                     const Options& o);

  // x: [rows, hidden] (already normed); out: [rows, hidden].
  void Forward(const BatchLayout& batch, const float* x, float* out, KvCache& cache, Scratch& s,
               ThreadPool& pool) const;
  int64_t bytes() const { return q_proj.bytes() + k_proj.bytes() + v_proj.bytes() + o_proj.bytes(); }
};

}  // namespace tern
