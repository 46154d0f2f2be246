// Qwen3 (dense): per-head q/k RMSNorm before NeoX RoPE, GQA, SwiGLU MLP.
// Tensor names (HF Qwen3ForCausalLM):
//   model.embed_tokens.weight [vocab, H]; model.norm.weight [H]; lm_head.weight [vocab, H] (absent when tied)
//   model.layers.{i}.input_layernorm.weight, post_attention_layernorm.weight [H]
//   model.layers.{i}.self_attn.{q,k,v,o}_proj.weight, self_attn.{q,k}_norm.weight [head_dim]
//   model.layers.{i}.mlp.{gate,up,down}_proj.weight
#include <fmt/format.h>

#include "model/architectures.h"

namespace tern {

Status LoadQwenEmbeddingsAndHead(DecoderModel& m, const std::string& prefix) {
  const ModelConfig& c = m.config();
  TensorStore& st = m.store();
  TERN_ASSIGN_OR_RETURN(m.embed_tokens, st.Get(prefix + "embed_tokens.weight", {c.vocab_size, c.hidden_size}));
  if (m.embed_tokens->dtype != DType::kBF16 && m.embed_tokens->dtype != DType::kF32 &&
      m.embed_tokens->dtype != DType::kF16)
    return Status::Errorf("embed_tokens has dtype {}; expected F32, BF16 or F16", DTypeName(m.embed_tokens->dtype));
  const WeightLoader w = m.loader();
  TERN_ASSIGN_OR_RETURN(m.final_norm, w.Vector(prefix + "norm.weight", c.hidden_size));
  if (c.tie_word_embeddings && !st.Find("lm_head.weight")) {
    m.lm_head.name = "lm_head";
    m.lm_head.w = kernels::MatrixView{.dtype = m.embed_tokens->dtype, .data = m.embed_tokens->data,
                                      .rows = c.vocab_size, .cols = c.hidden_size, .row_stride = c.hidden_size};
  } else {
    TERN_ASSIGN_OR_RETURN(m.lm_head, w.Load("lm_head", c.vocab_size, c.hidden_size));
  }
  return Status::Ok();
}

Result<DecoderLayer> LoadQwen3LayerCommon(DecoderModel& m, const std::string& p, int64_t layer) {
  const ModelConfig& c = m.config();
  DecoderLayer l;
  const WeightLoader w = m.loader();
  TERN_ASSIGN_OR_RETURN(l.input_norm, w.Vector(p + "input_layernorm.weight", c.hidden_size));
  TERN_ASSIGN_OR_RETURN(l.post_attn_norm, w.Vector(p + "post_attention_layernorm.weight", c.hidden_size));
  TERN_ASSIGN_OR_RETURN(l.attention, AttentionBlock::Load(w, p + "self_attn.", c, layer, /*qk_norm=*/true));
  return l;
}

std::string QwenTextPrefix(const DecoderModel& m) {
  return m.store().Find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
}

Status LoadQwen3(DecoderModel& m) {
  const ModelConfig& c = m.config();
  if (c.intermediate_size <= 0) return Status::Error("qwen3: intermediate_size must be positive");
  const std::string prefix = QwenTextPrefix(m);
  TERN_RETURN_IF_ERROR(LoadQwenEmbeddingsAndHead(m, prefix));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("{}layers.{}.", prefix, i);
    TERN_ASSIGN_OR_RETURN(DecoderLayer l, LoadQwen3LayerCommon(m, p, i));
    TERN_ASSIGN_OR_RETURN(l.ffn, DenseFfn::Load(m.loader(), p + "mlp.", c.hidden_size, c.intermediate_size));
    m.layers.push_back(std::move(l));
  }
  return Status::Ok();
}

}  // namespace tern
