#include "model/ffn_block.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

namespace tern {

Result<DenseFfn> DenseFfn::Load(const WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t ffn) {
  DenseFfn f;
  TERN_ASSIGN_OR_RETURN(f.gate_proj, w.Load(prefix + "gate_proj", ffn, hidden));
  TERN_ASSIGN_OR_RETURN(f.up_proj, w.Load(prefix + "up_proj", ffn, hidden));
  TERN_ASSIGN_OR_RETURN(f.down_proj, w.Load(prefix + "down_proj", hidden, ffn));
  return f;
}

namespace {

// Experts fused into 3-D tensors (see MoeFfn::Load).
Result<std::vector<DenseFfn>> LoadFusedExperts(const WeightLoader& w, const std::string& prefix,
                                               const ModelConfig& cfg) {
  const int64_t E = cfg.num_experts, H = cfg.hidden_size, F = cfg.moe_intermediate_size;
  const TensorStore& st = w.store();
  TERN_ASSIGN_OR_RETURN(const TensorView* gu, st.Get(prefix + "experts.gate_up_proj", {E, 2 * F, H}));
  TERN_ASSIGN_OR_RETURN(const TensorView* dn, st.Get(prefix + "experts.down_proj", {E, H, F}));
  for (const TensorView* t : {gu, dn})
    if (t->dtype != DType::kF32 && t->dtype != DType::kBF16 && t->dtype != DType::kF16)
      return Status::Errorf("{}: fused expert tensor '{}' has dtype {}; expected F32, BF16 or F16 (quantized experts "
                            "are read per expert)",
                            *t->file, t->name, DTypeName(t->dtype));
  const auto view = [](const TensorView* t, int64_t offset_rows, int64_t rows, int64_t cols) {
    const size_t es = DTypeSize(t->dtype);
    return kernels::MatrixView{.dtype = t->dtype, .data = t->data + size_t(offset_rows * cols) * es, .rows = rows,
                               .cols = cols, .row_stride = cols};
  };
  std::vector<DenseFfn> experts(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    DenseFfn& f = experts[size_t(e)];
    f.gate_proj.w = view(gu, e * 2 * F, F, H);
    f.up_proj.w = view(gu, e * 2 * F + F, F, H);
    f.down_proj.w = view(dn, e * H, H, F);
    // Per-expert names, as a per-expert checkpoint (and `tern quantize`) calls them.
    f.gate_proj.name = fmt::format("{}experts.{}.gate_proj", prefix, e);
    f.up_proj.name = fmt::format("{}experts.{}.up_proj", prefix, e);
    f.down_proj.name = fmt::format("{}experts.{}.down_proj", prefix, e);
  }
  return experts;
}

}  // namespace

void DenseFfn::Forward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const {
  const int64_t F = gate_proj.out();
  float* g = Scratch::Get(s.gate, rows * F);
  float* u = Scratch::Get(s.up, rows * F);
  ForwardLinears(std::array{&gate_proj, &up_proj}, x, rows, std::array{g, u}, pool);
  kernels::SiluMul(g, u, rows * F, g);
  down_proj.Forward(g, rows, out, pool);
}

Result<MoeFfn> MoeFfn::Load(const WeightLoader& w, const std::string& prefix, const ModelConfig& cfg) {
  MoeFfn m;
  m.top_k = cfg.num_experts_per_tok;
  m.norm_topk_prob = cfg.norm_topk_prob;
  if (cfg.moe_intermediate_size <= 0)
    return Status::Errorf("{}: moe_intermediate_size must be positive for a MoE layer", prefix);
  TERN_ASSIGN_OR_RETURN(m.router, w.Load(prefix + "gate", cfg.num_experts, cfg.hidden_size));
  m.router.f32_activations = true;  // a BF16-rounded input would flip near-tied expert choices
  if (cfg.shared_expert_intermediate_size > 0) {
    TERN_ASSIGN_OR_RETURN(DenseFfn shared, DenseFfn::Load(w, prefix + "shared_expert.", cfg.hidden_size,
                                                          cfg.shared_expert_intermediate_size));
    m.shared_expert = std::make_unique<DenseFfn>(std::move(shared));
    TERN_ASSIGN_OR_RETURN(m.shared_expert_gate, w.Load(prefix + "shared_expert_gate", 1, cfg.hidden_size));
    m.shared_expert_gate.f32_activations = true;
  }
  if (w.store().Find(prefix + "experts.gate_up_proj")) {
    TERN_ASSIGN_OR_RETURN(m.experts, LoadFusedExperts(w, prefix, cfg));
    return m;
  }
  m.experts.reserve(size_t(cfg.num_experts));
  for (int64_t e = 0; e < cfg.num_experts; ++e) {
    TERN_ASSIGN_OR_RETURN(DenseFfn f, DenseFfn::Load(w, fmt::format("{}experts.{}.", prefix, e), cfg.hidden_size,
                                                     cfg.moe_intermediate_size));
    m.experts.push_back(std::move(f));
  }
  return m;
}

void MoeFfn::Forward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const {
  RoutedForward(x, rows, out, s, pool);
  if (!shared_expert || !add_shared) return;
  const int64_t H = router.in();
  float* y = Scratch::Get(s.shared, rows * H);
  shared_expert->Forward(x, rows, y, s, pool);
  float* g = Scratch::Get(s.router, rows);  // (the routing logits are no longer needed)
  shared_expert_gate.Forward(x, rows, g, pool);
  for (int64_t r = 0; r < rows; ++r) kernels::Axpy(1.0f / (1.0f + std::exp(-g[r])), y + r * H, out + r * H, H);
}

void MoeFfn::RoutedForward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const {
  const int64_t E = int64_t(experts.size()), H = router.in();
  float* logits = Scratch::Get(s.router, rows * E);
  router.Forward(x, rows, logits, pool);
  // Route every token, then group the (token, weight) pairs by expert, so a
  // batch reads each active expert's weights once (kernels/moe_routing.h).
  kernels::MoeRouting& r = s.routing;
  kernels::RouteMoe(logits, rows, E, top_k, norm_topk_prob, r);
  const std::vector<int32_t>& count = r.first;  // count[e]: the first slot of expert e
  const std::vector<int32_t>& slot_token = r.slot_token;
  const std::vector<float>& slot_weight = r.slot_weight;
  const std::vector<int32_t>* active_all = &r.active;
  if (expert_begin > 0 || (expert_end >= 0 && expert_end < E)) {  // expert parallel: this rank's experts only
    s.local_experts.clear();
    for (int32_t e : r.active)
      if (e >= expert_begin && e < expert_end) s.local_experts.push_back(e);
    active_all = &s.local_experts;
  }
  const std::vector<int32_t>& active = *active_all;
  const size_t slots = size_t(r.slots());
  std::memset(out, 0, size_t(rows * H) * sizeof(float));
  // out[token] += weight * expert output, expert by expert, slot by slot: the
  // same order (so the same sums) whichever way the experts run.
  auto accumulate = [&](int32_t b, int32_t n, const float* ye) {
    for (int32_t i = 0; i < n; ++i)
      kernels::Axpy(slot_weight[size_t(b + i)], ye + i * H, out + slot_token[size_t(b + i)] * H, H);
  };
  // Decode-sized batches route their few rows to many experts, each a few
  // small matmuls: run one expert per thread at a time (claimed dynamically)
  // instead of splitting every small matmul across the threads — no barrier
  // per matmul, and a thread the OS does not schedule in time only delays its
  // own expert. Large batches (prefill) keep splitting each expert's matmuls,
  // which are big enough to share, and need no buffer for every slot at once.
  constexpr size_t kMaxParallelSlots = 4096;  // in + y: 2 x 4096 x hidden floats
  // Experts this small gain nothing from splitting their matmuls (each barely
  // one chunk of the kernels'), so as few as one active expert per thread
  // already run one per thread: the demo Qwen3.5 model's two experts a token
  // (62 KB each, NVFP4) on two threads instead of one after the other, its
  // decode 1.03-1.16x in 6 of 7 interleaved pairs (`tern bench`, AMD Zen 4).
  // Experts of real models (megabytes) keep the rule above.
  constexpr int64_t kSmallExpertBytes = 128 * 1024;
  const bool small = !active.empty() && experts[size_t(active[0])].bytes() < kSmallExpertBytes;
  if (pool.size() > 1 && active.size() >= (small ? 1 : 4) * pool.size() && slots <= kMaxParallelSlots) {
    // in: [slots, H] the routed rows, grouped by expert; y: [slots, H] their expert outputs.
    float* in = Scratch::Get(s.moe_in, int64_t(slots) * H);
    float* y = Scratch::Get(s.moe_out, int64_t(slots) * H);
    for (size_t i = 0; i < slots; ++i)
      std::memcpy(in + i * size_t(H), x + slot_token[i] * H, size_t(H) * sizeof(float));
    while (s.per_thread.size() < pool.size()) s.per_thread.emplace_back();
    while (s.inline_pools.size() < pool.size()) s.inline_pools.push_back(std::make_unique<ThreadPool>(1));
    pool.Run(active.size(), [&](size_t a, size_t thread) {
      const int32_t e = active[a], b = count[size_t(e)], n = count[size_t(e) + 1] - b;
      experts[size_t(e)].Forward(in + int64_t(b) * H, n, y + int64_t(b) * H, s.per_thread[thread],
                                 *s.inline_pools[thread]);
    });
    for (int32_t e : active) accumulate(count[size_t(e)], count[size_t(e) + 1] - count[size_t(e)], y + int64_t(count[size_t(e)]) * H);
    return;
  }
  for (int32_t e : active) {
    const int32_t b = count[size_t(e)], n = count[size_t(e) + 1] - b;
    // in: [n, H] gathered rows; y: [n, H].
    float* in = Scratch::Get(s.moe_in, int64_t(n) * H);
    for (int32_t i = 0; i < n; ++i) std::memcpy(in + i * H, x + slot_token[size_t(b + i)] * H, size_t(H) * sizeof(float));
    float* y = Scratch::Get(s.moe_out, int64_t(n) * H);
    experts[size_t(e)].Forward(in, n, y, s, pool);
    accumulate(b, n, y);
  }
}

}  // namespace tern
