#include "model/mtp.h"

#include <cstring>

#include <fmt/format.h>

namespace tern {

Result<MtpHead> MtpHead::Load(const WeightLoader& w, const ModelConfig& c, const Options& o) {
  if (o.num_layers <= 0) return Status::Errorf("MTP head: {} layers", o.num_layers);
  const int64_t H = c.hidden_size;
  MtpHead m;
  TERN_ASSIGN_OR_RETURN(m.pre_fc_norm_embedding, w.Vector("mtp.pre_fc_norm_embedding.weight", H));
  TERN_ASSIGN_OR_RETURN(m.pre_fc_norm_hidden, w.Vector("mtp.pre_fc_norm_hidden.weight", H));
  TERN_ASSIGN_OR_RETURN(m.norm, w.Vector("mtp.norm.weight", H));
  TERN_ASSIGN_OR_RETURN(m.fc, w.Load("mtp.fc", H, 2 * H));
  for (int64_t i = 0; i < o.num_layers; ++i) {
    const std::string p = fmt::format("mtp.layers.{}.", i);
    DecoderLayer l;
    TERN_ASSIGN_OR_RETURN(l.input_norm, w.Vector(p + "input_layernorm.weight", H));
    TERN_ASSIGN_OR_RETURN(l.post_attn_norm, w.Vector(p + "post_attention_layernorm.weight", H));
    for (auto* v : {&l.input_norm, &l.post_attn_norm})
      for (float& x : *v) x += 1.0f;
    TERN_ASSIGN_OR_RETURN(l.attention, AttentionBlock::Load(w, p + "self_attn.", c, o.first_cache_layer + i,
                                                            /*qk_norm=*/true, /*output_gate=*/true,
                                                            /*norm_offset=*/1.0f));
    if (!o.qwen3_next || c.IsMoeLayer(i)) {
      TERN_ASSIGN_OR_RETURN(l.ffn, MoeFfn::Load(w, p + "mlp.", c));
    } else {
      TERN_ASSIGN_OR_RETURN(l.ffn, DenseFfn::Load(w, p + "mlp.", H, c.intermediate_size));
    }
    m.layers.push_back(std::move(l));
  }
  for (auto* v : {&m.pre_fc_norm_embedding, &m.pre_fc_norm_hidden, &m.norm})
    for (float& x : *v) x += 1.0f;
  return m;
}

void MtpHead::Forward(const BatchLayout& batch, const float* embedded, const float* hidden, int64_t step, float* x,
                      KvCache& cache, Scratch& s, ThreadPool& pool, float eps) const {
  const int64_t T = batch.rows, H = fc.out();
  // in: [T, 2H], row t = [norm_e(embedded_t) | norm_h(hidden_t)].
  float* in = Scratch::Get(s.mtp_in, T * 2 * H);
  float* normed = Scratch::Get(s.h, T * H);
  kernels::RmsNorm(embedded, pre_fc_norm_embedding.data(), T, H, eps, normed);
  for (int64_t t = 0; t < T; ++t) std::memcpy(in + t * 2 * H, normed + t * H, size_t(H) * sizeof(float));
  kernels::RmsNorm(hidden, pre_fc_norm_hidden.data(), T, H, eps, normed);
  for (int64_t t = 0; t < T; ++t) std::memcpy(in + t * 2 * H + H, normed + t * H, size_t(H) * sizeof(float));
  fc.Forward(in, T, x, pool);
  layers[size_t(step % int64_t(layers.size()))].Forward(batch, x, cache, s, pool, eps);
}

void MtpHead::ForEachLinear(const std::function<void(Linear&)>& fn) {
  fn(fc);
  for (DecoderLayer& l : layers) l.ForEachLinear(fn);
}

}  // namespace tern
