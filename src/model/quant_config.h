// The quantization a checkpoint declares: NVIDIA ModelOpt's hf_quant_config.json
// and/or config.json's quantization_config (ModelOpt NVFP4 / FP8 /
// MIXED_PRECISION, and the plain FP8 block form of Qwen's and DeepSeek's FP8
// exports). shared/specs/qwen-models-and-nvfp4.md §4.1.
//
// The loader decides each Linear's format from its tensors (NVFP4 iff weight
// is U8 and weight_scale F8_E4M3; FP8 iff weight is F8_E4M3); this config is
// what those tensors are checked against (an excluded module must not be
// quantized, a MIXED_PRECISION layer must have its listed format).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tern {

enum class QuantFormat { kNone, kNvfp4, kFp8 };
const char* QuantFormatName(QuantFormat f);  // "none", "NVFP4", "FP8"

struct QuantConfig {
  // "NVFP4", "FP8", "MIXED_PRECISION", or empty for an unquantized checkpoint.
  std::string quant_algo;
  int64_t group_size = 16;                  // NVFP4 block size (only 16 is supported)
  std::vector<int64_t> weight_block_size;   // FP8 block form: {128, 128}
  std::vector<std::string> exclude;         // fnmatch patterns over module names
  std::map<std::string, QuantFormat> layers;  // MIXED_PRECISION: module -> format
  std::string kv_cache_quant_algo;          // "FP8" or empty
  std::string source;                       // file(s) it came from, for messages

  bool empty() const { return quant_algo.empty(); }
  // The pattern excluding `module` (e.g. "model.layers.0.mlp.gate"), if any.
  std::optional<std::string> ExcludedBy(const std::string& module) const;
  // Checks a Linear's detected format against the config. `module` is its
  // name without ".weight".
  Status CheckLinear(const std::string& module, QuantFormat detected) const;
};

// Parses config.json's "quantization_config" object (text of the whole
// config.json) and DIR/hf_quant_config.json when present. Both forms may
// appear; hf_quant_config.json wins where they overlap.
Result<QuantConfig> LoadQuantConfig(const std::string& dir, const std::string& config_json_text);
// The same from already-read texts (tests); hf_quant_text may be empty.
Result<QuantConfig> ParseQuantConfig(const std::string& config_json_text, const std::string& hf_quant_text,
                                     const std::string& source);

}  // namespace tern
