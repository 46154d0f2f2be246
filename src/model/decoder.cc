#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace tern {

DecoderModel::DecoderModel(ModelConfig cfg, TensorStore store, const LoadOptions& opts)
    : cfg_(std::move(cfg)),
      store_(std::move(store)),
      numerics_(opts.numerics),
      max_positions_(cfg_.max_position_embeddings > 0 ? std::max(cfg_.max_position_embeddings, opts.max_positions) : 0),
      pool_(opts.threads) {}

CacheSpec DecoderModel::cache_spec() const {
  int64_t attention = 0, state = 0;
  for (const auto& l : layers) {
    if (l.linear_attn) state += l.linear_attn->state_bytes();
    else ++attention;
  }
  return CacheSpec{.attention_layers = attention, .kv_heads = sharding.kv_heads > 0 ? sharding.kv_heads : cfg_.num_key_value_heads, .head_dim = cfg_.head_dim,
                   .recurrent_state_bytes = state};
}

Status DecoderModel::CheckAllTensorsUsed(const std::vector<std::string>& ignored_prefixes) const {
  for (const std::string& name : store_.Unused()) {
    bool ignored = false;
    for (const auto& p : ignored_prefixes) ignored |= name.rfind(p, 0) == 0;
    if (!ignored)
      return Status::Errorf("{}: unexpected tensor '{}' for architecture {}", *store_.Find(name)->file, name,
                            cfg_.model_type);
  }
  return Status::Ok();
}

Status DecoderModel::Validate(std::span<const SequenceChunk> batch, const KvCache& cache, bool uses_state) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceChunk& c = batch[i];
    if (c.tokens.empty()) return Status::Errorf("batch entry {} has no tokens", i);
    if (c.start_pos < 0) return Status::Errorf("batch entry {}: start position {} is negative", i, c.start_pos);
    for (int32_t t : c.tokens)
      if (t < 0 || t >= cfg_.vocab_size)
        return Status::Errorf("token id {} is out of range [0, {})", t, cfg_.vocab_size);
    const int64_t end = c.start_pos + int64_t(c.tokens.size());
    const int64_t need = (end + cache.block_size() - 1) / cache.block_size();
    if (int64_t(c.block_table.size()) < need)
      return Status::Errorf("batch entry {}: {} KV blocks cover fewer than {} positions", i, c.block_table.size(), end);
    for (int64_t b = 0; b < need; ++b)
      if (c.block_table[size_t(b)] < 0 || c.block_table[size_t(b)] >= cache.num_blocks())
        return Status::Errorf("batch entry {}: KV block id {} out of range", i, c.block_table[size_t(b)]);
    if (uses_state && cache.spec().recurrent_state_bytes > 0 &&
        (c.state_slot < 0 || c.state_slot >= cache.num_state_slots()))
      return Status::Errorf("batch entry {}: recurrent state slot {} out of range [0, {})", i, c.state_slot,
                            cache.num_state_slots());
    if (!c.step_state_slots.empty()) {
      if (!uses_state || cache.spec().recurrent_state_bytes <= 0 || c.step_state_slots.size() >= c.tokens.size())
        return Status::Errorf("batch entry {}: {} per-token state checkpoints for {} tokens{}", i,
                              c.step_state_slots.size(), c.tokens.size(),
                              uses_state && cache.spec().recurrent_state_bytes > 0 ? "" : " of a model without recurrent state");
      for (int32_t slot : c.step_state_slots)
        if (slot < 0 || slot >= cache.num_state_slots() || slot == c.state_slot)
          return Status::Errorf("batch entry {}: state checkpoint slot {} out of range [0, {}) or the sequence's own",
                                i, slot, cache.num_state_slots());
    }
    if (max_positions_ > 0 && end > max_positions_)
      return Status::Errorf("sequence of {} tokens exceeds the context length {}", end, max_positions_);
  }
  return Status::Ok();
}

void DecoderModel::Embed(std::span<const SequenceChunk> batch, float* x) const {
  const int64_t H = cfg_.hidden_size;
  const size_t row_bytes = size_t(H) * DTypeSize(embed_tokens->dtype);
  for (size_t i = 0; i < batch.size(); ++i)
    for (size_t t = 0; t < batch[i].tokens.size(); ++t)
      kernels::ConvertToF32(embed_tokens->dtype, embed_tokens->data + size_t(batch[i].tokens[t]) * row_bytes, H,
                            x + (layout_.row_begin[i] + int64_t(t)) * H);
}

void DecoderModel::Logits(std::span<const SequenceChunk> batch, const float* x, const float* norm,
                          std::vector<float>& logits, const Linear* head) {
  const int64_t H = cfg_.hidden_size, V = head != nullptr ? head->out() : cfg_.vocab_size;
  int64_t out_rows = 0;
  for (const auto& c : batch) out_rows += c.skip_logits ? 0 : c.all_logits ? int64_t(c.tokens.size()) : 1;
  if (!sharding.computes_logits) return;
  logits.resize(size_t(out_rows * V));
  if (out_rows == 0) return;
  // sel: [out_rows, H], the selected rows (s.h is free: out_rows <= rows).
  float* sel = Scratch::Get(scratch_.h, out_rows * H);
  int64_t r = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t n = int64_t(batch[i].tokens.size());
    const int64_t first = batch[i].skip_logits ? n : batch[i].all_logits ? 0 : n - 1;
    for (int64_t t = first; t < n; ++t, ++r)
      std::memcpy(sel + r * H, x + (layout_.row_begin[i] + t) * H, size_t(H) * sizeof(float));
  }
  if (norm != nullptr) kernels::RmsNorm(sel, norm, out_rows, H, float(cfg_.rms_norm_eps), sel);
  if (head != nullptr) {
    head->Forward(sel, out_rows, logits.data(), pool_);
    return;
  }
  dist::Comm* group = sharding.logits_group;
  if (group == nullptr) {
    lm_head.Forward(sel, out_rows, logits.data(), pool_);
    return;
  }
  // Vocabulary-parallel lm_head: each rank's [out_rows, slice] (the last
  // rank's padded to the slice), gathered on rank 0 as [tp, out_rows, slice]
  // and interleaved into [out_rows, V].
  const int64_t S = sharding.vocab_slice, mine = lm_head.out(), tp = group->size();
  float* part = Scratch::Get(vocab_part_, out_rows * S);
  lm_head.Forward(sel, out_rows, part, pool_);
  if (mine < S)  // rows were written [out_rows, mine]: spread them to stride S
    for (int64_t r = out_rows - 1; r >= 0; --r) {
      std::memmove(part + r * S, part + r * mine, size_t(mine) * sizeof(float));
      std::fill(part + r * S + mine, part + (r + 1) * S, 0.0f);
    }
  float* all = group->rank() == 0 ? Scratch::Get(vocab_all_, tp * out_rows * S) : nullptr;
  group->Gather(part, out_rows * S, all, 0);
  if (group->rank() != 0) return;
  for (int64_t g = 0; g < tp; ++g) {
    const int64_t v0 = g * S, n = std::min(S, V - v0);
    for (int64_t r = 0; r < out_rows && n > 0; ++r)
      std::memcpy(logits.data() + r * V + v0, all + (g * out_rows + r) * S, size_t(n) * sizeof(float));
  }
}

Status DecoderModel::Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) {
  return ForwardImpl(batch, cache, logits, nullptr);
}

Status DecoderModel::ForwardWithHidden(std::span<const SequenceChunk> batch, KvCache& cache,
                                       std::vector<float>& logits, std::vector<float>& hidden) {
  return ForwardImpl(batch, cache, logits, &hidden);
}

Status DecoderModel::ForwardImpl(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits,
                                 std::vector<float>* hidden) {
  TERN_RETURN_IF_ERROR(Validate(batch, cache, /*uses_state=*/true));
  const int64_t H = cfg_.hidden_size;
  layout_.Build(batch, cfg_.RotaryDim(), cfg_.rope_theta);
  const int64_t T = layout_.rows;
  const float eps = float(cfg_.rms_norm_eps);
  // x: [T, H] residual stream, from the embedding rows.
  float* x = Scratch::Get(x_, T * H);
  Embed(batch, x);
  for (const DecoderLayer& layer : layers) layer.Forward(layout_, x, cache, scratch_, pool_, eps);
  if (hidden == nullptr) {
    Logits(batch, x, final_norm.data(), logits);
    return Status::Ok();
  }
  // Every row normed (row by row, so the logits rows are the same either way).
  hidden->resize(size_t(T * H));
  kernels::RmsNorm(x, final_norm.data(), T, H, eps, hidden->data());
  Logits(batch, hidden->data(), nullptr, logits);
  return Status::Ok();
}

Status DecoderModel::MtpForward(std::span<const SequenceChunk> batch, std::span<const float> hidden, KvCache& cache,
                                std::vector<float>& logits, int64_t step, std::vector<float>* last_hidden,
                                const DraftHead* draft) {
  if (!mtp) return Status::Errorf("{} has no multi-token-prediction (MTP) head", cfg_.model_type);
  if (step < 0) return Status::Errorf("MTP step {} is negative", step);
  if (draft != nullptr && draft->head.in() != cfg_.hidden_size)
    return Status::Errorf("MTP: a draft head of {} columns for hidden size {}", draft->head.in(), cfg_.hidden_size);
  TERN_RETURN_IF_ERROR(Validate(batch, cache, /*uses_state=*/false));
  if (cache.spec().attention_layers < cache_spec_with_mtp().attention_layers)
    return Status::Errorf("MTP: the KV cache has {} attention layers, the model and its MTP head need {} "
                          "(create it from cache_spec_with_mtp())",
                          cache.spec().attention_layers, cache_spec_with_mtp().attention_layers);
  const int64_t H = cfg_.hidden_size;
  layout_.Build(batch, cfg_.RotaryDim(), cfg_.rope_theta);
  const int64_t T = layout_.rows;
  if (int64_t(hidden.size()) != T * H)
    return Status::Errorf("MTP: {} hidden values for {} rows of {}", hidden.size(), T, H);
  float* e = Scratch::Get(embedded_, T * H);
  Embed(batch, e);
  float* x = Scratch::Get(x_, T * H);
  const float eps = float(cfg_.rms_norm_eps);
  mtp->Forward(layout_, e, hidden.data(), step, x, cache, scratch_, pool_, eps);
  if (last_hidden != nullptr) {
    const int64_t n = int64_t(batch.size());
    last_hidden->resize(size_t(n * H));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(last_hidden->data() + i * H, x + (layout_.row_begin[size_t(i) + 1] - 1) * H, size_t(H) * sizeof(float));
    kernels::RmsNorm(last_hidden->data(), mtp->norm.data(), n, H, eps, last_hidden->data());
  }
  Logits(batch, x, mtp->norm.data(), logits, draft != nullptr ? &draft->head : nullptr);
  return Status::Ok();
}

Result<std::shared_ptr<const DraftHead>> DecoderModel::MakeDraftHead(std::span<const int32_t> ids) const {
  if (!mtp) return Status::Errorf("{} has no multi-token-prediction (MTP) head to draft with", cfg_.model_type);
  if (sharding.logits_group != nullptr || !sharding.computes_logits)
    return Status::Error("a draft vocabulary is not supported with --tp / --ep yet");
  if (ids.empty()) return Status::Error("no token ids");
  const kernels::MatrixView& w = lm_head.w;
  const int64_t V = w.rows;
  std::vector<uint8_t> seen(size_t(V), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= V)
      return Status::Errorf("id {} (entry {}) is not a token of this model (vocabulary of {})", ids[i], i, V);
    if (seen[size_t(ids[i])]++ != 0) return Status::Errorf("id {} appears more than once", ids[i]);
  }
  if (w.format == kernels::WeightFormat::kFp8 && w.scales != nullptr)
    return Status::Errorf("the draft rows need lm_head's rows on their own; {} has 128x128-block FP8 scales",
                          lm_head.name);
  // Each row's K columns of codes (and NVFP4's K / 16 block scales) copied,
  // packed: the copy's strides are K (nothing of a source row's padding is read).
  const bool nvfp4 = w.format == kernels::WeightFormat::kNvfp4;
  const int64_t K = w.cols;
  if (nvfp4 && K % kernels::kNvfp4Block != 0) return Status::Errorf("{}: NVFP4 with {} columns", lm_head.name, K);
  const size_t src_row = nvfp4 ? size_t(w.row_stride) / 2 : size_t(w.row_stride) * DTypeSize(w.dtype);
  const size_t row_bytes = nvfp4 ? size_t(K) / 2 : size_t(K) * DTypeSize(w.dtype);
  const size_t scale_bytes = nvfp4 ? size_t(K) / size_t(kernels::kNvfp4Block) : 0;
  const size_t n = ids.size(), codes = n * row_bytes;
  auto buf = std::make_shared<std::vector<uint8_t>>(codes + n * scale_bytes + 64);
  uint8_t* base = buf->data() + (64 - reinterpret_cast<uintptr_t>(buf->data()) % 64) % 64;
  for (size_t i = 0; i < n; ++i) {
    const size_t r = size_t(ids[i]);
    std::memcpy(base + i * row_bytes, static_cast<const uint8_t*>(w.data) + r * src_row, row_bytes);
    if (nvfp4)
      std::memcpy(base + codes + i * scale_bytes, static_cast<const uint8_t*>(w.scales) + r * size_t(w.scale_stride),
                  scale_bytes);
  }
  auto d = std::make_shared<DraftHead>();
  d->ids.assign(ids.begin(), ids.end());
  Linear& h = d->head;
  h = lm_head;
  h.name = lm_head.name + " (draft rows)";
  h.w.data = base;
  h.w.rows = int64_t(n);
  h.w.row_stride = K;
  h.w.scales = nvfp4 ? base + codes : nullptr;
  h.w.scale_stride = nvfp4 ? K / kernels::kNvfp4Block : 0;
  h.observer = nullptr;
  h.owned = buf;
  h.bias.clear();
  if (!lm_head.bias.empty())
    for (int32_t id : ids) h.bias.push_back(lm_head.bias[size_t(id)]);
  return std::shared_ptr<const DraftHead>(std::move(d));
}

int64_t DecoderModel::WeightBytesPerToken() const {
  // One embedding row, every layer's active weights, the LM head (not the MTP head: generation does not run it).
  int64_t bytes = lm_head.bytes() + cfg_.hidden_size * int64_t(DTypeSize(embed_tokens->dtype));
  for (const auto& l : layers) bytes += l.active_bytes();
  return bytes;
}

double DecoderModel::PrefillFlopsPerToken(double context) const {
  double dense = 0, experts = 0;
  for (const auto& l : layers)
    const_cast<DecoderLayer&>(l).ForEachLinear([&](Linear& lin) {
      const double macs = double(lin.in()) * double(lin.out());
      (lin.name.find(".experts.") != std::string::npos ? experts : dense) += macs;
    });
  const double active = cfg_.num_experts > 0 ? double(cfg_.num_experts_per_tok) / double(cfg_.num_experts) : 1.0;
  const double attention = double(cache_spec().attention_layers) * 2.0 * double(cfg_.num_attention_heads) *
                           double(cfg_.head_dim) * context;  // QK^T and PV: 2 * heads * head_dim MACs per key
  return 2.0 * (dense + active * experts + attention);
}

bool DecoderModel::HasKvCacheScales() const {
  // The main model's layers: ModelOpt leaves the MTP head (and its KV cache) unquantized.
  for (const auto& l : layers)
    if (!l.linear_attn && !(l.attention.k_scale > 0.0f && l.attention.v_scale > 0.0f)) return false;
  return !layers.empty();
}

void DecoderModel::ForEachLinear(const std::function<void(Linear&)>& fn) {
  for (auto& l : layers) l.ForEachLinear(fn);
  fn(lm_head);
}

int64_t DecoderModel::WeightBytes() const {
  if (sharding.weight_bytes >= 0) return sharding.weight_bytes;
  int64_t bytes = 0;
  for (const auto& [name, t] : store_.all()) bytes += int64_t(t.nbytes);
  return bytes;
}

}  // namespace tern
