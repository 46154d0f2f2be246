#include "model/decoder.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace tern {

DecoderModel::DecoderModel(ModelConfig cfg, TensorStore store, const LoadOptions& opts)
    : cfg_(std::move(cfg)), store_(std::move(store)), numerics_(opts.numerics), pool_(opts.threads) {}

CacheSpec DecoderModel::cache_spec() const {
  int64_t attention = 0, state = 0;
  for (const auto& l : layers) {
    if (l.linear_attn) state += l.linear_attn->state_bytes();
    else ++attention;
  }
  return CacheSpec{.attention_layers = attention, .kv_heads = cfg_.num_key_value_heads, .head_dim = cfg_.head_dim,
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

Status DecoderModel::Validate(std::span<const SequenceChunk> batch, const KvCache& cache) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const SequenceChunk& c = batch[i];
    if (c.tokens.empty()) return Status::Errorf("batch entry {} has no tokens", i);
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
    if (cache.spec().recurrent_state_bytes > 0 && (c.state_slot < 0 || c.state_slot >= cache.num_state_slots()))
      return Status::Errorf("batch entry {}: recurrent state slot {} out of range [0, {})", i, c.state_slot,
                            cache.num_state_slots());
    if (cfg_.max_position_embeddings > 0 && end > cfg_.max_position_embeddings)
      return Status::Errorf("sequence of {} tokens exceeds the context length {}", end, cfg_.max_position_embeddings);
  }
  return Status::Ok();
}

Status DecoderModel::Forward(std::span<const SequenceChunk> batch, KvCache& cache, std::vector<float>& logits) {
  TERN_RETURN_IF_ERROR(Validate(batch, cache));
  const int64_t H = cfg_.hidden_size, V = cfg_.vocab_size;
  layout_.Build(batch, cfg_.RotaryDim(), cfg_.rope_theta);
  const int64_t T = layout_.rows;
  const float eps = float(cfg_.rms_norm_eps);

  // x: [T, H] residual stream, from the embedding rows.
  float* x = Scratch::Get(x_, T * H);
  const size_t row_bytes = size_t(H) * DTypeSize(embed_tokens->dtype);
  for (size_t i = 0; i < batch.size(); ++i)
    for (size_t t = 0; t < batch[i].tokens.size(); ++t)
      kernels::ConvertToF32(embed_tokens->dtype, embed_tokens->data + size_t(batch[i].tokens[t]) * row_bytes, H,
                            x + (layout_.row_begin[i] + int64_t(t)) * H);

  float* h = Scratch::Get(scratch_.h, T * H);
  float* y = Scratch::Get(scratch_.tmp, T * H);
  for (const DecoderLayer& layer : layers) {
    kernels::RmsNorm(x, layer.input_norm.data(), T, H, eps, h);
    if (layer.linear_attn) {
      layer.linear_attn->Forward(layout_, h, y, cache, scratch_, pool_);
    } else {
      layer.attention.Forward(layout_, h, y, cache, scratch_, pool_);
    }
    kernels::AddInPlace(x, y, T * H);
    kernels::RmsNorm(x, layer.post_attn_norm.data(), T, H, eps, h);
    std::visit([&](const auto& ffn) { ffn.Forward(h, T, y, scratch_, pool_); }, layer.ffn);
    kernels::AddInPlace(x, y, T * H);
  }

  // Gather the rows that need logits, normalise, project.
  int64_t out_rows = 0;
  for (const auto& c : batch) out_rows += c.skip_logits ? 0 : c.all_logits ? int64_t(c.tokens.size()) : 1;
  float* sel = h;  // reuse: out_rows <= T
  int64_t r = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t n = int64_t(batch[i].tokens.size());
    const int64_t first = batch[i].skip_logits ? n : batch[i].all_logits ? 0 : n - 1;
    for (int64_t t = first; t < n; ++t, ++r)
      std::memcpy(sel + r * H, x + (layout_.row_begin[i] + t) * H, size_t(H) * sizeof(float));
  }
  logits.resize(size_t(out_rows * V));
  if (out_rows == 0) return Status::Ok();
  kernels::RmsNorm(sel, final_norm.data(), out_rows, H, eps, sel);
  lm_head.Forward(sel, out_rows, logits.data(), pool_);
  return Status::Ok();
}

int64_t DecoderModel::WeightBytesPerToken() const {
  // One embedding row, every layer's active weights, the LM head.
  int64_t bytes = lm_head.bytes() + cfg_.hidden_size * int64_t(DTypeSize(embed_tokens->dtype));
  for (const auto& l : layers) {
    bytes += l.linear_attn ? l.linear_attn->bytes() : l.attention.bytes();
    bytes += std::visit([](const auto& f) -> int64_t {
      if constexpr (std::is_same_v<std::decay_t<decltype(f)>, MoeFfn>) return f.active_bytes();
      else return f.bytes();
    }, l.ffn);
  }
  return bytes;
}

bool DecoderModel::HasKvCacheScales() const {
  for (const auto& l : layers)
    if (!l.linear_attn && !(l.attention.k_scale > 0.0f && l.attention.v_scale > 0.0f)) return false;
  return !layers.empty();
}

void DecoderModel::ForEachLinear(const std::function<void(Linear&)>& fn) {
  for (auto& l : layers) {
    if (GatedDeltaNet* g = l.linear_attn.get()) {
      if (g->fused_inputs) {
        for (Linear* p : {&g->in_proj_qkvz, &g->in_proj_ba, &g->out_proj}) fn(*p);
      } else {
        for (Linear* p : {&g->in_proj_qkv, &g->in_proj_z, &g->in_proj_b, &g->in_proj_a, &g->out_proj}) fn(*p);
      }
    } else {
      AttentionBlock& a = l.attention;
      for (Linear* p : {&a.q_proj, &a.k_proj, &a.v_proj, &a.o_proj}) fn(*p);
    }
    std::visit(
        [&](auto& f) {
          if constexpr (std::is_same_v<std::decay_t<decltype(f)>, MoeFfn>) {
            fn(f.router);
            for (DenseFfn& e : f.experts)
              for (Linear* p : {&e.gate_proj, &e.up_proj, &e.down_proj}) fn(*p);
            if (f.shared_expert) {
              for (Linear* p : {&f.shared_expert->gate_proj, &f.shared_expert->up_proj, &f.shared_expert->down_proj})
                fn(*p);
              fn(f.shared_expert_gate);
            }
          } else {
            for (Linear* p : {&f.gate_proj, &f.up_proj, &f.down_proj}) fn(*p);
          }
        },
        l.ffn);
  }
  fn(lm_head);
}

int64_t DecoderModel::WeightBytes() const {
  int64_t bytes = 0;
  for (const auto& [name, t] : store_.all()) bytes += int64_t(t.nbytes);
  return bytes;
}

}  // namespace tern
