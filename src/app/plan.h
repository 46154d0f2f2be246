// `tern plan`: the memory a sharded deployment needs, from config.json and the
// quantization config alone (no weights read).
//
// Sharding is tern's (model/shard.h): world of N ranks in tensor-parallel
// groups of T; attention by heads (q / T; KV / T, or one KV head per rank when
// T > KV heads), Qwen3.5 linear attention by key and value heads (conv
// channels, dt_bias, A_log with them), dense and shared-expert intermediate /
// T, routed experts: E == 1 each expert's intermediate / T, E == N experts / N
// whole per rank; lm_head by vocabulary rows (ceil(V / T)); replicated: norms,
// the router, shared_expert_gate, the token embedding (counted in full: it is
// mapped, though only looked-up rows become resident); the MTP head is loaded
// only when N == 1 (its size is reported apart).
//
// Bytes are those of the stored tensors a rank keeps, by format: unquantized
// at the checkpoint's torch_dtype; NVFP4 K/2 bytes a row + one E4M3 scale per
// 16 elements + weight_scale_2 and input_scale (F32); FP8 one byte a weight +
// weight_scale and input_scale (F32), or with 128x128 blocks one F32
// weight_scale_inv per block touched. Which modules are quantized follows
// QuantConfig (exclude_modules / ignore, MIXED_PRECISION's quantized_layers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/config.h"

namespace tern::app {

struct PlanOptions {
  int tp = 1, ep = 1;
  int world = 0;  // 0: max(tp, ep)
  std::string kv_cache_dtype = "auto";  // as tern serve's --kv-cache-dtype
};

struct PlanLine {
  std::string what;   // "routed experts", "attention", ...
  int64_t bytes = 0;  // on the largest rank
};

struct MemoryPlan {
  int tp = 1, ep = 1, world = 1;
  std::vector<PlanLine> weights;   // per rank, by part (the rank holding the most)
  int64_t weight_bytes = 0;        // their sum: everything a rank maps, the embedding included
  int64_t embedding_bytes = 0;     // of which the token embedding (mapped in full on every rank)
  int64_t mtp_bytes = 0;           // the whole MTP head; in weight_bytes only when mtp_loaded
  bool mtp_loaded = false;
  DType kv_dtype = DType::kF16;
  int64_t kv_heads_per_rank = 0;
  int64_t kv_bytes_per_token = 0;  // per rank, all full-attention layers, K and V
  int64_t state_bytes_per_sequence = 0;  // per rank: linear-attention conv + recurrent state (f32)
};

// Errors name what does not divide, as tern serve would refuse it.
Result<MemoryPlan> PlanMemory(const ModelConfig& cfg, bool vlm_names, const PlanOptions& opts);

struct RequestFit {
  int64_t memory = 0, reserve = 0;
  int64_t free = 0;             // memory - weights - reserve (may be negative)
  int64_t bytes_per_request = 0;  // KV of `context` tokens in whole pages + recurrent state
  int64_t requests = 0;         // concurrent requests of `context` tokens that fit (0 when none)
};
// The default activation / scratch reserve for a rank with `memory` bytes:
// 5% of it, at least 2 GB.
int64_t DefaultReserve(int64_t memory);
RequestFit FitRequests(const MemoryPlan& p, int64_t memory, int64_t reserve, int64_t context, int64_t page_size);

// "64GB", "64 GiB", "1.5TB", "500MB", a plain number of bytes. GB = 1e9, GiB = 2^30.
Result<int64_t> ParseByteSize(const std::string& text);

}  // namespace tern::app
