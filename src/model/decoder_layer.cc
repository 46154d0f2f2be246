#include "model/decoder_layer.h"

namespace tern {

void DecoderLayer::Forward(const BatchLayout& batch, float* x, KvCache& cache, Scratch& s, ThreadPool& pool,
                           float eps) const {
  const int64_t T = batch.rows, H = int64_t(input_norm.size());
  float* h = Scratch::Get(s.h, T * H);
  float* y = Scratch::Get(s.tmp, T * H);
  kernels::RmsNorm(x, input_norm.data(), T, H, eps, h);
  if (linear_attn) {
    linear_attn->Forward(batch, h, y, cache, s, pool);
  } else {
    attention.Forward(batch, h, y, cache, s, pool);
  }
  if (mixer_reduce != nullptr) mixer_reduce->AllReduceSum(y, T * H);
  kernels::AddInPlace(x, y, T * H);
  kernels::RmsNorm(x, post_attn_norm.data(), T, H, eps, h);
  std::visit([&](const auto& f) { f.Forward(h, T, y, s, pool); }, ffn);
  if (ffn_reduce != nullptr) ffn_reduce->AllReduceSum(y, T * H);
  kernels::AddInPlace(x, y, T * H);
}

void DecoderLayer::ForEachLinear(const std::function<void(Linear&)>& fn) {
  if (GatedDeltaNet* g = linear_attn.get()) {
    if (g->fused_inputs) {
      for (Linear* p : {&g->in_proj_qkvz, &g->in_proj_ba, &g->out_proj}) fn(*p);
    } else {
      for (Linear* p : {&g->in_proj_qkv, &g->in_proj_z, &g->in_proj_b, &g->in_proj_a, &g->out_proj}) fn(*p);
    }
  } else {
    for (Linear* p : {&attention.q_proj, &attention.k_proj, &attention.v_proj, &attention.o_proj}) fn(*p);
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
      ffn);
}

int64_t DecoderLayer::active_bytes() const {
  const int64_t mixer = linear_attn ? linear_attn->bytes() : attention.bytes();
  return mixer + std::visit([](const auto& f) -> int64_t {
           if constexpr (std::is_same_v<std::decay_t<decltype(f)>, MoeFfn>) return f.active_bytes();
           else return f.bytes();
         }, ffn);
}

}  // namespace tern
