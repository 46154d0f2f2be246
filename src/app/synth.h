// `tern synth`: writes a complete Hugging Face-layout checkpoint with random
// weights (normal, std 0.02; norm weights 1 + 0.1 N(0,1) so that a kernel that
// ignores them is caught), for tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tern {

struct SynthPreset {
  std::string name;
  std::string arch;  // "qwen3" or "qwen3_moe"
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  bool tied = false;
  int64_t experts = 0, experts_per_tok = 0, moe_ffn = 0;
  int64_t max_positions = 40960;
};

struct SynthOptions {
  std::string arch;    // must match the preset's architecture family
  std::string preset;  // tiny, qwen3-0.6b, moe-small, ...
  uint64_t seed = 0;
  std::string out_dir;
  std::string tokenizer_dir;  // copy tokenizer.json/tokenizer_config.json from here; empty: generate one
  DType dtype = DType::kBF16;  // F32, BF16 or F16
  int64_t max_shard_bytes = int64_t(2) << 30;  // larger checkpoints are sharded with an index
};

// Presets known for an architecture.
std::vector<SynthPreset> SynthPresets();
Status Synthesize(const SynthOptions& opts);

}  // namespace tern
