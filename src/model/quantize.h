// Producing quantized checkpoints in NVIDIA ModelOpt's layout (`tern quantize`,
// `tern synth --quant`): the tensor quantizers (spec §4.4, rounding as
// ModelOpt) and a checkpoint rewriter with calibration of the static
// activation scales.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"

namespace tern {

// NVFP4 of W [N, K] (K % 16 == 0): codes U8 [N, K/2] (low nibble first),
// block scales E4M3 [N, K/16], global scale. `amax` is the tensor amax the
// global scale is derived from (max |W|, or the shared max of a gate/up pair):
//   weight_scale_2 = amax / (6 * 448)
//   scale[n, b]    = e4m3(clamp(block_amax / (6 * weight_scale_2), 2^-9, 448)), 1.0 for an all-zero block
//   code[n, k]     = e2m1(W[n, k] / (scale * weight_scale_2)), nearest, ties to even
struct Nvfp4Weights {
  std::vector<uint8_t> codes, scales;
  float weight_scale_2 = 0.0f;
};
// Rows are quantized in parallel on `pool` when given (the result is the same).
Nvfp4Weights QuantizeNvfp4(const float* w, int64_t N, int64_t K, float amax, ThreadPool* pool = nullptr);

// FP8 E4M3 of W [N, K]. Per tensor (ModelOpt): scale = amax / 448, code =
// e4m3(W / scale). In 128x128 blocks (Qwen/DeepSeek `weight_scale_inv`):
// scales [ceil(N/128), ceil(K/128)], each block's amax / 448 (1.0 for a zero block).
struct Fp8Weights {
  std::vector<uint8_t> codes;
  std::vector<float> scales;  // one (per tensor) or the block grid
};
// amax: the per-tensor amax to use (a shared group max), negative for max |W|.
Fp8Weights QuantizeFp8(const float* w, int64_t N, int64_t K, bool blocks, float amax = -1.0f);

float AbsMax(const float* x, int64_t n);

enum class CheckpointQuant { kNvfp4, kFp8, kFp8Block };

struct QuantizeOptions {
  CheckpointQuant format = CheckpointQuant::kNvfp4;
  // Modules (fnmatch over names without ".weight") kept unquantized, in
  // addition to ModelOpt's default-disabled ones (embeddings, lm_head, MoE
  // routers, shared-expert gates, linear-attention conv1d/in_proj_a/in_proj_b,
  // the MTP head, vision towers).
  std::vector<std::string> exclude;
  // Quantize the output layer too (TensorRT-LLM's --quantize_lm_head;
  // ModelOpt leaves it BF16 by default). A head tied to the embedding gets its
  // own quantized lm_head.weight and config.json says tie_word_embeddings:
  // false; the embedding is written as stored. The head is the largest single
  // read of a decode step on small and mid-size models (Qwen3-0.6B: 311 of
  // 559 MB a token in BF16); NVFP4 cuts it 3.6x, at the cost of logit error.
  bool quantize_lm_head = false;
  // Calibration: input amax per Linear module name (from a run of the model),
  // which sets each layer's static input_scale. Required for NVFP4 and FP8
  // (not for FP8 blocks, whose activation scheme is dynamic).
  std::map<std::string, float> input_amax;
  // FP8 KV cache scales (ModelOpt's kv_cache_quant_algo FP8): with
  // kv_cache_fp8, `<attn>.k_proj.k_scale` and `<attn>.v_proj.v_scale` =
  // amax / 448 from kv_amax, keyed by attention module ("model.layers.0.self_attn")
  // and "k" / "v": "model.layers.0.self_attn|k".
  bool kv_cache_fp8 = false;
  std::map<std::string, float> kv_amax;
  int64_t max_shard_bytes = int64_t(4) << 30;
};

// Reads the checkpoint in `in_dir` (F32/BF16/F16 weights) and writes the
// quantized checkpoint to `out_dir` (created; must not be `in_dir`):
// safetensors with every Linear weight quantized (fused 3-D experts are
// written per expert), config.json with quantization_config,
// hf_quant_config.json (NVFP4, FP8), and every other file copied unchanged.
// Returns a one-line summary.
Result<std::string> QuantizeCheckpoint(const std::string& in_dir, const std::string& out_dir,
                                       const QuantizeOptions& opts);

}  // namespace tern
