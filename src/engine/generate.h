// Generate: one sequence, start to finish — chunked prompt processing, then
// token-by-token decoding with the KV cache. Used by `tern generate` and
// `tern bench`; the server's scheduler batches many sequences instead.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/block_allocator.h"
#include "engine/sampler.h"
#include "model/model.h"

namespace tern {

struct GenerateRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_tokens = 16;
  std::vector<int32_t> stop_token_ids;  // generation ends after emitting one of these
  int64_t prefill_chunk = 512;          // prompt tokens per forward
};

// Called after each sampled token with the logits it was drawn from (before
// penalties). Return false to stop (e.g. a stop string matched).
using TokenCallback = std::function<bool(int32_t token, std::span<const float> logits)>;

struct GenerateResult {
  std::vector<int32_t> tokens;
  std::string finish_reason;  // "stop" (stop token or callback) or "length"
  double prefill_seconds = 0, decode_seconds = 0;
};

// The cache must hold at least prompt + max_tokens positions; blocks are
// released when this returns.
Result<GenerateResult> Generate(Model& model, KvCache& cache, BlockAllocator& blocks, const GenerateRequest& req,
                                const TokenCallback& on_token);

}  // namespace tern
