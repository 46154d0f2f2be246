// Feed-forward blocks: the dense SwiGLU MLP and the sparse mixture of experts
// (Qwen3-MoE routing: softmax over experts, top-k, optional renormalisation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"
#include "model/linear.h"

namespace tern {

// down(silu(gate(x)) * up(x)).
struct DenseFfn {
  Linear gate_proj, up_proj, down_proj;

  // Loads `<prefix>gate_proj` etc. (prefix like "model.layers.3.mlp."), intermediate size `ffn`.
  static Result<DenseFfn> Load(const WeightLoader& w, const std::string& prefix, int64_t hidden, int64_t ffn);
  // x: [rows, hidden]; out: [rows, hidden] (overwritten).
  void Forward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const;
  int64_t bytes() const { return gate_proj.bytes() + up_proj.bytes() + down_proj.bytes(); }
};

struct MoeFfn {
  Linear router;  // [num_experts, hidden]
  std::vector<DenseFfn> experts;
  int64_t top_k = 0;
  bool norm_topk_prob = true;
  // Qwen3.5 / Qwen3-Next: a shared expert added to every token, scaled by
  // sigmoid(shared_expert_gate(x)) (gate: [1, hidden]).
  std::unique_ptr<DenseFfn> shared_expert;
  Linear shared_expert_gate;
  // Expert parallelism (model/shard.h): this rank runs routed experts
  // [expert_begin, expert_end) only (the others' entries are empty), and adds
  // the shared expert only when add_shared (one tensor-parallel group does).
  int64_t expert_begin = 0, expert_end = -1;  // -1: every expert
  bool add_shared = true;

  // Loads `<prefix>gate` (router) and the experts, stored either per expert
  // (`<prefix>experts.{e}.{gate,up,down}_proj`, any weight format) or fused
  // as in recent transformers (`<prefix>experts.gate_up_proj` [E, 2F, H] with
  // gate in rows [0, F) and up in [F, 2F), `<prefix>experts.down_proj`
  // [E, H, F]; F32/BF16/F16), viewed in place either way.
  static Result<MoeFfn> Load(const WeightLoader& w, const std::string& prefix, const ModelConfig& cfg);
  void Forward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const;
  // The routed experts alone (out overwritten).
  void RoutedForward(const float* x, int64_t rows, float* out, Scratch& s, ThreadPool& pool) const;
  // Bytes read per decoded token: router + top_k experts.
  int64_t active_bytes() const {
    return router.bytes() + top_k * experts[0].bytes() + (shared_expert ? shared_expert->bytes() : 0);
  }
  int64_t bytes() const { return router.bytes() + int64_t(experts.size()) * experts[0].bytes(); }
};

}  // namespace tern
