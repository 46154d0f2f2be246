// Qwen3.5-MoE (qwen3_5_moe; Qwen3.5-397B-A17B), spec §2: a hybrid of Gated
// DeltaNet linear-attention layers and gated full-attention layers (every
// `full_attention_interval`-th, or as `layer_types` says), each followed by a
// sparse MoE with a shared expert. Zero-centred RMSNorms (weight + 1) for the
// layer norms, the final norm and q/k norms; partial rotary (partial_rotary_factor).
// Tensor names (under "model.language_model." in the VLM wrapper, "model." text-only):
//   embed_tokens.weight [vocab, H]; norm.weight [H]; lm_head.weight [vocab, H] (untied)
//   layers.{i}.input_layernorm.weight, post_attention_layernorm.weight [H]
//   layers.{i}.linear_attn.{in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj}.weight,
//     linear_attn.conv1d.weight [conv_dim, 1, K], dt_bias [Hv], A_log [Hv], norm.weight [dv]
//   layers.{i}.self_attn.q_proj.weight [2 * heads * head_dim, H] ([q_h | gate_h] per head),
//     k_proj, v_proj, o_proj, q_norm.weight / k_norm.weight [head_dim]
//   layers.{i}.mlp.gate.weight [E, H]; mlp.experts (per expert or fused 3-D);
//     mlp.shared_expert.{gate,up,down}_proj.weight; mlp.shared_expert_gate.weight [1, H]
// model.visual.* is loaded by nobody (text generation does not use it). The MTP
// head (mtp.*, see mtp.h) is loaded when the config gives it layers.
// Qwen3-Next (qwen3_next) is the same design with fused, per-key-head grouped
// linear-attention input projections (see gated_deltanet.h), flat model.layers.*
// names, a norm_topk_prob flag, and optional dense layers (mlp_only_layers,
// decoder_sparse_step).
#include <cstdio>

#include <fmt/format.h>

#include "model/architectures.h"

namespace tern {

namespace {

// The MTP head: mtp_num_hidden_layers (or num_nextn_predict_layers) layers when
// the config says so; when it says nothing, vLLM's default of one layer if the
// checkpoint has mtp.fc.weight (Qwen3-Next's config.json has neither field). With
// 0 layers mtp.* is left unread, as transformers ignores it.
Status LoadMtpHead(DecoderModel& m, int64_t main_attention_layers, bool qwen3_next) {
  const ModelConfig& c = m.config();
  const int64_t n = c.mtp_num_hidden_layers.value_or(m.store().Find("mtp.fc.weight") ? 1 : 0);
  if (n == 0) return Status::Ok();
  const std::string what = c.mtp_num_hidden_layers ? fmt::format("MTP head (mtp_num_hidden_layers {})", n)
                                                   : std::string("MTP head (mtp.fc.weight present)");
  if (c.mtp_use_dedicated_embeddings) {
    // Neither vLLM nor transformers defines tensors for this; nothing serves
    // through the head yet, so the model loads without it rather than not at all.
    fmt::print(stderr, "tern: warning: {}: mtp_use_dedicated_embeddings is not supported; the head is not loaded\n",
               what);
    return Status::Ok();
  }
  Result<MtpHead> h = MtpHead::Load(
      m.loader(), c, {.num_layers = n, .first_cache_layer = main_attention_layers, .qwen3_next = qwen3_next});
  if (!h.ok()) return h.status().WithContext(what);
  m.mtp = std::make_unique<MtpHead>(std::move(h.value()));
  return Status::Ok();
}

Status LoadHybrid(DecoderModel& m, bool qwen3_next) {
  ModelConfig& c = m.mutable_config();
  if (c.layer_types.empty() && c.full_attention_interval <= 0) c.full_attention_interval = 4;  // HF default
  if (c.num_experts <= 0) return Status::Errorf("{}: num_experts must be positive", c.model_type);
  if (!qwen3_next) c.norm_topk_prob = true;  // HF's Qwen3.5 router always renormalises
  const std::string prefix = QwenTextPrefix(m);
  const WeightLoader w = m.loader();
  TERN_RETURN_IF_ERROR(LoadQwenEmbeddingsAndHead(m, prefix));
  for (float& v : m.final_norm) v += 1.0f;
  int64_t attention_layers = 0, state_offset = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", prefix, i);
    DecoderLayer l;
    TERN_ASSIGN_OR_RETURN(l.input_norm, w.Vector(p + "input_layernorm.weight", c.hidden_size));
    TERN_ASSIGN_OR_RETURN(l.post_attn_norm, w.Vector(p + "post_attention_layernorm.weight", c.hidden_size));
    for (auto* norm : {&l.input_norm, &l.post_attn_norm})
      for (float& v : *norm) v += 1.0f;
    if (c.IsLinearAttentionLayer(i)) {
      TERN_ASSIGN_OR_RETURN(GatedDeltaNet g, GatedDeltaNet::Load(w, p + "linear_attn.", c));
      g.state_offset = state_offset;
      state_offset += g.state_bytes();
      l.linear_attn = std::make_unique<GatedDeltaNet>(std::move(g));
    } else {
      TERN_ASSIGN_OR_RETURN(l.attention, AttentionBlock::Load(w, p + "self_attn.", c, attention_layers++,
                                                              /*qk_norm=*/true, /*output_gate=*/true,
                                                              /*norm_offset=*/1.0f));
    }
    if (!qwen3_next || c.IsMoeLayer(i)) {
      TERN_ASSIGN_OR_RETURN(l.ffn, MoeFfn::Load(w, p + "mlp.", c));
    } else {
      TERN_ASSIGN_OR_RETURN(l.ffn, DenseFfn::Load(w, p + "mlp.", c.hidden_size, c.intermediate_size));
    }
    m.layers.push_back(std::move(l));
  }
  return LoadMtpHead(m, attention_layers, qwen3_next);
}

}  // namespace

Status LoadQwen35Moe(DecoderModel& m) { return LoadHybrid(m, /*qwen3_next=*/false); }
Status LoadQwen3Next(DecoderModel& m) { return LoadHybrid(m, /*qwen3_next=*/true); }

}  // namespace tern
