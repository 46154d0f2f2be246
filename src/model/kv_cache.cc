#include "model/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tern {

Result<DType> ParseKvCacheDtype(const std::string& name, DType weight_dtype) {
  if (name == "auto") return weight_dtype == DType::kF32 ? DType::kF32 : DType::kF16;
  if (name == "f32" || name == "fp32" || name == "float32") return DType::kF32;
  if (name == "f16" || name == "fp16" || name == "float16" || name == "half") return DType::kF16;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "fp8_e4m3" || name == "fp8" || name == "fp8e4m3" || name == "f8_e4m3") return DType::kF8E4M3;
  if (name == "fp8_e5m2")
    return Status::Errorf("KV cache dtype {} is not supported (auto, f32, f16, bf16, fp8_e4m3)", name);
  return Status::Errorf("unknown KV cache dtype \"{}\" (auto, f32, f16, bf16, fp8_e4m3)", name);
}

int64_t KvCache::BytesPerToken(const CacheSpec& spec, DType dtype) {
  return 2 * spec.attention_layers * spec.kv_heads * spec.head_dim * int64_t(DTypeSize(dtype));
}

Result<std::unique_ptr<KvCache>> KvCache::Create(const CacheSpec& spec, const KvCacheOptions& opts) {
  if (opts.dtype != DType::kF32 && opts.dtype != DType::kBF16 && opts.dtype != DType::kF16 &&
      opts.dtype != DType::kF8E4M3)
    return Status::Errorf("KV cache dtype {} is not supported (F32, F16, BF16 or F8_E4M3)", DTypeName(opts.dtype));
  if (spec.recurrent_state_bytes > 0 && opts.num_state_slots <= 0)
    return Status::Error("the model keeps recurrent state: the KV cache needs at least one state slot");
  if (opts.block_size <= 0 || opts.num_blocks <= 0)
    return Status::Errorf("KV cache needs positive block_size and num_blocks (got {} and {})", opts.block_size,
                          opts.num_blocks);
  auto c = std::unique_ptr<KvCache>(new KvCache());
  c->spec_ = spec;
  c->opts_ = opts;
  c->layer_elems_ = opts.num_blocks * opts.block_size * spec.kv_heads * spec.head_dim;
  const int64_t bytes = 2 * spec.attention_layers * c->layer_elems_ * int64_t(DTypeSize(opts.dtype));
  c->state_stride_ = (spec.recurrent_state_bytes + 63) / 64 * 64;
  const int64_t state_bytes = c->state_stride_ * std::max<int64_t>(0, opts.num_state_slots);
  try {
    c->storage_.resize(size_t(bytes));
    c->state_.resize(size_t(state_bytes));
  } catch (const std::bad_alloc&) {
    return Status::Errorf("cannot allocate {} bytes for the KV cache and {} bytes of recurrent state", bytes,
                          state_bytes);
  }
  return c;
}

kernels::KvPages KvCache::Pages(int64_t layer, std::span<const int32_t> block_table) const {
  const int64_t esize = int64_t(DTypeSize(opts_.dtype));
  uint8_t* base = const_cast<uint8_t*>(storage_.data()) + 2 * layer * layer_elems_ * esize;
  kernels::KvPages p;
  p.k = base;
  p.v = base + layer_elems_ * esize;
  p.dtype = opts_.dtype;
  p.block_table = block_table.data();
  p.block_size = opts_.block_size;
  p.kv_heads = int32_t(spec_.kv_heads);
  p.head_dim = int32_t(spec_.head_dim);
  return p;
}

void KvCache::CopyState(int32_t from, int32_t to) {
  if (from == to) return;
  std::memcpy(State(to), State(from), size_t(spec_.recurrent_state_bytes));
}

int64_t KvCache::state_blocks() const {
  const int64_t per_block = block_bytes();
  if (spec_.recurrent_state_bytes <= 0 || per_block <= 0) return 0;
  return (spec_.recurrent_state_bytes + per_block - 1) / per_block;
}

template <typename Fn>
void KvCache::ForEachStateSegment(std::span<const int32_t> blocks, Fn fn) {
  assert(int64_t(blocks.size()) >= state_blocks());
  const int64_t esize = int64_t(DTypeSize(opts_.dtype));
  const int64_t seg = int64_t(opts_.block_size) * spec_.kv_heads * spec_.head_dim * esize;
  int64_t left = spec_.recurrent_state_bytes, done = 0;
  for (int32_t b : blocks) {
    for (int64_t part = 0; part < 2 * spec_.attention_layers && left > 0; ++part) {
      const int64_t n = std::min(seg, left);
      fn(storage_.data() + part * layer_elems_ * esize + int64_t(b) * seg, done, n);
      done += n;
      left -= n;
    }
    if (left == 0) break;
  }
}

void KvCache::SaveState(int32_t slot, std::span<const int32_t> blocks) {
  const uint8_t* src = State(slot);
  ForEachStateSegment(blocks, [&](uint8_t* seg, int64_t off, int64_t n) { std::memcpy(seg, src + off, size_t(n)); });
}

void KvCache::LoadState(std::span<const int32_t> blocks, int32_t slot) {
  uint8_t* dst = State(slot);
  ForEachStateSegment(blocks, [&](uint8_t* seg, int64_t off, int64_t n) { std::memcpy(dst + off, seg, size_t(n)); });
}

}  // namespace tern
