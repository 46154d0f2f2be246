// Range checks for every config.json number that sizes memory or indexes it.
//
// A config field reaches buffer sizes, loop bounds and array indices (RoPE
// tables of head_dim * partial_rotary_factor entries, layer_types[i], expert
// ids, token ids in stop lists), so each is checked here, once, before any
// model code sees the config. The bounds are generous (one to three orders of
// magnitude past the largest published Qwen checkpoints: hidden 8192, 94
// layers, 512 experts, head_dim 256, vocab 248k) and keep every product of two
// or three of them far from int64 overflow. Each error names the file and the
// field.
#include <cmath>

#include "kernels/ops.h"
#include "model/config.h"

namespace tern {
namespace {

constexpr int64_t kMaxWidth = int64_t(1) << 20;      // hidden and intermediate sizes
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxHeads = 4096;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxExperts = int64_t(1) << 16;
constexpr int64_t kMaxVocab = int64_t(1) << 30;      // ids are int32
constexpr int64_t kMaxPositions = int64_t(1) << 30;
constexpr int64_t kMaxMtpLayers = 16;

class Checker {
 public:
  explicit Checker(const std::string& source) : source_(source) {}

  // lo <= v <= hi, else an error naming the field.
  void Range(const char* field, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) Fail(fmt::format("\"{}\" is {}, must be in [{}, {}]", field, v, lo, hi));
  }
  void Fail(std::string msg) {
    if (status_.ok()) status_ = Status::Errorf("{}: {}", source_, msg);
  }
  Status status() const { return status_; }

 private:
  const std::string& source_;
  Status status_;
};

}  // namespace

Status ValidateModelConfig(const ModelConfig& c, const std::string& source) {
  Checker k(source);
  k.Range("hidden_size", c.hidden_size, 1, kMaxWidth);
  k.Range("num_hidden_layers", c.num_hidden_layers, 1, kMaxLayers);
  k.Range("num_attention_heads", c.num_attention_heads, 1, kMaxHeads);
  k.Range("num_key_value_heads", c.num_key_value_heads, 1, kMaxHeads);
  k.Range("head_dim", c.head_dim, 1, kMaxHeadDim);
  k.Range("intermediate_size", c.intermediate_size, 0, kMaxWidth);
  k.Range("vocab_size", c.vocab_size, 1, kMaxVocab);
  k.Range("max_position_embeddings", c.max_position_embeddings, 0, kMaxPositions);
  TERN_RETURN_IF_ERROR(k.status());
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    k.Fail(fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}", c.num_attention_heads,
                       c.num_key_value_heads));
  if (!(c.rms_norm_eps > 0 && c.rms_norm_eps < 1)) k.Fail(fmt::format("rms_norm_eps must be in (0, 1), got {}", c.rms_norm_eps));
  if (!(c.rope_theta > 0 && std::isfinite(c.rope_theta))) k.Fail(fmt::format("rope_theta must be positive, got {}", c.rope_theta));
  // RoPE rotates pairs of the first head_dim * factor dims of each head: the
  // factor past 1 once wrote past the head (heap corruption), below 0 aborted.
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1))
    k.Fail(fmt::format("partial_rotary_factor must be in (0, 1], got {}", c.partial_rotary_factor));
  else if (c.RotaryDim() < 2 || c.RotaryDim() % 2 != 0)
    k.Fail(fmt::format("head_dim {} x partial_rotary_factor {} = {} rotary dims; RoPE needs an even number >= 2",
                       c.head_dim, c.partial_rotary_factor, c.RotaryDim()));

  // Mixture of experts.
  k.Range("num_experts", c.num_experts, 0, kMaxExperts);
  k.Range("decoder_sparse_step", c.decoder_sparse_step, 0, kMaxLayers);
  k.Range("shared_expert_intermediate_size", c.shared_expert_intermediate_size, 0, kMaxWidth);
  if (c.num_experts > 0) {
    if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts)
      k.Fail(fmt::format("num_experts_per_tok {} must be in [1, num_experts {}]", c.num_experts_per_tok,
                         c.num_experts));
    k.Range("moe_intermediate_size", c.moe_intermediate_size, 1, kMaxWidth);
  }
  // (mlp_only_layers entries are only looked up, never used as indices: HF
  // ignores ones past the last layer, and so does tern.)

  // Layer kinds and the linear-attention (Gated DeltaNet) shapes.
  if (!c.layer_types.empty() && int64_t(c.layer_types.size()) != c.num_hidden_layers)
    k.Fail(fmt::format("layer_types has {} entries for {} layers", c.layer_types.size(), c.num_hidden_layers));
  for (const auto& t : c.layer_types)
    if (t != "linear_attention" && t != "full_attention")
      k.Fail(fmt::format("unknown layer type \"{}\" (linear_attention, full_attention)", t));
  k.Range("full_attention_interval", c.full_attention_interval, 0, kMaxLayers);
  TERN_RETURN_IF_ERROR(k.status());
  bool any_linear = false;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) any_linear = any_linear || c.IsLinearAttentionLayer(l);
  if (any_linear) {
    k.Range("linear_num_key_heads", c.linear_num_key_heads, 1, kMaxHeads);
    k.Range("linear_num_value_heads", c.linear_num_value_heads, 1, kMaxHeads);
    k.Range("linear_key_head_dim", c.linear_key_head_dim, 1, kMaxHeadDim);
    k.Range("linear_value_head_dim", c.linear_value_head_dim, 1, kMaxHeadDim);
    k.Range("linear_conv_kernel_dim", c.linear_conv_kernel_dim, 1, kernels::kMaxConvKernel);
    if (k.status().ok() && c.linear_num_value_heads % c.linear_num_key_heads != 0)
      k.Fail(fmt::format("linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                         c.linear_num_value_heads, c.linear_num_key_heads));
  }
  if (c.mtp_num_hidden_layers) k.Range("mtp_num_hidden_layers", *c.mtp_num_hidden_layers, 0, kMaxMtpLayers);

  // Token ids index the logits (stop lists, min_tokens suppression).
  for (int32_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size)
      k.Fail(fmt::format("eos_token_id {} is outside the vocabulary [0, vocab_size {})", id, c.vocab_size));
  if (c.bos_token_id && (*c.bos_token_id < 0 || *c.bos_token_id >= c.vocab_size))
    k.Fail(fmt::format("bos_token_id {} is outside the vocabulary [0, vocab_size {})", *c.bos_token_id, c.vocab_size));
  return k.status();
}

}  // namespace tern
