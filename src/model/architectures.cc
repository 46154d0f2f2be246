// The table of architectures. Each entry says how its variant differs; the
// tensor names are TensorNames' defaults unless the entry overrides them.
//
// qwen3 (HF Qwen3ForCausalLM): per-head q/k RMSNorm before NeoX RoPE, GQA, a
//   SwiGLU MLP in every layer.
// qwen3_moe (Qwen3MoeForCausalLM): Qwen3 attention; sparse MoE FFNs (router
//   mlp.gate [E, H]; experts per expert mlp.experts.{e}.{gate,up,down}_proj, or
//   fused 3-D mlp.experts.gate_up_proj / down_proj) on the decoder_sparse_step
//   grid, dense MLPs in mlp_only_layers.
// qwen3_5_moe (Qwen3.5, e.g. Qwen3.5-397B-A17B; spec §2): Gated DeltaNet layers
//   and gated full-attention layers, a sparse MoE with a shared expert in every
//   layer (mlp.shared_expert.*, mlp.shared_expert_gate [1, H]), zero-centred
//   norms, partial rotary; text under model.language_model. in the VLM wrapper
//   (model.visual.* unused); an MTP head (mtp.*).
// qwen3_next (Qwen3-Next): the same design with fused, per-key-head grouped
//   linear-attention projections (in_proj_qkvz / in_proj_ba, gated_deltanet.h),
//   flat model.layers.* names, norm_topk_prob from the config, and HF's
//   sparse-step rule for dense layers.
//
// A new Qwen-family variant built from these blocks is one more entry.
#include <fmt/format.h>

#include "model/architecture.h"

namespace tern {
namespace {

constexpr Architecture kQwen3{.model_type = "qwen3"};
constexpr Architecture kQwen3Moe{.model_type = "qwen3_moe", .ffn = FfnLayout::kSparseStep};
constexpr Architecture kQwen35Moe{.model_type = "qwen3_5_moe",
                                  .linear_attention = true,
                                  .norms = NormStyle::kZeroCentred,
                                  .attention_output_gate = true,
                                  .ffn = FfnLayout::kSparseEvery,
                                  .router_renormalises = true,
                                  .mtp_head = true};
constexpr Architecture kQwen35MoeText = [] {
  Architecture a = kQwen35Moe;
  a.model_type = "qwen3_5_moe_text";
  return a;
}();
constexpr Architecture kQwen3Next{.model_type = "qwen3_next",
                                  .linear_attention = true,
                                  .norms = NormStyle::kZeroCentred,
                                  .attention_output_gate = true,
                                  .ffn = FfnLayout::kSparseStep,
                                  .mtp_head = true};

constexpr Architecture kTable[] = {kQwen3, kQwen3Moe, kQwen35Moe, kQwen35MoeText, kQwen3Next};

}  // namespace

std::span<const Architecture> Architectures() { return kTable; }

const Architecture* FindArchitecture(std::string_view model_type) {
  for (const Architecture& a : kTable)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

std::string ArchitectureNames() {
  std::string out;
  for (const Architecture& a : kTable) out += fmt::format("{}{}", out.empty() ? "" : ", ", a.model_type);
  return out;
}

}  // namespace tern
