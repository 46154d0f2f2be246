// The architectures tern loads, as data.
//
// Every supported architecture is a Qwen-family decoder built from the same
// blocks (attention, Gated DeltaNet, dense or sparse FFN, the MTP head); what
// differs between them is a handful of named choices and the tensor names,
// both kept here. One generic loader (qwen_family.cc) reads a checkpoint from
// an Architecture; registering a new variant is one entry in the table in
// architectures.cc (and a new block file only if it needs a new kind of layer).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "model/decoder.h"

namespace tern {

// Tensor names, relative to the text prefix ("model." or, in VLM-wrapped
// checkpoints, "model.language_model."); layer tensors are under
// "<prefix><layers><i>.".
struct TensorNames {
  std::string_view embed = "embed_tokens.weight";  // [vocab, H]
  std::string_view final_norm = "norm.weight";     // [H]
  std::string_view lm_head = "lm_head";            // [vocab, H], at the top level; absent when tied
  std::string_view layers = "layers.";
  std::string_view input_norm = "input_layernorm.weight";              // [H]
  std::string_view post_attention_norm = "post_attention_layernorm.weight";  // [H]
  std::string_view attention = "self_attn.";     // {q,k,v,o}_proj, q_norm / k_norm [head_dim]
  std::string_view linear_attention = "linear_attn.";  // see gated_deltanet.h
  std::string_view ffn = "mlp.";                 // dense {gate,up,down}_proj, or router + experts (ffn_block.h)
  std::string_view vlm_prefix = "model.language_model.";  // the text prefix when this embedding exists
  std::string_view text_prefix = "model.";
};

// Which layers have a sparse MoE FFN.
enum class FfnLayout {
  kDense,          // none (Qwen3)
  kSparseStep,     // HF Qwen3-MoE's rule: every decoder_sparse_step-th layer, except mlp_only_layers
  kSparseEvery,    // every layer (Qwen3.5)
};

struct Architecture {
  std::string_view model_type;  // config.json's
  // Gated DeltaNet layers besides full attention (layer_types, or every
  // full_attention_interval-th layer full; HF's default interval is 4).
  bool linear_attention = false;
  NormStyle norms = NormStyle::kPlain;  // every RMSNorm weight of the model: layers, final, q/k, MTP
  bool attention_output_gate = false;   // q_proj yields [q | gate] per head (gated attention)
  FfnLayout ffn = FfnLayout::kDense;
  bool router_renormalises = false;     // the top-k router weights always sum to 1 (norm_topk_prob forced)
  bool mtp_head = false;                // may carry mtp.* (mtp.h): loaded when the config gives it layers
  TensorNames names;
};

// Every architecture tern loads (architectures.cc).
std::span<const Architecture> Architectures();
// The architecture of a config's model_type, or nullptr.
const Architecture* FindArchitecture(std::string_view model_type);
// "qwen3, qwen3_moe, ..." for error messages.
std::string ArchitectureNames();

// Fills m (layers, embedding, head, MTP head) from its tensor store as `arch` says.
Status LoadQwenFamily(DecoderModel& m, const Architecture& arch);

// Whether layer i of `arch` has a sparse MoE FFN.
bool IsSparseLayer(const Architecture& arch, const ModelConfig& c, int64_t layer);
// One layer's norms, mixer (Gated DeltaNet when `linear`, else attention caching
// in slot cache_layer) and FFN, under prefix p ("model.layers.3.", "mtp.layers.0.").
Result<DecoderLayer> LoadLayerBody(const WeightLoader& w, const Architecture& arch, const ModelConfig& c,
                                   const std::string& p, int64_t layer, bool linear, int64_t cache_layer);

}  // namespace tern
