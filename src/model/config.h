// Model configuration read from a Hugging Face directory: config.json (plain or
// the VLM wrapper with "text_config") and generation_config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/quant_config.h"

namespace tern {

struct ModelConfig {
  std::string model_type;  // "qwen3", "qwen3_moe", ...
  std::string torch_dtype;  // as written ("bfloat16", "float32", ...), may be empty
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  // Mixture of experts (qwen3_moe).
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  // Hybrid linear-attention models (qwen3_5_moe, qwen3_next): per-layer kind
  // ("linear_attention" or "full_attention"), from layer_types or
  // full_attention_interval (layer i is full iff (i + 1) % interval == 0).
  std::vector<std::string> layer_types;
  int64_t full_attention_interval = 0;
  int64_t linear_num_key_heads = 0, linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0, linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 0;
  int64_t shared_expert_intermediate_size = 0;
  bool attn_output_gate = false;
  // Multi-token prediction head (`mtp.*`, spec §2.7): mtp_num_hidden_layers
  // (Qwen3.5; vLLM's Qwen3-Next reads num_nextn_predict_layers), unset when the
  // config has neither; mtp_use_dedicated_embeddings (unsupported when true).
  std::optional<int64_t> mtp_num_hidden_layers;
  bool mtp_use_dedicated_embeddings = false;
  // Token ids from config.json (may be overridden by generation_config.json).
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  // Declared quantization (config.json quantization_config, hf_quant_config.json).
  QuantConfig quant;

  // Whether layer i uses the sparse MoE block (HF Qwen3-MoE rule).
  bool IsMoeLayer(int64_t layer) const;
  // RoPE dims per attention head: head_dim * partial_rotary_factor.
  int64_t RotaryDim() const;
  // Whether layer i is a linear-attention (Gated DeltaNet) layer.
  bool IsLinearAttentionLayer(int64_t layer) const;
};

// Sampling defaults and stop ids from generation_config.json (all optional).
struct GenerationDefaults {
  std::vector<int32_t> eos_token_ids;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::optional<bool> do_sample;
};

// Checks every field that sizes memory or indexes it against its range
// (config_validate.cc); ParseModelConfig calls it. Errors name `source` and the field.
Status ValidateModelConfig(const ModelConfig& c, const std::string& source);
// Parses the text of a config.json. Errors name `source`.
Result<ModelConfig> ParseModelConfig(const std::string& json_text, const std::string& source);
// Reads DIR/config.json (and DIR/hf_quant_config.json when present).
Result<ModelConfig> LoadModelConfig(const std::string& dir);
// Reads DIR/generation_config.json; an absent file gives empty defaults.
Result<GenerationDefaults> LoadGenerationDefaults(const std::string& dir);

}  // namespace tern
