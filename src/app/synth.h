// `tern synth`: a complete Hugging Face-layout checkpoint with random weights
// (model/synth_checkpoint.h) and a tokenizer (generated, or copied from a model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/synth_checkpoint.h"

namespace tern {

struct SynthOptions {
  std::string arch;    // must match the preset's architecture family
  std::string preset;  // tiny, qwen3-0.6b, moe-small, ...
  uint64_t seed = 0;
  std::string out_dir;
  std::string tokenizer_dir;  // copy tokenizer.json/tokenizer_config.json from here; empty: generate one
  DType dtype = DType::kBF16;  // F32, BF16 or F16
  int64_t max_shard_bytes = int64_t(2) << 30;  // larger checkpoints are sharded with an index
  // "nvfp4", "fp8" or "fp8-block": write the checkpoint quantized (as `tern
  // quantize` would from the unquantized one); empty: unquantized.
  std::string quant;
};

Status Synthesize(const SynthOptions& opts);

}  // namespace tern
