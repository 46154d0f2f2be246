// Synthetic checkpoints: Hugging Face-layout weights with random values
// (normal, std 0.02; norm weights 1 + 0.1 N(0,1) so that a kernel that
// ignores them is caught), plus config.json. Used by `tern synth` and by tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tern {

struct SynthPreset {
  std::string name;
  std::string arch;  // "qwen3", "qwen3_moe", "qwen3_5_moe" or "qwen3_next"
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  int64_t vocab = 0;  // 0: follow the tokenizer
  bool tied = false;
  int64_t experts = 0, experts_per_tok = 0, moe_ffn = 0;
  int64_t max_positions = 40960;
  // Hybrid (qwen3_5_moe, qwen3_next): Gated DeltaNet layers with every
  // `interval`-th layer full attention, a shared expert, partial rotary.
  int64_t linear_key_heads = 0, linear_value_heads = 0, linear_key_dim = 0, linear_value_dim = 0;
  int64_t conv_kernel = 0, shared_ffn = 0, interval = 0;
  double partial_rotary = 1.0;
  // Hybrid: layers of the multi-token-prediction head (mtp.*, full attention + MoE).
  int64_t mtp_layers = 0;
};

// The built-in presets (tiny, qwen3-0.6b, moe-small, ...).
std::vector<SynthPreset> SynthPresets();

struct SynthWeightsOptions {
  SynthPreset preset;
  int64_t vocab = 0;  // the vocabulary size to write (preset.vocab or the tokenizer's, padded)
  DType dtype = DType::kBF16;  // F32, BF16 or F16
  uint64_t seed = 0;
  int32_t bos_token_id = 0, eos_token_id = 0;
  int64_t max_shard_bytes = int64_t(2) << 30;  // larger checkpoints are sharded with an index
};

// Writes OUT/config.json and the safetensors file(s). One shard is in memory at a time.
Status WriteSyntheticWeights(const std::string& out_dir, const SynthWeightsOptions& opts);

}  // namespace tern
