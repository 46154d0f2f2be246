// MtpHead: the multi-token-prediction head of Qwen3.5 and Qwen3-Next (`mtp.*`),
// spec §2.7, with the semantics of vLLM's Qwen3_5MultiTokenPredictor /
// Qwen3NextMultiTokenPredictor (transformers drops `mtp.*` on load and has no
// MTP forward). For the row at position p, where h_p is the main model's hidden
// state at p AFTER its final norm (what its lm_head reads) and t_{p+1} the token
// that follows position p (the main model's prediction from h_p):
//   e = rmsnorm1p(embed_tokens[t_{p+1}]; pre_fc_norm_embedding)
//   g = rmsnorm1p(h_p; pre_fc_norm_hidden)
//   x = fc([e | g])                       # [2H] -> [H]: the embedding half first
//   x = layers[k](x) at position p        # a full-attention decoder layer, its own KV-cache slot
//   logits = lm_head(rmsnorm1p(x; norm))  # embedding and lm_head shared with the main model
// and the logits predict t_{p+2}. vLLM's proposer keeps the target rows'
// positions and shifts their tokens by one (EagleProposer.propose); layer
// k = step % layers (spec_step_idx). rmsnorm1p is the zero-centred norm
// x * rsqrt(mean x^2 + eps) * (1 + w) for all four norm kinds here and in the layer.
//
// Tensors: mtp.fc.weight [H, 2H] (BF16 even in NVFP4 checkpoints, and possibly
// missing from their exclude lists: accepted as any other unquantized Linear),
// mtp.pre_fc_norm_embedding.weight, mtp.pre_fc_norm_hidden.weight,
// mtp.norm.weight [H], and mtp.layers.{i}.* named as a main full-attention layer
// (input_layernorm, post_attention_layernorm, self_attn.{q,k,v,o}_proj with the
// output gate, q_norm, k_norm, mlp.* a sparse MoE with shared expert; Qwen3-Next
// applies its mlp_only_layers / decoder_sparse_step rule to index i, as vLLM does).
// With an FP8 KV cache the head's layers use their k_proj.k_scale / v_proj.v_scale
// when the checkpoint has them, else 1.0 (ModelOpt leaves mtp.* unquantized).
#pragma once

#include <cstdint>
#include <vector>

#include "model/decoder_layer.h"

namespace tern {

struct Architecture;  // model/architecture.h

struct MtpHead {
  std::vector<float> pre_fc_norm_embedding, pre_fc_norm_hidden, norm;  // [H] each, holding 1 + w
  Linear fc;                         // [H, 2H]
  std::vector<DecoderLayer> layers;  // full attention + MoE; layer i caches in slot first_cache_layer + i

  struct Options {
    int64_t num_layers = 1;
    int64_t first_cache_layer = 0;         // KV-cache slot of layer 0 (after the main model's attention layers)
    const Architecture* arch = nullptr;    // the main model's: its norms, attention gate and FFN layout
  };
  static Result<MtpHead> Load(const WeightLoader& w, const ModelConfig& cfg, const Options& o);

  // embedded: [rows, H] embedding rows of t_{p+1}; hidden: [rows, H] h_p; x: [rows, H]
  // out, the output of layers[step % layers] before `norm`. Writes the layer's
  // keys and values at the rows' positions.
  void Forward(const BatchLayout& batch, const float* embedded, const float* hidden, int64_t step, float* x,
               KvCache& cache, Scratch& s, ThreadPool& pool, float eps) const;

  void ForEachLinear(const std::function<void(Linear&)>& fn);
  // Bytes of weights read per token for one step (fc and one layer; not lm_head).
  int64_t active_bytes() const { return fc.bytes() + layers[0].active_bytes(); }
};

}  // namespace tern
