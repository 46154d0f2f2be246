// The one loader of the Qwen family: reads a checkpoint's tensors into a
// DecoderModel as an Architecture (architecture.h) says. Shapes come from the
// config; every tensor is checked against them as it is read (WeightLoader).
#include <cstdio>

#include <fmt/format.h>

#include "model/architecture.h"

namespace tern {
namespace {

std::string Name(std::string_view a, std::string_view b) { return fmt::format("{}{}", a, b); }

Status LoadEmbeddingsAndHead(DecoderModel& m, const Architecture& arch, const std::string& prefix) {
  const ModelConfig& c = m.config();
  const TensorNames& n = arch.names;
  TensorStore& st = m.store();
  TERN_ASSIGN_OR_RETURN(m.embed_tokens, st.Get(Name(prefix, n.embed), {c.vocab_size, c.hidden_size}));
  if (m.embed_tokens->dtype != DType::kBF16 && m.embed_tokens->dtype != DType::kF32 &&
      m.embed_tokens->dtype != DType::kF16)
    return Status::Errorf("embed_tokens has dtype {}; expected F32, BF16 or F16", DTypeName(m.embed_tokens->dtype));
  const WeightLoader w = m.loader();
  TERN_ASSIGN_OR_RETURN(m.final_norm, w.Norm(Name(prefix, n.final_norm), c.hidden_size, arch.norms));
  const std::string head(n.lm_head);
  if (c.tie_word_embeddings && !st.Find(head + ".weight")) {
    m.lm_head.name = head;
    m.lm_head.w = kernels::MatrixView{.dtype = m.embed_tokens->dtype, .data = m.embed_tokens->data,
                                      .rows = c.vocab_size, .cols = c.hidden_size, .row_stride = c.hidden_size};
  } else {
    TERN_ASSIGN_OR_RETURN(m.lm_head, w.Load(head, c.vocab_size, c.hidden_size));
  }
  return Status::Ok();
}

// The MTP head: mtp_num_hidden_layers (or num_nextn_predict_layers) layers when
// the config says so; when it says nothing, vLLM's default of one layer if the
// checkpoint has mtp.fc.weight (Qwen3-Next's config.json has neither field). With
// 0 layers mtp.* is left unread, as transformers ignores it.
Status LoadMtpHead(DecoderModel& m, const Architecture& arch, int64_t main_attention_layers) {
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
  Result<MtpHead> h = MtpHead::Load(m.loader(), c, {.num_layers = n, .first_cache_layer = main_attention_layers, .arch = &arch});
  if (!h.ok()) return h.status().WithContext(what);
  m.mtp = std::make_unique<MtpHead>(std::move(h.value()));
  return Status::Ok();
}

}  // namespace

bool IsSparseLayer(const Architecture& arch, const ModelConfig& c, int64_t layer) {
  switch (arch.ffn) {
    case FfnLayout::kDense: return false;
    case FfnLayout::kSparseStep: return c.IsMoeLayer(layer);
    case FfnLayout::kSparseEvery: return true;
  }
  return false;
}

Result<DecoderLayer> LoadLayerBody(const WeightLoader& w, const Architecture& arch, const ModelConfig& c,
                                   const std::string& p, int64_t layer, bool linear, int64_t cache_layer) {
  const TensorNames& n = arch.names;
  DecoderLayer l;
  TERN_ASSIGN_OR_RETURN(l.input_norm, w.Norm(Name(p, n.input_norm), c.hidden_size, arch.norms));
  TERN_ASSIGN_OR_RETURN(l.post_attn_norm, w.Norm(Name(p, n.post_attention_norm), c.hidden_size, arch.norms));
  if (linear) {
    TERN_ASSIGN_OR_RETURN(GatedDeltaNet g, GatedDeltaNet::Load(w, Name(p, n.linear_attention), c));
    l.linear_attn = std::make_unique<GatedDeltaNet>(std::move(g));
  } else {
    TERN_ASSIGN_OR_RETURN(l.attention, AttentionBlock::Load(w, Name(p, n.attention), c,
                                                            {.cache_layer = cache_layer,
                                                             .qk_norm = true,
                                                             .output_gate = arch.attention_output_gate,
                                                             .norms = arch.norms}));
  }
  if (IsSparseLayer(arch, c, layer)) {
    TERN_ASSIGN_OR_RETURN(l.ffn, MoeFfn::Load(w, Name(p, n.ffn), c));
  } else {
    TERN_ASSIGN_OR_RETURN(l.ffn, DenseFfn::Load(w, Name(p, n.ffn), c.hidden_size, c.intermediate_size));
  }
  return l;
}

Status LoadQwenFamily(DecoderModel& m, const Architecture& arch) {
  ModelConfig& c = m.mutable_config();
  const TensorNames& n = arch.names;
  if (arch.linear_attention && c.layer_types.empty() && c.full_attention_interval <= 0) {
    c.full_attention_interval = 4;  // HF's default
    // Parsing validated the linear_* fields only for layers it knew to be
    // linear (none without layer_types or an interval): again, now they are.
    TERN_RETURN_IF_ERROR(ValidateModelConfig(c, "config.json"));
  }
  if (arch.router_renormalises) c.norm_topk_prob = true;
  if (arch.ffn != FfnLayout::kDense && c.num_experts <= 0)
    return Status::Errorf("{}: num_experts must be positive", c.model_type);
  bool any_dense = false;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) any_dense = any_dense || !IsSparseLayer(arch, c, i);
  if (any_dense && c.intermediate_size <= 0)
    return Status::Errorf("{}: intermediate_size must be positive (the model has dense MLP layers)", c.model_type);
  const std::string prefix(m.store().Find(Name(n.vlm_prefix, n.embed)) ? n.vlm_prefix : n.text_prefix);
  TERN_RETURN_IF_ERROR(LoadEmbeddingsAndHead(m, arch, prefix));
  const WeightLoader w = m.loader();
  int64_t attention_layers = 0, state_offset = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const bool linear = arch.linear_attention && c.IsLinearAttentionLayer(i);
    const std::string p = fmt::format("{}{}{}.", prefix, n.layers, i);
    TERN_ASSIGN_OR_RETURN(DecoderLayer l, LoadLayerBody(w, arch, c, p, i, linear, linear ? -1 : attention_layers));
    if (linear) {
      l.linear_attn->state_offset = state_offset;
      state_offset += l.linear_attn->state_bytes();
    } else {
      ++attention_layers;
    }
    m.layers.push_back(std::move(l));
  }
  return arch.mtp_head ? LoadMtpHead(m, arch, attention_layers) : Status::Ok();
}

}  // namespace tern
