#include "model/mtp.h"

#include <cstring>

#include <fmt/format.h>

#include "model/architecture.h"

namespace tern {

Result<MtpHead> MtpHead::Load(const WeightLoader& w, const ModelConfig& c, const Options& o) {
  if (o.num_layers <= 0) return Status::Errorf("MTP head: {} layers", o.num_layers);
  if (o.arch == nullptr) return Status::Error("MTP head: no architecture given");
  const Architecture& arch = *o.arch;
  const int64_t H = c.hidden_size;
  MtpHead m;
  TERN_ASSIGN_OR_RETURN(m.pre_fc_norm_embedding, w.Norm("mtp.pre_fc_norm_embedding.weight", H, arch.norms));
  TERN_ASSIGN_OR_RETURN(m.pre_fc_norm_hidden, w.Norm("mtp.pre_fc_norm_hidden.weight", H, arch.norms));
  TERN_ASSIGN_OR_RETURN(m.norm, w.Norm("mtp.norm.weight", H, arch.norms));
  TERN_ASSIGN_OR_RETURN(m.fc, w.Load("mtp.fc", H, 2 * H));
  // Each layer is a full-attention layer of the main model's kind.
  for (int64_t i = 0; i < o.num_layers; ++i) {
    TERN_ASSIGN_OR_RETURN(DecoderLayer l, LoadLayerBody(w, arch, c, fmt::format("mtp.layers.{}.", i), i,
                                                        /*linear=*/false, o.first_cache_layer + i));
    m.layers.push_back(std::move(l));
  }
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
