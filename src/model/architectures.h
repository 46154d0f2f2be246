// Registry of architectures: each architecture file defines a loader that
// fills a DecoderModel from a TensorStore; LoadModel picks one by model_type.
#pragma once

#include <memory>

#include "model/decoder.h"

namespace tern {

// "model.language_model." for VLM-wrapped checkpoints, else "model.".
std::string QwenTextPrefix(const DecoderModel& m);
// Shared by the Qwen3 family: embedding, final norm, lm_head (tied or not) under `prefix` ("model.").
Status LoadQwenEmbeddingsAndHead(DecoderModel& m, const std::string& prefix);
// Loads one Qwen3-style layer's norms and attention; the caller adds the FFN.
Result<DecoderLayer> LoadQwen3LayerCommon(DecoderModel& m, const std::string& layer_prefix, int64_t layer);

Status LoadQwen3(DecoderModel& m);     // qwen3.cc
Status LoadQwen3Moe(DecoderModel& m);  // qwen3_moe.cc
Status LoadQwen35Moe(DecoderModel& m);  // qwen3_5_moe.cc
Status LoadQwen3Next(DecoderModel& m);  // qwen3_5_moe.cc (the same hybrid, fused input projections)

}  // namespace tern
