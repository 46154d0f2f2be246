// Top-k routing of a sparse MoE layer and the grouping of its (token, expert)
// pairs by expert, so that a batch reads each active expert's weights once.
#pragma once

#include <cstdint>
#include <vector>

namespace tern::kernels {

// What RouteMoe produces. Buffers grow to the largest batch seen and are then
// reused: a steady-state decode step allocates nothing.
struct MoeRouting {
  // Token-major: token t's k choices at [t * top_k, (t + 1) * top_k), best first.
  std::vector<int32_t> ids;
  std::vector<float> weights;
  // Grouped by expert: expert e owns slots [first[e], first[e + 1]); within an
  // expert the slots are in token order. [E + 1], [rows * top_k], [rows * top_k].
  std::vector<int32_t> first, slot_token;
  std::vector<float> slot_weight;
  std::vector<int32_t> active;  // experts with at least one slot, ascending
  // Internal scratch.
  std::vector<float> probs;
  std::vector<int32_t> order, fill;
  int64_t slots() const { return int64_t(slot_token.size()); }
};

// logits: [rows, num_experts] router logits. Per token: softmax over the
// experts (computed in float as HF does in the model dtype, with a double
// sum), the top_k by probability (ties to the lower expert id), weights the
// chosen probabilities, renormalised to sum to 1 when `renormalize`
// (norm_topk_prob); then the grouping. 1 <= top_k <= num_experts.
void RouteMoe(const float* logits, int64_t rows, int64_t num_experts, int64_t top_k, bool renormalize,
              MoeRouting& out);

namespace ref {
// The same, written as directly as possible: a full stable sort per token and
// a scan of every expert for the grouping.
void RouteMoe(const float* logits, int64_t rows, int64_t num_experts, int64_t top_k, bool renormalize,
              MoeRouting& out);
}  // namespace ref

}  // namespace tern::kernels
