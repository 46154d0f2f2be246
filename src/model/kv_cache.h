// KvCache: the storage of the paged key/value cache for every attention layer.
//
// Layout per attention layer, K and V alike: [num_blocks, block_size, kv_heads,
// head_dim] in `dtype`. Which block belongs to which sequence is the engine's
// business (engine/block_allocator.h); the model only reads and writes through
// the block tables it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "kernels/ops.h"

namespace tern {

// What a model needs cached per sequence.
struct CacheSpec {
  int64_t attention_layers = 0;  // layers with a KV cache
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  // Fixed-size per-sequence state of recurrent (linear-attention) layers, in bytes; 0 for Qwen3.
  int64_t recurrent_state_bytes = 0;
};

struct KvCacheOptions {
  int32_t block_size = 16;  // tokens per block
  int64_t num_blocks = 0;
  DType dtype = DType::kF16;  // F32, F16, BF16 or F8_E4M3
  // Per-sequence recurrent state slots (hybrid models): each holds
  // CacheSpec::recurrent_state_bytes; a running sequence owns one.
  int64_t num_state_slots = 0;
};

// "auto" (F32 for F32 weights, else F16, as llama.cpp), "f32"/"fp32"/"float32",
// "f16"/"fp16"/"float16"/"half", "bf16"/"bfloat16", "fp8_e4m3"/"fp8"/"fp8e4m3"
// (E4M3 with the checkpoint's per-layer k_scale/v_scale). "fp8_e5m2" is refused.
Result<DType> ParseKvCacheDtype(const std::string& name, DType weight_dtype);

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> Create(const CacheSpec& spec, const KvCacheOptions& opts);

  // Bytes of K and V for one token across all attention layers.
  static int64_t BytesPerToken(const CacheSpec& spec, DType dtype);

  // The pages of attention layer `layer` (0-based among attention layers) for a sequence.
  kernels::KvPages Pages(int64_t layer, std::span<const int32_t> block_table) const;

  // The recurrent state of slot `slot` (CacheSpec::recurrent_state_bytes bytes; slots start
  // 64 bytes apart, so float access is aligned).
  uint8_t* State(int32_t slot) { return state_.data() + size_t(slot) * size_t(state_stride_); }
  int64_t num_state_slots() const { return opts_.num_state_slots; }
  // Copies slot `from`'s recurrent state over slot `to`'s.
  void CopyState(int32_t from, int32_t to);

  // Recurrent-state snapshots kept in KV blocks (the prefix cache of hybrid
  // models, engine/prefix_cache.h): a snapshot takes state_blocks() blocks of
  // the pool, so it is memory the pool accounts for like any cached KV.
  // Bytes one block holds over all attention layers, K and V.
  int64_t block_bytes() const { return KvCache::BytesPerToken(spec_, opts_.dtype) * opts_.block_size; }
  // Blocks one snapshot needs: ceil(recurrent_state_bytes / block_bytes()); 0
  // when the model keeps no recurrent state or has no attention layer.
  int64_t state_blocks() const;
  // Slot `slot`'s state into `blocks` (state_blocks() of them, filled in order)
  // and back. The bytes are the state's own: exact round trip whatever the KV dtype.
  void SaveState(int32_t slot, std::span<const int32_t> blocks);
  void LoadState(std::span<const int32_t> blocks, int32_t slot);

  int32_t block_size() const { return opts_.block_size; }
  int64_t num_blocks() const { return opts_.num_blocks; }
  DType dtype() const { return opts_.dtype; }
  const CacheSpec& spec() const { return spec_; }
  int64_t total_bytes() const { return int64_t(storage_.size()); }

 private:
  CacheSpec spec_;
  KvCacheOptions opts_;
  int64_t layer_elems_ = 0;  // elements of one layer's K (or V) pool
  std::vector<uint8_t> storage_;
  std::vector<uint8_t> state_;
  int64_t state_stride_ = 0;

  // Calls fn(segment, offset into the state, bytes) over `blocks` in order until
  // recurrent_state_bytes are covered: per block its 2 x attention_layers
  // segments (K then V of each layer) of block_size x kv_heads x head_dim elements.
  template <typename Fn>
  void ForEachStateSegment(std::span<const int32_t> blocks, Fn fn);
};

}  // namespace tern
